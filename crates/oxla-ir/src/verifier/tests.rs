//! Verifier tests: small modules built by hand with a tiny builder; each well-formed module must
//! verify and each malformed one must produce an error naming the op and the broken rule.

use super::{verify_module, VerifierErrors};
use crate::attrs::{ComparisonDirection, ElementsAttr};
use crate::{
    Attribute, Block, ElementType as E, Function, Location, Module, Op, OpKind as K, Region,
    TensorType, Type, ValueId,
};

fn t(shape: &[i64], et: E) -> Type {
    Type::Tensor(TensorType::new(shape, et))
}

fn f32t(shape: &[i64]) -> Type {
    t(shape, E::F32)
}

fn i64s(v: &[i64]) -> Attribute {
    Attribute::DenseI64Array(v.to_vec())
}

fn int(v: i64) -> Attribute {
    Attribute::Integer {
        value: i128::from(v),
        ty: Some(E::S64),
    }
}

fn attrs(list: &[(&str, Attribute)]) -> Vec<(String, Attribute)> {
    list.iter()
        .map(|(n, a)| (n.to_string(), a.clone()))
        .collect()
}

/// Builds one function; nested regions are opened with [`Builder::open`] and closed with
/// [`Builder::close`], so ops always go into the innermost open block.
struct Builder {
    func: Function,
    open_blocks: Vec<Block>,
    next_line: u32,
}

impl Builder {
    fn new(name: &str, inputs: &[Type]) -> (Builder, Vec<ValueId>) {
        let mut func = Function {
            name: name.to_string(),
            ..Function::default()
        };
        func.ty.inputs = inputs.to_vec();
        let args: Vec<ValueId> = inputs.iter().map(|ty| func.new_value(ty.clone())).collect();
        let entry = Block {
            arguments: args.clone(),
            ops: Vec::new(),
        };
        let builder = Builder {
            func,
            open_blocks: vec![entry],
            next_line: 1,
        };
        (builder, args)
    }

    fn value(&mut self, ty: Type) -> ValueId {
        self.func.new_value(ty)
    }

    fn push(&mut self, mut op: Op) {
        op.location = Location::FileLineCol {
            file: "test.mlir".into(),
            line: self.next_line,
            col: 3,
        };
        self.next_line += 1;
        self.open_blocks
            .last_mut()
            .expect("an open block")
            .ops
            .push(op);
    }

    /// Adds an op and returns its results.
    fn ops(
        &mut self,
        kind: K,
        operands: &[ValueId],
        results: &[Type],
        attributes: &[(&str, Attribute)],
        regions: Vec<Region>,
    ) -> Vec<ValueId> {
        let results: Vec<ValueId> = results.iter().map(|ty| self.value(ty.clone())).collect();
        let mut op = Op::new(kind, operands.to_vec(), results.clone());
        op.attributes = attrs(attributes);
        op.regions = regions;
        self.push(op);
        results
    }

    /// Adds an op with one result and no regions.
    fn op(
        &mut self,
        kind: K,
        operands: &[ValueId],
        result: Type,
        attributes: &[(&str, Attribute)],
    ) -> ValueId {
        self.ops(kind, operands, &[result], attributes, Vec::new())[0]
    }

    /// Opens a nested block with arguments of the given types.
    fn open(&mut self, arg_types: &[Type]) -> Vec<ValueId> {
        let args: Vec<ValueId> = arg_types.iter().map(|ty| self.value(ty.clone())).collect();
        self.open_blocks.push(Block {
            arguments: args.clone(),
            ops: Vec::new(),
        });
        args
    }

    /// Ends the innermost block with `stablehlo.return` and turns it into a region.
    fn close(&mut self, returns: &[ValueId]) -> Region {
        self.push(Op::new(K::Return, returns.to_vec(), Vec::new()));
        let block = self.open_blocks.pop().expect("an open block");
        Region {
            blocks: vec![block],
        }
    }

    /// A region whose block takes `arg_types` and returns `body(builder, args)`.
    fn region(
        &mut self,
        arg_types: &[Type],
        body: impl FnOnce(&mut Builder, &[ValueId]) -> Vec<ValueId>,
    ) -> Region {
        let args = self.open(arg_types);
        let returns = body(self, &args);
        self.close(&returns)
    }

    /// Ends the function with `func.return` of `returns`, taking its result types from them.
    fn finish_function(mut self, returns: &[ValueId]) -> Function {
        self.func.ty.results = returns
            .iter()
            .map(|&v| self.func.value_type(v).clone())
            .collect();
        self.push(Op::new(K::FuncReturn, returns.to_vec(), Vec::new()));
        let entry = self.open_blocks.pop().expect("the entry block");
        self.func.body = Region {
            blocks: vec![entry],
        };
        self.func
    }

    fn finish(self, returns: &[ValueId]) -> Module {
        module_of(vec![self.finish_function(returns)])
    }
}

fn module_of(functions: Vec<Function>) -> Module {
    Module {
        functions,
        ..Module::default()
    }
}

fn errors(module: &Module) -> VerifierErrors {
    match verify_module(module) {
        Ok(()) => VerifierErrors::default(),
        Err(errors) => errors,
    }
}

fn assert_verifies(module: &Module) {
    if let Err(errors) = verify_module(module) {
        panic!("expected no errors, got:\n{errors}");
    }
}

/// Asserts that verification fails with an error on `op` whose message contains `needle`.
fn assert_error(module: &Module, op: &str, needle: &str) {
    let errors = errors(module);
    assert!(
        errors
            .errors()
            .iter()
            .any(|e| e.op == op && e.message.contains(needle)),
        "expected an error on {op} containing {needle:?}, got:\n{errors}"
    );
}

/// A function of one op with result type `result`, with `inputs` as arguments.
fn single_op(kind: K, inputs: &[Type], result: Type, attributes: &[(&str, Attribute)]) -> Module {
    let (mut b, args) = Builder::new("main", inputs);
    let r = b.op(kind, &args, result, attributes);
    b.finish(&[r])
}

fn scalar(et: E) -> Type {
    t(&[], et)
}

/// The body of a scalar f32 addition reducer: `(acc, x) -> acc + x`.
fn add_reducer(b: &mut Builder, et: E) -> Region {
    b.region(&[scalar(et), scalar(et)], |b, args| {
        vec![b.op(K::Add, args, scalar(et), &[])]
    })
}

fn compare_attr() -> (&'static str, Attribute) {
    (
        "comparison_direction",
        Attribute::ComparisonDirection(ComparisonDirection::Lt),
    )
}

fn f32_constant(shape: &[i64], values: &[f32]) -> Attribute {
    Attribute::Elements(ElementsAttr {
        ty: TensorType::new(shape, E::F32),
        data: values
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>()
            .into(),
        splat: false,
    })
}

#[test]
fn well_formed_program_verifies() {
    let (mut b, args) = Builder::new(
        "main",
        &[
            f32t(&[2, 3]),
            f32t(&[3, 4]),
            scalar(E::Pred),
            scalar(E::S32),
        ],
    );
    let (x, w, p, idx) = (args[0], args[1], args[2], args[3]);
    let c = b.op(
        K::Constant,
        &[],
        f32t(&[2, 3]),
        &[("value", f32_constant(&[2, 3], &[1.0; 6]))],
    );
    let sum = b.op(K::Add, &[x, c], f32t(&[2, 3]), &[]);
    let lt = b.op(
        K::Compare,
        &[x, sum],
        t(&[2, 3], E::Pred),
        &[compare_attr()],
    );
    let sel = b.op(K::Select, &[lt, x, sum], f32t(&[2, 3]), &[]);
    let _ = b.op(K::Select, &[p, x, sum], f32t(&[2, 3]), &[]);
    let dot = b.op(
        K::DotGeneral,
        &[sel, w],
        f32t(&[2, 4]),
        &[
            ("lhs_contracting_dimensions", i64s(&[1])),
            ("rhs_contracting_dimensions", i64s(&[0])),
        ],
    );
    let tr = b.op(
        K::Transpose,
        &[dot],
        f32t(&[4, 2]),
        &[("permutation", i64s(&[1, 0]))],
    );
    let rs = b.op(K::Reshape, &[tr], f32t(&[8]), &[]);
    let sl = b.op(
        K::Slice,
        &[rs],
        f32t(&[3]),
        &[
            ("start_indices", i64s(&[1])),
            ("limit_indices", i64s(&[8])),
            ("strides", i64s(&[3])),
        ],
    );
    let cat = b.op(
        K::Concatenate,
        &[sl, rs],
        f32t(&[11]),
        &[("dimension", int(0))],
    );
    let zero = b.op(
        K::Constant,
        &[],
        f32t(&[]),
        &[("value", f32_constant(&[], &[0.0]))],
    );
    let padded = b.op(
        K::Pad,
        &[cat, zero],
        f32t(&[24]),
        &[
            ("edge_padding_low", i64s(&[1])),
            ("edge_padding_high", i64s(&[2])),
            ("interior_padding", i64s(&[1])),
        ],
    );
    let bc = b.op(
        K::BroadcastInDim,
        &[padded],
        f32t(&[2, 24]),
        &[("broadcast_dimensions", i64s(&[1]))],
    );
    let body = add_reducer(&mut b, E::F32);
    let red = b.ops(
        K::Reduce,
        &[bc, zero],
        &[f32t(&[24])],
        &[("dimensions", i64s(&[0]))],
        vec![body],
    )[0];
    let io = b.op(
        K::Iota,
        &[],
        t(&[24], E::S32),
        &[("iota_dimension", int(0))],
    );
    let cv = b.op(K::Convert, &[io], f32t(&[24]), &[]);
    let both = b.op(K::Multiply, &[red, cv], f32t(&[24]), &[]);
    // A loop counting to 10 whose body uses a value from outside the loop.
    let cond = b.region(&[scalar(E::S32), f32t(&[24])], |b, a| {
        vec![b.op(K::Compare, &[a[0], idx], scalar(E::Pred), &[compare_attr()])]
    });
    let loop_body = b.region(&[scalar(E::S32), f32t(&[24])], |b, a| {
        let next = b.op(K::Add, &[a[0], a[0]], scalar(E::S32), &[]);
        let acc = b.op(K::Add, &[a[1], both], f32t(&[24]), &[]);
        vec![next, acc]
    });
    let looped = b.ops(
        K::While,
        &[idx, both],
        &[scalar(E::S32), f32t(&[24])],
        &[],
        vec![cond, loop_body],
    );
    let then_branch = b.region(&[], |_, _| vec![looped[1]]);
    let else_branch = b.region(&[], |b, _| vec![b.op(K::Negate, &[red], f32t(&[24]), &[])]);
    let chosen = b.ops(
        K::If,
        &[p],
        &[f32t(&[24])],
        &[],
        vec![then_branch, else_branch],
    )[0];
    let called = b.op(
        K::Call,
        &[chosen],
        f32t(&[24]),
        &[("callee", Attribute::SymbolRef("double".to_string()))],
    );
    let tup = b.op(
        K::Tuple,
        &[called, p],
        Type::Tuple(vec![f32t(&[24]), scalar(E::Pred)]),
        &[],
    );
    let first = b.op(
        K::GetTupleElement,
        &[tup],
        f32t(&[24]),
        &[("index", int(0))],
    );
    let main = b.finish_function(&[first]);

    let (mut d, dargs) = Builder::new("double", &[f32t(&[24])]);
    let doubled = d.op(K::Add, &[dargs[0], dargs[0]], f32t(&[24]), &[]);
    let double = d.finish_function(&[doubled]);
    assert_verifies(&module_of(vec![main, double]));
}

#[test]
fn unknown_ops_are_not_errors() {
    let module = single_op(
        K::Other("mydialect.frob".to_string()),
        &[f32t(&[2])],
        t(&[7], E::S8),
        &[],
    );
    assert_verifies(&module);
}

#[test]
fn dynamic_extents_are_compatible_with_anything() {
    let dynamic = crate::DYNAMIC;
    let (mut b, args) = Builder::new("main", &[f32t(&[dynamic, 3]), f32t(&[2, dynamic])]);
    let r = b.op(K::Add, &[args[0], args[1]], f32t(&[2, 3]), &[]);
    assert_verifies(&b.finish(&[r]));
}

#[test]
fn elementwise_rules() {
    let m = single_op(K::Add, &[f32t(&[2]), f32t(&[3])], f32t(&[2]), &[]);
    assert_error(&m, "stablehlo.add", "operand shapes [2] and [3] differ");
    let m = single_op(K::Add, &[f32t(&[2]), t(&[2], E::S32)], f32t(&[2]), &[]);
    assert_error(&m, "stablehlo.add", "share one element type");
    let m = single_op(K::And, &[f32t(&[2]), f32t(&[2])], f32t(&[2]), &[]);
    assert_error(&m, "stablehlo.and", "element type f32 is not allowed");
    let m = single_op(
        K::And,
        &[t(&[2], E::Pred), t(&[2], E::Pred)],
        t(&[2], E::Pred),
        &[],
    );
    assert_verifies(&m);
    let m = single_op(K::Sqrt, &[t(&[2], E::S32)], t(&[2], E::S32), &[]);
    assert_error(
        &m,
        "stablehlo.sqrt",
        "operand element type i32 is not allowed",
    );
    let m = single_op(K::Abs, &[t(&[2], E::C64)], f32t(&[2]), &[]);
    assert_verifies(&m);
    let m = single_op(K::Abs, &[t(&[2], E::C64)], t(&[2], E::C64), &[]);
    assert_error(
        &m,
        "stablehlo.abs",
        "result element type is complex<f32>, expected f32",
    );
    let m = single_op(K::Negate, &[f32t(&[2])], f32t(&[2, 1]), &[]);
    assert_error(
        &m,
        "stablehlo.negate",
        "result #0 has shape [2, 1], expected [2]",
    );
    let m = single_op(K::Convert, &[f32t(&[2])], t(&[3], E::S32), &[]);
    assert_error(
        &m,
        "stablehlo.convert",
        "result #0 has shape [3], expected [2]",
    );
    let m = single_op(K::BitcastConvert, &[f32t(&[2])], t(&[2, 4], E::U8), &[]);
    assert_verifies(&m);
    let m = single_op(K::BitcastConvert, &[f32t(&[2])], t(&[2], E::U8), &[]);
    assert_error(&m, "stablehlo.bitcast_convert", "expected [2, 4]");
}

#[test]
fn compare_select_and_clamp_rules() {
    let m = single_op(
        K::Compare,
        &[f32t(&[2]), f32t(&[2])],
        f32t(&[2]),
        &[compare_attr()],
    );
    assert_error(
        &m,
        "stablehlo.compare",
        "result element type is f32, expected i1",
    );
    let m = single_op(K::Compare, &[f32t(&[2]), f32t(&[2])], t(&[2], E::Pred), &[]);
    assert_error(&m, "stablehlo.compare", "`comparison_direction`");
    let m = single_op(
        K::Select,
        &[t(&[3], E::Pred), f32t(&[2]), f32t(&[2])],
        f32t(&[2]),
        &[],
    );
    assert_error(
        &m,
        "stablehlo.select",
        "predicate shape [3] is neither scalar",
    );
    let m = single_op(
        K::Select,
        &[t(&[2], E::S32), f32t(&[2]), f32t(&[2])],
        f32t(&[2]),
        &[],
    );
    assert_error(&m, "stablehlo.select", "predicate element type is i32");
    let m = single_op(
        K::Clamp,
        &[f32t(&[]), f32t(&[4]), f32t(&[])],
        f32t(&[4]),
        &[],
    );
    assert_verifies(&m);
    let m = single_op(
        K::Clamp,
        &[f32t(&[3]), f32t(&[4]), f32t(&[])],
        f32t(&[4]),
        &[],
    );
    assert_error(&m, "stablehlo.clamp", "min shape [3] is neither scalar");
}

#[test]
fn constant_and_iota_rules() {
    let m = single_op(
        K::Constant,
        &[],
        f32t(&[3]),
        &[("value", f32_constant(&[2], &[1.0, 2.0]))],
    );
    assert_error(&m, "stablehlo.constant", "`value` has type tensor<2xf32>");
    let short = Attribute::Elements(ElementsAttr {
        ty: TensorType::new([2], E::F32),
        data: vec![0u8; 5].into(),
        splat: false,
    });
    let m = single_op(K::Constant, &[], f32t(&[2]), &[("value", short)]);
    assert_error(&m, "stablehlo.constant", "holds 5 bytes, expected 8");
    let m = single_op(K::Iota, &[], f32t(&[2, 3]), &[("iota_dimension", int(2))]);
    assert_error(&m, "stablehlo.iota", "`iota_dimension` 2 is out of range");
}

#[test]
fn shape_op_rules() {
    let m = single_op(
        K::BroadcastInDim,
        &[f32t(&[3])],
        f32t(&[2, 4]),
        &[("broadcast_dimensions", i64s(&[1]))],
    );
    assert_error(&m, "stablehlo.broadcast_in_dim", "cannot broadcast");
    let m = single_op(
        K::BroadcastInDim,
        &[f32t(&[1, 1])],
        f32t(&[2, 4]),
        &[("broadcast_dimensions", i64s(&[1, 1]))],
    );
    assert_error(&m, "stablehlo.broadcast_in_dim", "repeats dimension 1");
    let m = single_op(
        K::BroadcastInDim,
        &[f32t(&[1, 1])],
        f32t(&[2, 4]),
        &[("broadcast_dimensions", i64s(&[1]))],
    );
    assert_error(
        &m,
        "stablehlo.broadcast_in_dim",
        "has 1 entries, but the operand has rank 2",
    );
    let m = single_op(K::Reshape, &[f32t(&[2, 3])], f32t(&[5]), &[]);
    assert_error(
        &m,
        "stablehlo.reshape",
        "operand has 6 elements but the result has 5",
    );
    let m = single_op(
        K::Transpose,
        &[f32t(&[2, 3])],
        f32t(&[3, 2]),
        &[("permutation", i64s(&[0, 2]))],
    );
    assert_error(
        &m,
        "stablehlo.transpose",
        "`permutation` entry 2 is out of range",
    );
    let m = single_op(
        K::Transpose,
        &[f32t(&[2, 3])],
        f32t(&[2, 3]),
        &[("permutation", i64s(&[1, 0]))],
    );
    assert_error(&m, "stablehlo.transpose", "expected [3, 2]");
    let slice_attrs = |start: i64, limit: i64, stride: i64| {
        vec![
            ("start_indices", i64s(&[start])),
            ("limit_indices", i64s(&[limit])),
            ("strides", i64s(&[stride])),
        ]
    };
    let m = single_op(K::Slice, &[f32t(&[4])], f32t(&[2]), &slice_attrs(1, 6, 2));
    assert_error(
        &m,
        "stablehlo.slice",
        "need 0 <= start (1) <= limit (6) <= extent (4)",
    );
    let m = single_op(K::Slice, &[f32t(&[4])], f32t(&[2]), &slice_attrs(0, 4, 0));
    assert_error(
        &m,
        "stablehlo.slice",
        "stride 0 of dimension 0 must be positive",
    );
    let m = single_op(K::Slice, &[f32t(&[4])], f32t(&[3]), &slice_attrs(0, 4, 2));
    assert_error(
        &m,
        "stablehlo.slice",
        "result #0 has shape [3], expected [2]",
    );
    let m = single_op(
        K::Concatenate,
        &[f32t(&[2, 3]), f32t(&[2, 4])],
        f32t(&[2, 7]),
        &[("dimension", int(2))],
    );
    assert_error(
        &m,
        "stablehlo.concatenate",
        "`dimension` 2 is out of range for rank 2",
    );
    let m = single_op(
        K::Concatenate,
        &[f32t(&[2, 3]), f32t(&[2, 4])],
        f32t(&[4, 3]),
        &[("dimension", int(0))],
    );
    assert_error(
        &m,
        "stablehlo.concatenate",
        "input #1 has extent 4 in dimension 1",
    );
    let m = single_op(
        K::Pad,
        &[f32t(&[3]), f32t(&[])],
        f32t(&[8]),
        &[
            ("edge_padding_low", i64s(&[1])),
            ("edge_padding_high", i64s(&[1])),
            ("interior_padding", i64s(&[1])),
        ],
    );
    assert_error(&m, "stablehlo.pad", "result #0 has shape [8], expected [7]");
    let m = single_op(
        K::Reverse,
        &[f32t(&[3])],
        f32t(&[3]),
        &[("dimensions", i64s(&[1]))],
    );
    assert_error(
        &m,
        "stablehlo.reverse",
        "`dimensions` entry 1 is out of range",
    );
}

#[test]
fn dynamic_slice_rules() {
    let m = single_op(
        K::DynamicSlice,
        &[f32t(&[4, 4]), scalar(E::S32), scalar(E::S32)],
        f32t(&[2, 2]),
        &[("slice_sizes", i64s(&[2, 2]))],
    );
    assert_verifies(&m);
    let m = single_op(
        K::DynamicSlice,
        &[f32t(&[4, 4]), scalar(E::S32)],
        f32t(&[2, 2]),
        &[("slice_sizes", i64s(&[2, 2]))],
    );
    assert_error(&m, "stablehlo.dynamic_slice", "expects 2 start indices");
    let m = single_op(
        K::DynamicSlice,
        &[f32t(&[4, 4]), scalar(E::S32), scalar(E::S64)],
        f32t(&[2, 2]),
        &[("slice_sizes", i64s(&[2, 2]))],
    );
    assert_error(
        &m,
        "stablehlo.dynamic_slice",
        "start indices must all have the same type",
    );
    let m = single_op(
        K::DynamicSlice,
        &[f32t(&[4, 4]), scalar(E::S32), scalar(E::S32)],
        f32t(&[2, 5]),
        &[("slice_sizes", i64s(&[2, 5]))],
    );
    assert_error(&m, "stablehlo.dynamic_slice", "slice size 5 of dimension 1");
    let m = single_op(
        K::DynamicUpdateSlice,
        &[f32t(&[4]), f32t(&[5]), scalar(E::S32)],
        f32t(&[4]),
        &[],
    );
    assert_error(
        &m,
        "stablehlo.dynamic_update_slice",
        "update extent 5 of dimension 0",
    );
}

#[test]
fn dot_general_rules() {
    let dims = |lb: &[i64], rb: &[i64], lc: &[i64], rc: &[i64]| {
        vec![
            ("lhs_batching_dimensions", i64s(lb)),
            ("rhs_batching_dimensions", i64s(rb)),
            ("lhs_contracting_dimensions", i64s(lc)),
            ("rhs_contracting_dimensions", i64s(rc)),
        ]
    };
    let m = single_op(
        K::DotGeneral,
        &[f32t(&[5, 2, 3]), f32t(&[5, 3, 4])],
        f32t(&[5, 2, 4]),
        &dims(&[0], &[0], &[2], &[1]),
    );
    assert_verifies(&m);
    let m = single_op(
        K::DotGeneral,
        &[f32t(&[5, 2, 3]), f32t(&[5, 4, 4])],
        f32t(&[5, 2, 4]),
        &dims(&[0], &[0], &[2], &[1]),
    );
    assert_error(
        &m,
        "stablehlo.dot_general",
        "contracting dimension 2 of lhs has extent 3",
    );
    let m = single_op(
        K::DotGeneral,
        &[f32t(&[5, 2, 3]), f32t(&[5, 3, 4])],
        f32t(&[2, 4]),
        &dims(&[0], &[0], &[2], &[1]),
    );
    assert_error(&m, "stablehlo.dot_general", "expected [5, 2, 4]");
    let m = single_op(
        K::DotGeneral,
        &[f32t(&[5, 2, 3]), f32t(&[5, 3, 4])],
        f32t(&[5, 2, 4]),
        &dims(&[0], &[0], &[0], &[1]),
    );
    assert_error(&m, "stablehlo.dot_general", "repeats dimension 0");
    let m = single_op(
        K::DotGeneral,
        &[f32t(&[2, 3]), f32t(&[3, 4])],
        f32t(&[2, 4]),
        &dims(&[], &[], &[1], &[0, 1]),
    );
    assert_error(
        &m,
        "stablehlo.dot_general",
        "lhs has 1 contracting dimensions but rhs has 2",
    );
}

#[test]
fn reduce_rules() {
    let (mut b, args) = Builder::new("main", &[f32t(&[2, 3]), f32t(&[])]);
    let body = b.region(&[scalar(E::F32)], |_, a| vec![a[0]]);
    let r = b.ops(
        K::Reduce,
        &[args[0], args[1]],
        &[f32t(&[2])],
        &[("dimensions", i64s(&[1]))],
        vec![body],
    );
    assert_error(
        &b.finish(&r),
        "stablehlo.reduce",
        "the body region takes 1 arguments, expected 2",
    );

    let (mut b, args) = Builder::new("main", &[f32t(&[2, 3]), f32t(&[])]);
    let body = add_reducer(&mut b, E::F32);
    let r = b.ops(
        K::Reduce,
        &[args[0], args[1]],
        &[f32t(&[3])],
        &[("dimensions", i64s(&[1]))],
        vec![body],
    );
    assert_error(
        &b.finish(&r),
        "stablehlo.reduce",
        "result #0 has shape [3], expected [2]",
    );

    let (mut b, args) = Builder::new("main", &[f32t(&[2, 3]), f32t(&[])]);
    let body = add_reducer(&mut b, E::F32);
    let r = b.ops(
        K::Reduce,
        &[args[0], args[1]],
        &[f32t(&[])],
        &[("dimensions", i64s(&[1, 1]))],
        vec![body],
    );
    assert_error(&b.finish(&r), "stablehlo.reduce", "repeats dimension 1");

    // The body may compute in a type the inputs promote to, but not in another class.
    for (body_type, ok) in [(E::F64, true), (E::S32, false)] {
        let (mut b, args) = Builder::new("main", &[f32t(&[2, 3]), f32t(&[])]);
        let body = add_reducer(&mut b, body_type);
        let r = b.ops(
            K::Reduce,
            &[args[0], args[1]],
            &[t(&[2], body_type)],
            &[("dimensions", i64s(&[1]))],
            vec![body],
        );
        let m = b.finish(&r);
        if ok {
            assert_verifies(&m);
        } else {
            assert_error(&m, "stablehlo.reduce", "to which f32 does not promote");
        }
    }

    let (mut b, args) = Builder::new("main", &[f32t(&[4, 6]), f32t(&[])]);
    let body = add_reducer(&mut b, E::F32);
    let r = b.ops(
        K::ReduceWindow,
        &[args[0], args[1]],
        &[f32t(&[2, 3])],
        &[
            ("window_dimensions", i64s(&[2, 2])),
            ("window_strides", i64s(&[2, 2])),
        ],
        vec![body],
    );
    assert_verifies(&b.finish(&r));

    let (mut b, args) = Builder::new("main", &[f32t(&[4, 6]), f32t(&[])]);
    let body = add_reducer(&mut b, E::F32);
    let r = b.ops(
        K::ReduceWindow,
        &[args[0], args[1]],
        &[f32t(&[3, 5])],
        &[
            ("window_dimensions", i64s(&[2, 2])),
            ("window_strides", i64s(&[2, 0])),
        ],
        vec![body],
    );
    assert_error(
        &b.finish(&r),
        "stablehlo.reduce_window",
        "`window_strides` entry 0",
    );
}

#[test]
fn control_flow_rules() {
    // `while` whose cond returns f32 and whose body returns the wrong number of values.
    let (mut b, args) = Builder::new("main", &[scalar(E::S32)]);
    let cond = b.region(&[scalar(E::S32)], |b, a| {
        vec![b.op(K::Convert, &[a[0]], f32t(&[]), &[])]
    });
    let body = b.region(&[scalar(E::S32)], |_, a| vec![a[0], a[0]]);
    let r = b.ops(K::While, &args, &[scalar(E::S32)], &[], vec![cond, body]);
    let m = b.finish(&r);
    assert_error(
        &m,
        "stablehlo.while",
        "the cond region returns tensor<f32> as value #0, expected tensor<i1>",
    );
    assert_error(
        &m,
        "stablehlo.while",
        "the body region returns 2 values, expected 1",
    );

    // `if` on an i32 predicate with a branch of the wrong type.
    let (mut b, args) = Builder::new("main", &[scalar(E::S32), f32t(&[2])]);
    let then_branch = b.region(&[], |_, _| vec![args[1]]);
    let else_branch = b.region(&[], |_, _| vec![args[0]]);
    let r = b.ops(
        K::If,
        &[args[0]],
        &[f32t(&[2])],
        &[],
        vec![then_branch, else_branch],
    );
    let m = b.finish(&r);
    assert_error(
        &m,
        "stablehlo.if",
        "predicate must be tensor<i1>, found tensor<i32>",
    );
    assert_error(
        &m,
        "stablehlo.if",
        "the branch #1 region returns tensor<i32> as value #0",
    );

    // `case` with an argument in a branch.
    let (mut b, args) = Builder::new("main", &[scalar(E::S32)]);
    let branch = b.region(&[scalar(E::S32)], |_, a| vec![a[0]]);
    let r = b.ops(K::Case, &args, &[scalar(E::S32)], &[], vec![branch]);
    assert_error(
        &b.finish(&r),
        "stablehlo.case",
        "the branch #0 region takes 1 arguments, expected 0",
    );
}

#[test]
fn sort_gather_and_convolution_rules() {
    let (mut b, args) = Builder::new("main", &[f32t(&[4]), t(&[4], E::S32)]);
    let comparator = b.region(
        &[
            scalar(E::F32),
            scalar(E::F32),
            scalar(E::S32),
            scalar(E::S32),
        ],
        |b, a| {
            vec![b.op(
                K::Compare,
                &[a[0], a[1]],
                scalar(E::Pred),
                &[compare_attr()],
            )]
        },
    );
    let r = b.ops(
        K::Sort,
        &args,
        &[f32t(&[4]), t(&[4], E::S32)],
        &[("dimension", int(1))],
        vec![comparator],
    );
    assert_error(
        &b.finish(&r),
        "stablehlo.sort",
        "`dimension` 1 is out of range for rank 1",
    );

    let gather_attrs = |offset_dims: &[i64], slice_sizes: &[i64]| {
        vec![
            ("offset_dims", i64s(offset_dims)),
            ("collapsed_slice_dims", i64s(&[0])),
            ("start_index_map", i64s(&[0])),
            ("index_vector_dim", int(1)),
            ("slice_sizes", i64s(slice_sizes)),
        ]
    };
    let m = single_op(
        K::Gather,
        &[f32t(&[5, 3]), t(&[2, 1], E::S32)],
        f32t(&[2, 3]),
        &gather_attrs(&[1], &[1, 3]),
    );
    assert_verifies(&m);
    let m = single_op(
        K::Gather,
        &[f32t(&[5, 3]), t(&[2, 1], E::S32)],
        f32t(&[2, 3]),
        &gather_attrs(&[1], &[2, 3]),
    );
    assert_error(
        &m,
        "stablehlo.gather",
        "collapsed or batching dimension 0 must be 0 or 1",
    );
    let m = single_op(
        K::Gather,
        &[f32t(&[5, 3]), t(&[2, 1], E::S32)],
        f32t(&[3, 2]),
        &gather_attrs(&[1], &[1, 3]),
    );
    assert_error(&m, "stablehlo.gather", "expected [2, 3]");

    let conv_attrs = |kernel_out: i64| {
        vec![
            ("input_batch_dimension", int(0)),
            ("input_feature_dimension", int(3)),
            ("input_spatial_dimensions", i64s(&[1, 2])),
            ("kernel_input_feature_dimension", int(2)),
            ("kernel_output_feature_dimension", int(kernel_out)),
            ("kernel_spatial_dimensions", i64s(&[0, 1])),
            ("output_batch_dimension", int(0)),
            ("output_feature_dimension", int(3)),
            ("output_spatial_dimensions", i64s(&[1, 2])),
            ("window_strides", i64s(&[1, 1])),
            ("padding", i64s(&[0, 0, 1, 1])),
            ("feature_group_count", int(1)),
            ("batch_group_count", int(1)),
        ]
    };
    // NHWC input 1x5x5x2, HWIO kernel 3x3x2x4, padding only on W: output 1x3x5x4.
    let m = single_op(
        K::Convolution,
        &[f32t(&[1, 5, 5, 2]), f32t(&[3, 3, 2, 4])],
        f32t(&[1, 3, 5, 4]),
        &conv_attrs(3),
    );
    assert_verifies(&m);
    let m = single_op(
        K::Convolution,
        &[f32t(&[1, 5, 5, 2]), f32t(&[3, 3, 2, 4])],
        f32t(&[1, 5, 5, 4]),
        &conv_attrs(3),
    );
    assert_error(&m, "stablehlo.convolution", "expected [1, 3, 5, 4]");
    let m = single_op(
        K::Convolution,
        &[f32t(&[1, 5, 5, 2]), f32t(&[3, 3, 2, 4])],
        f32t(&[1, 3, 5, 4]),
        &conv_attrs(2),
    );
    assert_error(&m, "stablehlo.convolution", "the kernel dimension numbers");
}

#[test]
fn tuple_and_call_rules() {
    let tuple_ty = Type::Tuple(vec![f32t(&[2]), scalar(E::S32)]);
    let m = single_op(
        K::GetTupleElement,
        std::slice::from_ref(&tuple_ty),
        f32t(&[2]),
        &[("index", int(2))],
    );
    assert_error(
        &m,
        "stablehlo.get_tuple_element",
        "`index` 2 is out of range",
    );
    let m = single_op(
        K::GetTupleElement,
        &[tuple_ty],
        f32t(&[2]),
        &[("index", int(1))],
    );
    assert_error(
        &m,
        "stablehlo.get_tuple_element",
        "tuple element 1 has type tensor<i32>",
    );
    let m = single_op(K::Tuple, &[f32t(&[2])], Type::Tuple(vec![f32t(&[3])]), &[]);
    assert_error(&m, "stablehlo.tuple", "expected tuple<tensor<2xf32>>");

    let callee = |name: &str| ("callee", Attribute::SymbolRef(name.to_string()));
    let m = single_op(K::Call, &[f32t(&[2])], f32t(&[2]), &[callee("nowhere")]);
    assert_error(&m, "func.call", "calls @nowhere, which does not exist");
    let (mut b, args) = Builder::new("main", &[f32t(&[2])]);
    let r = b.op(K::Call, &args, f32t(&[3]), &[callee("id")]);
    let main = b.finish_function(&[r]);
    let (c, cargs) = Builder::new("id", &[f32t(&[2])]);
    let id = c.finish_function(&cargs);
    assert_error(
        &module_of(vec![main, id]),
        "func.call",
        "results (tensor<3xf32>) do not match the signature of @id (tensor<2xf32>)",
    );
}

#[test]
fn structural_rules() {
    // A use before the definition, an out-of-range id and a doubly defined value.
    let (mut b, args) = Builder::new("main", &[f32t(&[2])]);
    let later = b.value(f32t(&[2]));
    let early = b.op(K::Add, &[args[0], later], f32t(&[2]), &[]);
    let mut op = Op::new(K::Negate, vec![early], vec![later]);
    op.location = Location::Unknown;
    b.push(op);
    let bogus = b.op(K::Negate, &[ValueId(999)], f32t(&[2]), &[]);
    let mut again = Op::new(K::Negate, vec![args[0]], vec![bogus]);
    again.location = Location::Unknown;
    b.push(again);
    let m = b.finish(&[early]);
    assert_error(
        &m,
        "stablehlo.add",
        "operand #1 (%1) is used before it is defined",
    );
    assert_error(&m, "stablehlo.negate", "operand #0 (%999) is out of range");
    assert_error(
        &m,
        "stablehlo.negate",
        "op result %3 is defined more than once",
    );

    // A value defined in a region used after it.
    let (mut b, args) = Builder::new("main", &[scalar(E::Pred), f32t(&[2])]);
    let mut inner = None;
    let then_branch = b.region(&[], |b, _| {
        let v = b.op(K::Negate, &[args[1]], f32t(&[2]), &[]);
        inner = Some(v);
        vec![v]
    });
    let else_branch = b.region(&[], |_, _| vec![args[1]]);
    let _ = b.ops(
        K::If,
        &[args[0]],
        &[f32t(&[2])],
        &[],
        vec![then_branch, else_branch],
    );
    let inner = inner.expect("defined in the branch");
    let leak = b.op(K::Abs, &[inner], f32t(&[2]), &[]);
    assert_error(
        &b.finish(&[leak]),
        "stablehlo.abs",
        "is defined in a region that does not enclose this use",
    );

    // func.return with the wrong type, a missing terminator and mismatched entry arguments.
    let (mut b, args) = Builder::new("main", &[f32t(&[2])]);
    let _ = b.op(K::Negate, &args, f32t(&[2]), &[]);
    let mut function = b.finish_function(&args);
    function.ty.results = vec![f32t(&[3])];
    function.ty.inputs = vec![f32t(&[4])];
    let m = module_of(vec![function.clone()]);
    assert_error(
        &m,
        "func.return",
        "returns tensor<2xf32> as value #0, but the signature says tensor<3xf32>",
    );
    assert_error(
        &m,
        "func.func @main",
        "entry block argument #0 has type tensor<2xf32>",
    );
    function.body.blocks[0].ops.pop();
    let m = module_of(vec![function.clone()]);
    assert_error(
        &m,
        "stablehlo.negate",
        "the last op of a function body must be func.return",
    );
    function.body.blocks.clear();
    let m = module_of(vec![
        function,
        Function {
            name: "main".to_string(),
            ..Function::default()
        },
    ]);
    assert_error(
        &m,
        "func.func @main",
        "function body must have exactly one block, found 0",
    );
    assert_error(
        &m,
        "func.func @main",
        "function name is defined more than once",
    );

    // A region without stablehlo.return, and a stablehlo.return at the top level.
    let (mut b, args) = Builder::new("main", &[scalar(E::Pred), f32t(&[2])]);
    let then_branch = b.region(&[], |_, _| vec![args[1]]);
    let mut else_branch = b.region(&[], |_, _| vec![args[1]]);
    else_branch.blocks[0].ops.clear();
    let r = b.ops(
        K::If,
        &[args[0]],
        &[f32t(&[2])],
        &[],
        vec![then_branch, else_branch],
    );
    b.push(Op::new(K::Return, r.clone(), Vec::new()));
    let m = b.finish(&r);
    assert_error(
        &m,
        "stablehlo.if",
        "a region is empty; it must end with stablehlo.return",
    );
    assert_error(
        &m,
        "stablehlo.return",
        "may only end a region of a StableHLO op",
    );
}

#[test]
fn all_errors_are_reported_one_per_line() {
    let (mut b, args) = Builder::new("main", &[f32t(&[2]), f32t(&[3])]);
    let a = b.op(K::Add, &[args[0], args[1]], f32t(&[2]), &[]);
    let c = b.op(K::Reshape, &[a], f32t(&[5]), &[]);
    let d = b.op(K::Iota, &[], f32t(&[2]), &[("iota_dimension", int(1))]);
    let _ = b.op(K::Multiply, &[c, d], f32t(&[5]), &[]);
    let errors = errors(&b.finish(&[a]));
    let ops: Vec<&str> = errors.errors().iter().map(|e| e.op.as_str()).collect();
    assert_eq!(
        ops,
        vec![
            "stablehlo.add",
            "stablehlo.reshape",
            "stablehlo.iota",
            "stablehlo.multiply"
        ],
        "{errors}"
    );
    let text = errors.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(
        lines[0],
        "stablehlo.add at \"test.mlir\":1:3: operand shapes [2] and [3] differ"
    );
    assert_eq!(
        errors.summary(2).lines().last(),
        Some("... and 2 more errors")
    );
}

/// Takes a module apart with a worklist, so dropping a deeply nested one cannot overflow
/// the stack either.
fn dismantle(mut module: Module) {
    let mut regions: Vec<Region> = module
        .functions
        .iter_mut()
        .map(|f| std::mem::take(&mut f.body))
        .collect();
    while let Some(mut region) = regions.pop() {
        for block in &mut region.blocks {
            for op in &mut block.ops {
                regions.append(&mut op.regions);
            }
        }
    }
}

#[test]
fn deep_nesting_does_not_overflow_the_stack() {
    const DEPTH: usize = 100_000;
    let (mut b, args) = Builder::new("main", &[scalar(E::Pred), f32t(&[2])]);
    let (pred, x) = (args[0], args[1]);
    // Built from the innermost `if` outwards: each level's true branch holds the next level.
    let mut inner: Option<Op> = None;
    for _ in 0..DEPTH {
        let result = b.value(f32t(&[2]));
        let mut then_ops = Vec::new();
        let returned = match inner.take() {
            Some(op) => {
                let value = op.results[0];
                then_ops.push(op);
                value
            }
            None => x,
        };
        then_ops.push(Op::new(K::Return, vec![returned], Vec::new()));
        let then_branch = Region {
            blocks: vec![Block {
                arguments: Vec::new(),
                ops: then_ops,
            }],
        };
        let else_branch = Region {
            blocks: vec![Block {
                arguments: Vec::new(),
                ops: vec![Op::new(K::Return, vec![x], Vec::new())],
            }],
        };
        let mut op = Op::new(K::If, vec![pred], vec![result]);
        op.regions = vec![then_branch, else_branch];
        inner = Some(op);
    }
    let outer = inner.expect("at least one level");
    let result = outer.results[0];
    b.push(outer);
    let module = b.finish(&[result]);
    assert_verifies(&module);
    dismantle(module);
}

/// Every attribute name the rules read.
const ATTRIBUTE_NAMES: &[&str] = &[
    "broadcast_dimensions",
    "broadcast_sizes",
    "permutation",
    "dimensions",
    "dimension",
    "iota_dimension",
    "start_indices",
    "limit_indices",
    "strides",
    "edge_padding_low",
    "edge_padding_high",
    "interior_padding",
    "slice_sizes",
    "index",
    "exponent_bits",
    "mantissa_bits",
    "lhs_batching_dimensions",
    "rhs_batching_dimensions",
    "lhs_contracting_dimensions",
    "rhs_contracting_dimensions",
    "window_dimensions",
    "window_strides",
    "base_dilations",
    "window_dilations",
    "padding",
    "lhs_dilation",
    "rhs_dilation",
    "input_batch_dimension",
    "input_feature_dimension",
    "input_spatial_dimensions",
    "kernel_input_feature_dimension",
    "kernel_output_feature_dimension",
    "kernel_spatial_dimensions",
    "output_batch_dimension",
    "output_feature_dimension",
    "output_spatial_dimensions",
    "feature_group_count",
    "batch_group_count",
    "offset_dims",
    "collapsed_slice_dims",
    "operand_batching_dims",
    "start_indices_batching_dims",
    "start_index_map",
    "index_vector_dim",
    "update_window_dims",
    "inserted_window_dims",
    "input_batching_dims",
    "scatter_indices_batching_dims",
    "scatter_dims_to_operand_dims",
];

#[test]
fn hostile_ops_give_errors_not_panics() {
    let operand_types = [
        scalar(E::S32),
        f32t(&[0, 3]),
        t(&[crate::DYNAMIC, 1, 7], E::Pred),
        f32t(&[-3, i64::MAX]),
        Type::Tuple(vec![]),
        Type::Token,
    ];
    let attribute_values = [
        i64s(&[]),
        i64s(&[-1, i64::MAX, i64::MIN]),
        i64s(&[0, 0, 0, 0, 0, 0]),
        int(i64::MIN),
        int(i64::MAX),
        Attribute::Unit,
    ];
    let mut n_rejected = 0;
    for kind in K::KNOWN {
        for n_operands in 0..4 {
            for (type_idx, attr) in attribute_values.iter().enumerate() {
                let inputs: Vec<Type> = (0..n_operands)
                    .map(|i| operand_types[(i + type_idx) % operand_types.len()].clone())
                    .collect();
                let (mut b, args) = Builder::new("main", &inputs);
                let region = b.region(&operand_types[..type_idx % 3], |_, a| a.to_vec());
                let attributes: Vec<(&str, Attribute)> =
                    ATTRIBUTE_NAMES.iter().map(|n| (*n, attr.clone())).collect();
                let result_type = operand_types[(type_idx + 1) % operand_types.len()].clone();
                let r = b.ops(
                    kind.clone(),
                    &args,
                    &[result_type],
                    &attributes,
                    vec![region.clone(), region],
                );
                if verify_module(&b.finish(&r)).is_err() {
                    n_rejected += 1;
                }
            }
        }
    }
    assert!(n_rejected > 0);
}

#[test]
fn region_block_counts_and_opaque_types() {
    // A known op's region must hold exactly one block; an unknown op's regions may hold any.
    let (mut b, args) = Builder::new("main", &[scalar(E::Pred), f32t(&[2])]);
    let mut then_branch = b.region(&[], |_, _| vec![args[1]]);
    let extra = then_branch.blocks[0].clone();
    then_branch.blocks.push(Block {
        arguments: Vec::new(),
        ops: extra.ops,
    });
    let else_branch = b.region(&[], |_, _| vec![args[1]]);
    let r = b.ops(
        K::If,
        &[args[0]],
        &[f32t(&[2])],
        &[],
        vec![then_branch, else_branch],
    );
    assert_error(
        &b.finish(&r),
        "stablehlo.if",
        "region #0 must have exactly one block, found 2",
    );

    let (mut b, args) = Builder::new("main", &[f32t(&[2])]);
    let empty = Region {
        blocks: vec![Block::default(), Block::default()],
    };
    let r = b.ops(
        K::Other("mydialect.region_op".to_string()),
        &args,
        &[f32t(&[2])],
        &[],
        vec![empty],
    );
    assert_verifies(&b.finish(&r));

    // An op on an opaque (quantized) type is left to later stages.
    let quantized = Type::Opaque("tensor<2x!quant.uniform<i8:f32, 0.5>>".to_string());
    let m = single_op(
        K::Add,
        &[quantized.clone(), quantized.clone()],
        quantized,
        &[],
    );
    assert_verifies(&m);
}
