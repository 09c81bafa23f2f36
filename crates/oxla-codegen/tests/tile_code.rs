//! Generated tile code against a scalar evaluation of the same program, bit for bit.

use oxla_codegen::{available, Cmp, Input, Inst, TileCode, TileProgram};

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

    /// Mostly ordinary values, with zeros of both signs, infinities, NaN and denormals.
    fn value(&mut self) -> f32 {
        match self.below(24) {
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
    match inst {
        Inst::Add(a, b) => g(a) + g(b),
        Inst::Subtract(a, b) => g(a) - g(b),
        Inst::Multiply(a, b) => g(a) * g(b),
        Inst::Divide(a, b) => g(a) / g(b),
        Inst::Maximum(a, b) => extremum(g(a), g(b), true, true),
        Inst::Minimum(a, b) => extremum(g(a), g(b), false, true),
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
        Inst::And(a, b) => mask(g(a) != 0.0 && g(b) != 0.0),
        Inst::Or(a, b) => mask(g(a) != 0.0 || g(b) != 0.0),
        Inst::Select(p, t, f) => {
            if g(p) != 0.0 {
                g(t)
            } else {
                g(f)
            }
        }
        Inst::Negate(a) => -g(a),
        Inst::Abs(a) => g(a).abs(),
        Inst::Sqrt(a) => g(a).sqrt(),
        Inst::Rsqrt(a) => 1.0 / g(a).sqrt(),
        // Checked against the evaluator's own functions in oxla-ir, which define them.
        Inst::Exp(_) | Inst::Tanh(_) | Inst::Logistic(_) => {
            unreachable!("the random programs here have no exp, tanh or logistic")
        }
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
        let inst = match rng.below(16) {
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
    }
}

#[test]
fn generated_code_computes_the_scalar_bits() {
    if !available() {
        eprintln!("no code generator on this machine: nothing to compare");
        return;
    }
    let mut rng = Rng(7);
    let mut compared = 0usize;
    for case in 0..600 {
        let n_inputs = 1 + rng.below(5);
        let n_insts = 1 + rng.below(12);
        let regs = 8 + rng.below(16) as u8;
        let p = program(&mut rng, n_inputs, n_insts, regs);
        let code = TileCode::compile(&p).expect("a program within the register budget compiles");
        let row_len = [1, 3, 15, 16, 17, 40, 1024][rng.below(7)];
        let rows = rng.below(5);
        let total = row_len * rows + rng.below(row_len);
        let start = rng.below(total + 1);
        let end = start + rng.below(total - start + 1);
        let inputs: Vec<Vec<f32>> = p
            .inputs
            .iter()
            .map(|(kind, _)| {
                let n = match kind {
                    Input::Stream => total,
                    Input::RowVector => row_len,
                    Input::RowScalar => total.div_ceil(row_len),
                    Input::Scalar => 1,
                };
                (0..n).map(|_| rng.value()).collect()
            })
            .collect();
        let len = end - start;
        // Outputs start as a marker so an element the code skipped shows.
        let marker = f32::from_bits(0x7fc0_dead);
        let mut outs: Vec<Vec<f32>> = vec![vec![marker; len + 3]; p.outputs.len()];
        let input_refs: Vec<&[f32]> = inputs.iter().map(|s| s.as_slice()).collect();
        let mut out_refs: Vec<&mut [f32]> = outs.iter_mut().map(|o| &mut o[..len]).collect();
        assert!(code.run(&input_refs, &mut out_refs, start, end, row_len));
        for i in start..end {
            let mut regs = [0.0f32; 32];
            for (&(kind, r), input) in p.inputs.iter().zip(&inputs) {
                regs[usize::from(r)] = match kind {
                    Input::Stream => input[i],
                    Input::RowVector => input[i % row_len],
                    Input::RowScalar => input[i / row_len],
                    Input::Scalar => input[0],
                };
            }
            for &(inst, d) in &p.insts {
                regs[usize::from(d)] = eval(inst, &regs);
            }
            for (k, &r) in p.outputs.iter().enumerate() {
                let (want, got) = (regs[usize::from(r)], outs[k][i - start]);
                assert!(
                    want.to_bits() == got.to_bits() || (want.is_nan() && got.is_nan()),
                    "case {case}, element {i} of {start}..{end} (rows of {row_len}), output {k}: \
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
    assert!(compared > 10_000, "{compared}");
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
    };
    let code = TileCode::compile(&p).unwrap();
    // Two rows of four.
    let x = vec![1.0f32; 8];
    let row = vec![10.0f32; 4];
    let per_row = vec![100.0f32, 200.0];
    let mut o = vec![0.0f32; 8];
    // Too few inputs, a short stream, a short row, too few row values, a short output.
    assert!(!code.run(&[&x, &row], &mut [&mut o[..]], 0, 8, 4));
    assert!(!code.run(&[&x[..7], &row, &per_row], &mut [&mut o[..]], 0, 8, 4));
    assert!(!code.run(&[&x, &row[..3], &per_row], &mut [&mut o[..]], 0, 8, 4));
    assert!(!code.run(&[&x, &row, &per_row[..1]], &mut [&mut o[..]], 0, 8, 4));
    assert!(!code.run(&[&x, &row, &per_row], &mut [&mut o[..7]], 0, 8, 4));
    assert!(!code.run(&[&x, &row, &per_row], &mut [&mut o[..]], 0, 8, 0));
    assert!(o.iter().all(|&v| v == 0.0));
    assert!(code.run(&[&x, &row, &per_row], &mut [&mut o[..]], 0, 8, 4));
    assert_eq!(o, [111.0, 111.0, 111.0, 111.0, 211.0, 211.0, 211.0, 211.0]);
    // Elements 3..6 only: the output holds them from its start.
    let mut part = vec![0.0f32; 3];
    assert!(code.run(&[&x, &row, &per_row], &mut [&mut part[..]], 3, 6, 4));
    assert_eq!(part, [111.0, 211.0, 211.0]);
}

#[test]
fn programs_beyond_the_generator_are_not_compiled() {
    // A register read before anything writes it.
    let undefined = TileProgram {
        inputs: vec![(Input::Stream, 0)],
        insts: vec![(Inst::Add(0, 5), 1)],
        outputs: vec![1],
    };
    assert!(TileCode::compile(&undefined).is_none());
    // More registers than the generator has.
    let wide = TileProgram {
        inputs: vec![(Input::Stream, 0)],
        insts: vec![(Inst::Negate(0), 40)],
        outputs: vec![40],
    };
    assert!(TileCode::compile(&wide).is_none());
}
