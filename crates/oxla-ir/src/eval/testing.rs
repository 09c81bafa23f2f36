//! A tiny test-only builder for functions and modules, plus literal helpers.

use crate::attrs::ComparisonDirection;
use crate::{
    Attribute, Block, ElementType, ElementsAttr, Function, FunctionType, Literal, Module, Op,
    OpKind, Region, TensorType, Type, ValueId,
};

/// Builds one function op by op; nested regions are built with [`FuncBuilder::region`].
pub(crate) struct FuncBuilder {
    func: Function,
    blocks: Vec<Vec<Op>>,
}

/// A tensor type.
pub(crate) fn t(shape: &[i64], et: ElementType) -> Type {
    Type::Tensor(TensorType::new(shape, et))
}

/// A dense i64 array attribute.
pub(crate) fn i64s(v: &[i64]) -> Attribute {
    Attribute::DenseI64Array(v.to_vec())
}

/// An i64 integer attribute.
pub(crate) fn int(v: i64) -> Attribute {
    Attribute::Integer {
        value: i128::from(v),
        ty: Some(ElementType::S64),
    }
}

/// A literal from raw little-endian element bytes.
pub(crate) fn lit_bytes(shape: &[i64], et: ElementType, data: Vec<u8>) -> Literal {
    Literal::new(TensorType::new(shape, et), data).expect("test literal size")
}

/// A literal of f32 values.
pub(crate) fn f32s(shape: &[i64], v: &[f32]) -> Literal {
    Literal::from_f32(shape, v).expect("test literal size")
}

/// A literal of f64 values.
pub(crate) fn f64s(shape: &[i64], v: &[f64]) -> Literal {
    lit_bytes(
        shape,
        ElementType::F64,
        v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    )
}

/// A literal of i32 values.
pub(crate) fn i32s(shape: &[i64], v: &[i32]) -> Literal {
    Literal::from_i32(shape, v).expect("test literal size")
}

/// A literal of i64 values.
pub(crate) fn i64s_lit(shape: &[i64], v: &[i64]) -> Literal {
    lit_bytes(
        shape,
        ElementType::S64,
        v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    )
}

/// A literal of booleans.
pub(crate) fn preds(shape: &[i64], v: &[bool]) -> Literal {
    lit_bytes(
        shape,
        ElementType::Pred,
        v.iter().map(|&b| u8::from(b)).collect(),
    )
}

/// The f32 values of a literal.
pub(crate) fn to_f32(lit: &Literal) -> Vec<f32> {
    lit.to_f32_vec().expect("f32 literal")
}

/// The f64 values of a literal.
pub(crate) fn to_f64(lit: &Literal) -> Vec<f64> {
    assert_eq!(lit.ty.element_type, ElementType::F64);
    lit.data
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect()
}

/// The i32 values of a literal.
pub(crate) fn to_i32(lit: &Literal) -> Vec<i32> {
    lit.to_i32_vec().expect("i32 literal")
}

/// The booleans of an i1 literal.
pub(crate) fn to_pred(lit: &Literal) -> Vec<bool> {
    assert_eq!(lit.ty.element_type, ElementType::Pred);
    lit.data.iter().map(|&b| b != 0).collect()
}

impl FuncBuilder {
    /// A function `main` with arguments of `inputs`; returns the builder and the arguments.
    pub(crate) fn new(inputs: &[Type]) -> (FuncBuilder, Vec<ValueId>) {
        let mut func = Function {
            name: "main".to_string(),
            ..Function::default()
        };
        let args: Vec<ValueId> = inputs.iter().map(|ty| func.new_value(ty.clone())).collect();
        func.ty.inputs = inputs.to_vec();
        func.body.blocks.push(Block {
            arguments: args.clone(),
            ops: Vec::new(),
        });
        (
            FuncBuilder {
                func,
                blocks: vec![Vec::new()],
            },
            args,
        )
    }

    /// Appends an op with attributes and regions; returns its results.
    pub(crate) fn op_full(
        &mut self,
        kind: OpKind,
        operands: &[ValueId],
        result_types: &[Type],
        attrs: Vec<(&str, Attribute)>,
        regions: Vec<Region>,
    ) -> Vec<ValueId> {
        let results: Vec<ValueId> = result_types
            .iter()
            .map(|ty| self.func.new_value(ty.clone()))
            .collect();
        let mut op = Op::new(kind, operands.to_vec(), results.clone());
        op.attributes = attrs.into_iter().map(|(n, a)| (n.to_string(), a)).collect();
        op.regions = regions;
        self.blocks.last_mut().expect("open block").push(op);
        results
    }

    /// Appends an op with attributes and one result.
    pub(crate) fn op(
        &mut self,
        kind: OpKind,
        operands: &[ValueId],
        result_type: Type,
        attrs: Vec<(&str, Attribute)>,
    ) -> ValueId {
        self.op_full(kind, operands, &[result_type], attrs, Vec::new())[0]
    }

    /// A scalar or tensor constant.
    pub(crate) fn constant(&mut self, lit: &Literal) -> ValueId {
        let value = Attribute::Elements(ElementsAttr {
            ty: lit.ty.clone(),
            data: lit.data.to_vec().into(),
            splat: false,
        });
        self.op(
            OpKind::Constant,
            &[],
            Type::Tensor(lit.ty.clone()),
            vec![("value", value)],
        )
    }

    /// A `compare` op.
    pub(crate) fn compare(
        &mut self,
        dir: ComparisonDirection,
        a: ValueId,
        b: ValueId,
        shape: &[i64],
    ) -> ValueId {
        self.op(
            OpKind::Compare,
            &[a, b],
            t(shape, ElementType::Pred),
            vec![("comparison_direction", Attribute::ComparisonDirection(dir))],
        )
    }

    /// Builds a one-block region with arguments of `arg_types`; `build` returns the values
    /// the region's `stablehlo.return` yields.
    pub(crate) fn region(
        &mut self,
        arg_types: &[Type],
        build: impl FnOnce(&mut FuncBuilder, &[ValueId]) -> Vec<ValueId>,
    ) -> Region {
        let args: Vec<ValueId> = arg_types
            .iter()
            .map(|ty| self.func.new_value(ty.clone()))
            .collect();
        self.blocks.push(Vec::new());
        let results = build(self, &args);
        let mut ops = self.blocks.pop().expect("region block");
        ops.push(Op::new(OpKind::Return, results, Vec::new()));
        Region {
            blocks: vec![Block {
                arguments: args,
                ops,
            }],
        }
    }

    /// Finishes the function returning `results` and wraps it in a module.
    pub(crate) fn finish(self, results: &[ValueId]) -> Module {
        Module {
            functions: vec![self.finish_function(results)],
            ..Module::default()
        }
    }

    /// Finishes the function returning `results`.
    pub(crate) fn finish_function(mut self, results: &[ValueId]) -> Function {
        let mut ops = self.blocks.pop().expect("function block");
        ops.push(Op::new(OpKind::FuncReturn, results.to_vec(), Vec::new()));
        self.func.body.blocks[0].ops = ops;
        self.func.ty = FunctionType {
            inputs: self.func.ty.inputs.clone(),
            results: results
                .iter()
                .map(|&v| self.func.value_type(v).clone())
                .collect(),
        };
        self.func
    }
}

/// Builds `main(args) = kind(args)` with one result of `result_type` and runs it.
pub(crate) fn run_op(
    kind: OpKind,
    args: &[Literal],
    result_type: Type,
    attrs: Vec<(&str, Attribute)>,
) -> Result<Literal, crate::IrError> {
    let types: Vec<Type> = args.iter().map(|a| Type::Tensor(a.ty.clone())).collect();
    let (mut b, params) = FuncBuilder::new(&types);
    let r = b.op(kind, &params, result_type, attrs);
    let module = b.finish(&[r]);
    let mut out = super::run_function(&module, "main", args)?;
    Ok(out.remove(0))
}

/// Runs a function of one `stablehlo.custom_call` of `target` (with `attrs` besides its
/// target name) on `args`, with results of `results`.
pub(crate) fn run_custom_call(
    target: &str,
    attrs: Vec<(&str, Attribute)>,
    args: &[Literal],
    results: &[Type],
) -> Result<Vec<Literal>, crate::IrError> {
    let types: Vec<Type> = args.iter().map(|a| Type::Tensor(a.ty.clone())).collect();
    let (mut b, params) = FuncBuilder::new(&types);
    let mut all = vec![("call_target_name", Attribute::String(target.to_string()))];
    all.extend(attrs);
    let rs = b.op_full(OpKind::CustomCall, &params, results, all, Vec::new());
    let module: Module = b.finish(&rs);
    super::run_function(&module, "main", args)
}
