//! Per-op rules for elementwise, data-movement and structural ops, plus the helpers every
//! rule uses. Each rule follows the "Constraints" of the op's StableHLO spec entry.
//!
//! - Elementwise unary ops: one operand and one result of compatible shape; element types as
//!   the spec allows (float math on float or complex, rounding on float, bit counting on
//!   integers, `not` on bool or integer, `abs`/`real`/`imag` of complex give the part type,
//!   `is_finite` gives `i1`). `convert`: equal shapes. `bitcast_convert`: shapes related by
//!   the bit-width ratio. `reduce_precision`: float, `exponent_bits >= 1`,
//!   `mantissa_bits >= 0`. CHLO unary ops: equal shapes.
//! - Elementwise binary ops: equal shapes and element types, with the type classes the spec
//!   allows (logical ops on bool or integer, shifts on integers, arithmetic not on bool,
//!   `atan2` on float or complex); `complex` builds a complex of its parts' type; `compare`
//!   needs `comparison_direction` and gives `i1` of the operand shape; `select` takes an `i1`
//!   predicate that is a scalar or of the operands' shape; `clamp` bounds are scalars or of the
//!   operand's shape.
//! - `constant`: `value` is dense data of exactly the result type, with the right byte count.
//! - `iota`: `iota_dimension` below the result rank.
//! - `broadcast_in_dim`: one unique, in-range `broadcast_dimensions` entry per operand
//!   dimension, each operand extent 1 or equal to the result extent. `broadcast`: result shape
//!   is `broadcast_sizes` then the operand shape.
//! - `reshape`: equal element counts and types. `transpose`: `permutation` is a permutation
//!   of the operand dimensions and the result shape follows it.
//! - `slice`: one start, limit and stride per dimension, `0 <= start <= limit <= extent`,
//!   strides positive, result extents `ceil((limit - start) / stride)`.
//! - `dynamic_slice`: one scalar integer start index per dimension, all of one type,
//!   `0 <= slice_sizes <= extent`, result shape = `slice_sizes`. `dynamic_update_slice`: the
//!   update has the operand's rank and fits in it, start indices as above, result type =
//!   operand type.
//! - `concatenate`: at least one input, equal ranks and element types, `dimension` in range,
//!   other extents equal, result extent the sum.
//! - `pad`: scalar padding value of the operand's element type, one low/high/interior entry
//!   per dimension, interior padding non-negative, result extents as the spec computes them.
//! - `reverse`: unique in-range `dimensions`, result type = operand type.
//! - `tuple`, `get_tuple_element` (index in range, result = element type),
//!   `get_dimension_size`, `optimization_barrier` (results = operands), `func.return`
//!   (operands = function results), `func.call` (callee exists, types match).
//! - The compute and control-flow ops are in `compute.rs`.

use super::compute;
use super::VerifierError;
use crate::attrs::Attribute;
use crate::module::{Block, Function, Module, Op};
use crate::ops::OpKind;
use crate::types::{ElementType, TensorType, Type, DYNAMIC};

/// What a rule sees: the op, its function and module, and where errors go.
pub(super) struct OpCx<'a, 'e> {
    pub(super) module: &'a Module,
    pub(super) function: &'a Function,
    pub(super) op: &'a Op,
    pub(super) errors: &'e mut Vec<VerifierError>,
}

impl<'a> OpCx<'a, '_> {
    /// Records an error against the op.
    pub(super) fn error(&mut self, message: impl Into<String>) {
        self.errors.push(VerifierError {
            op: self.op.kind.name().to_string(),
            location: self.op.location.clone(),
            message: message.into(),
        });
    }

    /// The type of a value (callers have checked the id is in range).
    pub(super) fn value_type(&self, value: crate::ValueId) -> Option<&'a Type> {
        self.function.values.get(value.index())
    }

    /// The types of the op's operands.
    pub(super) fn operand_types(&self) -> Vec<&'a Type> {
        self.op
            .operands
            .iter()
            .filter_map(|&v| self.value_type(v))
            .collect()
    }

    /// The types of the op's results.
    pub(super) fn result_types(&self) -> Vec<&'a Type> {
        self.op
            .results
            .iter()
            .filter_map(|&v| self.value_type(v))
            .collect()
    }

    /// Checks the number of operands.
    pub(super) fn expect_operands(&mut self, n: usize) -> bool {
        let actual = self.op.operands.len();
        if actual != n {
            self.error(format!("expects {n} operands, found {actual}"));
            return false;
        }
        true
    }

    /// Checks the number of results.
    pub(super) fn expect_results(&mut self, n: usize) -> bool {
        let actual = self.op.results.len();
        if actual != n {
            self.error(format!("expects {n} results, found {actual}"));
            return false;
        }
        true
    }

    /// Checks the numbers of operands and results.
    pub(super) fn expect_arity(&mut self, operands: usize, results: usize) -> bool {
        let operands_ok = self.expect_operands(operands);
        self.expect_results(results) && operands_ok
    }

    fn tensor_of(&mut self, what: &str, ty: Option<&'a Type>) -> Option<&'a TensorType> {
        match ty {
            Some(Type::Tensor(t)) => Some(t),
            Some(other) => {
                self.error(format!("{what} must be a tensor, found {other}"));
                None
            }
            None => None,
        }
    }

    /// Operand `idx` as a tensor (an error if it is not one).
    pub(super) fn operand_tensor(&mut self, idx: usize) -> Option<&'a TensorType> {
        let ty = self.op.operands.get(idx).and_then(|&v| self.value_type(v));
        self.tensor_of(&format!("operand #{idx}"), ty)
    }

    /// Result `idx` as a tensor (an error if it is not one).
    pub(super) fn result_tensor(&mut self, idx: usize) -> Option<&'a TensorType> {
        let ty = self.op.results.get(idx).and_then(|&v| self.value_type(v));
        self.tensor_of(&format!("result #{idx}"), ty)
    }

    /// The i64 list attribute `name`; an error if it is missing or not a list of integers.
    pub(super) fn i64s(&mut self, name: &str) -> Option<Vec<i64>> {
        match self.op.attr(name) {
            None => {
                self.error(format!("missing attribute `{name}`"));
                None
            }
            Some(attr) => self.i64s_of(name, attr),
        }
    }

    /// The i64 list attribute `name` if present; an error if present but malformed.
    pub(super) fn opt_i64s(&mut self, name: &str) -> Option<Vec<i64>> {
        let attr = self.op.attr(name)?;
        self.i64s_of(name, attr)
    }

    fn i64s_of(&mut self, name: &str, attr: &Attribute) -> Option<Vec<i64>> {
        let list = attr.as_i64_list();
        if list.is_none() {
            self.error(format!("attribute `{name}` must be a list of integers"));
        }
        list
    }

    /// The integer attribute `name`; an error if it is missing or not an integer.
    pub(super) fn int(&mut self, name: &str) -> Option<i64> {
        match self.op.attr(name) {
            None => {
                self.error(format!("missing attribute `{name}`"));
                None
            }
            Some(_) => self.opt_int(name),
        }
    }

    /// The integer attribute `name` if present; an error if present but not an integer.
    pub(super) fn opt_int(&mut self, name: &str) -> Option<i64> {
        let attr = self.op.attr(name)?;
        let value = attr.as_int().and_then(|v| i64::try_from(v).ok());
        if value.is_none() {
            self.error(format!("attribute `{name}` must be an integer"));
        }
        value
    }

    /// The single block of region `idx` (structure errors are reported elsewhere).
    pub(super) fn region_block(&mut self, idx: usize, what: &str) -> Option<&'a Block> {
        match self.op.regions.get(idx) {
            None => {
                self.error(format!("missing the {what} region"));
                None
            }
            Some(region) => region.blocks.first(),
        }
    }

    /// The argument types of a block.
    pub(super) fn block_arg_types(&self, block: &'a Block) -> Vec<&'a Type> {
        block
            .arguments
            .iter()
            .filter_map(|&v| self.value_type(v))
            .collect()
    }

    /// The operand types of a block's `stablehlo.return`, if it ends with one.
    pub(super) fn block_return_types(&self, block: &'a Block) -> Option<Vec<&'a Type>> {
        let last = block.ops.last()?;
        if last.kind != OpKind::Return {
            return None;
        }
        Some(
            last.operands
                .iter()
                .filter_map(|&v| self.value_type(v))
                .collect(),
        )
    }

    /// Checks that a region's block takes `expected` arguments.
    pub(super) fn check_region_args(&mut self, block: &'a Block, what: &str, expected: &[&Type]) {
        let actual = self.block_arg_types(block);
        if actual.len() != expected.len() {
            self.error(format!(
                "the {what} region takes {} arguments, expected {}",
                actual.len(),
                expected.len()
            ));
            return;
        }
        for (idx, (a, e)) in actual.iter().zip(expected).enumerate() {
            if !types_compatible(a, e) {
                self.error(format!(
                    "argument #{idx} of the {what} region has type {a}, expected {e}"
                ));
            }
        }
    }

    /// Checks that a region's block returns values of the `expected` types.
    pub(super) fn check_region_returns(
        &mut self,
        block: &'a Block,
        what: &str,
        expected: &[&Type],
    ) {
        let Some(actual) = self.block_return_types(block) else {
            return;
        };
        if actual.len() != expected.len() {
            self.error(format!(
                "the {what} region returns {} values, expected {}",
                actual.len(),
                expected.len()
            ));
            return;
        }
        for (idx, (a, e)) in actual.iter().zip(expected).enumerate() {
            if !types_compatible(a, e) {
                self.error(format!(
                    "the {what} region returns {a} as value #{idx}, expected {e}"
                ));
            }
        }
    }

    /// Checks a list of dimension numbers: each in `[0, rank)` and no repeats.
    pub(super) fn check_dims(&mut self, name: &str, dims: &[i64], rank: usize) -> bool {
        let mut ok = true;
        for (idx, &d) in dims.iter().enumerate() {
            if d < 0 || d as u64 >= rank as u64 {
                self.error(format!(
                    "`{name}` entry {d} is out of range for rank {rank}"
                ));
                ok = false;
            } else if dims[..idx].contains(&d) {
                self.error(format!("`{name}` repeats dimension {d}"));
                ok = false;
            }
        }
        ok
    }

    /// Checks that the list attribute `name` has one entry per operand dimension.
    pub(super) fn check_len_is_operand_rank(
        &mut self,
        name: &str,
        len: usize,
        rank: usize,
    ) -> bool {
        if len != rank {
            self.error(format!(
                "`{name}` has {len} entries, but the operand has rank {rank}"
            ));
            return false;
        }
        true
    }

    /// Checks that slice size `size` of operand dimension `dim` lies in `[0, extent]`.
    pub(super) fn check_slice_size(&mut self, dim: usize, size: i64, extent: i64) -> bool {
        if size < 0 || (extent != DYNAMIC && size > extent) {
            self.error(format!(
                "slice size {size} of dimension {dim} is outside [0, {}]",
                fmt_dim(extent)
            ));
            return false;
        }
        true
    }

    /// Checks that a result shape equals the one the op's rule computes.
    pub(super) fn check_result_shape(&mut self, idx: usize, actual: &[i64], expected: &[i64]) {
        if !shapes_compatible(actual, expected) {
            self.error(format!(
                "result #{idx} has shape {}, expected {}",
                fmt_shape(actual),
                fmt_shape(expected)
            ));
        }
    }

    /// Checks that two element types are equal.
    pub(super) fn check_same_element(&mut self, what: &str, a: ElementType, b: ElementType) {
        if a != b {
            self.error(format!("{what}: element types {a} and {b} differ"));
        }
    }
}

/// True when two extents can be equal (either is dynamic, or they are equal).
pub(super) fn dim_compatible(a: i64, b: i64) -> bool {
    a == DYNAMIC || b == DYNAMIC || a == b
}

/// True when two shapes have the same rank and compatible extents.
pub(super) fn shapes_compatible(a: &[i64], b: &[i64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(&x, &y)| dim_compatible(x, y))
}

/// True when two types are equal up to dynamic extents.
pub(super) fn types_compatible(a: &Type, b: &Type) -> bool {
    match (a, b) {
        (Type::Tensor(x), Type::Tensor(y)) => {
            x.element_type == y.element_type && shapes_compatible(&x.shape, &y.shape)
        }
        (Type::Tuple(xs), Type::Tuple(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| x == y)
        }
        _ => a == b,
    }
}

/// An extent as a number, or `?` when dynamic.
pub(super) fn fmt_dim(extent: i64) -> String {
    if extent == DYNAMIC {
        "?".to_string()
    } else {
        extent.to_string()
    }
}

/// A shape as `[2, ?, 3]`.
pub(super) fn fmt_shape(shape: &[i64]) -> String {
    let parts: Vec<String> = shape.iter().map(|&d| fmt_dim(d)).collect();
    format!("[{}]", parts.join(", "))
}

/// The real part type of a complex type; other types unchanged.
fn part_type(ty: ElementType) -> ElementType {
    match ty {
        ElementType::C64 => ElementType::F32,
        ElementType::C128 => ElementType::F64,
        other => other,
    }
}

/// True when the op touches an opaque (for example quantized) type; its rules are skipped.
fn has_opaque_type(cx: &OpCx<'_, '_>) -> bool {
    cx.operand_types()
        .into_iter()
        .chain(cx.result_types())
        .any(|ty| matches!(ty, Type::Opaque(_)))
}

/// Runs the rules of one op.
pub(super) fn check_op(cx: &mut OpCx<'_, '_>) {
    if has_opaque_type(cx) {
        return;
    }
    use OpKind as K;
    match &cx.op.kind {
        K::Abs => unary(cx, |e| !e.is_pred(), "integer, float or complex", part_type),
        K::Cbrt
        | K::Cosine
        | K::Sine
        | K::Tan
        | K::Tanh
        | K::Exponential
        | K::ExponentialMinusOne
        | K::Log
        | K::LogPlusOne
        | K::Logistic
        | K::Rsqrt
        | K::Sqrt => unary(
            cx,
            |e| e.is_float() || e.is_complex(),
            "float or complex",
            |e| e,
        ),
        K::Ceil | K::Floor | K::RoundNearestAfz | K::RoundNearestEven => {
            unary(cx, ElementType::is_float, "float", |e| e)
        }
        K::CountLeadingZeros | K::PopulationCount => {
            unary(cx, ElementType::is_int, "integer", |e| e)
        }
        K::Not => unary(
            cx,
            |e| e.is_pred() || e.is_int(),
            "boolean or integer",
            |e| e,
        ),
        K::Negate => unary(cx, |e| !e.is_pred(), "integer, float or complex", |e| e),
        K::Sign => unary(
            cx,
            |e| e.is_signed_int() || e.is_float() || e.is_complex(),
            "signed integer, float or complex",
            |e| e,
        ),
        K::IsFinite => unary(cx, ElementType::is_float, "float", |_| ElementType::Pred),
        K::Real | K::Imag => unary(
            cx,
            |e| e.is_float() || e.is_complex(),
            "float or complex",
            part_type,
        ),
        K::ReducePrecision => {
            unary(cx, ElementType::is_float, "float", |e| e);
            if let Some(bits) = cx.int("exponent_bits") {
                if bits < 1 {
                    cx.error(format!("`exponent_bits` is {bits}, must be at least 1"));
                }
            }
            if let Some(bits) = cx.int("mantissa_bits") {
                if bits < 0 {
                    cx.error(format!("`mantissa_bits` is {bits}, must not be negative"));
                }
            }
        }
        K::Convert => same_shape_unary(cx),
        K::BitcastConvert => bitcast_convert(cx),
        K::ChloErf
        | K::ChloErfInv
        | K::ChloErfc
        | K::ChloLgamma
        | K::ChloDigamma
        | K::ChloBesselI1e
        | K::ChloAcos
        | K::ChloAcosh
        | K::ChloAsin
        | K::ChloAsinh
        | K::ChloAtan
        | K::ChloAtanh
        | K::ChloCosh
        | K::ChloSinh
        | K::ChloTan
        | K::ChloConj
        | K::ChloSquare
        | K::ChloIsInf
        | K::ChloIsNegInf
        | K::ChloIsPosInf => same_shape_unary(cx),
        K::Add | K::Multiply | K::Maximum | K::Minimum => binary(cx, |_| true, "any"),
        K::Subtract | K::Divide | K::Remainder | K::Power => {
            binary(cx, |e| !e.is_pred(), "integer, float or complex")
        }
        K::And | K::Or | K::Xor => binary(cx, |e| e.is_pred() || e.is_int(), "boolean or integer"),
        K::ShiftLeft | K::ShiftRightArithmetic | K::ShiftRightLogical => {
            binary(cx, ElementType::is_int, "integer")
        }
        K::Atan2 => binary(cx, |e| e.is_float() || e.is_complex(), "float or complex"),
        K::Complex => complex(cx),
        K::Compare => compare(cx),
        K::Select => select(cx),
        K::Clamp => clamp(cx),
        K::Constant => constant(cx),
        K::Iota => iota(cx),
        K::BroadcastInDim => broadcast_in_dim(cx),
        K::Broadcast => broadcast(cx),
        K::Reshape => reshape(cx),
        K::Transpose => transpose(cx),
        K::Slice => slice(cx),
        K::DynamicSlice => dynamic_slice(cx),
        K::DynamicUpdateSlice => dynamic_update_slice(cx),
        K::Concatenate => concatenate(cx),
        K::Pad => pad(cx),
        K::Reverse => reverse(cx),
        K::Tuple => tuple(cx),
        K::GetTupleElement => get_tuple_element(cx),
        K::GetDimensionSize => get_dimension_size(cx),
        K::OptimizationBarrier => optimization_barrier(cx),
        K::FuncReturn => func_return(cx),
        K::Call => call(cx),
        K::DotGeneral => compute::dot_general(cx),
        K::Dot => compute::dot(cx),
        K::Reduce => compute::reduce(cx),
        K::ReduceWindow => compute::reduce_window(cx),
        K::Convolution => compute::convolution(cx),
        K::Gather => compute::gather(cx),
        K::Scatter => compute::scatter(cx),
        K::Sort => compute::sort(cx),
        K::While => compute::while_loop(cx),
        K::If => compute::if_op(cx),
        K::Case => compute::case(cx),
        K::Map => compute::map(cx),
        K::SelectAndScatter => compute::select_and_scatter(cx),
        K::Cholesky => compute::cholesky(cx),
        K::TriangularSolve => compute::triangular_solve(cx),
        _ => {}
    }
}

/// An elementwise unary op whose operand element type satisfies `allowed` and whose result
/// element type is `result_of(operand element type)`.
fn unary(
    cx: &mut OpCx<'_, '_>,
    allowed: impl Fn(ElementType) -> bool,
    allowed_name: &str,
    result_of: impl Fn(ElementType) -> ElementType,
) {
    if !cx.expect_arity(1, 1) {
        return;
    }
    let (Some(operand), Some(result)) = (cx.operand_tensor(0), cx.result_tensor(0)) else {
        return;
    };
    if !allowed(operand.element_type) {
        cx.error(format!(
            "operand element type {} is not allowed (expects {allowed_name})",
            operand.element_type
        ));
        return;
    }
    let expected = result_of(operand.element_type);
    if result.element_type != expected {
        cx.error(format!(
            "result element type is {}, expected {expected}",
            result.element_type
        ));
    }
    cx.check_result_shape(0, &result.shape, &operand.shape);
}

/// A unary op whose result has the operand's shape (element types unconstrained).
fn same_shape_unary(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_arity(1, 1) {
        return;
    }
    let (Some(operand), Some(result)) = (cx.operand_tensor(0), cx.result_tensor(0)) else {
        return;
    };
    cx.check_result_shape(0, &result.shape, &operand.shape);
}

fn bitcast_convert(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_arity(1, 1) {
        return;
    }
    let (Some(operand), Some(result)) = (cx.operand_tensor(0), cx.result_tensor(0)) else {
        return;
    };
    let in_bits = operand.element_type.bit_width();
    let out_bits = result.element_type.bit_width();
    let mut expected = operand.shape.clone();
    if in_bits > out_bits {
        expected.push((in_bits / out_bits) as i64);
    } else if in_bits < out_bits {
        match expected.pop() {
            Some(last) if dim_compatible(last, (out_bits / in_bits) as i64) => {}
            _ => {
                cx.error(format!(
                    "converting {} to the wider {} needs a last operand dimension of {}",
                    operand.element_type,
                    result.element_type,
                    out_bits / in_bits
                ));
                return;
            }
        }
    }
    cx.check_result_shape(0, &result.shape, &expected);
}

/// An elementwise binary op over equal types whose element type satisfies `allowed`.
fn binary(cx: &mut OpCx<'_, '_>, allowed: impl Fn(ElementType) -> bool, allowed_name: &str) {
    if !cx.expect_arity(2, 1) {
        return;
    }
    let (Some(lhs), Some(rhs), Some(result)) = (
        cx.operand_tensor(0),
        cx.operand_tensor(1),
        cx.result_tensor(0),
    ) else {
        return;
    };
    if lhs.element_type != rhs.element_type || lhs.element_type != result.element_type {
        cx.error(format!(
            "operands and result must share one element type, found {}, {} and {}",
            lhs.element_type, rhs.element_type, result.element_type
        ));
    } else if !allowed(lhs.element_type) {
        cx.error(format!(
            "element type {} is not allowed (expects {allowed_name})",
            lhs.element_type
        ));
    }
    if !shapes_compatible(&lhs.shape, &rhs.shape) {
        cx.error(format!(
            "operand shapes {} and {} differ",
            fmt_shape(&lhs.shape),
            fmt_shape(&rhs.shape)
        ));
    }
    cx.check_result_shape(0, &result.shape, &lhs.shape);
}

fn complex(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_arity(2, 1) {
        return;
    }
    let (Some(lhs), Some(rhs), Some(result)) = (
        cx.operand_tensor(0),
        cx.operand_tensor(1),
        cx.result_tensor(0),
    ) else {
        return;
    };
    cx.check_same_element("operands", lhs.element_type, rhs.element_type);
    let expected = match lhs.element_type {
        ElementType::F32 => Some(ElementType::C64),
        ElementType::F64 => Some(ElementType::C128),
        _ => None,
    };
    match expected {
        None => cx.error(format!(
            "operand element type {} is not allowed (expects f32 or f64)",
            lhs.element_type
        )),
        Some(e) if e != result.element_type => cx.error(format!(
            "result element type is {}, expected {e}",
            result.element_type
        )),
        Some(_) => {}
    }
    if !shapes_compatible(&lhs.shape, &rhs.shape) {
        cx.error("operand shapes differ");
    }
    cx.check_result_shape(0, &result.shape, &lhs.shape);
}

fn compare(cx: &mut OpCx<'_, '_>) {
    if !matches!(
        cx.op.attr("comparison_direction"),
        Some(Attribute::ComparisonDirection(_))
    ) {
        cx.error("missing or malformed attribute `comparison_direction`");
    }
    if !cx.expect_arity(2, 1) {
        return;
    }
    let (Some(lhs), Some(rhs), Some(result)) = (
        cx.operand_tensor(0),
        cx.operand_tensor(1),
        cx.result_tensor(0),
    ) else {
        return;
    };
    cx.check_same_element("operands", lhs.element_type, rhs.element_type);
    if !shapes_compatible(&lhs.shape, &rhs.shape) {
        cx.error(format!(
            "operand shapes {} and {} differ",
            fmt_shape(&lhs.shape),
            fmt_shape(&rhs.shape)
        ));
    }
    if !result.element_type.is_pred() {
        cx.error(format!(
            "result element type is {}, expected i1",
            result.element_type
        ));
    }
    cx.check_result_shape(0, &result.shape, &lhs.shape);
}

fn select(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_arity(3, 1) {
        return;
    }
    let (Some(pred), Some(on_true), Some(on_false), Some(result)) = (
        cx.operand_tensor(0),
        cx.operand_tensor(1),
        cx.operand_tensor(2),
        cx.result_tensor(0),
    ) else {
        return;
    };
    if !pred.element_type.is_pred() {
        cx.error(format!(
            "predicate element type is {}, expected i1",
            pred.element_type
        ));
    }
    if pred.rank() != 0 && !shapes_compatible(&pred.shape, &on_true.shape) {
        cx.error(format!(
            "predicate shape {} is neither scalar nor the operands' shape {}",
            fmt_shape(&pred.shape),
            fmt_shape(&on_true.shape)
        ));
    }
    if on_true.element_type != on_false.element_type
        || !shapes_compatible(&on_true.shape, &on_false.shape)
    {
        cx.error(format!(
            "on_true ({on_true}) and on_false ({on_false}) must have the same type"
        ));
    }
    cx.check_same_element("result", result.element_type, on_true.element_type);
    cx.check_result_shape(0, &result.shape, &on_true.shape);
}

fn clamp(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_arity(3, 1) {
        return;
    }
    let (Some(min), Some(operand), Some(max), Some(result)) = (
        cx.operand_tensor(0),
        cx.operand_tensor(1),
        cx.operand_tensor(2),
        cx.result_tensor(0),
    ) else {
        return;
    };
    for (what, bound) in [("min", min), ("max", max)] {
        if bound.rank() != 0 && !shapes_compatible(&bound.shape, &operand.shape) {
            cx.error(format!(
                "{what} shape {} is neither scalar nor the operand's shape {}",
                fmt_shape(&bound.shape),
                fmt_shape(&operand.shape)
            ));
        }
        cx.check_same_element(what, bound.element_type, operand.element_type);
    }
    cx.check_same_element("result", result.element_type, operand.element_type);
    cx.check_result_shape(0, &result.shape, &operand.shape);
}

fn constant(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_arity(0, 1) {
        return;
    }
    let Some(result) = cx.result_tensor(0) else {
        return;
    };
    let value = match cx.op.attr("value") {
        Some(Attribute::Elements(value)) => value,
        Some(_) => {
            cx.error("attribute `value` must be dense elements");
            return;
        }
        None => {
            cx.error("missing attribute `value`");
            return;
        }
    };
    if value.ty != *result {
        cx.error(format!(
            "`value` has type {}, but the result has type {result}",
            value.ty
        ));
        return;
    }
    let count = if value.splat {
        Some(1)
    } else {
        value.ty.num_elements()
    };
    let expected_bytes = count.and_then(|n| n.checked_mul(value.ty.element_type.byte_size()));
    if let Some(expected) = expected_bytes {
        if value.data.len() != expected {
            cx.error(format!(
                "`value` holds {} bytes, expected {expected}",
                value.data.len()
            ));
        }
    }
}

fn iota(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_arity(0, 1) {
        return;
    }
    let Some(result) = cx.result_tensor(0) else {
        return;
    };
    if let Some(dim) = cx.int("iota_dimension") {
        if dim < 0 || dim as u64 >= result.rank() as u64 {
            cx.error(format!(
                "`iota_dimension` {dim} is out of range for result rank {}",
                result.rank()
            ));
        }
    }
}

fn broadcast_in_dim(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_arity(1, 1) {
        return;
    }
    let (Some(operand), Some(result)) = (cx.operand_tensor(0), cx.result_tensor(0)) else {
        return;
    };
    cx.check_same_element("result", result.element_type, operand.element_type);
    let Some(dims) = cx.i64s("broadcast_dimensions") else {
        return;
    };
    if !cx.check_len_is_operand_rank("broadcast_dimensions", dims.len(), operand.rank()) {
        return;
    }
    if !cx.check_dims("broadcast_dimensions", &dims, result.rank()) {
        return;
    }
    for (operand_dim, &result_dim) in dims.iter().enumerate() {
        let from = operand.shape[operand_dim];
        let to = result.shape[result_dim as usize];
        if from != 1 && !dim_compatible(from, to) {
            cx.error(format!(
                "operand dimension {operand_dim} has extent {from}, which cannot broadcast to result dimension {result_dim} of extent {to}"
            ));
        }
    }
}

fn broadcast(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_arity(1, 1) {
        return;
    }
    let (Some(operand), Some(result)) = (cx.operand_tensor(0), cx.result_tensor(0)) else {
        return;
    };
    cx.check_same_element("result", result.element_type, operand.element_type);
    let Some(mut expected) = cx.i64s("broadcast_sizes") else {
        return;
    };
    expected.extend_from_slice(&operand.shape);
    cx.check_result_shape(0, &result.shape, &expected);
}

fn reshape(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_arity(1, 1) {
        return;
    }
    let (Some(operand), Some(result)) = (cx.operand_tensor(0), cx.result_tensor(0)) else {
        return;
    };
    cx.check_same_element("result", result.element_type, operand.element_type);
    if let (Some(a), Some(b)) = (operand.num_elements(), result.num_elements()) {
        if a != b {
            cx.error(format!("operand has {a} elements but the result has {b}"));
        }
    }
}

fn transpose(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_arity(1, 1) {
        return;
    }
    let (Some(operand), Some(result)) = (cx.operand_tensor(0), cx.result_tensor(0)) else {
        return;
    };
    cx.check_same_element("result", result.element_type, operand.element_type);
    let Some(perm) = cx.i64s("permutation") else {
        return;
    };
    if !cx.check_len_is_operand_rank("permutation", perm.len(), operand.rank()) {
        return;
    }
    if !cx.check_dims("permutation", &perm, operand.rank()) {
        return;
    }
    let expected: Vec<i64> = perm.iter().map(|&p| operand.shape[p as usize]).collect();
    cx.check_result_shape(0, &result.shape, &expected);
}

fn slice(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_arity(1, 1) {
        return;
    }
    let (Some(operand), Some(result)) = (cx.operand_tensor(0), cx.result_tensor(0)) else {
        return;
    };
    cx.check_same_element("result", result.element_type, operand.element_type);
    let (Some(starts), Some(limits), Some(strides)) = (
        cx.i64s("start_indices"),
        cx.i64s("limit_indices"),
        cx.i64s("strides"),
    ) else {
        return;
    };
    let rank = operand.rank();
    if starts.len() != rank || limits.len() != rank || strides.len() != rank {
        cx.error(format!(
            "`start_indices`, `limit_indices` and `strides` need {rank} entries each, found {}, {} and {}",
            starts.len(),
            limits.len(),
            strides.len()
        ));
        return;
    }
    let mut expected = Vec::with_capacity(rank);
    for dim in 0..rank {
        let (start, limit, stride, extent) =
            (starts[dim], limits[dim], strides[dim], operand.shape[dim]);
        if stride <= 0 {
            cx.error(format!(
                "stride {stride} of dimension {dim} must be positive"
            ));
            return;
        }
        let bounds_ok = 0 <= start && start <= limit && (extent == DYNAMIC || limit <= extent);
        if !bounds_ok {
            cx.error(format!(
                "dimension {dim}: need 0 <= start ({start}) <= limit ({limit}) <= extent ({})",
                fmt_dim(extent)
            ));
            return;
        }
        let count =
            (i128::from(limit) - i128::from(start) + i128::from(stride) - 1) / i128::from(stride);
        expected.push(i64::try_from(count).unwrap_or(i64::MAX));
    }
    cx.check_result_shape(0, &result.shape, &expected);
}

/// Checks the scalar integer start indices of `dynamic_slice` / `dynamic_update_slice`.
fn check_start_indices(cx: &mut OpCx<'_, '_>, first: usize, rank: usize) -> bool {
    let n_indices = cx.op.operands.len().saturating_sub(first);
    if n_indices != rank {
        cx.error(format!(
            "expects {rank} start indices (one per operand dimension), found {n_indices}"
        ));
        return false;
    }
    let mut index_type = None;
    for idx in first..cx.op.operands.len() {
        let Some(index) = cx.operand_tensor(idx) else {
            return false;
        };
        if index.rank() != 0 || !index.element_type.is_int() {
            cx.error(format!(
                "start index operand #{idx} must be a scalar integer tensor, found {index}"
            ));
            return false;
        }
        match index_type {
            None => index_type = Some(index.element_type),
            Some(e) if e != index.element_type => {
                cx.error("start indices must all have the same type");
                return false;
            }
            Some(_) => {}
        }
    }
    true
}

fn dynamic_slice(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_results(1) || cx.op.operands.is_empty() {
        if cx.op.operands.is_empty() {
            cx.error("expects an operand and start indices");
        }
        return;
    }
    let (Some(operand), Some(result)) = (cx.operand_tensor(0), cx.result_tensor(0)) else {
        return;
    };
    cx.check_same_element("result", result.element_type, operand.element_type);
    if !check_start_indices(cx, 1, operand.rank()) {
        return;
    }
    let Some(sizes) = cx.i64s("slice_sizes") else {
        return;
    };
    if !cx.check_len_is_operand_rank("slice_sizes", sizes.len(), operand.rank()) {
        return;
    }
    for (dim, (&size, &extent)) in sizes.iter().zip(&operand.shape).enumerate() {
        if !cx.check_slice_size(dim, size, extent) {
            return;
        }
    }
    cx.check_result_shape(0, &result.shape, &sizes);
}

fn dynamic_update_slice(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_results(1) || cx.op.operands.len() < 2 {
        if cx.op.operands.len() < 2 {
            cx.error("expects an operand, an update and start indices");
        }
        return;
    }
    let (Some(operand), Some(update), Some(result)) = (
        cx.operand_tensor(0),
        cx.operand_tensor(1),
        cx.result_tensor(0),
    ) else {
        return;
    };
    cx.check_same_element("update", update.element_type, operand.element_type);
    cx.check_same_element("result", result.element_type, operand.element_type);
    cx.check_result_shape(0, &result.shape, &operand.shape);
    if update.rank() != operand.rank() {
        cx.error(format!(
            "update has rank {}, but the operand has rank {}",
            update.rank(),
            operand.rank()
        ));
        return;
    }
    for (dim, (&u, &o)) in update.shape.iter().zip(&operand.shape).enumerate() {
        if u != DYNAMIC && o != DYNAMIC && u > o {
            cx.error(format!(
                "update extent {u} of dimension {dim} exceeds the operand extent {o}"
            ));
        }
    }
    check_start_indices(cx, 2, operand.rank());
}

fn concatenate(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_results(1) {
        return;
    }
    if cx.op.operands.is_empty() {
        cx.error("expects at least one input");
        return;
    }
    let Some(result) = cx.result_tensor(0) else {
        return;
    };
    let mut inputs = Vec::new();
    for idx in 0..cx.op.operands.len() {
        match cx.operand_tensor(idx) {
            Some(t) => inputs.push(t),
            None => return,
        }
    }
    let Some(dim) = cx.int("dimension") else {
        return;
    };
    let rank = inputs[0].rank();
    if dim < 0 || dim as u64 >= rank as u64 {
        cx.error(format!("`dimension` {dim} is out of range for rank {rank}"));
        return;
    }
    let dim = dim as usize;
    let mut expected = inputs[0].shape.clone();
    expected[dim] = 0;
    for (idx, input) in inputs.iter().enumerate() {
        cx.check_same_element("inputs", input.element_type, inputs[0].element_type);
        if input.rank() != rank {
            cx.error(format!(
                "input #{idx} has rank {}, but input #0 has rank {rank}",
                input.rank()
            ));
            return;
        }
        for (d, (&extent, &first)) in input.shape.iter().zip(&inputs[0].shape).enumerate() {
            if d == dim {
                expected[d] = if extent == DYNAMIC || expected[d] == DYNAMIC {
                    DYNAMIC
                } else {
                    expected[d].saturating_add(extent)
                };
            } else if !dim_compatible(extent, first) {
                cx.error(format!(
                    "input #{idx} has extent {} in dimension {d}, but input #0 has {}",
                    fmt_dim(extent),
                    fmt_dim(first)
                ));
                return;
            }
        }
    }
    cx.check_same_element("result", result.element_type, inputs[0].element_type);
    cx.check_result_shape(0, &result.shape, &expected);
}

fn pad(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_arity(2, 1) {
        return;
    }
    let (Some(operand), Some(padding_value), Some(result)) = (
        cx.operand_tensor(0),
        cx.operand_tensor(1),
        cx.result_tensor(0),
    ) else {
        return;
    };
    if padding_value.rank() != 0 {
        cx.error(format!(
            "padding value must be a scalar, found {padding_value}"
        ));
    }
    cx.check_same_element(
        "padding value",
        padding_value.element_type,
        operand.element_type,
    );
    cx.check_same_element("result", result.element_type, operand.element_type);
    let (Some(low), Some(high), Some(interior)) = (
        cx.i64s("edge_padding_low"),
        cx.i64s("edge_padding_high"),
        cx.i64s("interior_padding"),
    ) else {
        return;
    };
    let rank = operand.rank();
    if low.len() != rank || high.len() != rank || interior.len() != rank {
        cx.error(format!(
            "`edge_padding_low`, `edge_padding_high` and `interior_padding` need {rank} entries each"
        ));
        return;
    }
    let mut expected = Vec::with_capacity(rank);
    for dim in 0..rank {
        if interior[dim] < 0 {
            cx.error(format!(
                "interior padding {} of dimension {dim} is negative",
                interior[dim]
            ));
            return;
        }
        let extent = operand.shape[dim];
        if extent == DYNAMIC {
            expected.push(DYNAMIC);
            continue;
        }
        let size = i128::from(extent)
            + i128::from(low[dim])
            + i128::from(high[dim])
            + i128::from((extent - 1).max(0)) * i128::from(interior[dim]);
        if size < 0 {
            cx.error(format!("padding makes dimension {dim} negative ({size})"));
            return;
        }
        expected.push(i64::try_from(size).unwrap_or(i64::MAX));
    }
    cx.check_result_shape(0, &result.shape, &expected);
}

fn reverse(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_arity(1, 1) {
        return;
    }
    let (Some(operand), Some(result)) = (cx.operand_tensor(0), cx.result_tensor(0)) else {
        return;
    };
    cx.check_same_element("result", result.element_type, operand.element_type);
    cx.check_result_shape(0, &result.shape, &operand.shape);
    if let Some(dims) = cx.i64s("dimensions") {
        cx.check_dims("dimensions", &dims, operand.rank());
    }
}

fn tuple(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_results(1) {
        return;
    }
    let operands: Vec<Type> = cx.operand_types().into_iter().cloned().collect();
    let expected = Type::Tuple(operands);
    if let Some(result) = cx.result_types().first() {
        if **result != expected {
            cx.error(format!("result has type {result}, expected {expected}"));
        }
    }
}

fn get_tuple_element(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_arity(1, 1) {
        return;
    }
    let (Some(&operand), Some(&result)) = (cx.operand_types().first(), cx.result_types().first())
    else {
        return;
    };
    let Type::Tuple(elements) = operand else {
        cx.error(format!("operand must be a tuple, found {operand}"));
        return;
    };
    let Some(index) = cx.int("index") else {
        return;
    };
    match usize::try_from(index).ok().and_then(|i| elements.get(i)) {
        None => cx.error(format!(
            "`index` {index} is out of range for a tuple of {} elements",
            elements.len()
        )),
        Some(element) if element != result => cx.error(format!(
            "result has type {result}, but tuple element {index} has type {element}"
        )),
        Some(_) => {}
    }
}

fn get_dimension_size(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_arity(1, 1) {
        return;
    }
    let (Some(operand), Some(result)) = (cx.operand_tensor(0), cx.result_tensor(0)) else {
        return;
    };
    if let Some(dim) = cx.int("dimension") {
        if dim < 0 || dim as u64 >= operand.rank() as u64 {
            cx.error(format!(
                "`dimension` {dim} is out of range for rank {}",
                operand.rank()
            ));
        }
    }
    if *result != TensorType::scalar(ElementType::S32) {
        cx.error(format!("result has type {result}, expected tensor<i32>"));
    }
}

fn optimization_barrier(cx: &mut OpCx<'_, '_>) {
    let operands = cx.operand_types();
    let results = cx.result_types();
    if operands.len() != results.len()
        || operands
            .iter()
            .zip(&results)
            .any(|(a, b)| !types_compatible(a, b))
    {
        cx.error("result types must equal operand types");
    }
}

fn func_return(cx: &mut OpCx<'_, '_>) {
    let actual = cx.operand_types();
    let expected = &cx.function.ty.results;
    if actual.len() != expected.len() {
        let message = format!(
            "returns {} values, but @{} has {} results",
            actual.len(),
            cx.function.name,
            expected.len()
        );
        cx.error(message);
        return;
    }
    for (idx, (a, e)) in actual.iter().zip(expected).enumerate() {
        if *a != e {
            cx.error(format!(
                "returns {a} as value #{idx}, but the signature says {e}"
            ));
        }
    }
}

fn call(cx: &mut OpCx<'_, '_>) {
    let callee = match cx.op.attr("callee") {
        Some(Attribute::SymbolRef(s) | Attribute::String(s)) => s.trim_start_matches('@'),
        Some(_) => {
            cx.error("attribute `callee` must be a symbol");
            return;
        }
        None => {
            cx.error("missing attribute `callee`");
            return;
        }
    };
    let Some(function) = cx.module.function(callee) else {
        cx.error(format!("calls @{callee}, which does not exist"));
        return;
    };
    let operands = cx.operand_types();
    let results = cx.result_types();
    for (what, actual, expected) in [
        ("arguments", operands, &function.ty.inputs),
        ("results", results, &function.ty.results),
    ] {
        if actual.len() != expected.len() || actual.iter().zip(expected).any(|(a, e)| *a != e) {
            let actual: Vec<String> = actual.iter().map(|t| t.to_string()).collect();
            let expected: Vec<String> = expected.iter().map(|t| t.to_string()).collect();
            cx.error(format!(
                "{what} ({}) do not match the signature of @{callee} ({})",
                actual.join(", "),
                expected.join(", ")
            ));
        }
    }
}
