//! `ApproxTopK` (`jax.lax.approx_max_k` / `approx_min_k`) lowered by
//! `oxla_ir::transform::lower_approx_top_k`: the lowered program verifies and computes the
//! exact top k (ties in position order), checked against a top k computed here; malformed
//! calls are rejected with an error naming the call.

mod common;

use common::Rng;
use oxla_frontend::parse_text;
use oxla_ir::transform::lower_approx_top_k;
use oxla_ir::verifier::verify_module;
use oxla_ir::{IrError, Literal, Module};

const COMPARATORS: &str = "
func.func @gt(%a: tensor<f32>, %b: tensor<f32>, %i: tensor<i32>, %j: tensor<i32>) -> tensor<i1> {
  %0 = stablehlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
  stablehlo.return %0 : tensor<i1>
}
func.func @lt(%a: tensor<f32>, %b: tensor<f32>, %i: tensor<i32>, %j: tensor<i32>) -> tensor<i1> {
  %0 = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
  return %0 : tensor<i1>
}
";

/// A program returning the top `k` of a `rows x cols` input along `dim` by `comparator`.
fn program(rows: i64, cols: i64, dim: usize, k: i64, comparator: &str, extra: &str) -> String {
    let out = if dim == 1 { [rows, k] } else { [k, cols] };
    let (o0, o1) = (out[0], out[1]);
    format!(
        "{COMPARATORS}
func.func public @main(%x: tensor<{rows}x{cols}xf32>) -> (tensor<{o0}x{o1}xf32>, tensor<{o0}x{o1}xi32>) {{
  %iota = stablehlo.iota dim = {dim} : tensor<{rows}x{cols}xi32>
  %c = stablehlo.constant dense<-1> : tensor<i32>
  %init = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %r:2 = stablehlo.custom_call @ApproxTopK(%x, %iota, %init, %c) {{backend_config = \"\", called_computations = [@{comparator}], mhlo.backend_config = {{aggregate_to_topk = true, is_fallback = true, recall_target = 0.95 : f32, reduction_dim = {dim} : i64, reduction_input_size_override = -1 : i64, top_k = {k} : i64{extra}}}}} : (tensor<{rows}x{cols}xf32>, tensor<{rows}x{cols}xi32>, tensor<f32>, tensor<i32>) -> (tensor<{o0}x{o1}xf32>, tensor<{o0}x{o1}xi32>)
  return %r#0, %r#1 : tensor<{o0}x{o1}xf32>, tensor<{o0}x{o1}xi32>
}}
"
    )
}

fn lowered(text: &str) -> Result<Module, IrError> {
    let mut module = parse_text(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(lower_approx_top_k(&mut module)?, 1);
    if let Err(errors) = verify_module(&module) {
        panic!(
            "lowered program fails verification:\n{}",
            errors.summary(10)
        );
    }
    Ok(module)
}

/// Finite values with many ties (a few distinct values per row).
fn input(rng: &mut Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.below(7) as f32 - 3.0).collect()
}

#[test]
fn lowered_calls_compute_the_exact_top_k_with_ties_in_position_order() {
    let mut rng = Rng(11);
    for (rows, cols, dim, k, largest) in [
        (3, 10, 1, 3, true),
        (4, 7, 1, 7, false),
        (9, 5, 0, 2, true),
        (6, 3, 0, 6, false),
        (1, 1, 1, 1, true),
    ] {
        let comparator = if largest { "gt" } else { "lt" };
        let module = lowered(&program(rows, cols, dim, k, comparator, "")).unwrap();
        let (rows, cols, k) = (rows as usize, cols as usize, k as usize);
        let x = input(&mut rng, rows * cols);
        let arg = Literal::from_f32(&[rows as i64, cols as i64], &x).unwrap();
        for fuse in [false, true] {
            let out = common::run(&module, std::slice::from_ref(&arg), fuse).unwrap();
            let values = out[0].to_f32_vec().unwrap();
            let positions: Vec<i32> = out[1]
                .data
                .chunks_exact(4)
                .map(|b| i32::from_le_bytes(b.try_into().unwrap()))
                .collect();
            // Each line along `dim`: its positions ordered by value (stable), the first k.
            let lines = if dim == 1 { rows } else { cols };
            let len = if dim == 1 { cols } else { rows };
            for line in 0..lines {
                let at = |p: usize| {
                    if dim == 1 {
                        x[line * cols + p]
                    } else {
                        x[p * cols + line]
                    }
                };
                let mut order: Vec<usize> = (0..len).collect();
                order.sort_by(|&a, &b| {
                    let o = at(a).partial_cmp(&at(b)).unwrap();
                    if largest {
                        o.reverse()
                    } else {
                        o
                    }
                });
                for (j, &p) in order.iter().take(k).enumerate() {
                    let flat = if dim == 1 {
                        line * k + j
                    } else {
                        j * cols + line
                    };
                    assert_eq!(
                        positions[flat], p as i32,
                        "line {line}, rank {j}, fuse {fuse}"
                    );
                    assert_eq!(values[flat], at(p), "line {line}, rank {j}, fuse {fuse}");
                }
            }
        }
    }
}

#[test]
fn malformed_calls_are_rejected() {
    let invalid = |text: String, needle: &str| match lowered(&text) {
        Err(e @ IrError::InvalidOp { .. }) => {
            assert!(e.to_string().contains(needle), "{e}");
            assert!(e.to_string().contains("ApproxTopK"), "{e}");
        }
        other => panic!("expected an invalid-op error about {needle}, got {other:?}"),
    };
    // Reduction dimension outside the rank.
    invalid(
        program(3, 10, 1, 3, "gt", "").replace("reduction_dim = 1", "reduction_dim = 2"),
        "outside rank",
    );
    // No reduction dimension at all.
    invalid(
        program(3, 10, 1, 3, "gt", "").replace("reduction_dim = 1 : i64, ", ""),
        "reduction_dim",
    );
    // An unknown comparator.
    invalid(
        program(3, 10, 1, 3, "gt", "").replace("[@gt]", "[@nowhere]"),
        "unknown comparator",
    );
    // A result longer than the input along the reduction dimension.
    invalid(program(3, 4, 1, 6, "gt", ""), "does not fit");
    // A comparator of the wrong element types.
    let wrong = program(3, 10, 1, 3, "gt", "").replace(
        "func.func @gt(%a: tensor<f32>, %b: tensor<f32>",
        "func.func @gt(%a: tensor<i32>, %b: tensor<i32>",
    );
    let wrong = wrong.replace(
        "stablehlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>)",
        "stablehlo.compare GT, %a, %b : (tensor<i32>, tensor<i32>)",
    );
    invalid(wrong, "comparator must take");
}
