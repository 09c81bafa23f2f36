//! Small integer computations on constants done once, at compile time.
//!
//! JAX writes the guards of its integer helpers on the scalar operands themselves: `x % 7`
//! divides by `select(7 == 0, 1, 7)`, and `x // 7` tests `sign(7)`. Left in the program,
//! such a divisor is a value computed at run time, and the generated code cannot use what
//! it is (a division by a known constant becomes a product, see `oxla_codegen`'s
//! `Inst::IntDivideBy`). Here an op whose operands are all constants, whose operands and
//! result are integers or booleans, and whose result holds at most [`MAX_ELEMENTS`] elements
//! becomes a constant holding its result, computed by the evaluator itself, so the program
//! gives the same bits as before. Float ops are left alone: the evaluator computes them with
//! denormals flushed only on the threads that run programs, which the compiling thread is
//! not.

use crate::attrs::{Attribute, ElementsAttr};
use crate::module::{Block, Function, Module, Op, Region, ValueId};
use crate::ops::OpKind;
use crate::types::FunctionType;
use crate::types::Type;
use crate::Literal;
use std::collections::HashMap;

/// Results of at most this many elements are folded (JAX's guards are scalars).
const MAX_ELEMENTS: usize = 16;

/// Folds the small integer ops on constants of every function of `module` (see the module
/// doc); returns how many ops became constants.
pub fn fold_integer_constants(module: &mut Module) -> usize {
    module.functions.iter_mut().map(fold_function).sum()
}

fn fold_function(function: &mut Function) -> usize {
    let mut constants: HashMap<ValueId, ElementsAttr> = HashMap::new();
    let mut body = std::mem::take(&mut function.body);
    let folded = fold_region(function, &mut body, &mut constants);
    function.body = body;
    folded
}

fn fold_region(
    function: &Function,
    region: &mut Region,
    constants: &mut HashMap<ValueId, ElementsAttr>,
) -> usize {
    let mut folded = 0;
    for block in &mut region.blocks {
        folded += fold_block(function, block, constants);
    }
    folded
}

fn fold_block(
    function: &Function,
    block: &mut Block,
    constants: &mut HashMap<ValueId, ElementsAttr>,
) -> usize {
    let mut folded = 0;
    for op in &mut block.ops {
        for region in &mut op.regions {
            folded += fold_region(function, region, constants);
        }
        if let Some(value) = folded_value(function, op, constants) {
            let mut constant = Op::new(OpKind::Constant, Vec::new(), op.results.clone());
            constant
                .attributes
                .push(("value".to_string(), Attribute::Elements(value)));
            constant.location = op.location.clone();
            *op = constant;
            folded += 1;
        }
        if op.kind == OpKind::Constant {
            if let (Some(Attribute::Elements(e)), [result]) = (op.attr("value"), &op.results[..]) {
                constants.insert(*result, e.clone());
            }
        }
    }
    folded
}

/// Whether `kind` is folded: pure elementwise integer arithmetic, comparisons, selects and
/// shape changes.
fn foldable(kind: &OpKind) -> bool {
    use OpKind as K;
    matches!(
        kind,
        K::Add
            | K::Subtract
            | K::Multiply
            | K::Divide
            | K::Remainder
            | K::Maximum
            | K::Minimum
            | K::And
            | K::Or
            | K::Xor
            | K::Not
            | K::Negate
            | K::Abs
            | K::Sign
            | K::ShiftLeft
            | K::ShiftRightArithmetic
            | K::ShiftRightLogical
            | K::Compare
            | K::Select
            | K::Clamp
            | K::Convert
            | K::Reshape
            | K::BroadcastInDim
    )
}

/// The constant `op` computes, when it is folded.
fn folded_value(
    function: &Function,
    op: &Op,
    constants: &HashMap<ValueId, ElementsAttr>,
) -> Option<ElementsAttr> {
    let [result] = op.results[..] else {
        return None;
    };
    if !foldable(&op.kind) || op.operands.is_empty() || !op.regions.is_empty() {
        return None;
    }
    let Type::Tensor(result_ty) = function.value_type(result) else {
        return None;
    };
    let integral = |et: crate::ElementType| et.is_int() || et.is_pred();
    if !integral(result_ty.element_type) || result_ty.num_elements()? > MAX_ELEMENTS {
        return None;
    }
    let mut args = Vec::with_capacity(op.operands.len());
    for v in &op.operands {
        let e = constants.get(v)?;
        if !integral(e.ty.element_type) {
            return None;
        }
        args.push(Literal::new(e.ty.clone(), e.to_dense_bytes()).ok()?);
    }
    // `main(constants...) = op(...)`, run by the evaluator.
    let mut main = Function {
        name: "main".to_string(),
        ..Function::default()
    };
    let params: Vec<ValueId> = args
        .iter()
        .map(|a| main.new_value(Type::Tensor(a.ty.clone())))
        .collect();
    let out = main.new_value(Type::Tensor(result_ty.clone()));
    let mut single = Op::new(op.kind.clone(), params.clone(), vec![out]);
    single.attributes = op.attributes.clone();
    main.ty = FunctionType {
        inputs: args.iter().map(|a| Type::Tensor(a.ty.clone())).collect(),
        results: vec![Type::Tensor(result_ty.clone())],
    };
    main.body.blocks.push(Block {
        arguments: params,
        ops: vec![single, Op::new(OpKind::FuncReturn, vec![out], Vec::new())],
    });
    let module = Module {
        functions: vec![main],
        ..Module::default()
    };
    // An op the evaluator refuses stays, to report its error when the program runs.
    let mut results = crate::eval::run_function(&module, "main", &args).ok()?;
    let value = results.pop().filter(|r| r.ty == *result_ty)?;
    Some(ElementsAttr {
        ty: value.ty.clone(),
        data: value.data.to_vec().into(),
        splat: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ElementType, TensorType};

    fn constant(f: &mut Function, ops: &mut Vec<Op>, et: ElementType, bytes: Vec<u8>) -> ValueId {
        let ty = TensorType::new(vec![], et);
        let v = f.new_value(Type::Tensor(ty.clone()));
        let mut op = Op::new(OpKind::Constant, Vec::new(), vec![v]);
        op.attributes.push((
            "value".to_string(),
            Attribute::Elements(ElementsAttr {
                ty,
                data: bytes.into(),
                splat: false,
            }),
        ));
        ops.push(op);
        v
    }

    /// `x % 7` as JAX writes it: the divisor guarded by `select(7 == 0, 1, 7)`.
    #[test]
    fn a_guarded_divisor_becomes_its_constant() {
        let mut f = Function {
            name: "main".to_string(),
            ..Function::default()
        };
        let scalar = |et| Type::Tensor(TensorType::new(vec![], et));
        let x = f.new_value(Type::Tensor(TensorType::new(vec![4], ElementType::S32)));
        let mut ops = Vec::new();
        let seven = constant(
            &mut f,
            &mut ops,
            ElementType::S32,
            7i32.to_le_bytes().to_vec(),
        );
        let zero = constant(
            &mut f,
            &mut ops,
            ElementType::S32,
            0i32.to_le_bytes().to_vec(),
        );
        let one = constant(
            &mut f,
            &mut ops,
            ElementType::S32,
            1i32.to_le_bytes().to_vec(),
        );
        let is_zero = f.new_value(scalar(ElementType::Pred));
        let mut cmp = Op::new(OpKind::Compare, vec![seven, zero], vec![is_zero]);
        cmp.attributes.push((
            "comparison_direction".to_string(),
            Attribute::ComparisonDirection(crate::attrs::ComparisonDirection::Eq),
        ));
        ops.push(cmp);
        let divisor = f.new_value(scalar(ElementType::S32));
        ops.push(Op::new(
            OpKind::Select,
            vec![is_zero, one, seven],
            vec![divisor],
        ));
        let wide = f.new_value(Type::Tensor(TensorType::new(vec![4], ElementType::S32)));
        let mut bcast = Op::new(OpKind::BroadcastInDim, vec![divisor], vec![wide]);
        bcast.attributes.push((
            "broadcast_dimensions".to_string(),
            Attribute::DenseI64Array(vec![]),
        ));
        ops.push(bcast);
        // Reads an argument: stays.
        let rem = f.new_value(Type::Tensor(TensorType::new(vec![4], ElementType::S32)));
        ops.push(Op::new(OpKind::Remainder, vec![x, wide], vec![rem]));
        ops.push(Op::new(OpKind::FuncReturn, vec![rem], Vec::new()));
        f.body.blocks.push(Block {
            arguments: vec![x],
            ops,
        });
        let mut module = Module {
            functions: vec![f],
            ..Module::default()
        };
        // The compare, the select and the broadcast (4 elements).
        assert_eq!(fold_integer_constants(&mut module), 3);
        let ops = &module.functions[0].body.blocks[0].ops;
        let value_of = |i: usize| match ops[i].attr("value") {
            Some(Attribute::Elements(e)) => e.to_dense_bytes(),
            other => panic!("op {i} is {:?} with {other:?}", ops[i].kind),
        };
        assert_eq!(value_of(3), vec![0]);
        assert_eq!(value_of(4), 7i32.to_le_bytes().to_vec());
        assert_eq!(
            value_of(5),
            [7i32; 4]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<_>>()
        );
        assert_eq!(ops[6].kind, OpKind::Remainder);
    }

    #[test]
    fn float_ops_and_large_results_stay() {
        let mut f = Function {
            name: "main".to_string(),
            ..Function::default()
        };
        let mut ops = Vec::new();
        let a = constant(
            &mut f,
            &mut ops,
            ElementType::F32,
            1.5f32.to_le_bytes().to_vec(),
        );
        let sum = f.new_value(Type::Tensor(TensorType::new(vec![], ElementType::F32)));
        ops.push(Op::new(OpKind::Add, vec![a, a], vec![sum]));
        let b = constant(
            &mut f,
            &mut ops,
            ElementType::S32,
            3i32.to_le_bytes().to_vec(),
        );
        let big = f.new_value(Type::Tensor(TensorType::new(vec![64], ElementType::S32)));
        let mut bcast = Op::new(OpKind::BroadcastInDim, vec![b], vec![big]);
        bcast.attributes.push((
            "broadcast_dimensions".to_string(),
            Attribute::DenseI64Array(vec![]),
        ));
        ops.push(bcast);
        ops.push(Op::new(OpKind::FuncReturn, vec![sum, big], Vec::new()));
        f.body.blocks.push(Block {
            arguments: vec![],
            ops,
        });
        let mut module = Module {
            functions: vec![f],
            ..Module::default()
        };
        assert_eq!(fold_integer_constants(&mut module), 0);
    }
}
