//! Inlining `func.call` (`oxla_ir::transform::inline_calls`) keeps what a program computes:
//! the golden JAX programs and hand-written call graphs give the same bits before and after,
//! the result still verifies, and calls the pass must keep (recursion, custom calls,
//! attributes it does not know) stay calls.

mod common;

use common::{args_for, assert_same_results, golden_programs, Rng};
use oxla_frontend::parse_text;
use oxla_ir::transform::inline_calls;
use oxla_ir::verifier::verify_module;
use oxla_ir::{Module, OpKind, Region};

fn calls_in(region: &Region) -> usize {
    region
        .blocks
        .iter()
        .flat_map(|b| &b.ops)
        .map(|op| {
            usize::from(op.kind == OpKind::Call) + op.regions.iter().map(calls_in).sum::<usize>()
        })
        .sum()
}

fn main_calls(module: &Module) -> usize {
    calls_in(&module.function("main").expect("main").body)
}

/// Inlines `module`, checks it verifies and gives the original's bits (fused and op by op)
/// on a few random inputs; returns the inlined module.
fn inline_and_compare(module: &Module, what: &str) -> Module {
    let mut inlined = module.clone();
    inline_calls(&mut inlined);
    if let Err(errors) = verify_module(&inlined) {
        panic!(
            "{what}: inlined module fails verification:\n{}",
            errors.summary(10)
        );
    }
    let mut rng = Rng(7);
    for _ in 0..3 {
        let Some(args) = args_for(&mut rng, module) else {
            break;
        };
        assert_same_results(module, &inlined, &args, what);
    }
    inlined
}

#[test]
fn golden_jax_programs_keep_their_bits_inlined() {
    let mut with_calls = 0;
    for (path, text) in golden_programs() {
        let Ok(module) = parse_text(&text) else {
            continue;
        };
        if module.function("main").is_none() {
            continue;
        }
        let inlined = inline_and_compare(&module, &path.display().to_string());
        // Calls into LAPACK-backed callees (custom calls) stay; the rest go.
        if main_calls(&inlined) < main_calls(&module) && args_for(&mut Rng(1), &module).is_some() {
            with_calls += 1;
        }
    }
    assert!(
        with_calls >= 5,
        "only {with_calls} golden programs with inlined calls compared"
    );
}

/// Calls nested three deep, a callee called twice, one returning its argument and another
/// call's result, calls inside a loop body and inside a callee's reduction, and a callee
/// holding a region of its own.
const CALL_GRAPH: &str = "func.func @main(%x: tensor<8x5xf32>, %p: tensor<8x5xi1>) -> (tensor<8x5xf32>, tensor<8xf32>, tensor<8x5xf32>) {
  %a = func.call @where(%p, %x) : (tensor<8x5xi1>, tensor<8x5xf32>) -> tensor<8x5xf32>
  %b = func.call @where(%p, %a) : (tensor<8x5xi1>, tensor<8x5xf32>) -> tensor<8x5xf32>
  %s = func.call @row_sums(%b) : (tensor<8x5xf32>) -> tensor<8xf32>
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %v = %b) : tensor<i32>, tensor<8x5xf32>
  cond {
    %lim = stablehlo.constant dense<3> : tensor<i32>
    %lt = stablehlo.compare LT, %i, %lim, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    %w = func.call @outer(%v, %p) : (tensor<8x5xf32>, tensor<8x5xi1>) -> tensor<8x5xf32>
    stablehlo.return %j, %w : tensor<i32>, tensor<8x5xf32>
  }
  return %r#1, %s, %a : tensor<8x5xf32>, tensor<8xf32>, tensor<8x5xf32>
}
func.func private @where(%p: tensor<8x5xi1>, %x: tensor<8x5xf32>) -> tensor<8x5xf32> {
  %z = stablehlo.constant dense<-2.5> : tensor<f32>
  %zb = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<8x5xf32>
  %s = stablehlo.select %p, %x, %zb : tensor<8x5xi1>, tensor<8x5xf32>
  return %s : tensor<8x5xf32>
}
func.func private @outer(%v: tensor<8x5xf32>, %p: tensor<8x5xi1>) -> tensor<8x5xf32> {
  %m = func.call @middle(%v, %p) : (tensor<8x5xf32>, tensor<8x5xi1>) -> tensor<8x5xf32>
  %n = func.call @pass(%m) : (tensor<8x5xf32>) -> tensor<8x5xf32>
  return %n : tensor<8x5xf32>
}
func.func private @middle(%v: tensor<8x5xf32>, %p: tensor<8x5xi1>) -> tensor<8x5xf32> {
  %w = func.call @where(%p, %v) : (tensor<8x5xi1>, tensor<8x5xf32>) -> tensor<8x5xf32>
  %h = stablehlo.constant dense<0.5> : tensor<f32>
  %hb = stablehlo.broadcast_in_dim %h, dims = [] : (tensor<f32>) -> tensor<8x5xf32>
  %y = stablehlo.multiply %w, %hb : tensor<8x5xf32>
  %e = stablehlo.exponential %y : tensor<8x5xf32>
  return %e : tensor<8x5xf32>
}
func.func private @pass(%v: tensor<8x5xf32>) -> tensor<8x5xf32> {
  return %v : tensor<8x5xf32>
}
func.func private @row_sums(%v: tensor<8x5xf32>) -> tensor<8xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = stablehlo.reduce(%v init: %z) across dimensions = [1] : (tensor<8x5xf32>, tensor<f32>) -> tensor<8xf32>
   reducer(%a: tensor<f32>, %b: tensor<f32>)  {
    %s = stablehlo.add %a, %b : tensor<f32>
    %t = stablehlo.multiply %s, %s : tensor<f32>
    %u = stablehlo.subtract %t, %a : tensor<f32>
    stablehlo.return %u : tensor<f32>
  }
  return %r : tensor<8xf32>
}
";

#[test]
fn call_graphs_inline_completely_and_keep_their_bits() {
    let module = parse_text(CALL_GRAPH).expect("parses");
    let mut counted = module.clone();
    // main: 3 calls + 1 in the loop body; @outer's 2 and @middle's 1 come inlined with it.
    assert_eq!(inline_calls(&mut counted), 7);
    let inlined = inline_and_compare(&module, "call graph");
    assert_eq!(main_calls(&inlined), 0);
    // The callees stay in the module, unchanged apart from their own inlined calls.
    assert_eq!(inlined.functions.len(), module.functions.len());
    assert_eq!(inlined.function("where"), module.function("where"));
}

#[test]
fn calls_the_pass_must_keep_stay_calls() {
    for (what, text) in [
        (
            "recursion",
            "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = func.call @f(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func private @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = func.call @g(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func private @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = func.call @f(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
",
        ),
        (
            "custom call in the callee",
            "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = func.call @f(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func private @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = stablehlo.custom_call @Sharding(%x) {mhlo.sharding = \"{replicated}\"} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
",
        ),
        (
            "collective in the callee",
            "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = func.call @f(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func private @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = \"stablehlo.all_reduce\"(%x) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
",
        ),
        (
            "a call with attributes",
            "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = func.call @f(%x) {mhlo.sharding = \"{replicated}\"} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func private @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = stablehlo.negate %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
",
        ),
    ] {
        let module = parse_text(text).unwrap_or_else(|e| panic!("{what}: {e}"));
        let mut inlined = module.clone();
        assert_eq!(inline_calls(&mut inlined), 0, "{what}");
        assert_eq!(inlined, module, "{what}");
    }
}
