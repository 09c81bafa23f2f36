//! The integer transforms (`oxla_ir::transform::fold_integer_constants` and
//! `simplify_counters`) keep what a program computes: the golden JAX programs give the same
//! bits before and after (inlined first, as the compiler runs them) and still verify; JAX's
//! guarded divisor folds to its constant; and the threefry counter of `jax.random` loses
//! its 64-bit passes.

mod common;

use common::{args_for, assert_same_results, golden_programs, Rng};
use oxla_frontend::parse_text;
use oxla_ir::transform::{fold_integer_constants, inline_calls, simplify_counters};
use oxla_ir::verifier::verify_module;
use oxla_ir::{ElementType, Literal, Module, OpKind, TensorType, Type};

fn transformed(module: &Module) -> (Module, usize) {
    let mut out = module.clone();
    let changed = fold_integer_constants(&mut out) + simplify_counters(&mut out);
    (out, changed)
}

#[test]
fn golden_jax_programs_keep_their_bits() {
    let (mut checked, mut changed_any) = (0, 0);
    for (path, text) in golden_programs() {
        let Ok(mut module) = parse_text(&text) else {
            continue;
        };
        if module.function("main").is_none() {
            continue;
        }
        inline_calls(&mut module);
        let (after, changed) = transformed(&module);
        let what = path.display().to_string();
        if let Err(errors) = verify_module(&after) {
            panic!("{what}: fails verification after:\n{}", errors.summary(10));
        }
        if changed > 0 {
            changed_any += 1;
        }
        let mut rng = Rng(11);
        let Some(first) = args_for(&mut rng, &module) else {
            continue;
        };
        let second = args_for(&mut rng, &module).expect("the same types");
        for args in [first, second] {
            assert_same_results(&module, &after, &args, &what);
        }
        checked += 1;
    }
    assert!(checked > 20, "only {checked} golden programs ran");
    assert!(changed_any > 0, "no golden program changed");
}

#[test]
fn a_guarded_divisor_folds_to_its_constant() {
    let text = "func.func @main(%x: tensor<1000xi32>) -> tensor<1000xi32> {
  %c = stablehlo.constant dense<7> : tensor<i32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %isz = stablehlo.compare EQ, %c, %zero, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %d = stablehlo.select %isz, %one, %c : tensor<i1>, tensor<i32>
  %cd = stablehlo.convert %d : tensor<i32>
  %b = stablehlo.broadcast_in_dim %cd, dims = [] : (tensor<i32>) -> tensor<1000xi32>
  %r = stablehlo.remainder %x, %b : tensor<1000xi32>
  return %r : tensor<1000xi32>
}
";
    let module = parse_text(text).expect("parses");
    let (after, changed) = transformed(&module);
    assert!(changed >= 3, "{changed}");
    let ops = &after.function("main").expect("main").body.blocks[0].ops;
    // A constant 7, broadcast, is the divisor; the guard and the conversion are gone.
    let kinds: Vec<&OpKind> = ops.iter().map(|op| &op.kind).collect();
    assert_eq!(
        kinds,
        [
            &OpKind::Constant,
            &OpKind::BroadcastInDim,
            &OpKind::Remainder,
            &OpKind::FuncReturn
        ]
    );
    match ops[0].attr("value") {
        Some(oxla_ir::Attribute::Elements(e)) => {
            assert_eq!(e.to_dense_bytes(), 7i32.to_le_bytes().to_vec())
        }
        other => panic!("{other:?}"),
    }
    let x: Vec<i32> = (0..1000).map(|i| i * 7919 - 3_000_000).collect();
    let arg = Literal::from_i32(&[1000], &x).expect("literal");
    assert_same_results(&module, &after, &[arg], "guarded divisor");
}

const THREEFRY_COUNTER: &str =
    "func.func @main(%k: tensor<ui32>) -> (tensor<70000xui32>, tensor<70000xui32>) {
  %c32 = stablehlo.constant dense<32> : tensor<ui64>
  %c1 = stablehlo.constant dense<1> : tensor<ui64>
  %i = stablehlo.iota dim = 0 : tensor<70000xui64>
  %b1 = stablehlo.broadcast_in_dim %c1, dims = [] : (tensor<ui64>) -> tensor<70000xui64>
  %m = stablehlo.multiply %b1, %i : tensor<70000xui64>
  %b32 = stablehlo.broadcast_in_dim %c32, dims = [] : (tensor<ui64>) -> tensor<70000xui64>
  %hi = stablehlo.shift_right_logical %m, %b32 : tensor<70000xui64>
  %lo32 = stablehlo.convert %m : (tensor<70000xui64>) -> tensor<70000xui32>
  %hi32 = stablehlo.convert %hi : (tensor<70000xui64>) -> tensor<70000xui32>
  %kb = stablehlo.broadcast_in_dim %k, dims = [] : (tensor<ui32>) -> tensor<70000xui32>
  %a = stablehlo.add %lo32, %kb : tensor<70000xui32>
  %h = stablehlo.xor %hi32, %kb : tensor<70000xui32>
  return %a, %h : tensor<70000xui32>, tensor<70000xui32>
}
";

#[test]
fn the_threefry_counter_loses_its_64_bit_passes() {
    let module = parse_text(THREEFRY_COUNTER).expect("parses");
    let (after, changed) = transformed(&module);
    assert!(changed > 0);
    let main = after.function("main").expect("main");
    let wide: Vec<&OpKind> = main.body.blocks[0]
        .ops
        .iter()
        .filter(|op| {
            op.results.iter().any(|&r| {
                matches!(main.value_type(r), Type::Tensor(t)
                    if t.element_type == ElementType::U64 && t.rank() > 0)
            })
        })
        .map(|op| &op.kind)
        .collect();
    assert!(wide.is_empty(), "64-bit tensors left: {wide:?}");
    verify_module(&after).expect("verifies");
    let key = Literal::new(
        TensorType::new(vec![], ElementType::U32),
        0xdead_beefu32.to_le_bytes().to_vec(),
    )
    .expect("literal");
    assert_same_results(&module, &after, &[key], "threefry counter");
}

#[test]
fn counters_too_long_for_the_narrow_type_keep_their_passes() {
    // 300 indices do not fit `i8`, and `iota >> 4` is not zero below 300: both stay.
    let text = "func.func @main() -> (tensor<300xi8>, tensor<300xui16>) {
  %i = stablehlo.iota dim = 0 : tensor<300xi64>
  %n = stablehlo.convert %i : (tensor<300xi64>) -> tensor<300xi8>
  %j = stablehlo.iota dim = 0 : tensor<300xui16>
  %c = stablehlo.constant dense<4> : tensor<300xui16>
  %s = stablehlo.shift_right_logical %j, %c : tensor<300xui16>
  return %n, %s : tensor<300xi8>, tensor<300xui16>
}
";
    let module = parse_text(text).expect("parses");
    let (after, _) = transformed(&module);
    let kinds: Vec<OpKind> = after.function("main").expect("main").body.blocks[0]
        .ops
        .iter()
        .map(|op| op.kind.clone())
        .collect();
    assert!(kinds.contains(&OpKind::Convert), "{kinds:?}");
    assert!(kinds.contains(&OpKind::ShiftRightLogical), "{kinds:?}");
    assert_same_results(&module, &after, &[], "long counters");
}

#[test]
fn booleans_compared_with_boolean_constants_become_themselves_or_their_negation() {
    // JAX's `%` tests `(r < 0) != (7 < 0)`, the second a folded `false`.
    let text = "func.func @main(%x: tensor<40xi32>) -> (tensor<40xi1>, tensor<40xi1>, tensor<40xi1>, tensor<40xi1>, tensor<40xi1>, tensor<40xi1>) {
  %zero = stablehlo.constant dense<0> : tensor<40xi32>
  %neg = stablehlo.compare LT, %x, %zero, SIGNED : (tensor<40xi32>, tensor<40xi32>) -> tensor<40xi1>
  %f = stablehlo.constant dense<false> : tensor<i1>
  %fb = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<i1>) -> tensor<40xi1>
  %t = stablehlo.constant dense<true> : tensor<40xi1>
  %a = stablehlo.compare NE, %neg, %fb, UNSIGNED : (tensor<40xi1>, tensor<40xi1>) -> tensor<40xi1>
  %b = stablehlo.compare EQ, %t, %neg, UNSIGNED : (tensor<40xi1>, tensor<40xi1>) -> tensor<40xi1>
  %c = stablehlo.compare EQ, %neg, %fb, UNSIGNED : (tensor<40xi1>, tensor<40xi1>) -> tensor<40xi1>
  %d = stablehlo.compare NE, %t, %neg, UNSIGNED : (tensor<40xi1>, tensor<40xi1>) -> tensor<40xi1>
  %e = stablehlo.compare GT, %neg, %fb, UNSIGNED : (tensor<40xi1>, tensor<40xi1>) -> tensor<40xi1>
  %g = stablehlo.compare EQ, %x, %zero, SIGNED : (tensor<40xi32>, tensor<40xi32>) -> tensor<40xi1>
  return %a, %b, %c, %d, %e, %g : tensor<40xi1>, tensor<40xi1>, tensor<40xi1>, tensor<40xi1>, tensor<40xi1>, tensor<40xi1>
}
";
    let module = parse_text(text).expect("parses");
    let (after, changed) = transformed(&module);
    assert!(changed >= 4, "{changed}");
    verify_module(&after).expect("verifies");
    let kinds: Vec<OpKind> = after.function("main").expect("main").body.blocks[0]
        .ops
        .iter()
        .map(|op| op.kind.clone())
        .collect();
    let count = |k: OpKind| kinds.iter().filter(|&x| *x == k).count();
    // `x < 0`, the ordered `>` and the integer `x == 0` stay; the four boolean equality
    // tests become two negations.
    assert_eq!(count(OpKind::Compare), 3, "{kinds:?}");
    assert_eq!(count(OpKind::Not), 2, "{kinds:?}");
    let x: Vec<i32> = (0..40).map(|i| (i * 37 % 23) - 11).collect();
    let arg = Literal::from_i32(&[40], &x).expect("literal");
    assert_same_results(&module, &after, &[arg], "boolean compares");
}
