//! Checks decoded attribute values, locations and module data of corpus artifacts against
//! what the JAX programs in `python/tools/gen_bytecode_corpus.py` put there.

use oxla_ir::attrs::ComparisonDirection;
use oxla_ir::{Attribute, ElementType, Location, Module, Op, OpKind, Region};
use std::path::PathBuf;

fn read(name: &str) -> Module {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name);
    let bytes = std::fs::read(&path).unwrap();
    oxla_frontend::read_program(&bytes).unwrap()
}

fn all_ops(region: &Region, out: &mut Vec<Op>) {
    for block in &region.blocks {
        for op in &block.ops {
            out.push(op.clone());
            for inner in &op.regions {
                all_ops(inner, out);
            }
        }
    }
}

fn ops_of(module: &Module, kind: OpKind) -> Vec<Op> {
    let mut ops = Vec::new();
    for f in &module.functions {
        all_ops(&f.body, &mut ops);
    }
    ops.retain(|op| op.kind == kind);
    ops
}

fn constant_with(module: &Module, ty: ElementType) -> Vec<oxla_ir::ElementsAttr> {
    ops_of(module, OpKind::Constant)
        .into_iter()
        .filter_map(|op| match op.attr("value") {
            Some(Attribute::Elements(e)) if e.ty.element_type == ty => Some(e.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn constants_convert_to_dense_layout_at_every_version() {
    for version in ["0.9.0", "1.0.0", "1.17.0"] {
        let module = read(&format!("constants.v{version}.mlirbc"));
        let bools = constant_with(&module, ElementType::Pred);
        assert!(
            bools
                .iter()
                .any(|e| !e.splat && e.data[..] == [1, 0, 1, 1, 0, 1, 0, 0, 1]),
            "{version}: {bools:?}"
        );
        assert!(
            bools
                .iter()
                .any(|e| e.splat && e.data[..] == [1] && e.ty.shape == [3, 3]),
            "{version}: {bools:?}"
        );
        let i8s = constant_with(&module, ElementType::S8);
        assert_eq!(i8s[0].data[..], [1u8, 0xFE, 3]);
        let halfs = constant_with(&module, ElementType::F16);
        // 1.5 = 0x3E00, -2.25 = 0xC080 (little-endian).
        assert_eq!(halfs[0].data[..], [0x00, 0x3E, 0x80, 0xC0]);
        let bf16s = constant_with(&module, ElementType::BF16);
        // bf16 is the top half of the f32: 1.5 = 0x3FC0, -2.25 = 0xC010.
        assert_eq!(bf16s[0].data[..], [0xC0, 0x3F, 0x10, 0xC0]);
        let complex = constant_with(&module, ElementType::C64);
        let parts: Vec<f32> = complex[0]
            .data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(parts, [1.0, 2.0, 3.0, -4.0]);
        let f32s = constant_with(&module, ElementType::F32);
        assert!(f32s
            .iter()
            .any(|e| e.splat && e.data[..] == 2.5f32.to_le_bytes() && e.ty.shape == [5]));
    }
}

#[test]
fn dot_general_dimensions_are_flattened() {
    let module = read("dot_general.v1.17.0.mlirbc");
    let dot = &ops_of(&module, OpKind::DotGeneral)[0];
    let list = |name: &str| match dot.attr(name) {
        Some(Attribute::DenseI64Array(v)) => v.clone(),
        other => panic!("{name}: {other:?}"),
    };
    // einsum "bij,bjk->bik".
    assert_eq!(list("lhs_batching_dimensions"), [0]);
    assert_eq!(list("rhs_batching_dimensions"), [0]);
    assert_eq!(list("lhs_contracting_dimensions"), [2]);
    assert_eq!(list("rhs_contracting_dimensions"), [1]);
}

#[test]
fn compare_direction_and_locations_survive() {
    let module = read("compare_select.v1.17.0.mlirbc");
    let compare = &ops_of(&module, OpKind::Compare)[0];
    assert_eq!(
        compare.attr("comparison_direction"),
        Some(&Attribute::ComparisonDirection(ComparisonDirection::Gt))
    );
    let text = compare.location.to_string();
    assert!(text.contains("gt"), "{text}");
    assert!(text.contains("gen_bytecode_corpus.py"), "{text}");
    assert!(!matches!(compare.location, Location::Unknown));
}

#[test]
fn module_and_function_data_are_kept() {
    let module = read("calls.v1.17.0.mlirbc");
    assert_eq!(module.name.as_deref(), Some("jit__lambda"));
    assert_eq!(
        module
            .attr("mhlo.num_partitions")
            .and_then(Attribute::as_int),
        Some(1)
    );
    let main = module.entry_function().unwrap();
    assert_eq!(main.name, "main");
    let calls = ops_of(&module, OpKind::Call);
    assert_eq!(calls.len(), 1);
    let Some(Attribute::SymbolRef(callee)) = calls[0].attr("callee") else {
        panic!("{:?}", calls[0].attributes);
    };
    let callee_fn = module.function(callee).unwrap();
    assert_eq!(callee_fn.visibility, oxla_ir::Visibility::Private);
    // `func.return` ends functions, `stablehlo.return` ends op regions.
    assert!(!ops_of(&module, OpKind::FuncReturn).is_empty());
    let loops = read("while_loop.v0.9.0.mlirbc");
    assert_eq!(ops_of(&loops, OpKind::While).len(), 1);
    assert_eq!(ops_of(&loops, OpKind::Return).len(), 2);
}

#[test]
fn custom_calls_keep_target_and_other_dialect_attributes() {
    let module = read("cholesky.v1.17.0.mlirbc");
    let call = &ops_of(&module, OpKind::CustomCall)[0];
    assert_eq!(
        call.attr("call_target_name").and_then(Attribute::as_str),
        Some("lapack_spotrf_ffi")
    );
    assert!(call.attr("mhlo.backend_config").is_some());
}

/// `tests/data/sharded_jit.mlirbc`: what `jax.jit(lambda x: x * 2, out_shardings=...)` sends
/// for a (4, 8) array sharded `P("a", "b")` over a 2x2 mesh, with the result sharded
/// `P(None, ("b", "a"))`. Shardy's attributes read back as the text jaxlib prints for them.
#[test]
fn shardy_meshes_and_shardings_read_as_their_text() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/sharded_jit.mlirbc");
    let module = oxla_frontend::read_program(&std::fs::read(path).unwrap()).unwrap();
    assert_eq!(
        module.declarations,
        vec![r#"sdy.mesh @mesh = <["a"=2, "b"=2]>"#.to_string()]
    );
    let main = module.function("main").unwrap();
    let sharding = |attrs: &[(String, Attribute)]| {
        attrs
            .iter()
            .find(|(name, _)| name == "sdy.sharding")
            .map(|(_, value)| value.clone())
    };
    assert_eq!(
        sharding(&main.arg_attrs[0]),
        Some(Attribute::Opaque(
            r#"#sdy.sharding<@mesh, [{"a"}, {"b"}]>"#.into()
        ))
    );
    assert_eq!(
        sharding(&main.res_attrs[0]),
        Some(Attribute::Opaque(
            r#"#sdy.sharding<@mesh, [{}, {"b", "a"}]>"#.into()
        ))
    );
    // The text prints and reads back the same.
    let text = oxla_ir::print::print_module(&module);
    let again = oxla_frontend::read_program(text.as_bytes()).unwrap();
    assert_eq!(again.declarations, module.declarations);
    assert_eq!(
        sharding(&again.function("main").unwrap().arg_attrs[0]),
        sharding(&main.arg_attrs[0])
    );
}

/// The innermost shared part of a location: what a call-site chain ends in.
fn outermost_caller(loc: &Location) -> Option<&std::sync::Arc<Location>> {
    match loc {
        Location::Name { child: Some(c), .. } => outermost_caller(c),
        Location::CallSite { caller, .. } => outermost_caller(caller).or(Some(caller)),
        _ => None,
    }
}

#[test]
fn ops_from_one_traceback_share_its_location() {
    // Every op of a JAX program carries its Python traceback as a call-site chain; the
    // frames they have in common are one attribute of the file, read once and shared.
    let module = read("elementwise.v1.17.0.mlirbc");
    let mut ops = Vec::new();
    for f in &module.functions {
        all_ops(&f.body, &mut ops);
    }
    let callers: Vec<_> = ops
        .iter()
        .filter_map(|op| outermost_caller(&op.location))
        .collect();
    assert!(
        callers.len() >= 2,
        "too few ops with call sites: {}",
        callers.len()
    );
    let shared = callers
        .iter()
        .skip(1)
        .filter(|c| std::sync::Arc::ptr_eq(c, callers[0]))
        .count();
    assert!(shared > 0, "no op shares the first op's outermost frame");
}
