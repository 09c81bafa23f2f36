//! `oxla_ir::transform::fold_transposes_into_dots` keeps what a program computes: products
//! of transposed operands (`a @ b.T`, `a.T @ b`, batched ones) read the operand in place and
//! give the product of the transposed copy (the same integers; floats within the rounding
//! of another summation order, which small products' kernels choose by layout), over shapes
//! that take each of the product's paths (direct strides, a row-major copy of the
//! right-hand side, the transposed product); transposes that would reorder the result, or
//! that something else reads, stay; and the golden JAX programs give the same results.

mod common;

use common::{args_for, golden_programs, run, Rng};
use oxla_frontend::parse_text;
use oxla_ir::transform::{fold_transposes_into_dots, inline_calls};
use oxla_ir::verifier::verify_module;
use oxla_ir::{ElementType, Literal, Module, OpKind, Type};

fn folded(module: &Module) -> (Module, usize) {
    let mut out = module.clone();
    let n = fold_transposes_into_dots(&mut out);
    if let Err(errors) = verify_module(&out) {
        panic!("fails verification after folding:\n{}", errors.summary(10));
    }
    (out, n)
}

fn transposes(module: &Module) -> usize {
    let main = module.function("main").expect("main");
    main.body.blocks[0]
        .ops
        .iter()
        .filter(|op| op.kind == OpKind::Transpose)
        .count()
}

/// Arguments of ordinary magnitudes (few special values: one NaN or infinity would spread
/// over a whole row of products), integers for integer inputs.
fn arguments(rng: &mut Rng, module: &Module) -> Vec<Literal> {
    let main = module.function("main").expect("main");
    main.ty
        .inputs
        .iter()
        .map(|ty| {
            let Type::Tensor(t) = ty else {
                panic!("tensor inputs only");
            };
            let n = t.num_elements().expect("static");
            let value = |rng: &mut Rng| (rng.below(2001) as f64 - 1000.0) / 97.0;
            let data: Vec<u8> = match t.element_type {
                ElementType::F32 => (0..n)
                    .flat_map(|_| (value(rng) as f32).to_le_bytes())
                    .collect(),
                ElementType::F64 => (0..n).flat_map(|_| value(rng).to_le_bytes()).collect(),
                ElementType::S32 => (0..n)
                    .flat_map(|_| (rng.next() as i32).to_le_bytes())
                    .collect(),
                other => panic!("no arguments of {other}"),
            };
            Literal::new(t.clone(), data).expect("sized")
        })
        .collect()
}

/// Runs `main` of `before` and `after` on `args`, unfused and fused: the same integers and
/// special values, floats within `1e-4` (f32) or `1e-12` (f64) of the largest magnitude of
/// the result (another summation order; a wrong element is off by the size of the values).
fn assert_close_results(before: &Module, after: &Module, args: &[Literal], what: &str) {
    for fuse in [false, true] {
        let (want, got) = match (run(before, args, fuse), run(after, args, fuse)) {
            (Ok(w), Ok(g)) => (w, g),
            (Err(_), Err(_)) => continue,
            (w, g) => panic!("{what}: {w:?} against {g:?}"),
        };
        assert_eq!(want.len(), got.len(), "{what}");
        for (w, g) in want.iter().zip(&got) {
            assert_eq!(w.ty, g.ty, "{what}");
            let floats = |l: &Literal| -> Option<Vec<f64>> {
                match l.ty.element_type {
                    ElementType::F32 => Some(
                        l.data
                            .chunks_exact(4)
                            .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                            .collect(),
                    ),
                    ElementType::F64 => Some(
                        l.data
                            .chunks_exact(8)
                            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
                            .collect(),
                    ),
                    _ => None,
                }
            };
            let (Some(wf), Some(gf)) = (floats(w), floats(g)) else {
                assert_eq!(w.data, g.data, "{what} (fuse {fuse}): results differ");
                continue;
            };
            let rel = if w.ty.element_type == ElementType::F32 {
                1e-4
            } else {
                1e-12
            };
            let big = wf
                .iter()
                .filter(|x| x.is_finite())
                .fold(1.0f64, |m, x| m.max(x.abs()));
            for (i, (x, y)) in wf.iter().zip(&gf).enumerate() {
                let ok = if x.is_finite() {
                    (x - y).abs() <= rel * big
                } else {
                    x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
                };
                assert!(ok, "{what} (fuse {fuse}) at {i}: {x} against {y}");
            }
        }
    }
}

fn check(text: &str, want_folded: usize, what: &str) {
    let module = parse_text(text).unwrap_or_else(|e| panic!("{what}: {e}"));
    let (after, n) = folded(&module);
    assert_eq!(n, want_folded, "{what}: folded operands");
    assert_eq!(
        transposes(&after),
        transposes(&module) - want_folded,
        "{what}: transposes left"
    );
    let mut rng = Rng(5);
    for _ in 0..2 {
        let args = arguments(&mut rng, &module);
        assert_close_results(&module, &after, &args, what);
    }
}

/// `a @ b.T` as JAX writes it, for `m x k` times `(n x k)^T`.
fn a_times_b_transposed(m: usize, k: usize, n: usize, et: &str) -> String {
    format!(
        "func.func @main(%a: tensor<{m}x{k}x{et}>, %b: tensor<{n}x{k}x{et}>) -> tensor<{m}x{n}x{et}> {{
  %t = stablehlo.transpose %b, dims = [1, 0] : (tensor<{n}x{k}x{et}>) -> tensor<{k}x{n}x{et}>
  %p = stablehlo.dot_general %a, %t, contracting_dims = [1] x [0] : (tensor<{m}x{k}x{et}>, tensor<{k}x{n}x{et}>) -> tensor<{m}x{n}x{et}>
  return %p : tensor<{m}x{n}x{et}>
}}
"
    )
}

#[test]
fn a_times_b_transposed_reads_b_in_place() {
    // Few rows (the transposed product), rows enough for the row-major copy of `b`, and
    // sizes below the copies' thresholds (strided kernels).
    for (m, k, n) in [(8, 64, 64), (40, 33, 17), (3, 5, 7), (64, 48, 80)] {
        for et in ["f32", "f64", "i32"] {
            check(
                &a_times_b_transposed(m, k, n, et),
                1,
                &format!("{m}x{k}x{n} {et}"),
            );
        }
    }
}

#[test]
fn a_transposed_times_b_and_batched_operands_fold() {
    let lhs = "func.func @main(%a: tensor<48x20xf32>, %b: tensor<48x24xf32>) -> tensor<20x24xf32> {
  %t = stablehlo.transpose %a, dims = [1, 0] : (tensor<48x20xf32>) -> tensor<20x48xf32>
  %p = stablehlo.dot_general %t, %b, contracting_dims = [1] x [0] : (tensor<20x48xf32>, tensor<48x24xf32>) -> tensor<20x24xf32>
  return %p : tensor<20x24xf32>
}
";
    check(lhs, 1, "a.T @ b");
    let both = "func.func @main(%a: tensor<48x20xf32>, %b: tensor<24x48xf32>) -> tensor<20x24xf32> {
  %ta = stablehlo.transpose %a, dims = [1, 0] : (tensor<48x20xf32>) -> tensor<20x48xf32>
  %tb = stablehlo.transpose %b, dims = [1, 0] : (tensor<24x48xf32>) -> tensor<48x24xf32>
  %p = stablehlo.dot_general %ta, %tb, contracting_dims = [1] x [0] : (tensor<20x48xf32>, tensor<48x24xf32>) -> tensor<20x24xf32>
  return %p : tensor<20x24xf32>
}
";
    check(both, 2, "a.T @ b.T");
    // Attention's `q @ k^T` over a batch of heads: `k` transposed in its last two dimensions.
    let batched = "func.func @main(%q: tensor<3x16x32xf32>, %k: tensor<3x24x32xf32>) -> tensor<3x16x24xf32> {
  %t = stablehlo.transpose %k, dims = [0, 2, 1] : (tensor<3x24x32xf32>) -> tensor<3x32x24xf32>
  %p = stablehlo.dot_general %q, %t, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<3x16x32xf32>, tensor<3x32x24xf32>) -> tensor<3x16x24xf32>
  return %p : tensor<3x16x24xf32>
}
";
    check(batched, 1, "batched q @ k^T");
    // The batch dimension moved: it maps through the permutation too.
    let moved_batch = "func.func @main(%a: tensor<16x3x32xf32>, %b: tensor<3x32x24xf32>) -> tensor<3x16x24xf32> {
  %t = stablehlo.transpose %a, dims = [1, 0, 2] : (tensor<16x3x32xf32>) -> tensor<3x16x32xf32>
  %p = stablehlo.dot_general %t, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<3x16x32xf32>, tensor<3x32x24xf32>) -> tensor<3x16x24xf32>
  return %p : tensor<3x16x24xf32>
}
";
    check(moved_batch, 1, "batch dimension moved");
}

#[test]
fn transposes_that_reorder_the_result_or_are_read_elsewhere_stay() {
    // The lhs's two free dimensions swap: folding would swap the result's.
    let reorders = "func.func @main(%a: tensor<4x6x8xf32>, %b: tensor<8x5xf32>) -> tensor<6x4x5xf32> {
  %t = stablehlo.transpose %a, dims = [1, 0, 2] : (tensor<4x6x8xf32>) -> tensor<6x4x8xf32>
  %p = stablehlo.dot_general %t, %b, contracting_dims = [2] x [0] : (tensor<6x4x8xf32>, tensor<8x5xf32>) -> tensor<6x4x5xf32>
  return %p : tensor<6x4x5xf32>
}
";
    check(reorders, 0, "free dimensions reordered");
    let read_twice = "func.func @main(%a: tensor<6x8xf32>, %b: tensor<5x8xf32>) -> (tensor<6x5xf32>, tensor<8x5xf32>) {
  %t = stablehlo.transpose %b, dims = [1, 0] : (tensor<5x8xf32>) -> tensor<8x5xf32>
  %p = stablehlo.dot_general %a, %t, contracting_dims = [1] x [0] : (tensor<6x8xf32>, tensor<8x5xf32>) -> tensor<6x5xf32>
  return %p, %t : tensor<6x5xf32>, tensor<8x5xf32>
}
";
    check(read_twice, 0, "transpose also returned");
    let squared = "func.func @main(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %t = stablehlo.transpose %a, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %p = stablehlo.dot_general %t, %t, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %p : tensor<8x8xf32>
}
";
    check(squared, 0, "one transpose read by both operands");
}

#[test]
fn golden_jax_programs_give_the_same_results() {
    let mut checked = 0;
    for (path, text) in golden_programs() {
        let Ok(mut module) = parse_text(&text) else {
            continue;
        };
        if module.function("main").is_none() {
            continue;
        }
        inline_calls(&mut module);
        let (after, _) = folded(&module);
        let what = path.display().to_string();
        let mut rng = Rng(17);
        let Some(args) = args_for(&mut rng, &module) else {
            continue;
        };
        assert_close_results(&module, &after, &args, &what);
        checked += 1;
    }
    assert!(checked > 20, "only {checked} golden programs ran");
}
