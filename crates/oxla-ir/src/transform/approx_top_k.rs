//! `ApproxTopK`, the custom call of `jax.lax.approx_max_k` and `approx_min_k`, rewritten to
//! the exact top k that XLA's cpu backend computes for it: a stable `stablehlo.sort` of the
//! inputs along the reduction dimension by the call's comparator, then a `stablehlo.slice`
//! of each sorted input down to the call's result shape.
//!
//! The call's operands are `n` inputs (JAX passes the values and an iota of their
//! positions) followed by `n` init values, which only a reduction into bins reads; the
//! comparator is the function in `called_computations`, taking a pair of scalars per input
//! like a sort's comparator region. Exact results are a valid answer for every recall
//! target, and the ones XLA's fallback gives. A stable sort puts equal values in the order
//! of their positions. This rewrite is what makes the call run, so it runs at every
//! optimization level.

use super::inline::copy_op;
use crate::attrs::Attribute;
use crate::module::{Block, Function, Module, Op, Region};
use crate::ops::OpKind;
use crate::types::{TensorType, Type};
use crate::IrError;

/// The custom-call target this module rewrites.
pub const APPROX_TOP_K: &str = "ApproxTopK";

/// Rewrites every `ApproxTopK` custom call of `module` (nested regions included) into a sort
/// and slices; returns how many it rewrote, or an error naming a malformed call.
pub fn lower_approx_top_k(module: &mut Module) -> Result<usize, IrError> {
    let mut rewritten = 0;
    for index in 0..module.functions.len() {
        let mut function = std::mem::take(&mut module.functions[index]);
        let mut body = std::mem::take(&mut function.body);
        let result = rewrite_region(module, &mut function, &mut body);
        function.body = body;
        module.functions[index] = function;
        rewritten += result?;
    }
    Ok(rewritten)
}

fn is_approx_top_k(op: &Op) -> bool {
    op.kind == OpKind::CustomCall && crate::eval::call_target(op) == Some(APPROX_TOP_K)
}

fn rewrite_region(
    module: &Module,
    function: &mut Function,
    region: &mut Region,
) -> Result<usize, IrError> {
    let mut rewritten = 0;
    for block in &mut region.blocks {
        let ops = std::mem::take(&mut block.ops);
        let mut out = Vec::with_capacity(ops.len());
        for mut op in ops {
            for nested in &mut op.regions {
                rewritten += rewrite_region(module, function, nested)?;
            }
            if is_approx_top_k(&op) {
                lower(module, function, &op, &mut out)?;
                rewritten += 1;
            } else {
                out.push(op);
            }
        }
        block.ops = out;
    }
    Ok(rewritten)
}

fn invalid(op: &Op, detail: impl Into<String>) -> IrError {
    IrError::InvalidOp {
        op: format!("stablehlo.custom_call @{APPROX_TOP_K}"),
        location: op.location.clone(),
        detail: detail.into(),
    }
}

/// The integer value of `key` in the call's `mhlo.backend_config` dictionary.
fn config_int(op: &Op, key: &str) -> Option<i64> {
    let Some(Attribute::Dictionary(entries)) = op.attr("mhlo.backend_config") else {
        return None;
    };
    let (_, value) = entries.iter().find(|(name, _)| name == key)?;
    i64::try_from(value.as_int()?).ok()
}

/// The comparator function named by the call's `called_computations`.
fn comparator<'m>(module: &'m Module, op: &Op) -> Result<&'m Function, IrError> {
    let name = match op.attr("called_computations") {
        Some(Attribute::Array(items)) if items.len() == 1 => match &items[0] {
            Attribute::SymbolRef(s) | Attribute::String(s) => s.trim_start_matches('@'),
            _ => return Err(invalid(op, "`called_computations` is not a symbol")),
        },
        _ => return Err(invalid(op, "needs one comparator in `called_computations`")),
    };
    module
        .function(name)
        .ok_or_else(|| invalid(op, format!("calls unknown comparator @{name}")))
}

fn tensor(function: &Function, value: crate::ValueId) -> Option<&TensorType> {
    match function.value_type(value) {
        Type::Tensor(t) => Some(t),
        _ => None,
    }
}

/// Appends the sort and slices that compute `call` to `out`.
fn lower(
    module: &Module,
    function: &mut Function,
    call: &Op,
    out: &mut Vec<Op>,
) -> Result<(), IrError> {
    let n = call.results.len();
    if n == 0 || call.operands.len() != 2 * n {
        return Err(invalid(
            call,
            format!(
                "takes as many inputs as init values and returns one result per input, got {} operands and {n} results",
                call.operands.len()
            ),
        ));
    }
    let inputs: Vec<TensorType> = call.operands[..n]
        .iter()
        .map(|&v| tensor(function, v).cloned())
        .collect::<Option<_>>()
        .ok_or_else(|| invalid(call, "inputs must be tensors"))?;
    let shape = inputs[0].shape.clone();
    let rank = shape.len();
    if rank == 0 || inputs.iter().any(|t| t.shape != shape) {
        return Err(invalid(call, "inputs must be arrays of one shape"));
    }
    let dim = config_int(call, "reduction_dim")
        .ok_or_else(|| invalid(call, "`mhlo.backend_config` has no integer `reduction_dim`"))?;
    let dim = if dim < 0 { dim + rank as i64 } else { dim };
    let dim = usize::try_from(dim)
        .ok()
        .filter(|&d| d < rank)
        .ok_or_else(|| invalid(call, format!("`reduction_dim` is outside rank {rank}")))?;
    let mut results = Vec::with_capacity(n);
    for (i, input) in inputs.iter().enumerate() {
        let result = tensor(function, call.results[i])
            .ok_or_else(|| invalid(call, "results must be tensors"))?;
        let fits = result.element_type == input.element_type
            && result.shape.len() == rank
            && input.is_static()
            && result.is_static()
            && result
                .shape
                .iter()
                .zip(&shape)
                .enumerate()
                .all(|(d, (r, s))| if d == dim { r <= s } else { r == s });
        if !fits {
            return Err(invalid(
                call,
                format!(
                    "result {i} of type {result} does not fit input {i} of type {input} reduced along dimension {dim}"
                ),
            ));
        }
        results.push(result.clone());
    }
    let comparator = comparator(module, call)?;
    let region = comparator_region(function, comparator, &inputs).ok_or_else(|| {
        invalid(
            call,
            "the comparator must take a pair of scalars per input and return one i1",
        )
    })?;
    let sorted: Vec<_> = inputs
        .iter()
        .map(|t| function.new_value(Type::Tensor(t.clone())))
        .collect();
    let mut sort = Op::new(OpKind::Sort, call.operands[..n].to_vec(), sorted.clone());
    sort.attributes = vec![
        (
            "dimension".into(),
            Attribute::Integer {
                value: dim as i128,
                ty: Some(crate::ElementType::S64),
            },
        ),
        ("is_stable".into(), Attribute::Bool(true)),
    ];
    sort.regions = vec![region];
    sort.location = call.location.clone();
    out.push(sort);
    for ((&value, &result), ty) in sorted.iter().zip(&call.results).zip(&results) {
        let limits = ty.shape.clone();
        let mut slice = Op::new(OpKind::Slice, vec![value], vec![result]);
        slice.attributes = vec![
            (
                "start_indices".into(),
                Attribute::DenseI64Array(vec![0; rank]),
            ),
            ("limit_indices".into(), Attribute::DenseI64Array(limits)),
            ("strides".into(), Attribute::DenseI64Array(vec![1; rank])),
        ];
        slice.location = call.location.clone();
        out.push(slice);
    }
    Ok(())
}

/// A copy of `comparator`'s one-block body as a sort region of `function`, its return a
/// `stablehlo.return`; `None` when its signature is not a pair of scalars of each input's
/// element type returning one `i1` scalar.
fn comparator_region(
    function: &mut Function,
    comparator: &Function,
    inputs: &[TensorType],
) -> Option<Region> {
    let [block] = comparator.body.blocks.as_slice() else {
        return None;
    };
    let scalar =
        |ty: &Type, et| matches!(ty, Type::Tensor(t) if t.shape.is_empty() && t.element_type == et);
    let takes_pairs = block.arguments.len() == 2 * inputs.len()
        && block
            .arguments
            .iter()
            .enumerate()
            .all(|(i, &arg)| scalar(comparator.value_type(arg), inputs[i / 2].element_type));
    let returns_pred = comparator.ty.results.len() == 1
        && scalar(&comparator.ty.results[0], crate::ElementType::Pred);
    let terminator = block.ops.last()?;
    if !takes_pairs
        || !returns_pred
        || !matches!(terminator.kind, OpKind::Return | OpKind::FuncReturn)
        || terminator.operands.len() != 1
    {
        return None;
    }
    let mut map = vec![None; comparator.values.len()];
    let arguments = block
        .arguments
        .iter()
        .map(|&arg| {
            let v = function.new_value(comparator.value_type(arg).clone());
            map[arg.index()] = Some(v);
            v
        })
        .collect();
    let mut ops: Vec<Op> = block
        .ops
        .iter()
        .map(|op| copy_op(function, comparator, op, &mut map))
        .collect();
    if let Some(last) = ops.last_mut() {
        last.kind = OpKind::Return;
    }
    Some(Region {
        blocks: vec![Block { arguments, ops }],
    })
}
