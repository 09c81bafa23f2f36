//! The data-movement fast paths (`shape` and `gather_scatter`) against the general paths
//! they stand for: random shapes, element sizes of 1 to 16 bytes, negative and interior
//! padding, out-of-bounds and repeated indices, empty operands, and operands updated in
//! place at their last use. Every comparison is on the result's bytes.

use super::shape::with_general_paths;
use super::testing::*;
use crate::{Attribute, ElementType, Literal, Module, OpKind, TensorType, Type, ValueId};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A value in `lo..=hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as usize) as i64
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// Element types of every size the fast paths handle (1, 2, 4, 8 and 16 bytes).
const TYPES: [ElementType; 12] = [
    ElementType::Pred,
    ElementType::S8,
    ElementType::U8,
    ElementType::S16,
    ElementType::BF16,
    ElementType::F16,
    ElementType::S32,
    ElementType::F32,
    ElementType::S64,
    ElementType::F64,
    ElementType::C64,
    ElementType::C128,
];

/// A value of `et`'s size: special float values (NaN, infinities, signed zeros, a
/// denormal), small numbers (so sums repeat and round), or random bits.
fn element(rng: &mut Rng, et: ElementType) -> Vec<u8> {
    let size = et.byte_size();
    match et {
        ElementType::Pred => vec![rng.below(2) as u8],
        ElementType::F32 => {
            let specials = [f32::NAN, f32::INFINITY, -0.0, 0.0, 1e-40, f32::MAX];
            let v = if rng.chance(10) {
                specials[rng.below(specials.len())]
            } else if rng.chance(50) {
                rng.range(-8, 8) as f32 * 0.1
            } else {
                f32::from_bits(rng.next() as u32)
            };
            v.to_le_bytes().to_vec()
        }
        ElementType::F64 => {
            let specials = [f64::NAN, f64::NEG_INFINITY, -0.0, 0.0, 1e-310, 0.1];
            let v = if rng.chance(10) {
                specials[rng.below(specials.len())]
            } else if rng.chance(50) {
                rng.range(-8, 8) as f64 * 0.1
            } else {
                f64::from_bits(rng.next())
            };
            v.to_le_bytes().to_vec()
        }
        _ if et.is_int() && rng.chance(50) => {
            let v = rng.range(-5, 5);
            v.to_le_bytes()[..size].to_vec()
        }
        _ => (0..size).map(|_| rng.next() as u8).collect(),
    }
}

fn random_lit(rng: &mut Rng, shape: &[i64], et: ElementType) -> Literal {
    let n: i64 = shape.iter().product();
    let data = (0..n).flat_map(|_| element(rng, et)).collect();
    lit_bytes(shape, et, data)
}

fn random_shape(rng: &mut Rng, max_rank: usize, max_extent: i64) -> Vec<i64> {
    let rank = rng.below(max_rank + 1);
    (0..rank)
        .map(|_| {
            if rng.chance(5) {
                0
            } else {
                rng.range(1, max_extent)
            }
        })
        .collect()
}

/// Runs `main` of `module` on `args` with and without the fast paths and checks that the
/// results have the same bytes; returns them.
fn same_both_ways(module: &Module, args: &[Literal], what: &str) -> Vec<Literal> {
    compare_both_ways(module, args, what, false)
}

/// [`same_both_ways`] for scatters that combine floats: where both the old value and an
/// update are NaN, which payload survives depends on the add kernel (the unfused
/// elementwise one here, the decoded one in the general path), so any NaN matches any NaN.
fn same_up_to_nan_payloads(module: &Module, args: &[Literal], what: &str) -> Vec<Literal> {
    compare_both_ways(module, args, what, true)
}

fn is_nan(et: ElementType, bytes: &[u8]) -> bool {
    match et {
        ElementType::F32 => f32::from_le_bytes(bytes.try_into().expect("4 bytes")).is_nan(),
        ElementType::F64 => f64::from_le_bytes(bytes.try_into().expect("8 bytes")).is_nan(),
        _ => false,
    }
}

fn compare_both_ways(module: &Module, args: &[Literal], what: &str, any_nan: bool) -> Vec<Literal> {
    let fast = super::run_function(module, "main", args).unwrap_or_else(|e| panic!("{what}: {e}"));
    let general = with_general_paths(|| super::run_function(module, "main", args))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(fast.len(), general.len(), "{what}");
    for (f, g) in fast.iter().zip(&general) {
        assert_eq!(f.ty, g.ty, "{what}");
        let size = f.ty.element_type.byte_size().max(1);
        let differ = f
            .data
            .chunks(size)
            .zip(g.data.chunks(size))
            .position(|(a, b)| {
                let et = f.ty.element_type;
                a != b && !(any_nan && is_nan(et, a) && is_nan(et, b))
            });
        if let Some(i) = differ {
            let element = |d: &[u8]| d[i * size..(i + 1) * size].to_vec();
            panic!(
                "{what}: element {i} of {} differs: fast {:?}, general {:?}",
                f.ty,
                element(&f.data),
                element(&g.data)
            );
        }
    }
    fast
}

/// A module applying one op to its arguments; with `copy_first`, the first argument is
/// copied first (a `concatenate` of one operand), so the op sees a value at its last use
/// that nothing else shares, which it may update in place.
fn one_op(
    kind: OpKind,
    args: &[&Literal],
    result: TensorType,
    attrs: Vec<(&str, Attribute)>,
    copy_first: bool,
) -> Module {
    one_op_with_region(kind, args, result, attrs, copy_first, None)
}

fn one_op_with_region(
    kind: OpKind,
    args: &[&Literal],
    result: TensorType,
    attrs: Vec<(&str, Attribute)>,
    copy_first: bool,
    body: Option<&str>,
) -> Module {
    let types: Vec<Type> = args.iter().map(|a| Type::Tensor(a.ty.clone())).collect();
    let (mut b, mut params) = FuncBuilder::new(&types);
    if copy_first && args[0].ty.rank() > 0 {
        params[0] = b.op(
            OpKind::Concatenate,
            &[params[0]],
            types[0].clone(),
            vec![("dimension", int(0))],
        );
    }
    let regions = match body {
        Some(body) => vec![combiner(&mut b, body, args[0].ty.element_type)],
        None => Vec::new(),
    };
    let r = b.op_full(kind, &params, &[Type::Tensor(result)], attrs, regions);
    b.finish(&r)
}

/// A scatter body: `set` returns the update, `sub` is a body only the general path runs,
/// and the others apply that binary op to the old value and the update.
fn combiner(b: &mut FuncBuilder, body: &str, et: ElementType) -> crate::Region {
    let s = t(&[], et);
    b.region(&[s.clone(), s.clone()], |b, a: &[ValueId]| {
        let kind = match body {
            "set" => return vec![a[1]],
            "add" => OpKind::Add,
            "mul" => OpKind::Multiply,
            "max" => OpKind::Maximum,
            "min" => OpKind::Minimum,
            _ => OpKind::Subtract,
        };
        vec![b.op(kind, &[a[0], a[1]], s.clone(), vec![])]
    })
}

#[test]
fn pad_by_rows_matches_the_element_path() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..600 {
        let et = TYPES[rng.below(TYPES.len())];
        let shape = random_shape(&mut rng, 4, 5);
        let rank = shape.len();
        let mut lo = Vec::new();
        let mut hi = Vec::new();
        let mut interior = Vec::new();
        let mut out = Vec::new();
        for &n in &shape {
            let unpadded = rng.chance(30);
            let l = if unpadded { 0 } else { rng.range(-3, 3) };
            let i = if unpadded { 0 } else { rng.range(0, 2) };
            let body = n + (n - 1).max(0) * i;
            // Keep the output size at least zero.
            let h = if unpadded {
                0
            } else {
                rng.range(-3, 3).max(-(l + body))
            };
            lo.push(l);
            hi.push(h);
            interior.push(i);
            out.push(l + h + body);
        }
        let x = random_lit(&mut rng, &shape, et);
        let value = random_lit(&mut rng, &[], et);
        let attrs = vec![
            ("edge_padding_low", i64s(&lo)),
            ("edge_padding_high", i64s(&hi)),
            ("interior_padding", i64s(&interior)),
        ];
        let m = one_op(
            OpKind::Pad,
            &[&x, &value],
            TensorType::new(out, et),
            attrs,
            false,
        );
        let what = format!("case {case}: pad {et} {shape:?} lo {lo:?} hi {hi:?} interior {interior:?} (rank {rank})");
        same_both_ways(&m, &[x, value], &what);
    }
}

#[test]
fn pad_of_a_multi_byte_value_fills_whole_elements() {
    // 1.0f32 has unlike bytes, so the fill copies whole elements, past one 4 KiB block.
    let x = f32s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let value = f32s(&[], &[-1.5]);
    let attrs = vec![
        ("edge_padding_low", i64s(&[1, 700])),
        ("edge_padding_high", i64s(&[2, 800])),
        ("interior_padding", i64s(&[1, 0])),
    ];
    let m = one_op(
        OpKind::Pad,
        &[&x, &value],
        TensorType::new(vec![6, 1503], ElementType::F32),
        attrs,
        false,
    );
    let r = same_both_ways(&m, &[x, value], "wide pad");
    let v = to_f32(&r[0]);
    assert_eq!(v[1503 + 700..1503 + 703], [1.0, 2.0, 3.0]);
    assert_eq!(v.iter().filter(|&&e| e == -1.5).count(), 6 * 1503 - 6);
}

#[test]
fn reverse_slice_and_broadcast_match_the_element_path() {
    let mut rng = Rng(12345);
    for case in 0..600 {
        let et = TYPES[rng.below(TYPES.len())];
        let shape = random_shape(&mut rng, 4, 6);
        let rank = shape.len();
        let x = random_lit(&mut rng, &shape, et);
        let what = format!("case {case}: {et} {shape:?}");
        // reverse over a random subset of the dimensions
        let dims: Vec<i64> = (0..rank as i64).filter(|_| rng.chance(50)).collect();
        let m = one_op(
            OpKind::Reverse,
            &[&x],
            x.ty.clone(),
            vec![("dimensions", i64s(&dims))],
            false,
        );
        same_both_ways(
            &m,
            std::slice::from_ref(&x),
            &format!("{what} reverse {dims:?}"),
        );
        // a strided slice
        let mut start = Vec::new();
        let mut limit = Vec::new();
        let mut step = Vec::new();
        let mut out = Vec::new();
        for &n in &shape {
            let s = rng.range(0, n);
            let l = rng.range(s, n);
            let k = rng.range(1, 3);
            start.push(s);
            limit.push(l);
            step.push(k);
            out.push((l - s + k - 1) / k);
        }
        let attrs = vec![
            ("start_indices", i64s(&start)),
            ("limit_indices", i64s(&limit)),
            ("strides", i64s(&step)),
        ];
        let m = one_op(OpKind::Slice, &[&x], TensorType::new(out, et), attrs, false);
        same_both_ways(&m, std::slice::from_ref(&x), &format!("{what} slice"));
        // a broadcast into new and size-1 dimensions
        let mut out = Vec::new();
        let mut dims = Vec::new();
        for &n in &shape {
            if rng.chance(40) {
                out.push(rng.range(1, 4));
            }
            dims.push(out.len() as i64);
            out.push(if n == 1 { rng.range(1, 5) } else { n });
        }
        if rng.chance(50) {
            out.push(rng.range(1, 7));
        }
        let m = one_op(
            OpKind::BroadcastInDim,
            &[&x],
            TensorType::new(out.clone(), et),
            vec![("broadcast_dimensions", i64s(&dims))],
            false,
        );
        same_both_ways(&m, &[x], &format!("{what} broadcast to {out:?}"));
    }
}

/// Broadcasts that only add unit dimensions share the operand's bytes; one that moves
/// dimensions (a transpose written as a broadcast) does not.
#[test]
fn unit_dimension_broadcasts_match_the_general_path() {
    let mut rng = Rng(11);
    for (from, to, dims) in [
        (vec![5], vec![5, 1], vec![0]),
        (vec![5], vec![1, 5], vec![1]),
        (vec![2, 1, 3], vec![2, 1, 3, 1], vec![0, 1, 2]),
        (vec![2, 3], vec![3, 2], vec![1, 0]),
        (vec![0, 4], vec![0, 1, 4], vec![0, 2]),
    ] {
        let x = random_lit(&mut rng, &from, ElementType::S32);
        let m = one_op(
            OpKind::BroadcastInDim,
            &[&x],
            TensorType::new(to.clone(), ElementType::S32),
            vec![("broadcast_dimensions", i64s(&dims))],
            false,
        );
        let r = same_both_ways(&m, std::slice::from_ref(&x), &format!("{from:?} to {to:?}"));
        assert_eq!(r[0].data == x.data, dims.windows(2).all(|w| w[0] < w[1]));
    }
}

#[test]
fn scalar_broadcast_fills_every_element() {
    for (et, bytes) in [
        (ElementType::F32, 1.0f32.to_le_bytes().to_vec()),
        (ElementType::S8, vec![0x7f]),
        (ElementType::C128, (0..16).collect()),
    ] {
        let x = lit_bytes(&[], et, bytes.clone());
        let m = one_op(
            OpKind::BroadcastInDim,
            &[&x],
            TensorType::new(vec![300, 7], et),
            vec![("broadcast_dimensions", i64s(&[]))],
            false,
        );
        let r = same_both_ways(&m, &[x], "scalar broadcast");
        assert!(r[0].data.chunks_exact(bytes.len()).all(|c| c == bytes));
    }
}

#[test]
fn dynamic_slices_and_updates_match_the_general_path() {
    let mut rng = Rng(777);
    for case in 0..400 {
        let et = TYPES[rng.below(TYPES.len())];
        let shape = random_shape(&mut rng, 3, 6);
        let x = random_lit(&mut rng, &shape, et);
        let sizes: Vec<i64> = shape.iter().map(|&n| rng.range(0, n)).collect();
        // Starts past either end clamp into range.
        let starts: Vec<Literal> = shape
            .iter()
            .map(|&n| i32s(&[], &[rng.range(-3, n + 3) as i32]))
            .collect();
        let what = format!("case {case}: {et} {shape:?} sizes {sizes:?}");
        let mut args = vec![&x];
        args.extend(starts.iter());
        let m = one_op(
            OpKind::DynamicSlice,
            &args,
            TensorType::new(sizes.clone(), et),
            vec![("slice_sizes", i64s(&sizes))],
            false,
        );
        let owned: Vec<Literal> = args.iter().map(|&l| l.clone()).collect();
        same_both_ways(&m, &owned, &format!("{what} dynamic_slice"));
        let update = random_lit(&mut rng, &sizes, et);
        let mut args = vec![&x, &update];
        args.extend(starts.iter());
        let owned: Vec<Literal> = args.iter().map(|&l| l.clone()).collect();
        let want = updated_slice(&x, &update, &starts);
        for copy_first in [false, true] {
            let m = one_op(
                OpKind::DynamicUpdateSlice,
                &args,
                x.ty.clone(),
                vec![],
                copy_first,
            );
            let r = same_both_ways(&m, &owned, &format!("{what} dus (moved: {copy_first})"));
            assert_eq!(r[0], want, "{what}");
        }
        // The caller's operand is never written.
        assert_eq!(owned[0], x, "{what}");
    }
}

/// `dynamic_update_slice` element by element: each element of `x` inside the update's
/// window (its starts clamped so the window fits) comes from `update`.
fn updated_slice(x: &Literal, update: &Literal, starts: &[Literal]) -> Literal {
    let esize = x.ty.element_type.byte_size();
    let ext = super::context::extents(&x.ty.shape);
    let up = super::context::extents(&update.ty.shape);
    let start: Vec<usize> = starts
        .iter()
        .zip(ext.iter().zip(&up))
        .map(|(s, (&e, &u))| (to_i32(s)[0] as i64).clamp(0, (e - u) as i64) as usize)
        .collect();
    let mut out = x.data.to_vec();
    let n: usize = up.iter().product();
    for k in 0..n {
        let (mut rest, mut src, mut dst) = (k, 0, 0);
        for d in (0..ext.len()).rev() {
            let i = rest % up[d];
            rest /= up[d];
            let (up_stride, x_stride): (usize, usize) =
                (up[d + 1..].iter().product(), ext[d + 1..].iter().product());
            src += i * up_stride;
            dst += (start[d] + i) * x_stride;
        }
        out[dst * esize..(dst + 1) * esize]
            .copy_from_slice(&update.data[src * esize..(src + 1) * esize]);
    }
    lit_bytes(&x.ty.shape, x.ty.element_type, out)
}

/// Gather dimension numbers as attributes.
fn gather_attrs(
    offset: &[i64],
    collapsed: &[i64],
    batching: (&[i64], &[i64]),
    start_map: &[i64],
    index_vector_dim: i64,
    sizes: &[i64],
) -> Vec<(&'static str, Attribute)> {
    vec![
        ("offset_dims", i64s(offset)),
        ("collapsed_slice_dims", i64s(collapsed)),
        ("operand_batching_dims", i64s(batching.0)),
        ("start_indices_batching_dims", i64s(batching.1)),
        ("start_index_map", i64s(start_map)),
        ("index_vector_dim", int(index_vector_dim)),
        ("slice_sizes", i64s(sizes)),
    ]
}

/// A random order of `items`.
fn shuffled(rng: &mut Rng, mut items: Vec<usize>) -> Vec<usize> {
    for i in (1..items.len()).rev() {
        items.swap(i, rng.below(i + 1));
    }
    items
}

/// Random index dimension numbers over an operand of `shape`: which dims the index vector
/// addresses (in order), which of those are collapsed (or inserted), whether dim 0 is a
/// batching dim paired with the first batch dim, the window sizes, the batch shape, and
/// the index values (some out of bounds, many repeated).
struct IndexCase {
    start_map: Vec<usize>,
    collapsed: Vec<usize>,
    batching: bool,
    sizes: Vec<i64>,
    batch: Vec<i64>,
    indices: Literal,
}

impl IndexCase {
    /// The operand dims the window spans: neither collapsed nor batching.
    fn window_dims(&self, rank: usize) -> Vec<usize> {
        let batching = |d: usize| self.batching && d == 0;
        (0..rank)
            .filter(|&d| !self.collapsed.contains(&d) && !batching(d))
            .collect()
    }
}

fn index_case(rng: &mut Rng, shape: &[i64], index_et: ElementType) -> IndexCase {
    let rank = shape.len();
    let batching = rank >= 2 && shape[0] > 0 && rng.chance(20);
    let free: Vec<usize> = (usize::from(batching)..rank).collect();
    let mut start_map = shuffled(rng, free);
    start_map.truncate(rng.range(1, start_map.len().max(1) as i64) as usize);
    let collapsed: Vec<usize> = start_map
        .iter()
        .copied()
        .filter(|&d| shape[d] > 0 && rng.chance(60))
        .collect();
    let sizes: Vec<i64> = (0..rank)
        .map(|d| {
            if collapsed.contains(&d) || (batching && d == 0) {
                1
            } else {
                rng.range(0, shape[d]).max(rng.range(0, shape[d]))
            }
        })
        .collect();
    let mut batch: Vec<i64> = (0..rng.below(3)).map(|_| rng.range(1, 4)).collect();
    if batching {
        batch.insert(0, shape[0]);
    }
    let mut index_shape = batch.clone();
    index_shape.push(start_map.len() as i64);
    let n: i64 = index_shape.iter().product();
    let values: Vec<i64> = (0..n)
        .map(|k| {
            let d = start_map[k as usize % start_map.len()];
            // Mostly in range and few distinct values (so they repeat), some past either end.
            if rng.chance(20) {
                rng.range(-3, shape[d] + 3)
            } else {
                rng.range(0, shape[d] / 2)
            }
        })
        .collect();
    let data = values
        .iter()
        .flat_map(|v| v.to_le_bytes()[..index_et.byte_size()].to_vec())
        .collect();
    IndexCase {
        start_map,
        collapsed,
        batching,
        sizes,
        batch,
        indices: lit_bytes(&index_shape, index_et, data),
    }
}

const INDEX_TYPES: [ElementType; 3] = [ElementType::S32, ElementType::S64, ElementType::U8];

#[test]
fn gather_by_runs_matches_the_element_path() {
    let mut rng = Rng(4242);
    for case in 0..800 {
        let et = TYPES[rng.below(TYPES.len())];
        let mut shape = random_shape(&mut rng, 3, 6);
        if shape.is_empty() {
            shape.push(rng.range(1, 5));
        }
        let rank = shape.len();
        let x = random_lit(&mut rng, &shape, et);
        let index_et = INDEX_TYPES[rng.below(INDEX_TYPES.len())];
        let c = index_case(&mut rng, &shape, index_et);
        let window = c.window_dims(rank);
        let win_sizes: Vec<i64> = window.iter().map(|&d| c.sizes[d]).collect();
        // Window dims last (the fast path's layout), or first (the general path's).
        let trailing = rng.chance(75);
        let nb = c.batch.len();
        let (offset, out): (Vec<i64>, Vec<i64>) = if trailing {
            (
                (nb..nb + window.len()).map(|d| d as i64).collect(),
                c.batch.iter().chain(&win_sizes).copied().collect(),
            )
        } else {
            (
                (0..window.len()).map(|d| d as i64).collect(),
                win_sizes.iter().chain(&c.batch).copied().collect(),
            )
        };
        let to_i64 = |v: &[usize]| v.iter().map(|&d| d as i64).collect::<Vec<_>>();
        let batching: (&[i64], &[i64]) = if c.batching { (&[0], &[0]) } else { (&[], &[]) };
        let attrs = gather_attrs(
            &offset,
            &to_i64(&c.collapsed),
            batching,
            &to_i64(&c.start_map),
            nb as i64,
            &c.sizes,
        );
        let m = one_op(
            OpKind::Gather,
            &[&x, &c.indices],
            TensorType::new(out, et),
            attrs,
            false,
        );
        let what = format!(
            "case {case}: gather {et} {shape:?} map {:?} collapsed {:?} batching {} sizes {:?} batch {:?} trailing {trailing}",
            c.start_map, c.collapsed, c.batching, c.sizes, c.batch
        );
        same_both_ways(&m, &[x, c.indices], &what);
    }
}

#[test]
fn embedding_rows_gather_whole_and_clamp() {
    // emb[idx] as JAX writes it: rows of a 5x3 table, indices past either end clamped.
    let emb = f32s(&[5, 3], &(0..15).map(|v| v as f32).collect::<Vec<_>>());
    let idx = i32s(&[4, 1], &[4, -1, 9, 2]);
    let attrs = gather_attrs(&[1], &[0], (&[], &[]), &[0], 1, &[1, 3]);
    let m = one_op(
        OpKind::Gather,
        &[&emb, &idx],
        TensorType::new(vec![4, 3], ElementType::F32),
        attrs,
        false,
    );
    let r = same_both_ways(&m, &[emb, idx], "embedding");
    let want = [
        12.0, 13.0, 14.0, 0.0, 1.0, 2.0, 12.0, 13.0, 14.0, 6.0, 7.0, 8.0,
    ];
    assert_eq!(to_f32(&r[0]), want);
}

/// Scatter dimension numbers as attributes.
fn scatter_attrs(
    window: &[i64],
    inserted: &[i64],
    batching: (&[i64], &[i64]),
    to_operand: &[i64],
    index_vector_dim: i64,
) -> Vec<(&'static str, Attribute)> {
    vec![
        ("update_window_dims", i64s(window)),
        ("inserted_window_dims", i64s(inserted)),
        ("input_batching_dims", i64s(batching.0)),
        ("scatter_indices_batching_dims", i64s(batching.1)),
        ("scatter_dims_to_operand_dims", i64s(to_operand)),
        ("index_vector_dim", int(index_vector_dim)),
    ]
}

/// Element types the combining bodies are defined on, and the bodies.
const SCATTER_TYPES: [ElementType; 9] = [
    ElementType::F32,
    ElementType::F64,
    ElementType::S8,
    ElementType::U8,
    ElementType::S16,
    ElementType::S32,
    ElementType::S64,
    ElementType::BF16,
    ElementType::Pred,
];
const BODIES: [&str; 6] = ["set", "add", "mul", "max", "min", "sub"];

#[test]
fn scatter_by_runs_matches_the_wave_path() {
    let mut rng = Rng(31337);
    for case in 0..800 {
        let et = SCATTER_TYPES[rng.below(SCATTER_TYPES.len())];
        let body = BODIES[rng.below(BODIES.len())];
        if et == ElementType::Pred && body != "set" {
            continue;
        }
        let mut shape = random_shape(&mut rng, 3, 6);
        if shape.is_empty() {
            shape.push(rng.range(1, 5));
        }
        let rank = shape.len();
        let x = random_lit(&mut rng, &shape, et);
        let index_et = INDEX_TYPES[rng.below(INDEX_TYPES.len())];
        let c = index_case(&mut rng, &shape, index_et);
        let window = c.window_dims(rank);
        let win_sizes: Vec<i64> = window.iter().map(|&d| c.sizes[d]).collect();
        let trailing = rng.chance(75);
        let nb = c.batch.len();
        let (window_dims, upd_shape): (Vec<i64>, Vec<i64>) = if trailing {
            (
                (nb..nb + window.len()).map(|d| d as i64).collect(),
                c.batch.iter().chain(&win_sizes).copied().collect(),
            )
        } else {
            (
                (0..window.len()).map(|d| d as i64).collect(),
                win_sizes.iter().chain(&c.batch).copied().collect(),
            )
        };
        let updates = random_lit(&mut rng, &upd_shape, et);
        let to_i64 = |v: &[usize]| v.iter().map(|&d| d as i64).collect::<Vec<_>>();
        let batching: (&[i64], &[i64]) = if c.batching { (&[0], &[0]) } else { (&[], &[]) };
        let attrs = scatter_attrs(
            &window_dims,
            &to_i64(&c.collapsed),
            batching,
            &to_i64(&c.start_map),
            nb as i64,
        );
        let copy_first = rng.chance(50);
        let m = one_op_with_region(
            OpKind::Scatter,
            &[&x, &c.indices, &updates],
            x.ty.clone(),
            attrs,
            copy_first,
            Some(body),
        );
        let what = format!(
            "case {case}: scatter-{body} {et} {shape:?} map {:?} inserted {:?} batching {} updates {upd_shape:?} trailing {trailing} moved {copy_first}",
            c.start_map, c.collapsed, c.batching
        );
        let args = [x.clone(), c.indices, updates];
        same_up_to_nan_payloads(&m, &args, &what);
        // The caller's input is never written.
        assert_eq!(args[0], x, "{what}");
    }
}

#[test]
fn scatter_add_sums_repeated_rows_in_update_order() {
    // zeros.at[idx].add(u) with idx repeating row 1 three times, and an out-of-bounds
    // row (5) and a negative one (-1) that are dropped.
    let x = f32s(&[3, 2], &[0.0; 6]);
    let idx = i32s(&[5, 1], &[1, 5, 1, -1, 1]);
    let u = f32s(
        &[5, 2],
        &[1e8, 1.0, 9.0, 9.0, -1e8, 2.0, 9.0, 9.0, 1.0, 3.0],
    );
    let attrs = scatter_attrs(&[1], &[0], (&[], &[]), &[0], 1);
    for copy_first in [false, true] {
        let m = one_op_with_region(
            OpKind::Scatter,
            &[&x, &idx, &u],
            x.ty.clone(),
            attrs.clone(),
            copy_first,
            Some("add"),
        );
        let r = same_both_ways(&m, &[x.clone(), idx.clone(), u.clone()], "repeated rows");
        // (0 + 1e8) + -1e8 + 1 = 1, in that order.
        assert_eq!(to_f32(&r[0]), vec![0.0, 0.0, 1.0, 6.0, 0.0, 0.0]);
    }
}

#[test]
fn scatter_set_of_a_block_writes_only_that_block() {
    // a.at[1:3, 1:4].set(u) as JAX writes it: one window, no batch dimensions.
    let a = f32s(&[4, 5], &(0..20).map(|v| v as f32).collect::<Vec<_>>());
    let starts = i32s(&[2], &[1, 1]);
    let u = f32s(&[2, 3], &[-1.0; 6]);
    let attrs = scatter_attrs(&[0, 1], &[], (&[], &[]), &[0, 1], 0);
    let m = one_op_with_region(
        OpKind::Scatter,
        &[&a, &starts, &u],
        a.ty.clone(),
        attrs,
        true,
        Some("set"),
    );
    let r = same_both_ways(&m, &[a, starts, u], "block set");
    let v = to_f32(&r[0]);
    assert_eq!(v[5..10], [5.0, -1.0, -1.0, -1.0, 9.0]);
    assert_eq!(v[10..15], [10.0, -1.0, -1.0, -1.0, 14.0]);
    assert_eq!(v[15..20], [15.0, 16.0, 17.0, 18.0, 19.0]);
}

#[test]
fn outputs_split_over_threads_match_the_general_path() {
    // Outputs past the split threshold, in pieces that end inside rows.
    let mut rng = Rng(99);
    let x = random_lit(&mut rng, &[3, 1_000_003], ElementType::S8);
    let m = one_op(
        OpKind::Reverse,
        &[&x],
        x.ty.clone(),
        vec![("dimensions", i64s(&[1]))],
        false,
    );
    same_both_ways(&m, std::slice::from_ref(&x), "reverse");
    let m = one_op(
        OpKind::Concatenate,
        &[&x, &x],
        TensorType::new(vec![3, 2_000_006], ElementType::S8),
        vec![("dimension", int(1))],
        false,
    );
    same_both_ways(&m, &[x.clone(), x.clone()], "concatenate");
    let row = random_lit(&mut rng, &[1, 7], ElementType::F32);
    let m = one_op(
        OpKind::BroadcastInDim,
        &[&row],
        TensorType::new(vec![100_003, 7], ElementType::F32),
        vec![("broadcast_dimensions", i64s(&[0, 1]))],
        false,
    );
    same_both_ways(&m, &[row], "broadcast");
    // Rows of a table gathered and added to, the input shared with the caller.
    let table = random_lit(&mut rng, &[1000, 700], ElementType::F32);
    let idx = lit_bytes(
        &[1500, 1],
        ElementType::S32,
        (0..1500)
            .flat_map(|_| (rng.range(-5, 1005) as i32).to_le_bytes())
            .collect(),
    );
    let attrs = gather_attrs(&[1], &[0], (&[], &[]), &[0], 1, &[1, 700]);
    let m = one_op(
        OpKind::Gather,
        &[&table, &idx],
        TensorType::new(vec![1500, 700], ElementType::F32),
        attrs,
        false,
    );
    same_both_ways(&m, &[table.clone(), idx.clone()], "gather");
    let updates = random_lit(&mut rng, &[1500, 700], ElementType::F32);
    let attrs = scatter_attrs(&[1], &[0], (&[], &[]), &[0], 1);
    let m = one_op_with_region(
        OpKind::Scatter,
        &[&table, &idx, &updates],
        table.ty.clone(),
        attrs,
        false,
        Some("add"),
    );
    same_up_to_nan_payloads(&m, &[table, idx, updates], "scatter");
}
