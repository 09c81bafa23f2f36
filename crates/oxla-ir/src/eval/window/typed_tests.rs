//! The typed window loops and scans against the general path (and, for scans longer than
//! the base length, against a plain model of XLA's tree), over random geometries, types and
//! edge values.

use super::super::testing::*;
use super::scan::BASE;
use super::GENERAL_ONLY;
use crate::{Attribute, ElementType, ElementsAttr, Literal, Module, OpKind, TensorType, Type};
use half::{bf16, f16};

/// xorshift64*: deterministic test data without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Window attributes of one test case.
#[derive(Clone, Debug)]
struct Win {
    window: Vec<i64>,
    strides: Vec<i64>,
    base_dil: Vec<i64>,
    win_dil: Vec<i64>,
    padding: Vec<i64>,
}

impl Win {
    fn attrs(&self) -> Vec<(&'static str, Attribute)> {
        let pairs = self.padding.len() as i64 / 2;
        vec![
            ("window_dimensions", i64s(&self.window)),
            ("window_strides", i64s(&self.strides)),
            ("base_dilations", i64s(&self.base_dil)),
            ("window_dilations", i64s(&self.win_dil)),
            (
                "padding",
                Attribute::Elements(ElementsAttr {
                    ty: TensorType::new([pairs, 2], ElementType::S64),
                    data: self
                        .padding
                        .iter()
                        .flat_map(|v| v.to_le_bytes())
                        .collect::<Vec<u8>>()
                        .into(),
                    splat: false,
                }),
            ),
        ]
    }

    /// The output shape for input shape `shape`, or `None` when a dimension is empty.
    fn out_shape(&self, shape: &[i64]) -> Option<Vec<i64>> {
        (0..shape.len())
            .map(|d| {
                let dilated = if shape[d] == 0 {
                    0
                } else {
                    (shape[d] - 1) * self.base_dil[d] + 1
                };
                let padded = dilated + self.padding[2 * d] + self.padding[2 * d + 1];
                let span = (self.window[d] - 1) * self.win_dil[d] + 1;
                (padded >= span).then(|| (padded - span) / self.strides[d] + 1)
            })
            .collect()
    }
}

/// `main(x, init) = reduce_window(x, init)` with the body `kind(acc, x)`.
fn module(kind: OpKind, x: &TensorType, out_shape: &[i64], win: &Win) -> Module {
    let et = x.element_type;
    let (mut b, p) = FuncBuilder::new(&[Type::Tensor(x.clone()), t(&[], et)]);
    let s = t(&[], et);
    let region = b.region(&[s.clone(), s.clone()], |b, a| {
        vec![b.op(kind.clone(), &[a[0], a[1]], s.clone(), vec![])]
    });
    let r = b.op_full(
        OpKind::ReduceWindow,
        &p,
        &[t(out_shape, et)],
        win.attrs(),
        vec![region],
    );
    b.finish(&r)
}

/// Runs the module with the typed paths on, then off.
fn typed_and_general(m: &Module, args: &[Literal]) -> (Literal, Literal) {
    let typed = crate::eval::run_function(m, "main", args)
        .unwrap()
        .remove(0);
    GENERAL_ONLY.with(|g| g.set(true));
    let general = crate::eval::run_function(m, "main", args);
    GENERAL_ONLY.with(|g| g.set(false));
    (typed, general.unwrap().remove(0))
}

/// A float drawn mostly from a small range, sometimes an edge value.
fn edge_float(rng: &mut Rng) -> f32 {
    match rng.below(16) {
        0 => f32::NAN,
        1 => -0.0,
        2 => 0.0,
        3 => f32::INFINITY,
        4 => f32::NEG_INFINITY,
        5 => 1.0e-40,
        6 => -3.0e-39,
        _ => ((rng.unit() - 0.5) * 8.0) as f32,
    }
}

/// `n` random elements of `et` as little-endian bytes.
fn random_bytes(rng: &mut Rng, et: ElementType, n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..n {
        let v = edge_float(rng);
        match et {
            ElementType::F32 => out.extend(v.to_le_bytes()),
            ElementType::F64 => out.extend(f64::from(v).to_le_bytes()),
            ElementType::F16 => out.extend(f16::from_f32(v).to_le_bytes()),
            ElementType::BF16 => out.extend(bf16::from_f32(v).to_le_bytes()),
            ElementType::S32 => out.extend(((rng.next() as i32) >> rng.below(31)).to_le_bytes()),
            ElementType::U8 => out.push(rng.next() as u8),
            ElementType::S64 => out.extend((rng.next() as i64 >> 20).to_le_bytes()),
            _ => unreachable!(),
        }
    }
    out
}

/// The init value tests use for `kind` on `et` (its identity, or for integers any value).
fn init_for(kind: &OpKind, et: ElementType, rng: &mut Rng) -> Literal {
    let f = match kind {
        OpKind::Add => 0.0,
        OpKind::Multiply => 1.0,
        OpKind::Maximum => f32::NEG_INFINITY,
        _ => f32::INFINITY,
    };
    let f = if rng.below(4) == 0 {
        edge_float(rng)
    } else {
        f
    };
    let data = match et {
        ElementType::F32 => f.to_le_bytes().to_vec(),
        ElementType::F64 => f64::from(f).to_le_bytes().to_vec(),
        ElementType::F16 => f16::from_f32(f).to_le_bytes().to_vec(),
        ElementType::BF16 => bf16::from_f32(f).to_le_bytes().to_vec(),
        _ => random_bytes(rng, et, 1),
    };
    lit_bytes(&[], et, data)
}

/// Element bytes with every float NaN made the same: the order of an `add`'s operands,
/// which decides a NaN's payload, is the compiler's choice in both paths.
fn canonical(lit: &Literal) -> Vec<u8> {
    let et = lit.ty.element_type;
    let data = lit.data.to_vec();
    match et {
        ElementType::F32 => data
            .chunks(4)
            .flat_map(|c| {
                let v = f32::from_le_bytes(c.try_into().unwrap());
                if v.is_nan() { f32::NAN } else { v }.to_le_bytes()
            })
            .collect(),
        ElementType::F64 => data
            .chunks(8)
            .flat_map(|c| {
                let v = f64::from_le_bytes(c.try_into().unwrap());
                if v.is_nan() { f64::NAN } else { v }.to_le_bytes()
            })
            .collect(),
        ElementType::F16 | ElementType::BF16 => data
            .chunks(2)
            .flat_map(|c| {
                let b = u16::from_le_bytes([c[0], c[1]]);
                let nan = if et == ElementType::F16 {
                    f16::from_bits(b).is_nan()
                } else {
                    bf16::from_bits(b).is_nan()
                };
                if nan { 0x7fffu16 } else { b }.to_le_bytes()
            })
            .collect(),
        _ => data,
    }
}

const KINDS: [OpKind; 4] = [
    OpKind::Add,
    OpKind::Maximum,
    OpKind::Minimum,
    OpKind::Multiply,
];
const TYPES: [ElementType; 7] = [
    ElementType::F32,
    ElementType::F32,
    ElementType::F64,
    ElementType::F16,
    ElementType::BF16,
    ElementType::S32,
    ElementType::U8,
];

#[test]
fn typed_windows_match_general_path() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut ran = 0;
    while ran < 400 {
        let rank = 1 + rng.below(4);
        let shape: Vec<i64> = (0..rank).map(|_| rng.below(7) as i64).collect();
        let mut win = Win {
            window: vec![],
            strides: vec![],
            base_dil: vec![],
            win_dil: vec![],
            padding: vec![],
        };
        for _ in 0..rank {
            // Often leave a dimension alone, as pools leave batch and channels.
            let alone = rng.below(3) == 0;
            let pick = |rng: &mut Rng, n: usize| if alone { 1 } else { 1 + rng.below(n) as i64 };
            win.window.push(pick(&mut rng, 4));
            win.strides.push(pick(&mut rng, 3));
            win.base_dil.push(if rng.below(4) == 0 {
                pick(&mut rng, 3)
            } else {
                1
            });
            win.win_dil.push(if rng.below(4) == 0 {
                pick(&mut rng, 3)
            } else {
                1
            });
            for _ in 0..2 {
                win.padding.push(if alone {
                    0
                } else {
                    rng.below(4) as i64 - i64::from(rng.below(8) == 0)
                });
            }
        }
        let Some(out_shape) = win.out_shape(&shape) else {
            continue;
        };
        let kind = KINDS[rng.below(KINDS.len())].clone();
        let et = TYPES[rng.below(TYPES.len())];
        let n: usize = shape.iter().product::<i64>() as usize;
        let x = lit_bytes(&shape, et, random_bytes(&mut rng, et, n));
        let init = init_for(&kind, et, &mut rng);
        let m = module(kind.clone(), &x.ty, &out_shape, &win);
        let (typed, general) = typed_and_general(&m, &[x, init]);
        assert_eq!(
            canonical(&typed),
            canonical(&general),
            "{kind:?} on {et} {shape:?} {win:?}"
        );
        ran += 1;
    }
}

/// An undilated 4-D window and its output shape over `shape`.
fn pool(shape: &[i64], window: [i64; 4], strides: [i64; 4], pad: [i64; 8]) -> (Win, Vec<i64>) {
    let win = Win {
        window: window.to_vec(),
        strides: strides.to_vec(),
        base_dil: vec![1; 4],
        win_dil: vec![1; 4],
        padding: pad.to_vec(),
    };
    let out_shape = win.out_shape(shape).unwrap();
    (win, out_shape)
}

#[test]
fn wide_pools_match_general_path() {
    // NHWC and NCHW pools big enough to split over threads, lanes of several widths.
    let mut rng = Rng(7);
    for (shape, window, strides, pad) in [
        (
            [2, 33, 31, 19],
            [1, 3, 3, 1],
            [1, 2, 2, 1],
            [0, 0, 1, 1, 0, 1, 0, 0],
        ),
        ([3, 8, 40, 41], [1, 1, 2, 2], [1, 1, 2, 2], [0; 8]),
        ([4, 64, 64, 8], [1, 2, 2, 1], [1, 2, 2, 1], [0; 8]),
        // Channels folded in register blocks of 32: two blocks and a rest, exactly two.
        (
            [2, 9, 10, 70],
            [1, 3, 3, 1],
            [1, 2, 2, 1],
            [0, 0, 1, 1, 1, 1, 0, 0],
        ),
        ([3, 16, 16, 64], [1, 2, 2, 1], [1, 2, 2, 1], [0; 8]),
    ] {
        for (kind, et) in [
            (OpKind::Add, ElementType::F32),
            (OpKind::Maximum, ElementType::F32),
            (OpKind::Add, ElementType::BF16),
            (OpKind::Minimum, ElementType::F64),
            (OpKind::Maximum, ElementType::S32),
        ] {
            let (win, out_shape) = pool(&shape, window, strides, pad);
            let n = shape.iter().product::<i64>() as usize;
            let x = lit_bytes(&shape, et, random_bytes(&mut rng, et, n));
            let init = init_for(&kind, et, &mut Rng(1));
            let m = module(kind.clone(), &x.ty, &out_shape, &win);
            let (typed, general) = typed_and_general(&m, &[x, init]);
            assert_eq!(
                canonical(&typed),
                canonical(&general),
                "{kind:?} on {et} {shape:?}"
            );
        }
    }
}

/// Window folds of one line of `x` as XLA's CPU backend computes a scan: plain windows up
/// to [`BASE`], else blocks of `BASE` (padded with `init`), block totals scanned
/// exclusively the same way, and `f(output, carry)`.
fn xla_scan<T: Copy>(x: &[T], init: T, reverse: bool, f: &dyn Fn(T, T) -> T) -> Vec<T> {
    let n = x.len();
    let window = |i: usize, len: usize, at: &dyn Fn(usize) -> T| {
        let range = if reverse { i..len } else { 0..i + 1 };
        range.fold(init, |acc, k| f(acc, at(k)))
    };
    if n <= BASE {
        return (0..n).map(|i| window(i, n, &|k| x[k])).collect();
    }
    let blocks = n.div_ceil(BASE);
    let padded = |k: usize| if k < n { x[k] } else { init };
    let mut out = vec![init; blocks * BASE];
    for b in 0..blocks {
        for i in 0..BASE {
            out[b * BASE + i] = window(i, BASE, &|k| padded(b * BASE + k));
        }
    }
    let totals: Vec<T> = (0..blocks)
        .map(|b| out[b * BASE + if reverse { 0 } else { BASE - 1 }])
        .collect();
    let scanned = xla_scan(&totals, init, reverse, f);
    for b in 0..blocks {
        let carry = match reverse {
            false if b == 0 => init,
            false => scanned[b - 1],
            true if b + 1 == blocks => init,
            true => scanned[b + 1],
        };
        for v in &mut out[b * BASE..(b + 1) * BASE] {
            *v = f(*v, carry);
        }
    }
    out.truncate(n);
    out
}

/// The scan of `x` (f32) along `axis` with the window XLA's lowering of `cumsum` uses.
fn scan_case(kind: OpKind, x: &Literal, axis: usize, reverse: bool, exclusive: bool) -> Literal {
    let shape = &x.ty.shape;
    let n = shape[axis];
    let rank = shape.len();
    let mut win = Win {
        window: vec![1; rank],
        strides: vec![1; rank],
        base_dil: vec![1; rank],
        win_dil: vec![1; rank],
        padding: vec![0; 2 * rank],
    };
    win.window[axis] = n;
    let pad = if exclusive { n } else { n - 1 };
    win.padding[2 * axis + usize::from(reverse)] = pad;
    let out_shape = win.out_shape(shape).unwrap();
    let init = match kind {
        OpKind::Add => 0.0f32,
        OpKind::Multiply => 1.0,
        _ => f32::NEG_INFINITY,
    };
    let m = module(kind, &x.ty, &out_shape, &win);
    crate::eval::run_function(&m, "main", &[x.clone(), f32s(&[], &[init])])
        .unwrap()
        .remove(0)
}

#[test]
fn scans_follow_xla_tree_order() {
    let mut rng = Rng(42);
    let cases: [(&[i64], usize); 7] = [
        (&[17], 0),
        (&[300], 0),
        (&[4097], 0),
        (&[3, 257], 1),
        (&[40, 5], 0),
        (&[2, 33, 3], 1),
        (&[16, 4], 0),
    ];
    for (shape, axis) in cases {
        for kind in [OpKind::Add, OpKind::Multiply, OpKind::Maximum] {
            for (reverse, exclusive) in [(false, false), (true, false), (false, true), (true, true)]
            {
                let n: usize = shape.iter().product::<i64>() as usize;
                let vals: Vec<f32> = (0..n)
                    .map(|_| match kind {
                        // Products near 1 keep long lines finite.
                        OpKind::Multiply => 1.0 + ((rng.unit() - 0.5) * 0.01) as f32,
                        _ => edge_float(&mut rng),
                    })
                    .collect();
                let x = f32s(shape, &vals);
                let got = to_f32(&scan_case(kind.clone(), &x, axis, reverse, exclusive));
                let f: &dyn Fn(f32, f32) -> f32 = match kind {
                    OpKind::Add => &|a, b| a + b,
                    OpKind::Multiply => &|a, b| a * b,
                    _ => &super::super::elementwise::max_op::<f32>,
                };
                let init = match kind {
                    OpKind::Add => 0.0f32,
                    OpKind::Multiply => 1.0,
                    _ => f32::NEG_INFINITY,
                };
                // The model, line by line, flushing denormals as the evaluator does.
                let _flush = oxla_simd::FlushDenormals::new();
                let len = shape[axis] as usize;
                let outer: usize = shape[..axis].iter().product::<i64>() as usize;
                let inner: usize = shape[axis + 1..].iter().product::<i64>() as usize;
                let out_len = len + usize::from(exclusive);
                let mut want = vec![0.0f32; outer * out_len * inner];
                for o in 0..outer {
                    for l in 0..inner {
                        let line: Vec<f32> =
                            (0..len).map(|i| vals[(o * len + i) * inner + l]).collect();
                        let mut s = xla_scan(&line, init, reverse, f);
                        if exclusive {
                            if reverse {
                                s.push(init);
                            } else {
                                s.insert(0, init);
                            }
                        }
                        for (i, v) in s.into_iter().enumerate() {
                            want[(o * out_len + i) * inner + l] = v;
                        }
                    }
                }
                let bits = |v: &[f32]| -> Vec<u32> {
                    v.iter()
                        .map(|x| if x.is_nan() { 0x7fc0_0000 } else { x.to_bits() })
                        .collect()
                };
                assert_eq!(
                    bits(&got),
                    bits(&want),
                    "{kind:?} {shape:?} axis {axis} reverse {reverse} exclusive {exclusive}"
                );
            }
        }
    }
}

#[test]
fn short_scans_match_general_path() {
    // Up to the base length a scan is a plain window: the typed loops and the general path
    // agree on it (and on one element past it, the model above takes over).
    let mut rng = Rng(3);
    for n in [1usize, 2, 7, 16] {
        for reverse in [false, true] {
            let vals: Vec<f32> = (0..n * 3).map(|_| edge_float(&mut rng)).collect();
            let x = f32s(&[n as i64, 3], &vals);
            let mut win = Win {
                window: vec![n as i64, 1],
                strides: vec![1, 1],
                base_dil: vec![1, 1],
                win_dil: vec![1, 1],
                padding: vec![0; 4],
            };
            win.padding[usize::from(reverse)] = n as i64 - 1;
            let out_shape = win.out_shape(&x.ty.shape).unwrap();
            let m = module(OpKind::Add, &x.ty, &out_shape, &win);
            let (typed, general) = typed_and_general(&m, &[x, f32s(&[], &[0.0])]);
            assert_eq!(
                canonical(&typed),
                canonical(&general),
                "n {n} reverse {reverse}"
            );
        }
    }
}

#[test]
fn long_scan_runs_in_linear_memory() {
    // A million-element cumulative sum: as windows it would list 10^12 positions.
    let n = 1 << 20;
    let x = f32s(&[n], &vec![1.0; n as usize]);
    let got = to_f32(&scan_case(OpKind::Add, &x, 0, false, false));
    assert_eq!(got[0], 1.0);
    assert_eq!(got[(n - 1) as usize], n as f32);
}

/// `main(x, source, init) = select_and_scatter(x, source, init)` selecting with
/// `compare(dir, selected, candidate)` and scattering with `add`.
fn select_and_scatter_module(
    x: &TensorType,
    source_shape: &[i64],
    win: &Win,
    dir: crate::attrs::ComparisonDirection,
) -> Module {
    let et = x.element_type;
    let (mut b, p) = FuncBuilder::new(&[Type::Tensor(x.clone()), t(source_shape, et), t(&[], et)]);
    let s = t(&[], et);
    let select = b.region(&[s.clone(), s.clone()], |b, a| {
        vec![b.compare(dir, a[0], a[1], &[])]
    });
    let scatter = b.region(&[s.clone(), s.clone()], |b, a| {
        vec![b.op(OpKind::Add, &[a[0], a[1]], s.clone(), vec![])]
    });
    let mut attrs = win.attrs();
    attrs.retain(|(name, _)| !name.ends_with("dilations"));
    let r = b.op_full(
        OpKind::SelectAndScatter,
        &p,
        &[Type::Tensor(x.clone())],
        attrs,
        vec![select, scatter],
    );
    b.finish(&r)
}

#[test]
fn typed_select_and_scatter_matches_general_path() {
    use crate::attrs::ComparisonDirection as D;
    let mut rng = Rng(0x5eed);
    let mut ran = 0;
    while ran < 300 {
        let rank = 1 + rng.below(4);
        let shape: Vec<i64> = (0..rank).map(|_| rng.below(7) as i64).collect();
        let mut win = Win {
            window: vec![],
            strides: vec![],
            base_dil: vec![1; rank],
            win_dil: vec![1; rank],
            padding: vec![],
        };
        for _ in 0..rank {
            let alone = rng.below(3) == 0;
            let pick = |rng: &mut Rng, n: usize| if alone { 1 } else { 1 + rng.below(n) as i64 };
            win.window.push(pick(&mut rng, 4));
            win.strides.push(pick(&mut rng, 3));
            for _ in 0..2 {
                win.padding
                    .push(if alone { 0 } else { rng.below(3) as i64 });
            }
        }
        let Some(source_shape) = win.out_shape(&shape) else {
            continue;
        };
        let et = [ElementType::F32, ElementType::F64, ElementType::S32][rng.below(3)];
        let n: usize = shape.iter().product::<i64>() as usize;
        let m: usize = source_shape.iter().product::<i64>() as usize;
        // Few distinct values, so that windows hold ties (and -0 against +0, and NaNs).
        let pool = [0.0f32, -0.0, 1.0, 2.0, f32::NAN, -1.0];
        let x: Vec<u8> = (0..n)
            .flat_map(|_| {
                let v = pool[rng.below(pool.len())];
                match et {
                    ElementType::F32 => v.to_le_bytes().to_vec(),
                    ElementType::F64 => f64::from(v).to_le_bytes().to_vec(),
                    _ => (if v.is_nan() { 7 } else { v as i32 })
                        .to_le_bytes()
                        .to_vec(),
                }
            })
            .collect();
        let x = lit_bytes(&shape, et, x);
        let source = lit_bytes(&source_shape, et, random_bytes(&mut rng, et, m));
        let init = init_for(&OpKind::Add, et, &mut rng);
        let dir = [D::Ge, D::Gt, D::Le, D::Lt][rng.below(4)];
        let module = select_and_scatter_module(&x.ty, &source_shape, &win, dir);
        let (typed, general) = typed_and_general(&module, &[x, source, init]);
        assert_eq!(
            canonical(&typed),
            canonical(&general),
            "{dir:?} on {et} {shape:?} {win:?}"
        );
        ran += 1;
    }
}

/// `reduce_window(x, init)` of `kind`, then a product with `broadcast(s)` on the side given.
fn scaled_module(
    kind: OpKind,
    x: &TensorType,
    out_shape: &[i64],
    win: &Win,
    first: bool,
) -> Module {
    let f = ElementType::F32;
    let (mut b, p) = FuncBuilder::new(&[Type::Tensor(x.clone()), t(&[], f), t(&[], f)]);
    let s = t(&[], f);
    let region = b.region(&[s.clone(), s.clone()], |b, a| {
        vec![b.op(kind.clone(), &[a[0], a[1]], s.clone(), vec![])]
    });
    let r = b.op_full(
        OpKind::ReduceWindow,
        &p[..2],
        &[t(out_shape, f)],
        win.attrs(),
        vec![region],
    );
    let dims = vec![("broadcast_dimensions", i64s(&[]))];
    let factor = b.op(OpKind::BroadcastInDim, &[p[2]], t(out_shape, f), dims);
    let operands = if first {
        [r[0], factor]
    } else {
        [factor, r[0]]
    };
    let product = b.op(OpKind::Multiply, &operands, t(out_shape, f), vec![]);
    b.finish(&[product])
}

#[test]
fn scaled_windows_give_the_bits_of_the_window_then_the_product() {
    // An average pool's `/ 4` joins the window fold (a `ScaledWindow` step); against the
    // window and the product run one after the other (no fusion), on the typed and the
    // general path, the window's value on either side of the product.
    let f = ElementType::F32;
    let mut rng = Rng(0x5ca1ed);
    for (shape, window, strides, pad) in [
        ([2, 16, 16, 40], [1, 2, 2, 1], [1, 2, 2, 1], [0; 8]),
        (
            [2, 9, 10, 7],
            [1, 3, 3, 1],
            [1, 2, 2, 1],
            [0, 0, 1, 1, 1, 1, 0, 0],
        ),
        ([3, 4, 40, 41], [1, 1, 2, 2], [1, 1, 2, 2], [0; 8]),
        (
            [1, 1, 1, 300],
            [1, 1, 1, 300],
            [1, 1, 1, 1],
            [0, 0, 0, 0, 0, 0, 299, 0],
        ),
    ] {
        let (win, out_shape) = pool(&shape, window, strides, pad);
        let n = shape.iter().product::<i64>() as usize;
        for (kind, first, factor) in [
            (OpKind::Add, true, 0.25f32),
            (OpKind::Add, false, 1.0 / 9.0),
            (OpKind::Maximum, true, -3.0),
            (OpKind::Add, true, f32::NAN),
            (OpKind::Add, false, 1e-39),
        ] {
            let x = lit_bytes(&shape, f, random_bytes(&mut rng, f, n));
            let m = scaled_module(kind.clone(), &x.ty, &out_shape, &win, first);
            let block = &m.functions[0].body.blocks[0];
            let plan = super::super::plan::plan_block(&m.functions[0], block, true, true);
            let scaled = plan
                .steps
                .iter()
                .filter(|s| matches!(s, super::super::plan::Step::ScaledWindow(_)))
                .count();
            assert_eq!(
                scaled, 1,
                "{shape:?}: the window and product were not joined"
            );
            let init = if kind == OpKind::Add {
                0.0
            } else {
                f32::NEG_INFINITY
            };
            let args = [x, f32s(&[], &[init]), f32s(&[], &[factor])];
            let run = |fuse: bool| {
                let options = crate::eval::EvalOptions { fuse };
                let none = crate::eval::SingleDevice;
                crate::eval::run_function_with_options(&m, "main", &args, &none, options)
                    .unwrap()
                    .remove(0)
            };
            let apart = canonical(&run(false));
            assert_eq!(
                canonical(&run(true)),
                apart,
                "{kind:?} {shape:?} x {factor}"
            );
            GENERAL_ONLY.with(|g| g.set(true));
            let general = run(true);
            GENERAL_ONLY.with(|g| g.set(false));
            assert_eq!(canonical(&general), apart, "general {kind:?} {shape:?}");
        }
    }
}
