//! Helpers the evaluator's integration tests share: a deterministic generator of
//! arguments full of special values, running `main` with fusion on or off, comparing
//! results bit for bit, and the golden JAX programs.
#![allow(dead_code)] // each test file uses its own part of it

use oxla_ir::eval::{run_function_with_options, EvalOptions, SingleDevice};
use oxla_ir::{ElementType, Literal, Module, TensorType, Type};
use std::path::{Path, PathBuf};

/// A small deterministic generator (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// An f32 that is often special: NaN, infinities, signed zeros, denormals, huge values.
    pub fn f32(&mut self) -> f32 {
        match self.below(16) {
            0 => f32::NAN,
            1 => f32::INFINITY,
            2 => f32::NEG_INFINITY,
            3 => 0.0,
            4 => -0.0,
            5 => f32::from_bits(1 + self.below(1 << 20) as u32),
            6 => 3.0e38 * if self.below(2) == 0 { 1.0 } else { -1.0 },
            7 => f32::from_bits(self.next() as u32),
            _ => (self.below(20_001) as f32 - 10_000.0) / 997.0,
        }
    }
}

pub fn literal(rng: &mut Rng, ty: &TensorType) -> Literal {
    let n: usize = ty.shape.iter().map(|&d| d as usize).product();
    let data: Vec<u8> = match ty.element_type {
        ElementType::F32 => (0..n).flat_map(|_| rng.f32().to_le_bytes()).collect(),
        ElementType::Pred => (0..n).map(|_| (rng.below(2)) as u8).collect(),
        ElementType::S32 => (0..n)
            .flat_map(|_| (rng.below(1000) as i32 - 500).to_le_bytes())
            .collect(),
        // Wider types: an f32's specials and values as f64, integers over their whole range.
        ElementType::F64 => (0..n)
            .flat_map(|_| f64::from(rng.f32()).to_le_bytes())
            .collect(),
        ElementType::U32 => (0..n)
            .flat_map(|_| (rng.next() as u32).to_le_bytes())
            .collect(),
        ElementType::S64 => (0..n)
            .flat_map(|_| (rng.next() as i64).to_le_bytes())
            .collect(),
        other => panic!("no generator for {other}"),
    };
    Literal::new(ty.clone(), data).expect("sized literal")
}

/// Random arguments for `main` of `module`, whose inputs are all tensors.
pub fn main_args(rng: &mut Rng, module: &Module) -> Vec<Literal> {
    let func = module.function("main").expect("main");
    func.ty
        .inputs
        .iter()
        .map(|ty| match ty {
            Type::Tensor(t) => literal(rng, t),
            other => panic!("unexpected argument type {other}"),
        })
        .collect()
}

/// Random arguments for `main` (special values included), when every input is an f32 or
/// `i1` tensor: random integers could index out of range or drive a loop for long.
pub fn args_for(rng: &mut Rng, module: &Module) -> Option<Vec<Literal>> {
    module
        .function("main")?
        .ty
        .inputs
        .iter()
        .map(|ty| match ty {
            Type::Tensor(t)
                if t.is_static()
                    && matches!(t.element_type, ElementType::F32 | ElementType::Pred) =>
            {
                Some(literal(rng, t))
            }
            _ => None,
        })
        .collect()
}

pub fn run(module: &Module, args: &[Literal], fuse: bool) -> Result<Vec<Literal>, String> {
    run_function_with_options(module, "main", args, &SingleDevice, EvalOptions { fuse })
        .map_err(|e| e.to_string())
}

/// Requires two runs to give the same bits (or both to fail).
pub fn assert_same_outcome(
    want: &Result<Vec<Literal>, String>,
    got: &Result<Vec<Literal>, String>,
    what: &str,
) {
    match (want, got) {
        (Ok(w), Ok(g)) => assert!(
            w.len() == g.len() && w.iter().zip(g).all(|(a, b)| same_bits(a, b)),
            "{what}: results differ"
        ),
        (Err(_), Err(_)) => {}
        _ => panic!("{what}: {want:?} against {got:?}"),
    }
}

/// Runs `main` of `before` and of `after` on `args`, unfused and fused, and requires the
/// same bits (or both failing).
pub fn assert_same_results(before: &Module, after: &Module, args: &[Literal], what: &str) {
    for fuse in [false, true] {
        assert_same_outcome(
            &run(before, args, fuse),
            &run(after, args, fuse),
            &format!("{what} (fuse {fuse})"),
        );
    }
}

/// The same type and bits, counting every f32 NaN as one (the compiler may lower a
/// NaN-propagating select to a vector min/max instruction, which keeps another payload).
pub fn same_bits(a: &Literal, b: &Literal) -> bool {
    if a.ty != b.ty {
        return false;
    }
    if a.ty.element_type != ElementType::F32 {
        return a.data == b.data;
    }
    let canonical = |c: &[u8]| {
        let v = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        if v.is_nan() {
            u32::MAX
        } else {
            v.to_bits()
        }
    };
    a.data
        .chunks_exact(4)
        .zip(b.data.chunks_exact(4))
        .all(|(x, y)| canonical(x) == canonical(y))
}

/// The golden JAX programs (`tests/filetests/roundtrip/*.mlir`), with their texts, in
/// name order.
pub fn golden_programs() -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/filetests/roundtrip");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("filetests/roundtrip")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "mlir"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("readable");
            (path, text)
        })
        .collect()
}
