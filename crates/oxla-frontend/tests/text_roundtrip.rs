//! Text parser and printer tests: golden round trips over `tests/filetests/roundtrip`,
//! precise-output tests over `tests/filetests/print` (`OXLA_BLESS=1` rewrites them; a file
//! with the line `// options: lower` prints the IR after the compile-time lowerings), the
//! IR the parser builds for representative programs, and errors for malformed text.

use oxla_frontend::{parse_text, FrontendError};
use oxla_ir::attrs::{ComparisonDirection, ComparisonType, Precision};
use oxla_ir::print::{print_module, print_module_with, PrintOptions};
use oxla_ir::{Attribute, ElementType, Location, Module, Op, OpKind, Type};
use std::path::{Path, PathBuf};

fn filetests_dir(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/filetests")
        .join(kind)
}

fn mlir_files(kind: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(filetests_dir(kind))
        .unwrap_or_else(|e| panic!("cannot list filetests/{kind}: {e}"))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "mlir"))
        .collect();
    files.sort();
    files
}

fn parse(text: &str) -> Module {
    parse_text(text).unwrap_or_else(|e| panic!("parse failed: {e}\n{text}"))
}

/// Every op of a module, nested regions included, in textual order.
fn all_ops(module: &Module) -> Vec<&Op> {
    let mut out = Vec::new();
    for f in &module.functions {
        let mut stack: Vec<&Op> = f
            .body
            .blocks
            .iter()
            .rev()
            .flat_map(|b| b.ops.iter().rev())
            .collect();
        while let Some(op) = stack.pop() {
            out.push(op);
            for region in op.regions.iter().rev() {
                for block in region.blocks.iter().rev() {
                    stack.extend(block.ops.iter().rev());
                }
            }
        }
    }
    out
}

fn first_op<'m>(module: &'m Module, kind: &OpKind) -> &'m Op {
    all_ops(module)
        .into_iter()
        .find(|op| &op.kind == kind)
        .unwrap_or_else(|| panic!("no {} op", kind.name()))
}

fn i64s(op: &Op, name: &str) -> Vec<i64> {
    match op.attr(name) {
        Some(Attribute::DenseI64Array(v)) => v.clone(),
        other => panic!("{} has no i64 list {name}: {other:?}", op.kind.name()),
    }
}

fn int(op: &Op, name: &str) -> i128 {
    op.attr(name)
        .and_then(Attribute::as_int)
        .unwrap_or_else(|| panic!("{} has no integer {name}", op.kind.name()))
}

#[test]
fn roundtrip_files_print_stably() {
    let files = mlir_files("roundtrip");
    assert!(
        files.len() >= 20,
        "expected the roundtrip corpus, found {}",
        files.len()
    );
    for path in files {
        let text = std::fs::read_to_string(&path).expect("read file");
        for options in [PrintOptions::default(), PrintOptions { locations: true }] {
            let module = parse_text(&text)
                .unwrap_or_else(|e| panic!("{}: parse failed: {e}", path.display()));
            let first = print_module_with(&module, options);
            let reparsed = parse_text(&first).unwrap_or_else(|e| {
                panic!(
                    "{}: printed text does not parse: {e}\n{first}",
                    path.display()
                )
            });
            let second = print_module_with(&reparsed, options);
            assert_eq!(first, second, "{}: print is not stable", path.display());
            // Printing never loses ops.
            assert_eq!(
                all_ops(&module).len(),
                all_ops(&reparsed).len(),
                "{}: op count changed",
                path.display()
            );
        }
    }
}

const EXPECTED_MARKER: &str = "// ----- expected -----";

/// Splits a print test into (input, expected output) per the format in docs/testing.md.
fn split_print_test(text: &str) -> (&str, Option<String>) {
    match text.find(EXPECTED_MARKER) {
        None => (text, None),
        Some(pos) => {
            let expected = text[pos + EXPECTED_MARKER.len()..]
                .lines()
                .skip(1)
                .map(|line| {
                    line.strip_prefix("// ")
                        .unwrap_or(line.strip_prefix("//").unwrap_or(line))
                })
                .collect::<Vec<_>>()
                .join("\n");
            (&text[..pos], Some(expected))
        }
    }
}

#[test]
fn print_files_match_expected_output() {
    let bless = std::env::var_os("OXLA_BLESS").is_some_and(|v| v == "1");
    let files = mlir_files("print");
    assert!(!files.is_empty(), "no print tests found");
    let mut failures = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("read file");
        let (input, expected) = split_print_test(&text);
        let options = PrintOptions {
            locations: input.lines().any(|l| l.trim() == "// options: locations"),
        };
        let mut module = parse_text(input).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if input.lines().any(|l| l.trim() == "// options: lower") {
            oxla_ir::transform::lower_approx_top_k(&mut module)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
        let actual = print_module_with(&module, options);
        let actual = actual.trim_end();
        if expected.as_deref().map(str::trim_end) == Some(actual) {
            continue;
        }
        if bless {
            let mut blessed = input.trim_end().to_string();
            blessed.push_str("\n\n");
            blessed.push_str(EXPECTED_MARKER);
            blessed.push('\n');
            for line in actual.lines() {
                if line.is_empty() {
                    blessed.push_str("//\n");
                } else {
                    blessed.push_str("// ");
                    blessed.push_str(line);
                    blessed.push('\n');
                }
            }
            std::fs::write(&path, blessed).expect("write blessed file");
        } else {
            failures.push(format!(
                "{}:\n--- expected\n{}\n--- actual\n{actual}",
                path.display(),
                expected.unwrap_or_default()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "print tests differ (run with OXLA_BLESS=1 to update):\n{}",
        failures.join("\n")
    );
}

#[test]
fn pretty_ops_build_flattened_attributes() {
    let text =
        std::fs::read_to_string(filetests_dir("roundtrip").join("op_dot_conv.mlir")).expect("read");
    let module = parse(&text);
    let dot = first_op(&module, &OpKind::DotGeneral);
    assert_eq!(i64s(dot, "lhs_batching_dimensions"), vec![0]);
    assert_eq!(i64s(dot, "rhs_batching_dimensions"), vec![0]);
    assert_eq!(i64s(dot, "lhs_contracting_dimensions"), vec![2]);
    assert_eq!(i64s(dot, "rhs_contracting_dimensions"), vec![1]);
    assert_eq!(
        dot.attr("precision_config"),
        Some(&Attribute::Array(vec![
            Attribute::Precision(Precision::Highest),
            Attribute::Precision(Precision::High)
        ]))
    );
    let conv = first_op(&module, &OpKind::Convolution);
    // [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]
    assert_eq!(int(conv, "input_batch_dimension"), 0);
    assert_eq!(int(conv, "input_feature_dimension"), 3);
    assert_eq!(i64s(conv, "input_spatial_dimensions"), vec![1, 2]);
    assert_eq!(int(conv, "kernel_input_feature_dimension"), 2);
    assert_eq!(int(conv, "kernel_output_feature_dimension"), 3);
    assert_eq!(i64s(conv, "kernel_spatial_dimensions"), vec![0, 1]);
    assert_eq!(i64s(conv, "output_spatial_dimensions"), vec![1, 2]);
    assert_eq!(i64s(conv, "window_strides"), vec![2, 2]);
    assert_eq!(i64s(conv, "rhs_dilation"), vec![2, 1]);
    assert_eq!(
        conv.attr("window_reversal"),
        Some(&Attribute::DenseBoolArray(vec![false, true]))
    );
    assert_eq!(
        conv.attr("padding").and_then(Attribute::as_i64_list),
        Some(vec![1, 1, 0, 1])
    );
    assert_eq!(int(conv, "feature_group_count"), 1);
}

#[test]
fn generic_ops_build_flattened_attributes() {
    let text = std::fs::read_to_string(filetests_dir("roundtrip").join("op_gather_scatter.mlir"))
        .expect("read");
    let module = parse(&text);
    let gather = first_op(&module, &OpKind::Gather);
    assert_eq!(i64s(gather, "offset_dims"), vec![2]);
    assert_eq!(i64s(gather, "collapsed_slice_dims"), vec![1]);
    assert_eq!(i64s(gather, "operand_batching_dims"), vec![0]);
    assert_eq!(i64s(gather, "start_indices_batching_dims"), vec![0]);
    assert_eq!(i64s(gather, "start_index_map"), vec![1, 2]);
    assert_eq!(int(gather, "index_vector_dim"), 2);
    assert_eq!(i64s(gather, "slice_sizes"), vec![1, 1, 5]);
    assert_eq!(
        gather.attr("indices_are_sorted"),
        Some(&Attribute::Bool(true))
    );
    let scatter = first_op(&module, &OpKind::Scatter);
    assert_eq!(i64s(scatter, "update_window_dims"), vec![2]);
    assert_eq!(i64s(scatter, "scatter_dims_to_operand_dims"), vec![1, 2]);
    assert_eq!(scatter.regions.len(), 1);
    assert_eq!(scatter.regions[0].blocks[0].arguments.len(), 2);
}

#[test]
fn jax_program_structure() {
    let text =
        std::fs::read_to_string(filetests_dir("roundtrip").join("jax_argmax.mlir")).expect("read");
    let module = parse(&text);
    assert_eq!(module.name.as_deref(), Some("jit__lambda"));
    assert_eq!(
        module.attr("mhlo.num_partitions"),
        Some(&Attribute::Integer {
            value: 1,
            ty: Some(ElementType::S32)
        })
    );
    let main = module.entry_function().expect("main");
    assert_eq!(main.name, "main");
    assert_eq!(main.res_attrs[0][0].0, "jax.result_info");
    let reduce = first_op(&module, &OpKind::Reduce);
    assert_eq!(reduce.operands.len(), 4);
    assert_eq!(reduce.results.len(), 2);
    assert_eq!(i64s(reduce, "dimensions"), vec![1]);
    let argmax = module.function("argmax").expect("argmax");
    let block = &reduce.regions[0].blocks[0];
    assert_eq!(block.arguments.len(), 4);
    let compare = &block.ops[0];
    assert_eq!(
        compare.attr("comparison_direction"),
        Some(&Attribute::ComparisonDirection(ComparisonDirection::Gt))
    );
    assert_eq!(
        compare.attr("compare_type"),
        Some(&Attribute::ComparisonType(ComparisonType::Float))
    );
    // %2 = compare GT, %arg1, %arg3: the reducer's first and third block arguments.
    assert_eq!(
        compare.operands,
        vec![block.arguments[0], block.arguments[2]]
    );
    // The function returns %1#1, the reduce's second result.
    let ret = argmax.body.blocks[0].ops.last().expect("return");
    assert_eq!(ret.kind, OpKind::FuncReturn);
    assert_eq!(ret.operands, vec![reduce.results[1]]);
}

#[test]
fn compact_reduce_builds_its_body() {
    let module = parse(
        "func.func @f(%x: tensor<4xf32>, %i: tensor<f32>) -> tensor<f32> {\n\
         %0 = stablehlo.reduce(%x init: %i) applies stablehlo.maximum across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>\n\
         return %0 : tensor<f32>\n}",
    );
    let f = &module.functions[0];
    let reduce = &f.body.blocks[0].ops[0];
    let body = &reduce.regions[0].blocks[0];
    assert_eq!(body.ops.len(), 2);
    assert_eq!(body.ops[0].kind, OpKind::Maximum);
    assert_eq!(body.ops[0].operands, body.arguments);
    assert_eq!(body.ops[1].kind, OpKind::Return);
    let scalar = Type::Tensor(oxla_ir::TensorType::scalar(ElementType::F32));
    for &arg in &body.arguments {
        assert_eq!(f.value_type(arg), &scalar);
    }
}

#[test]
fn while_regions_get_their_own_arguments() {
    let text =
        std::fs::read_to_string(filetests_dir("roundtrip").join("jax_fori.mlir")).expect("read");
    let module = parse(&text);
    let w = first_op(&module, &OpKind::While);
    assert_eq!(w.regions.len(), 2);
    let cond_args = &w.regions[0].blocks[0].arguments;
    let body_args = &w.regions[1].blocks[0].arguments;
    assert_eq!(cond_args.len(), 2);
    assert_eq!(body_args.len(), 2);
    assert_ne!(cond_args, body_args);
    // The body adds one to its first iteration argument.
    let add = w.regions[1].blocks[0]
        .ops
        .iter()
        .find(|op| op.kind == OpKind::Add)
        .expect("add in body");
    assert_eq!(add.operands[0], body_args[0]);
}

#[test]
fn a_function_ending_in_stablehlo_return_ends_as_func_return() {
    // As JAX prints a sort or top-k comparator; a nested region keeps its stablehlo.return.
    let text = "
func.func @less(%a: tensor<f32>, %b: tensor<f32>) -> tensor<i1> {
  %0 = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
  stablehlo.return %0 : tensor<i1>
}
func.func public @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = \"stablehlo.sort\"(%x) <{dimension = 0 : i64}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %1 = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  }) : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
";
    let module = parse(text);
    oxla_ir::verifier::verify_module(&module).expect("verifies");
    let less = module.function("less").expect("less");
    assert_eq!(
        less.body.blocks[0].ops.last().unwrap().kind,
        OpKind::FuncReturn
    );
    let sort = first_op(&module, &OpKind::Sort);
    assert_eq!(
        sort.regions[0].blocks[0].ops.last().unwrap().kind,
        OpKind::Return
    );
}

#[test]
fn constants_decode_to_dense_bytes() {
    let text =
        std::fs::read_to_string(filetests_dir("roundtrip").join("constants.mlir")).expect("read");
    let module = parse(&text);
    let constants: Vec<&oxla_ir::ElementsAttr> = all_ops(&module)
        .into_iter()
        .filter(|op| op.kind == OpKind::Constant)
        .map(|op| match op.attr("value") {
            Some(Attribute::Elements(e)) => e,
            other => panic!("constant without elements: {other:?}"),
        })
        .collect();
    let f32s = |bytes: &[u8]| -> Vec<f32> {
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    };
    assert!(constants[0].splat);
    assert_eq!(f32s(&constants[0].data), vec![1.5]);
    assert_eq!(f32s(&constants[1].data), vec![1.0, -2.5, 3.25, 4.0e10]);
    let special = f32s(&constants[2].data);
    assert!(special[0].is_nan());
    assert_eq!(special[1], f32::INFINITY);
    assert_eq!(special[2], f32::NEG_INFINITY);
    assert!(special[3] == 0.0 && special[3].is_sign_negative());
    // Hex data: full and splat.
    assert_eq!(f32s(&constants[3].data), vec![1.0, 2.0]);
    assert!(constants[4].splat);
    assert_eq!(constants[4].to_dense_bytes().len(), 12);
    assert_eq!(constants[5].data.as_ref(), &[1, 0, 1]);
    // complex<f32>: (1, 2), (-3, 0.5).
    assert_eq!(f32s(&constants[7].data), vec![1.0, 2.0, -3.0, 0.5]);
    // f16: 1.0 = 0x3C00, 65504 = 0x7BFF.
    assert_eq!(&constants[9].data[..4], &[0x00, 0x3C, 0xFF, 0x7B]);
    // bf16 -3.5 = 0xC060.
    assert_eq!(&constants[10].data[2..4], &[0x60, 0xC0]);
    // f8E4M3FN: 1.0 = 0x38, 448 = 0x7E, -0.5 = 0xB0.
    assert_eq!(constants[11].data.as_ref(), &[0x38, 0x7E, 0xB0]);
    // i4 values are stored one per byte, sign-extended.
    assert_eq!(constants[13].data.as_ref(), &[0xF8, 0x07, 0xFF]);
    assert_eq!(constants[17].data.as_ref()[..8], i64::MIN.to_le_bytes());
    assert_eq!(constants[18].data.as_ref(), &u64::MAX.to_le_bytes());
    assert!(constants[19].data.is_empty());
}

#[test]
fn dense_resources_read_the_trailer() {
    let text = std::fs::read_to_string(filetests_dir("roundtrip").join("constants_resource.mlir"))
        .expect("read");
    let module = parse(&text);
    let constant = first_op(&module, &OpKind::Constant);
    let Some(Attribute::Elements(e)) = constant.attr("value") else {
        panic!("no elements");
    };
    // The blob's 4-byte alignment header is dropped.
    assert_eq!(e.data.len(), 12);
    assert_eq!(&e.data[..4], &1.0f32.to_le_bytes());
    assert!(print_module(&module).contains("dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]>"));
}

#[test]
fn debug_locations_resolve_aliases() {
    let text =
        std::fs::read_to_string(filetests_dir("roundtrip").join("jax_debug.mlir")).expect("read");
    let module = parse(&text);
    let sine = first_op(&module, &OpKind::Sine);
    // #loc14 = loc("jit(<lambda>)/sin"(#loc11)), #loc11 = callsite(#loc6 at #loc10).
    let Location::Name {
        name,
        child: Some(child),
    } = &sine.location
    else {
        panic!("unexpected location {:?}", sine.location);
    };
    assert_eq!(&**name, "jit(<lambda>)/sin");
    let Location::CallSite { callee, .. } = child.as_ref() else {
        panic!("expected a call site, got {child:?}");
    };
    let Location::Name {
        name: callee_name,
        child: Some(file),
    } = callee.as_ref()
    else {
        panic!("expected a named callee, got {callee:?}");
    };
    assert_eq!(&**callee_name, "<lambda>");
    assert!(
        matches!(
            file.as_ref(),
            Location::FileLineCol {
                line: 25,
                col: 24,
                ..
            }
        ),
        "{file:?}"
    );
    assert_eq!(module.location, Location::Unknown);
}

/// Expects a text error at `line:col` whose detail contains `needle`.
fn expect_error(text: &str, line: usize, col: usize, needle: &str) {
    match parse_text(text) {
        Err(FrontendError::Text {
            line: l,
            col: c,
            detail,
        }) => {
            assert_eq!(
                (l, c),
                (line, col),
                "wrong position for {detail:?} in {text:?}"
            );
            assert!(
                detail.contains(needle),
                "{detail:?} does not mention {needle:?}"
            );
        }
        other => panic!("expected a text error for {text:?}, got {other:?}"),
    }
}

#[test]
fn malformed_text_reports_line_and_column() {
    expect_error("module {\n  func.func @f( {\n}", 2, 17, "expected a type");
    expect_error(
        "func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.add %a, %b : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}",
        2,
        26,
        "undefined value %b",
    );
    expect_error(
        "func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.add %a, %a : tensor<2xf32>\n  %0 = stablehlo.add %a, %a : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}",
        3,
        3,
        "redefinition of value %0",
    );
    expect_error(
        "func.func @f() -> tensor<2xf32> {\n  %0 = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}",
        2,
        27,
        "shape [3]",
    );
    expect_error(
        "func.func @f() -> tensor<ui8> {\n  %0 = stablehlo.constant dense<256> : tensor<ui8>\n  return %0 : tensor<ui8>\n}",
        2,
        27,
        "out of range",
    );
    expect_error(
        "func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0:2 = stablehlo.add %a, %a : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}",
        2,
        3,
        "declares 2 results",
    );
    expect_error(
        "func.func @f() {\n  %0 = stablehlo.iota dim = 0 : tensor<2x3f32>\n}",
        2,
        43,
        "'x'",
    );
    expect_error(
        "module {\n  func.func @f() {\n    return\n  }\n",
        5,
        1,
        "'}' closing the module",
    );
    expect_error("module {\n  \"unterminated\n}", 2, 3, "unterminated string");
    expect_error(
        "func.func @f() -> tensor<f32> {\n  %0 = stablehlo.constant dense_resource<missing> : tensor<f32>\n  return %0 : tensor<f32>\n}",
        2,
        42,
        "resource 'missing'",
    );
    expect_error(
        "func.func @f(%a: tensor<f32>) -> tensor<f32> {\n  %0 = stablehlo.compare  XX, %a, %a : (tensor<f32>, tensor<f32>) -> tensor<i1>\n  return %a : tensor<f32>\n}",
        2,
        27,
        "comparison_direction",
    );
    expect_error(
        "#loc1 = loc(#loc1)\nfunc.func @f() {\n  return loc(#loc1)\n}",
        1,
        13,
        "refers to itself",
    );
    expect_error(
        "func.func @f() {\n  return\n}\nfunc.func @f() {\n  return\n}",
        1,
        1,
        "redefinition of function @f",
    );
    // A bare `stablehlo.return` ends its block, so what follows on the line is a new op.
    expect_error(
        "func.func @f() {\n  return\n  stablehlo.custom_call @g() : () -> ()\n}",
        3,
        3,
        "follows the block's terminator",
    );
    assert!(parse_text("").is_ok_and(|m| m.functions.is_empty()));
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep_list = format!(
        "func.func @f() -> tensor<1xf32> {{\n  %0 = stablehlo.constant dense<{}1.0{}> : tensor<1xf32>\n  return %0 : tensor<1xf32>\n}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let err = parse_text(&deep_list).expect_err("too deep");
    assert!(err.to_string().contains("nesting deeper than"), "{err}");
    let deep_attr = format!(
        "module attributes {{a = {}1{}}} {{\n}}",
        "[".repeat(50_000),
        "]".repeat(50_000)
    );
    assert!(parse_text(&deep_attr).is_err());
    let mut deep_regions = String::from("func.func @f(%a: tensor<i1>) {\n");
    for _ in 0..1000 {
        deep_regions.push_str("\"stablehlo.if\"(%a) ({\n");
    }
    let err = parse_text(&deep_regions).expect_err("too deep");
    assert!(err.to_string().contains("nesting deeper than"), "{err}");
    let deep_types = format!(
        "func.func @f(%a: {}tensor<f32>{}) {{\n  return\n}}",
        "tuple<".repeat(10_000),
        ">".repeat(10_000)
    );
    assert!(parse_text(&deep_types).is_err());
}

#[test]
fn mutated_corpus_never_panics() {
    // A deterministic stand-in for the fuzz target: truncations and byte substitutions of
    // every corpus file must give `Ok` or `Err`, and accepted text must print stably.
    let replacements: [&[u8]; 8] = [b"", b"{", b"}", b"(", b"%", b"<", b"\"", b"0x"];
    for path in mlir_files("roundtrip") {
        let bytes = std::fs::read(&path).expect("read");
        let step = (bytes.len() / 40).max(1);
        for (n, pos) in (0..bytes.len()).step_by(step).enumerate() {
            let replacement = replacements[n % replacements.len()];
            let mut mutated = bytes[..pos].to_vec();
            mutated.extend_from_slice(replacement);
            if n % 2 == 0 {
                mutated.extend_from_slice(&bytes[(pos + 1).min(bytes.len())..]);
            }
            let Ok(text) = String::from_utf8(mutated) else {
                continue;
            };
            if let Ok(module) = parse_text(&text) {
                let printed = print_module(&module);
                let reparsed = parse_text(&printed).unwrap_or_else(|e| {
                    panic!(
                        "{}@{pos}: printed text does not parse: {e}\n{printed}",
                        path.display()
                    )
                });
                assert_eq!(printed, print_module(&reparsed), "{}@{pos}", path.display());
            }
        }
    }
}
