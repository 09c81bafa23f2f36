//! Generated tile code against a scalar evaluation of the same program, bit for bit.

use oxla_codegen::{
    available, loops_available, Cmp, Input, Inst, LoopBody, LoopCode, LoopEnd, Target, TileCode,
    TileProgram, CHUNK,
};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Mostly ordinary values, with zeros of both signs, infinities, NaN and denormals, and
    /// lanes holding small integers (shift counts), any 32 bits, and values past the
    /// integer ranges (for conversions).
    fn value(&mut self) -> f32 {
        match self.below(30) {
            24 | 25 => f32::from_bits(self.below(40) as u32),
            26 => f32::from_bits((self.next() as u32) << 1 | (self.next() as u32 & 1)),
            27 => f32::from_bits(u32::MAX - self.below(3) as u32),
            28 => [
                2147483648.0f32,
                -2147483648.0,
                4294967296.0,
                3e9,
                -3e9,
                1e10,
            ][self.below(6)],
            29 => self.below(5) as f32,
            0 => 0.0,
            1 => -0.0,
            2 => f32::INFINITY,
            3 => f32::NEG_INFINITY,
            4 => f32::NAN,
            5 => f32::from_bits(1 + self.below(1000) as u32),
            _ => (self.next() as f32 / (1u64 << 31) as f32 - 0.5) * 8.0,
        }
    }
}

fn eval(inst: Inst, r: &[f32]) -> f32 {
    let g = |i: u8| r[usize::from(i)];
    let u = |i: u8| g(i).to_bits();
    let int = f32::from_bits;
    match inst {
        Inst::Add(a, b) => g(a) + g(b),
        Inst::Subtract(a, b) => g(a) - g(b),
        Inst::Multiply(a, b) => g(a) * g(b),
        Inst::Divide(a, b) => g(a) / g(b),
        Inst::Maximum(a, b) => extremum(g(a), g(b), true, true),
        Inst::Minimum(a, b) => extremum(g(a), g(b), false, true),
        Inst::MaximumOf(a, b, _) => extremum(g(a), g(b), true, true),
        Inst::MinimumOf(a, b, _) => extremum(g(a), g(b), false, true),
        Inst::Clamp(lo, x, hi) => extremum(extremum(g(x), g(lo), true, false), g(hi), false, false),
        Inst::Compare(cmp, a, b) => {
            let (x, y) = (g(a), g(b));
            mask(match cmp {
                Cmp::Eq => x == y,
                Cmp::Ne => x != y,
                Cmp::Lt => x < y,
                Cmp::Le => x <= y,
                Cmp::Gt => x > y,
                Cmp::Ge => x >= y,
            })
        }
        Inst::Not(a) => mask(g(a) == 0.0),
        Inst::IsFinite(a) => mask(g(a).is_finite()),
        Inst::And(a, b) => mask(g(a) != 0.0 && g(b) != 0.0),
        Inst::Or(a, b) => mask(g(a) != 0.0 || g(b) != 0.0),
        Inst::Select(p, t, f) => {
            if g(p) != 0.0 {
                g(t)
            } else {
                g(f)
            }
        }
        Inst::IntAdd(a, b) => int(u(a).wrapping_add(u(b))),
        Inst::IntSubtract(a, b) => int(u(a).wrapping_sub(u(b))),
        Inst::IntMultiply(a, b) => int(u(a).wrapping_mul(u(b))),
        Inst::BitAnd(a, b) => int(u(a) & u(b)),
        Inst::BitOr(a, b) => int(u(a) | u(b)),
        Inst::BitXor(a, b) => int(u(a) ^ u(b)),
        Inst::BitNot(a) => int(!u(a)),
        Inst::ShiftLeft(a, b) => int(u(a).checked_shl(u(b)).unwrap_or(0)),
        Inst::ShiftRightLogical(a, b) => int(u(a).checked_shr(u(b)).unwrap_or(0)),
        Inst::ShiftRightArithmetic(a, b) => int(((u(a) as i32) >> u(b).min(31)) as u32),
        Inst::IntMaximum(true, a, b) => int((u(a) as i32).max(u(b) as i32) as u32),
        Inst::IntMaximum(false, a, b) => int(u(a).max(u(b))),
        Inst::IntMinimum(true, a, b) => int((u(a) as i32).min(u(b) as i32) as u32),
        Inst::IntMinimum(false, a, b) => int(u(a).min(u(b))),
        Inst::IntDivide(true, a, b) => int(match (u(a) as i32, u(b) as i32) {
            (_, 0) => -1,
            (x, y) => x.wrapping_div(y),
        } as u32),
        Inst::IntDivide(false, a, b) => int(u(a).checked_div(u(b)).unwrap_or(u32::MAX)),
        Inst::IntRemainder(true, a, b) => int(match (u(a) as i32, u(b) as i32) {
            (x, 0) => x,
            (x, y) => x.wrapping_rem(y),
        } as u32),
        Inst::IntRemainder(false, a, b) => int(u(a).checked_rem(u(b)).unwrap_or(u(a))),
        Inst::IntDivideBy(signed, a, c) => {
            eval(Inst::IntDivide(signed, 0, 1), &[g(a), f32::from_bits(c)])
        }
        Inst::IntRemainderBy(signed, a, c) => {
            eval(Inst::IntRemainder(signed, 0, 1), &[g(a), f32::from_bits(c)])
        }
        Inst::IntSign(true, a) => int((u(a) as i32).signum() as u32),
        Inst::IntSign(false, a) => int(u(a).min(1)),
        Inst::IntNegate(a) => int(u(a).wrapping_neg()),
        Inst::IntAbs(a) => int((u(a) as i32).wrapping_abs() as u32),
        Inst::IntCompare(cmp, signed, a, b) => {
            let (x, y) = (u(a), u(b));
            let order = if signed {
                (x as i32).cmp(&(y as i32))
            } else {
                x.cmp(&y)
            };
            mask(match cmp {
                Cmp::Eq => order.is_eq(),
                Cmp::Ne => order.is_ne(),
                Cmp::Lt => order.is_lt(),
                Cmp::Le => order.is_le(),
                Cmp::Gt => order.is_gt(),
                Cmp::Ge => order.is_ge(),
            })
        }
        Inst::IntToF32(true, a) => u(a) as i32 as f32,
        Inst::IntToF32(false, a) => u(a) as f32,
        // Rust's casts truncate, saturate and take NaN to 0.
        Inst::F32ToInt(true, a) => int(g(a) as i32 as u32),
        Inst::F32ToInt(false, a) => int(g(a) as u32),
        Inst::MaskToInt(a) => int(u32::from(g(a) != 0.0)),
        Inst::IntToMask(a) => mask(u(a) != 0),
        Inst::LoadScalar(_) => unreachable!("the random programs load no input on demand"),
        Inst::Negate(a) => -g(a),
        Inst::Abs(a) => g(a).abs(),
        Inst::Sqrt(a) => g(a).sqrt(),
        // The rounding instruction returns a signaling NaN quieted, as XLA's does (a libm
        // `floor` may return it as it is).
        Inst::Floor(a) => quieted(flushed(g(a)).floor()),
        Inst::Ceil(a) => quieted(flushed(g(a)).ceil()),
        Inst::Rsqrt(a) => 1.0 / g(a).sqrt(),
        // Checked against the evaluator's own functions in oxla-ir, which define them.
        Inst::Exp(_)
        | Inst::Expm1(_)
        | Inst::Log(_)
        | Inst::Log1p(_)
        | Inst::Tanh(_)
        | Inst::Logistic(_)
        | Inst::Sin(_)
        | Inst::Cos(_) => {
            unreachable!("the random programs here have no transcendental functions")
        }
    }
}

/// A denormal as its signed zero.
fn flushed(v: f32) -> f32 {
    if v.is_subnormal() {
        0.0f32.copysign(v)
    } else {
        v
    }
}

/// `v` with a NaN's quiet bit set.
fn quieted(v: f32) -> f32 {
    if v.is_nan() {
        f32::from_bits(v.to_bits() | 0x0040_0000)
    } else {
        v
    }
}

fn mask(b: bool) -> f32 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// XLA's CPU maximum (or minimum): denormal operands read as their signed zero (when
/// `flushing`), NaN propagating (the first operand's when both are), `+0` above `-0`.
fn extremum(x: f32, y: f32, max: bool, flushing: bool) -> f32 {
    let flush = |v: f32| {
        if flushing && v.is_subnormal() {
            0.0f32.copysign(v)
        } else {
            v
        }
    };
    let (x, y) = (flush(x), flush(y));
    if x.is_nan() {
        return x;
    }
    if y.is_nan() {
        return y;
    }
    let x_wins = if max {
        x > y || (x == y && x.is_sign_positive())
    } else {
        x < y || (x == y && x.is_sign_negative())
    };
    if x_wins {
        x
    } else {
        y
    }
}

/// A random program over `regs` registers with `n_inputs` inputs.
fn program(rng: &mut Rng, n_inputs: usize, n_insts: usize, regs: u8) -> TileProgram {
    program_with(rng, n_inputs, n_insts, regs, false)
}

/// A random program as [`program`] describes; with `masks_often`, half the instructions are
/// compares, boolean ops, selects and mask conversions (which pass masks to each other).
fn program_with(
    rng: &mut Rng,
    n_inputs: usize,
    n_insts: usize,
    regs: u8,
    masks_often: bool,
) -> TileProgram {
    let mut defined: Vec<u8> = Vec::new();
    let mut inputs = Vec::new();
    for k in 0..n_inputs {
        let kind = [
            Input::Stream,
            Input::RowVector,
            Input::RowScalar,
            Input::Scalar,
        ][rng.below(4)];
        inputs.push((kind, k as u8));
        defined.push(k as u8);
    }
    let mut insts = Vec::new();
    for _ in 0..n_insts {
        let pick = |rng: &mut Rng| defined[rng.below(defined.len())];
        let (a, b, c) = (pick(rng), pick(rng), pick(rng));
        let cmp = [Cmp::Eq, Cmp::Ne, Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge][rng.below(6)];
        let signed = rng.below(2) == 0;
        let choice = if masks_often && rng.below(2) == 0 {
            [10, 11, 12, 13, 14, 14, 32, 37, 38, 46][rng.below(10)]
        } else {
            rng.below(47)
        };
        let inst = match choice {
            46 => Inst::IsFinite(a),
            40 => Inst::IntDivide(signed, a, b),
            41 => Inst::IntRemainder(signed, a, b),
            42 => Inst::IntSign(signed, a),
            43 => Inst::IntDivideBy(signed, a, rng.value().to_bits()),
            44 => Inst::IntRemainderBy(signed, a, rng.value().to_bits()),
            18 => Inst::IntAdd(a, b),
            19 => Inst::IntSubtract(a, b),
            20 => Inst::IntMultiply(a, b),
            21 => Inst::BitAnd(a, b),
            22 => Inst::BitOr(a, b),
            23 => Inst::BitXor(a, b),
            24 => Inst::BitNot(a),
            25 => Inst::ShiftLeft(a, b),
            26 => Inst::ShiftRightLogical(a, b),
            27 => Inst::ShiftRightArithmetic(a, b),
            28 => Inst::IntMaximum(signed, a, b),
            29 => Inst::IntMinimum(signed, a, b),
            30 => Inst::IntNegate(a),
            31 => Inst::IntAbs(a),
            32 | 33 => Inst::IntCompare(cmp, signed, a, b),
            34 => Inst::IntToF32(signed, a),
            35 | 36 => Inst::F32ToInt(signed, a),
            37 => Inst::MaskToInt(a),
            38 => Inst::IntToMask(a),
            16 => Inst::Floor(a),
            17 => Inst::Ceil(a),
            10 => Inst::Compare(cmp, a, b),
            11 => Inst::Not(a),
            12 => Inst::And(a, b),
            13 => Inst::Or(a, b),
            14 => Inst::Select(a, b, c),
            15 => Inst::Clamp(a, b, c),
            0 => Inst::Add(a, b),
            1 => Inst::Subtract(a, b),
            2 => Inst::Multiply(a, b),
            3 => Inst::Divide(a, b),
            4 => Inst::Maximum(a, b),
            5 => Inst::Minimum(a, b),
            6 => Inst::Negate(a),
            7 => Inst::Abs(a),
            8 => Inst::Sqrt(a),
            _ => Inst::Rsqrt(a),
        };
        // Any register, a source's included: the result replaces it for later reads.
        let d = rng.below(usize::from(regs)) as u8;
        insts.push((inst, d));
        if !defined.contains(&d) {
            defined.push(d);
        }
    }
    let n_out = 1 + rng.below(3);
    let outputs = (0..n_out)
        .map(|_| defined[rng.below(defined.len())])
        .collect();
    TileProgram {
        inputs,
        insts,
        outputs,
        row_sums: Vec::new(),
    }
}

/// Random values for each input of `p` over `total` elements in rows of `row_len`, as
/// many as its kind indexes.
fn random_inputs(rng: &mut Rng, p: &TileProgram, total: usize, row_len: usize) -> Vec<Vec<f32>> {
    p.inputs
        .iter()
        .map(|(kind, _)| {
            let n = match kind {
                Input::Stream => total,
                Input::RowVector => row_len,
                Input::RowScalar => total.div_ceil(row_len),
                Input::Scalar | Input::OnDemand => 1,
            };
            (0..n).map(|_| rng.value()).collect()
        })
        .collect()
}

/// Every register of `p` after its instructions, at element `i` (rows of `row_len`), by
/// the scalar evaluation.
fn registers_at(p: &TileProgram, inputs: &[Vec<f32>], i: usize, row_len: usize) -> [f32; 32] {
    let mut regs = [0.0f32; 32];
    for (&(kind, r), input) in p.inputs.iter().zip(inputs) {
        regs[usize::from(r)] = match kind {
            Input::Stream => input[i],
            Input::RowVector => input[i % row_len],
            Input::RowScalar => input[i / row_len],
            Input::Scalar | Input::OnDemand => input[0],
        };
    }
    for &(inst, d) in &p.insts {
        regs[usize::from(d)] = eval(inst, &regs);
    }
    regs
}

#[test]
fn generated_code_computes_the_scalar_bits() {
    compare_random_programs(7, 8, 16, false, 12);
}

#[test]
fn masks_passed_between_instructions_give_the_scalar_bits() {
    // Few registers and many mask instructions: results land on their own operands and on
    // registers whose mask an earlier instruction left behind; long programs, where
    // conditions outlive the two mask registers and are given up and read again.
    compare_random_programs(8, 3, 5, true, 12);
    compare_random_programs(9, 4, 6, true, 30);
}

/// Compiles 600 random programs of up to `max_insts` instructions (results in
/// `min_regs..min_regs + spread` registers) and checks every element they compute against
/// the scalar evaluation.
fn compare_random_programs(
    seed: u64,
    min_regs: u8,
    spread: usize,
    masks_often: bool,
    max_insts: usize,
) {
    if !available() {
        eprintln!("no code generator on this machine: nothing to compare");
        return;
    }
    for target in Target::here() {
        let mut rng = Rng(seed);
        let mut compared = 0usize;
        for case in 0..600 {
            let n_inputs = 1 + rng.below(5);
            let n_insts = 1 + rng.below(max_insts);
            let regs = min_regs + rng.below(spread) as u8;
            let p = program_with(&mut rng, n_inputs, n_insts, regs, masks_often);
            let Some(code) = TileCode::compile_for(&p, target) else {
                assert!(
                    p.registers() > 24,
                    "{target:?}: a program within the register budget compiles: {p:?}"
                );
                continue;
            };
            let row_len = [1, 3, 15, 16, 17, 40, 1024][rng.below(7)];
            let rows = rng.below(5);
            let total = row_len * rows + rng.below(row_len);
            let start = rng.below(total + 1);
            let end = start + rng.below(total - start + 1);
            let inputs = random_inputs(&mut rng, &p, total, row_len);
            let len = end - start;
            // Outputs start as a marker so an element the code skipped shows.
            let marker = f32::from_bits(0x7fc0_dead);
            let mut outs: Vec<Vec<f32>> = vec![vec![marker; len + 3]; p.outputs.len()];
            let input_refs: Vec<&[f32]> = inputs.iter().map(|s| s.as_slice()).collect();
            let mut out_refs: Vec<&mut [f32]> = outs.iter_mut().map(|o| &mut o[..len]).collect();
            assert_eq!(
                code.run(&input_refs, &mut out_refs, start, end, row_len),
                Some(len)
            );
            for i in start..end {
                let regs = registers_at(&p, &inputs, i, row_len);
                for (k, &r) in p.outputs.iter().enumerate() {
                    let (want, got) = (regs[usize::from(r)], outs[k][i - start]);
                    assert!(
                    want.to_bits() == got.to_bits() || (want.is_nan() && got.is_nan()),
                    "{target:?} case {case}, element {i} of {start}..{end} (rows of {row_len}), output {k}: \
                     {want:?} ({:#x}) against {got:?} ({:#x}) for {p:?}",
                    want.to_bits(),
                    got.to_bits()
                );
                    compared += 1;
                }
            }
            for o in &outs {
                assert!(
                    o[len..].iter().all(|v| v.to_bits() == marker.to_bits()),
                    "wrote past the end"
                );
            }
        }
        assert!(compared > 5_000, "{target:?}: {compared}");
    }
}

/// The values that decide a maximum or minimum against `bound`: both zeros, both
/// infinities, NaN of both signs, denormals and the smallest normals of both signs, the
/// bound itself and its neighbours, and ordinary values.
fn edges_around(bound: f32) -> Vec<f32> {
    let mut values = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(1),
        f32::from_bits(0x8000_0001),
        f32::from_bits(0x007f_ffff),
        f32::from_bits(0x807f_ffff),
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        1.5,
        -1.5,
        1e30,
        -1e30,
    ];
    if !bound.is_nan() {
        let bits = bound.to_bits();
        values.extend([bound, f32::from_bits(bits.wrapping_add(1)), -bound]);
        if bits & 0x7fff_ffff != 0 {
            values.push(f32::from_bits(bits - 1));
        }
    }
    values
}

#[test]
fn extrema_with_a_constant_bound_follow_the_general_rules() {
    if !available() {
        return;
    }
    let bounds = [
        0.5f32,
        -0.5,
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::from_bits(3),
        f32::from_bits(0x8000_0003),
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        6.0,
        -1e-30,
    ];
    for bound in bounds {
        for max in [true, false] {
            let inst = if max {
                Inst::MaximumOf(0, 1, bound.to_bits())
            } else {
                Inst::MinimumOf(0, 1, bound.to_bits())
            };
            // The result overwrites its operand (as register packing may arrange), and a
            // second copy reads the bound first.
            let p = TileProgram {
                inputs: vec![(Input::Stream, 0), (Input::Scalar, 1)],
                insts: vec![(inst, 2), (inst, 0)],
                outputs: vec![2, 0],
                row_sums: Vec::new(),
            };
            let code = TileCode::compile(&p).expect("compiles");
            // Every edge in every lane position, with a masked tail.
            let edges = edges_around(bound);
            let n = edges.len();
            let xs: Vec<f32> = (0..CHUNK + 3)
                .flat_map(|k| (0..n).map(move |i| (i + k) % n))
                .map(|i| edges[i])
                .collect();
            let mut a = vec![0.0f32; xs.len()];
            let mut b = vec![0.0f32; xs.len()];
            let len = xs.len();
            assert_eq!(
                code.run(&[&xs, &[bound]], &mut [&mut a[..], &mut b[..]], 0, len, len),
                Some(len)
            );
            for (i, &x) in xs.iter().enumerate() {
                let want = extremum(x, bound, max, true);
                for got in [a[i], b[i]] {
                    assert!(
                        want.to_bits() == got.to_bits() || (want.is_nan() && got.is_nan()),
                        "{} of {x:?} ({:#x}) and {bound:?}: {want:?} ({:#x}) against {got:?} \
                         ({:#x})",
                        if max { "max" } else { "min" },
                        x.to_bits(),
                        want.to_bits(),
                        got.to_bits()
                    );
                }
            }
        }
    }
}

#[test]
fn integer_division_covers_every_pair_of_edge_values() {
    for target in Target::here() {
        integer_division_covers_every_pair_of_edge_values_on(target);
    }
}

fn integer_division_covers_every_pair_of_edge_values_on(target: Target) {
    let edges: Vec<u32> = [
        0i64,
        1,
        -1,
        2,
        -2,
        3,
        7,
        -7,
        100,
        -100,
        65536,
        i32::MAX as i64,
        i32::MIN as i64,
        i32::MIN as i64 + 1,
        i32::MAX as i64 - 1,
        0x8000_0001,
        0xffff_fff0,
        0x7fff_0000,
        123_456_789,
        -987_654_321,
    ]
    .iter()
    .map(|&v| v as u32)
    .collect();
    // Every (dividend, divisor) pair, the divisor's position moving through the lanes, with
    // a masked tail.
    let (xs, ys): (Vec<f32>, Vec<f32>) = edges
        .iter()
        .flat_map(|&x| edges.iter().map(move |&y| (x, y)))
        .chain((0..3).map(|k| (edges[k], edges[k + 1])))
        .map(|(x, y)| (f32::from_bits(x), f32::from_bits(y)))
        .unzip();
    for signed in [true, false] {
        // The quotient overwrites the dividend and the remainder the divisor (as register
        // packing may arrange), the sign its operand.
        let p = TileProgram {
            inputs: vec![(Input::Stream, 0), (Input::Stream, 1), (Input::Stream, 3)],
            insts: vec![
                (Inst::IntRemainder(signed, 0, 1), 2),
                (Inst::IntDivide(signed, 0, 1), 0),
                (Inst::IntRemainder(signed, 3, 1), 1),
                (Inst::IntSign(signed, 2), 2),
            ],
            outputs: vec![0, 1, 2],
            row_sums: Vec::new(),
        };
        let code = TileCode::compile_for(&p, target).expect("compiles");
        let len = xs.len();
        let (mut q, mut r, mut sign) = (vec![0.0f32; len], vec![0.0f32; len], vec![0.0f32; len]);
        assert_eq!(
            code.run(
                &[&xs, &ys, &xs],
                &mut [&mut q[..], &mut r[..], &mut sign[..]],
                0,
                len,
                len
            ),
            Some(len)
        );
        for i in 0..len {
            let (x, y) = (xs[i].to_bits(), ys[i].to_bits());
            let regs = [xs[i], ys[i], 0.0, xs[i]];
            let rem = eval(Inst::IntRemainder(signed, 0, 1), &regs);
            let want = [
                eval(Inst::IntDivide(signed, 0, 1), &regs).to_bits(),
                rem.to_bits(),
                eval(Inst::IntSign(signed, 0), &[rem]).to_bits(),
            ];
            let got = [q[i].to_bits(), r[i].to_bits(), sign[i].to_bits()];
            assert_eq!(got, want, "signed {signed}: {x:#x} by {y:#x}");
        }
    }
}

#[test]
fn integer_division_by_constants_matches_division() {
    for target in Target::here() {
        integer_division_by_constants_matches_division_on(target);
    }
}

fn integer_division_by_constants_matches_division_on(target: Target) {
    let mut rng = Rng(7);
    let mut divisors: Vec<u32> = [
        0i64,
        1,
        -1,
        2,
        -2,
        3,
        -3,
        5,
        7,
        -7,
        10,
        11,
        13,
        1000,
        -1000,
        65535,
        65536,
        65537,
        1_000_000_007,
        i32::MAX as i64,
        i32::MIN as i64,
        i32::MIN as i64 + 1,
        0x8000_0001,
        0xffff_fffe,
        0xc000_0000,
        0x4000_0000,
        3_000_000_000,
    ]
    .iter()
    .map(|&v| v as u32)
    .collect();
    divisors.extend((0..40).map(|_| rng.next() as u32 | (rng.next() as u32) << 31));
    divisors.extend((0..40).map(|_| 1 + rng.below(5000) as u32));
    for &c in &divisors {
        for signed in [true, false] {
            // Dividends at, just below and just above multiples of the divisor across the
            // whole range (where a truncated product would be off by one), the extremes, and
            // random ones; then a masked tail.
            let mut xs: Vec<u32> = vec![0, 1, u32::MAX, 0x8000_0000, 0x7fff_ffff, 0x8000_0001];
            for k in 0..200u64 {
                let step = if c == 0 { 1 } else { u64::from(u32::MAX) / 200 };
                let near = (k * step) as u32;
                let m = if c == 0 { near } else { near - near % c.max(1) };
                xs.extend([m, m.wrapping_sub(1), m.wrapping_add(1)]);
                let signed_m = if signed && c != 0 {
                    let v = (near as i32) / (c as i32).max(1);
                    (v.wrapping_mul(c as i32)) as u32
                } else {
                    m
                };
                xs.extend([signed_m, signed_m.wrapping_sub(1), signed_m.wrapping_add(1)]);
            }
            xs.extend((0..200).map(|_| rng.next() as u32 | (rng.next() as u32) << 31));
            xs.extend([5, 9, 12]);
            let xs: Vec<f32> = xs.into_iter().map(f32::from_bits).collect();
            let p = TileProgram {
                inputs: vec![(Input::Stream, 0)],
                insts: vec![
                    (Inst::IntRemainderBy(signed, 0, c), 1),
                    (Inst::IntDivideBy(signed, 0, c), 0),
                ],
                outputs: vec![0, 1],
                row_sums: Vec::new(),
            };
            let code = TileCode::compile_for(&p, target).expect("compiles");
            let len = xs.len();
            let (mut q, mut r) = (vec![0.0f32; len], vec![0.0f32; len]);
            assert_eq!(
                code.run(&[&xs], &mut [&mut q[..], &mut r[..]], 0, len, len),
                Some(len)
            );
            for i in 0..len {
                let regs = [xs[i], f32::from_bits(c)];
                let want = [
                    eval(Inst::IntDivide(signed, 0, 1), &regs).to_bits(),
                    eval(Inst::IntRemainder(signed, 0, 1), &regs).to_bits(),
                ];
                let got = [q[i].to_bits(), r[i].to_bits()];
                assert_eq!(
                    got,
                    want,
                    "signed {signed}: {:#x} by {c:#x}",
                    xs[i].to_bits()
                );
            }
        }
    }
}

#[test]
fn floor_quotients_and_remainders_by_constants_match_the_scalar_bits() {
    for target in Target::here() {
        floor_quotients_and_remainders_by_constants_match_the_scalar_bits_on(target);
    }
}

fn floor_quotients_and_remainders_by_constants_match_the_scalar_bits_on(target: Target) {
    // `x // c` and `x % c` as `jnp` lowers them: the truncated quotient and remainder, the
    // conditions for a step toward minus infinity (combined, and kept only for a select),
    // and the corrected values; in the second program the quotient's register is written
    // over early.
    let mut rng = Rng(11);
    for c in [7i32, -7, 3, 8, -8, 1, -1, 1000, i32::MIN, i32::MAX, 65536] {
        for signed in [true, false] {
            let c = c as u32;
            let sign_c = if signed {
                (c as i32).signum() as u32
            } else {
                1
            };
            let inputs = vec![(Input::Stream, 0), (Input::Scalar, 1), (Input::Scalar, 2)];
            let floor_div = vec![
                (Inst::IntDivideBy(signed, 0, c), 3),
                (Inst::IntSign(signed, 0), 4),
                (Inst::IntCompare(Cmp::Ne, signed, 4, 2), 5),
                (Inst::IntRemainderBy(signed, 0, c), 6),
                (Inst::IntCompare(Cmp::Ne, signed, 6, 1), 7),
                (Inst::And(5, 7), 5),
                (Inst::IntSubtract(3, 2), 4),
                (Inst::Select(5, 4, 3), 3),
            ];
            let mut clobbered = floor_div.clone();
            clobbered.insert(1, (Inst::IntAdd(3, 2), 3));
            let modulo = vec![
                (Inst::IntRemainderBy(signed, 0, c), 3),
                (Inst::IntCompare(Cmp::Ne, signed, 3, 1), 4),
                (Inst::IntCompare(Cmp::Lt, signed, 3, 1), 5),
                (Inst::And(5, 4), 6),
                (Inst::IntAdd(3, 2), 7),
                (Inst::Select(6, 7, 3), 4),
            ];
            for (insts, outputs) in [
                (floor_div, vec![3, 6, 5]),
                (clobbered, vec![3, 6]),
                (modulo, vec![4, 6]),
            ] {
                let p = TileProgram {
                    inputs: inputs.clone(),
                    insts,
                    outputs,
                    row_sums: Vec::new(),
                };
                let code = TileCode::compile_for(&p, target).expect("compiles");
                let mut xs: Vec<u32> =
                    vec![0, 1, u32::MAX, 1 << 31, (1 << 31) - 1, c, c.wrapping_neg()];
                xs.extend((0..300).map(|_| rng.next() as u32 | (rng.next() as u32) << 31));
                xs.extend((0..100).map(|_| (rng.below(4001) as i32 - 2000) as u32));
                let inputs = vec![
                    xs.iter().map(|&x| f32::from_bits(x)).collect::<Vec<f32>>(),
                    vec![f32::from_bits(0)],
                    vec![f32::from_bits(sign_c)],
                ];
                let len = xs.len();
                let mut outs = vec![vec![0.0f32; len]; p.outputs.len()];
                let input_refs: Vec<&[f32]> = inputs.iter().map(|s| s.as_slice()).collect();
                let mut out_refs: Vec<&mut [f32]> = outs.iter_mut().map(|o| &mut o[..]).collect();
                assert_eq!(code.run(&input_refs, &mut out_refs, 0, len, len), Some(len));
                for i in 0..len {
                    let regs = registers_at(&p, &inputs, i, len);
                    for (k, &r) in p.outputs.iter().enumerate() {
                        assert_eq!(
                            outs[k][i].to_bits(),
                            regs[usize::from(r)].to_bits(),
                            "{:#x} by {c:#x} (signed {signed}), output {k} of {:?}",
                            xs[i],
                            p.insts
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn inputs_loaded_on_demand_reach_the_instructions_that_read_them() {
    if !available() {
        return;
    }
    // Two one-value inputs loaded where they are needed (one twice, into the register
    // the other used), between a stream and a one-value input held in a register.
    let p = TileProgram {
        inputs: vec![
            (Input::Stream, 0),
            (Input::OnDemand, 0),
            (Input::Scalar, 1),
            (Input::OnDemand, 0),
        ],
        insts: vec![
            (Inst::LoadScalar(1), 2),
            (Inst::IntAdd(0, 2), 3),
            (Inst::LoadScalar(3), 2),
            (Inst::IntMultiply(3, 2), 3),
            (Inst::LoadScalar(1), 2),
            (Inst::BitXor(3, 2), 3),
            (Inst::IntSubtract(3, 1), 3),
        ],
        outputs: vec![3],
        row_sums: Vec::new(),
    };
    let code = TileCode::compile(&p).expect("compiles");
    let x: Vec<f32> = (0..37u32).map(|i| f32::from_bits(i * 977)).collect();
    let (a, b, c) = (f32::from_bits(5), f32::from_bits(1000), f32::from_bits(3));
    let mut out = vec![0.0f32; 37];
    assert_eq!(
        code.run(&[&x, &[a], &[b], &[c]], &mut [&mut out[..]], 0, 37, 37),
        Some(37)
    );
    for (i, (&x, &o)) in x.iter().zip(&out).enumerate() {
        let want = (x.to_bits().wrapping_add(5).wrapping_mul(3) ^ 5).wrapping_sub(1000);
        assert_eq!(o.to_bits(), want, "element {i}");
    }
}

#[test]
fn mismatched_operands_are_refused() {
    if !available() {
        return;
    }
    let p = TileProgram {
        inputs: vec![
            (Input::Stream, 0),
            (Input::RowVector, 1),
            (Input::RowScalar, 2),
        ],
        insts: vec![(Inst::Add(0, 1), 3), (Inst::Add(3, 2), 3)],
        outputs: vec![3],
        row_sums: Vec::new(),
    };
    let code = TileCode::compile(&p).unwrap();
    // Two rows of four.
    let x = vec![1.0f32; 8];
    let row = vec![10.0f32; 4];
    let per_row = vec![100.0f32, 200.0];
    let mut o = vec![0.0f32; 8];
    // Too few inputs, a short stream, a short row, too few row values, a short output.
    assert!(code.run(&[&x, &row], &mut [&mut o[..]], 0, 8, 4).is_none());
    assert!(code
        .run(&[&x[..7], &row, &per_row], &mut [&mut o[..]], 0, 8, 4)
        .is_none());
    assert!(code
        .run(&[&x, &row[..3], &per_row], &mut [&mut o[..]], 0, 8, 4)
        .is_none());
    assert!(code
        .run(&[&x, &row, &per_row[..1]], &mut [&mut o[..]], 0, 8, 4)
        .is_none());
    assert!(code
        .run(&[&x, &row, &per_row], &mut [&mut o[..7]], 0, 8, 4)
        .is_none());
    assert!(code
        .run(&[&x, &row, &per_row], &mut [&mut o[..]], 0, 8, 0)
        .is_none());
    assert!(o.iter().all(|&v| v == 0.0));
    assert_eq!(
        code.run(&[&x, &row, &per_row], &mut [&mut o[..]], 0, 8, 4),
        Some(8)
    );
    assert_eq!(o, [111.0, 111.0, 111.0, 111.0, 211.0, 211.0, 211.0, 211.0]);
    // Elements 3..6 only: the output holds them from its start.
    let mut part = vec![0.0f32; 3];
    assert_eq!(
        code.run(&[&x, &row, &per_row], &mut [&mut part[..]], 3, 6, 4),
        Some(3)
    );
    assert_eq!(part, [111.0, 211.0, 211.0]);
}

#[test]
fn programs_beyond_the_generator_are_not_compiled() {
    // A register read before anything writes it.
    let undefined = TileProgram {
        inputs: vec![(Input::Stream, 0)],
        insts: vec![(Inst::Add(0, 5), 1)],
        outputs: vec![1],
        row_sums: Vec::new(),
    };
    assert!(TileCode::compile(&undefined).is_none());
    // More registers than the generator has.
    let wide = TileProgram {
        inputs: vec![(Input::Stream, 0)],
        insts: vec![(Inst::Negate(0), 40)],
        outputs: vec![40],
        row_sums: Vec::new(),
    };
    assert!(TileCode::compile(&wide).is_none());
}

/// `sin(x * x)` over one row of `n`, with `x` from `values`, in `target`'s code: the
/// outputs, marked where the code wrote nothing, and what `run` returned.
fn sin_of_square(target: Target, values: &[f32], end: usize) -> (Vec<f32>, Option<usize>) {
    let p = TileProgram {
        inputs: vec![(Input::Stream, 0)],
        insts: vec![(Inst::Multiply(0, 0), 1), (Inst::Sin(1), 2)],
        outputs: vec![2],
        row_sums: Vec::new(),
    };
    let code = TileCode::compile_for(&p, target).expect("compiles");
    let marker = f32::from_bits(0x7fc0_dead);
    let mut out = vec![marker; end];
    let done = code.run(&[values], &mut [&mut out[..]], 0, end, end);
    (out, done)
}

#[test]
fn an_argument_beyond_the_reduction_stops_the_code_at_its_chunk() {
    for target in Target::here() {
        stops_at_the_chunk_of_a_bad_argument(target);
    }
}

fn stops_at_the_chunk_of_a_bad_argument(target: Target) {
    // Chunks of 16 lanes (AVX-512) or 8 (AVX2).
    let chunk = if target == Target::Avx512 { 16 } else { 8 };
    let marker = f32::from_bits(0x7fc0_dead);
    let n = 1000;
    let values: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.01 - 0.4).collect();
    // All covered: every element done, each within two ulps of the true sine.
    let (out, done) = sin_of_square(target, &values, n);
    assert_eq!(done, Some(n));
    for (x, got) in values.iter().zip(&out) {
        let want = ((*x * *x) as f64).sin();
        assert!((*got as f64 - want).abs() <= 2.0 * f32::EPSILON as f64 * want.abs().max(1e-30));
    }
    // 300^2 is beyond 65536; so are infinity and NaN. The elements before the stop are
    // done, the chunk holding the argument and everything after it are not written.
    for (bad_at, bad) in [
        (70, 300.0),
        (500, f32::INFINITY),
        (995, f32::NAN),
        (3, -300.0),
    ] {
        let mut v = values.clone();
        v[bad_at] = bad;
        let (out, done) = sin_of_square(target, &v, n);
        let done = done.expect("operands fit");
        assert!(
            done <= bad_at && bad_at - done < 2 * chunk && done % chunk == 0,
            "{target:?} {bad_at}: {done}"
        );
        assert!(out[..done].iter().all(|o| o.to_bits() != marker.to_bits()));
        assert!(out[done..].iter().all(|o| o.to_bits() == marker.to_bits()));
    }
    // A bad argument past `end` does not stop it; nor do the lanes past the end of a
    // partial chunk, whatever they would compute (here 1 / 0 read as zero).
    let mut v = values.clone();
    v[999] = f32::NAN;
    assert_eq!(sin_of_square(target, &v, 990).1, Some(990));
    let p = TileProgram {
        inputs: vec![(Input::Scalar, 0), (Input::Stream, 1)],
        insts: vec![(Inst::Divide(0, 1), 2), (Inst::Cos(2), 3)],
        outputs: vec![3],
        row_sums: Vec::new(),
    };
    let code = TileCode::compile_for(&p, target).expect("compiles");
    let twos = vec![2.0f32; 21];
    let mut out = [0.0f32; 21];
    assert_eq!(
        code.run(&[&[1.0], &twos], &mut [&mut out[..]], 0, 21, 21),
        Some(21)
    );
    assert!(out
        .iter()
        .all(|&o| o == 0.5f32.cos() || (o - 0.5f32.cos()).abs() < 1e-7));
}

/// A random loop body: `carried` values in registers `0..carried`, `inputs` after them,
/// instructions writing fresh registers, next values picked among all registers.
fn loop_body(rng: &mut Rng, carried: usize, inputs: usize, n_insts: usize) -> LoopBody {
    let mut defined: Vec<u8> = (0..(carried + inputs) as u8).collect();
    let input_list = (0..inputs)
        .map(|k| {
            let kind = [Input::Stream, Input::Scalar][rng.below(2)];
            (kind, (carried + k) as u8)
        })
        .collect();
    let mut insts = Vec::new();
    let mut next_reg = (carried + inputs) as u8;
    for _ in 0..n_insts {
        let pick = |rng: &mut Rng| defined[rng.below(defined.len())];
        let (a, b, c) = (pick(rng), pick(rng), pick(rng));
        let inst = match rng.below(11) {
            10 => Inst::Floor(a),
            0 => Inst::Add(a, b),
            1 => Inst::Subtract(a, b),
            2 => Inst::Multiply(a, b),
            3 => Inst::Divide(a, b),
            4 => Inst::Maximum(a, b),
            5 => Inst::Minimum(a, b),
            6 => Inst::Negate(a),
            7 => Inst::Sqrt(a),
            8 => Inst::Select(a, b, c),
            _ => Inst::Compare(Cmp::Lt, a, b),
        };
        // Mostly fresh registers, sometimes an earlier instruction's again.
        let written: Vec<u8> = defined
            .iter()
            .copied()
            .filter(|&r| usize::from(r) >= carried + inputs)
            .collect();
        let d = if written.is_empty() || rng.below(3) > 0 {
            next_reg += 1;
            next_reg - 1
        } else {
            written[rng.below(written.len())]
        };
        insts.push((inst, d));
        if !defined.contains(&d) {
            defined.push(d);
        }
    }
    let carried_list = (0..carried as u8)
        .map(|state| (state, defined[rng.below(defined.len())]))
        .collect();
    LoopBody {
        inputs: input_list,
        carried: carried_list,
        insts,
    }
}

#[test]
fn loop_code_computes_the_scalar_iterations() {
    if !loops_available() {
        return;
    }
    let mut rng = Rng(11);
    for case in 0..300 {
        let (carried, inputs, n_insts) = (1 + rng.below(3), rng.below(3), 1 + rng.below(8));
        let body = loop_body(&mut rng, carried, inputs, n_insts);
        let code = LoopCode::compile(&body).expect("a body within the budget compiles");
        let len = 1 + rng.below(70);
        let from = CHUNK * rng.below(len.div_ceil(CHUNK) + 1);
        let trips = rng.below(40) as u64;
        let inputs: Vec<Vec<f32>> = body
            .inputs
            .iter()
            .map(|(kind, _)| {
                let n = if *kind == Input::Scalar { 1 } else { len };
                (0..n).map(|_| rng.value() * 0.5).collect()
            })
            .collect();
        let initial: Vec<Vec<f32>> = body
            .carried
            .iter()
            .map(|_| (0..len).map(|_| rng.value()).collect())
            .collect();
        let mut carried = initial.clone();
        let input_refs: Vec<&[f32]> = inputs.iter().map(|v| v.as_slice()).collect();
        let mut carried_refs: Vec<&mut [f32]> = carried.iter_mut().map(|v| &mut v[..]).collect();
        let end = code.run(&input_refs, &mut carried_refs, from, len, trips);
        assert_eq!(end, Some(LoopEnd::Finished), "case {case}");
        for i in 0..len {
            let mut regs = [0.0f32; 32];
            for (k, &(state, _)) in body.carried.iter().enumerate() {
                regs[usize::from(state)] = initial[k][i];
            }
            for (&(kind, r), input) in body.inputs.iter().zip(&inputs) {
                regs[usize::from(r)] = if kind == Input::Scalar {
                    input[0]
                } else {
                    input[i]
                };
            }
            if i >= from {
                for _ in 0..trips {
                    for &(inst, d) in &body.insts {
                        regs[usize::from(d)] = eval(inst, &regs);
                    }
                    let next: Vec<f32> = body
                        .carried
                        .iter()
                        .map(|&(_, n)| regs[usize::from(n)])
                        .collect();
                    for (&(state, _), v) in body.carried.iter().zip(next) {
                        regs[usize::from(state)] = v;
                    }
                }
            }
            for (k, &(state, _)) in body.carried.iter().enumerate() {
                let (want, got) = (regs[usize::from(state)], carried[k][i]);
                assert!(
                    want.to_bits() == got.to_bits() || (want.is_nan() && got.is_nan()),
                    "case {case}, element {i} (from {from} of {len}, {trips} trips), carried \
                     {k}: {want:?} against {got:?} for {body:?}"
                );
            }
        }
    }
}

#[test]
fn a_loop_stops_before_the_iteration_that_leaves_the_reduction() {
    if !loops_available() {
        return;
    }
    // x <- 2x, with sin(2x) computed (and unused): 2x leaves [-65536, 65536] in
    // iteration 16 for x = 1, never for x = 0.
    let body = LoopBody {
        inputs: vec![(Input::Scalar, 1)],
        carried: vec![(0, 2)],
        insts: vec![(Inst::Multiply(0, 1), 2), (Inst::Sin(2), 3)],
    };
    let code = LoopCode::compile(&body).expect("compiles");
    let mut x = [0.0f32; 40];
    x[20] = 1.0;
    x[35] = 1e-30;
    let end = code.run(&[&[2.0]], &mut [&mut x[..]], 0, 40, 100);
    assert_eq!(
        end,
        Some(LoopEnd::Stopped {
            chunk: 16,
            trips_done: 16
        })
    );
    assert!(x[..20].iter().chain(&x[21..32]).all(|&v| v == 0.0));
    assert_eq!(x[20], 65536.0);
    assert_eq!(x[35], 1e-30, "a chunk after the stop is untouched");
    // Resumed after that chunk, the rest finishes.
    let end = code.run(&[&[2.0]], &mut [&mut x[..]], 32, 40, 100);
    assert_eq!(end, Some(LoopEnd::Finished));
    assert_eq!(x[35], 1e-30 * 2f32.powi(100));
}

#[test]
fn loop_bodies_beyond_the_generator_are_not_compiled() {
    // Writing a carried value's register, writing an input's, reading nothing written.
    let writes_state = LoopBody {
        inputs: vec![],
        carried: vec![(0, 0)],
        insts: vec![(Inst::Negate(0), 0)],
    };
    let writes_input = LoopBody {
        inputs: vec![(Input::Stream, 1)],
        carried: vec![(0, 2)],
        insts: vec![(Inst::Negate(0), 1), (Inst::Negate(1), 2)],
    };
    let undefined = LoopBody {
        inputs: vec![],
        carried: vec![(0, 2)],
        insts: vec![(Inst::Add(0, 5), 2)],
    };
    let row_input = LoopBody {
        inputs: vec![(Input::RowVector, 1)],
        carried: vec![(0, 2)],
        insts: vec![(Inst::Add(0, 1), 2)],
    };
    for body in [writes_state, writes_input, undefined, row_input] {
        assert!(LoopCode::compile(&body).is_none(), "{body:?}");
    }
    if !loops_available() {
        return;
    }
    // Slices that do not fit, and a start inside a chunk.
    let body = LoopBody {
        inputs: vec![(Input::Stream, 1)],
        carried: vec![(0, 2)],
        insts: vec![(Inst::Add(0, 1), 2)],
    };
    let code = LoopCode::compile(&body).expect("compiles");
    let y = vec![1.0f32; 20];
    let mut x = [0.0f32; 20];
    assert!(code.run(&[&y[..19]], &mut [&mut x[..]], 0, 20, 3).is_none());
    assert!(code.run(&[&y], &mut [&mut x[..19]], 0, 20, 3).is_none());
    assert!(code.run(&[&y], &mut [&mut x[..]], 8, 20, 3).is_none());
    assert!(code.run(&[], &mut [&mut x[..]], 0, 20, 3).is_none());
    assert!(x.iter().all(|&v| v == 0.0));
    assert_eq!(
        code.run(&[&y], &mut [&mut x[..]], 0, 20, 3),
        Some(LoopEnd::Finished)
    );
    assert!(x.iter().all(|&v| v == 3.0));
}

/// The evaluator's row sum (see `TileProgram::row_sums`) of `row`, from `init`.
fn row_sum(row: &[f32], init: f32) -> f32 {
    let mut lanes = [0.0f32; 32];
    lanes.copy_from_slice(&row[..32]);
    let whole = row.len() - row.len() % 32;
    for piece in row[32..whole].chunks_exact(32) {
        for (a, &v) in lanes.iter_mut().zip(piece) {
            *a += v;
        }
    }
    let mut width = 16;
    while width > 0 {
        for j in 0..width {
            let high = lanes[j + width];
            lanes[j] += high;
        }
        width /= 2;
    }
    let mut total = lanes[0];
    for &v in &row[whole..] {
        total += v;
    }
    init + total
}

#[test]
fn row_sums_follow_the_evaluators_order() {
    if !available() {
        return;
    }
    for target in Target::here() {
        let mut rng = Rng(23);
        for case in 0..300 {
            // A small program: at most 6 registers, so two accumulators per sum fit beside it.
            let n_inputs = 1 + rng.below(3);
            let n_insts = 1 + rng.below(5);
            let mut p = program(&mut rng, n_inputs, n_insts, 5);
            p.inputs.push((Input::Scalar, 5));
            let n_sums = 1 + rng.below(2);
            let defined: Vec<u8> = p
                .inputs
                .iter()
                .map(|&(_, r)| r)
                .chain(p.insts.iter().map(|&(_, d)| d))
                .collect();
            let init = p.inputs.len() - 1;
            p.row_sums = (0..n_sums)
                .map(|_| (defined[rng.below(defined.len())], init))
                .collect();
            let Some(code) = TileCode::compile_for(&p, target) else {
                // AVX-512 keeps two accumulators per sum in registers; AVX2 in its frame.
                assert!(
                    target == Target::Avx512 && p.registers() + n_sums > 8,
                    "{target:?} case {case}: {p:?} does not compile"
                );
                continue;
            };
            let row_len = [32, 33, 47, 48, 63, 64, 100, 517, 1024][rng.below(9)];
            let rows = 1 + rng.below(4);
            let first = rng.below(3);
            let (start, end) = (first * row_len, (first + rows) * row_len);
            let total = end;
            let inputs = random_inputs(&mut rng, &p, total, row_len);
            let input_refs: Vec<&[f32]> = inputs.iter().map(|s| s.as_slice()).collect();
            let mut outs: Vec<Vec<f32>> = vec![vec![0.0; end - start]; p.outputs.len()];
            let mut out_refs: Vec<&mut [f32]> = outs.iter_mut().map(|o| o.as_mut_slice()).collect();
            let mut sums: Vec<Vec<f32>> = vec![vec![f32::from_bits(0x7fc0_dead); rows + 1]; n_sums];
            let mut sum_refs: Vec<&mut [f32]> = sums.iter_mut().map(|o| o.as_mut_slice()).collect();
            let done = code.run_with_row_sums(
                &input_refs,
                &mut out_refs,
                &mut sum_refs,
                start,
                end,
                row_len,
            );
            assert_eq!(done, Some(end - start), "case {case}");
            for r in 0..rows {
                // The register values of every element of the row, by the scalar evaluation.
                let mut values: Vec<[f32; 32]> = Vec::new();
                for i in (first + r) * row_len..(first + r + 1) * row_len {
                    values.push(registers_at(&p, &inputs, i, row_len));
                }
                for (k, &(reg, _)) in p.row_sums.iter().enumerate() {
                    let row: Vec<f32> = values.iter().map(|v| v[usize::from(reg)]).collect();
                    let want = row_sum(&row, inputs[init][0]);
                    let got = sums[k].get(r).copied().expect("a total per row");
                    assert!(
                    want.to_bits() == got.to_bits() || (want.is_nan() && got.is_nan()),
                    "{target:?} case {case}, row {r} of {rows} (rows of {row_len}), sum {k}: {want:?} \
                     against {got:?} for {p:?}"
                );
                }
            }
            assert!(
                sums.iter().all(|s| s[rows].to_bits() == 0x7fc0_dead),
                "wrote past the rows"
            );
        }
    }
    // Ranges off row boundaries, short rows and missing sums are refused.
    let p = TileProgram {
        inputs: vec![(Input::Stream, 0), (Input::Scalar, 1)],
        insts: vec![(Inst::Multiply(0, 0), 2)],
        outputs: vec![],
        row_sums: vec![(2, 1)],
    };
    let code = TileCode::compile(&p).expect("compiles");
    let x = vec![1.5f32; 128];
    let mut s = [0.0f32; 4];
    assert!(code
        .run_with_row_sums(&[&x, &[0.0]], &mut [], &mut [&mut s[..]], 0, 48, 32)
        .is_none());
    assert!(code
        .run_with_row_sums(&[&x, &[0.0]], &mut [], &mut [&mut s[..]], 0, 32, 16)
        .is_none());
    assert!(code.run(&[&x, &[0.0]], &mut [], 0, 64, 32).is_none());
    assert_eq!(
        code.run_with_row_sums(&[&x, &[0.5]], &mut [], &mut [&mut s[..]], 0, 128, 32),
        Some(128)
    );
    assert_eq!(s, [72.5; 4]);
}

#[test]
fn a_select_written_over_its_condition_is_compared_again() {
    if !available() {
        eprintln!("no code generator on this machine: nothing to compare");
        return;
    }
    // r2 = a > b; r2 = r2 ? a : b (the condition register overwritten); r3 = r2 && a. The
    // mask the select read is `a > b`, not `r2 != 0` any more.
    let p = TileProgram {
        inputs: vec![(Input::Stream, 0), (Input::Stream, 1)],
        insts: vec![
            (Inst::Compare(Cmp::Gt, 0, 1), 2),
            (Inst::Select(2, 0, 1), 2),
            (Inst::And(2, 0), 3),
        ],
        outputs: vec![3],
        row_sums: Vec::new(),
    };
    let code = TileCode::compile(&p).expect("compiles");
    let a: Vec<f32> = (0..40).map(|i| (i % 5) as f32 - 1.0).collect();
    let b: Vec<f32> = (0..40).map(|i| (i % 7) as f32 - 2.0).collect();
    let mut out = vec![0.0f32; 40];
    assert_eq!(code.run(&[&a, &b], &mut [&mut out], 0, 40, 40), Some(40));
    for i in 0..40 {
        let r2 = if a[i] > b[i] { a[i] } else { b[i] };
        let want = mask(r2 != 0.0 && a[i] != 0.0);
        assert_eq!(
            out[i].to_bits(),
            want.to_bits(),
            "element {i}: a {} b {}",
            a[i],
            b[i]
        );
    }
}
