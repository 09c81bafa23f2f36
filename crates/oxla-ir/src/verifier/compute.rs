//! Per-op rules for compute and control-flow ops, following the StableHLO spec's constraints.
//!
//! - `dot_general`: batching and contracting dimensions unique, in range, of equal count and
//!   extent on both sides, and disjoint; result shape = batch, then lhs free, then rhs free
//!   dimensions. `dot`: ranks 1 or 2, contracted extents equal, result shape.
//! - `reduce`: as many inputs as init values and results, inputs of one shape, scalar init
//!   values, unique in-range `dimensions`; the body takes `2N` scalars (accumulators then
//!   elements, of types the init values promote to) and returns `N` of the accumulator types; result
//!   shapes are the input shape without the reduced dimensions and result element types
//!   those of the body.
//! - `reduce_window`: as `reduce` for counts and the body; `window_dimensions`,
//!   `window_strides`, `base_dilations`, `window_dilations` (one positive entry per
//!   dimension) and `padding` (`[rank, 2]`); result shapes as the spec computes them.
//! - `convolution`: operand ranks, dimension numbers forming permutations of each tensor's
//!   dimensions, window attributes of one entry per spatial dimension, positive group counts
//!   dividing the feature and batch extents; result shape as the spec computes it.
//! - `gather`: `index_vector_dim`, `offset_dims`, `collapsed_slice_dims`,
//!   `operand_batching_dims`, `start_indices_batching_dims`, `start_index_map` and
//!   `slice_sizes` in range and consistent; result shape as the spec computes it.
//! - `scatter`: counts of inputs, updates and results, dimension numbers in range, the
//!   operand rank and update rank they imply, and the update computation signature.
//! - `sort`: inputs of one shape, results = inputs, `dimension` in range, comparator of
//!   `2N` scalars returning a scalar `i1`.
//! - `while`: results = operands; `cond` takes the operand types and returns a scalar `i1`;
//!   `body` takes and returns the operand types. `if`: scalar `i1` predicate, two regions
//!   without arguments returning the result types. `case`: scalar `i32` index, at least one
//!   branch, each without arguments and returning the result types.
//! - `map`, `select_and_scatter`, `cholesky`, `triangular_solve`: basic shape rules.

use super::rules::{dim_compatible, fmt_shape, shapes_compatible, OpCx};
use crate::types::{ElementType, TensorType, Type, DYNAMIC};

/// Every operand as a tensor, or `None` after reporting the first that is not one.
fn operand_tensors<'a>(cx: &mut OpCx<'a, '_>) -> Option<Vec<&'a TensorType>> {
    (0..cx.op.operands.len())
        .map(|idx| cx.operand_tensor(idx))
        .collect()
}

/// Every result as a tensor, or `None` after reporting the first that is not one.
fn result_tensors<'a>(cx: &mut OpCx<'a, '_>) -> Option<Vec<&'a TensorType>> {
    (0..cx.op.results.len())
        .map(|idx| cx.result_tensor(idx))
        .collect()
}

/// True when `dims` is a permutation of `0..rank` (reports an error otherwise).
fn check_permutation(cx: &mut OpCx<'_, '_>, what: &str, dims: &[i64], rank: usize) -> bool {
    if dims.len() != rank {
        cx.error(format!(
            "{what} name {} dimensions, but the tensor has rank {rank}",
            dims.len()
        ));
        return false;
    }
    cx.check_dims(what, dims, rank)
}

fn extent_of(shape: &[i64], dim: i64) -> i64 {
    shape[dim as usize]
}

/// `dot_general`.
pub(super) fn dot_general(cx: &mut OpCx<'_, '_>) {
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
    let lhs_batch = cx.opt_i64s("lhs_batching_dimensions").unwrap_or_default();
    let rhs_batch = cx.opt_i64s("rhs_batching_dimensions").unwrap_or_default();
    let lhs_contract = cx
        .opt_i64s("lhs_contracting_dimensions")
        .unwrap_or_default();
    let rhs_contract = cx
        .opt_i64s("rhs_contracting_dimensions")
        .unwrap_or_default();
    if lhs_batch.len() != rhs_batch.len() {
        cx.error(format!(
            "lhs has {} batching dimensions but rhs has {}",
            lhs_batch.len(),
            rhs_batch.len()
        ));
        return;
    }
    if lhs_contract.len() != rhs_contract.len() {
        cx.error(format!(
            "lhs has {} contracting dimensions but rhs has {}",
            lhs_contract.len(),
            rhs_contract.len()
        ));
        return;
    }
    let lhs_all: Vec<i64> = lhs_batch.iter().chain(&lhs_contract).copied().collect();
    let rhs_all: Vec<i64> = rhs_batch.iter().chain(&rhs_contract).copied().collect();
    let lhs_ok = cx.check_dims(
        "lhs batching and contracting dimensions",
        &lhs_all,
        lhs.rank(),
    );
    let rhs_ok = cx.check_dims(
        "rhs batching and contracting dimensions",
        &rhs_all,
        rhs.rank(),
    );
    if !lhs_ok || !rhs_ok {
        return;
    }
    for (kind, lhs_dims, rhs_dims) in [
        ("batching", &lhs_batch, &rhs_batch),
        ("contracting", &lhs_contract, &rhs_contract),
    ] {
        for (&l, &r) in lhs_dims.iter().zip(rhs_dims.iter()) {
            let (le, re) = (extent_of(&lhs.shape, l), extent_of(&rhs.shape, r));
            if !dim_compatible(le, re) {
                cx.error(format!(
                    "{kind} dimension {l} of lhs has extent {le} but dimension {r} of rhs has {re}"
                ));
                return;
            }
        }
    }
    let mut expected: Vec<i64> = lhs_batch
        .iter()
        .map(|&d| extent_of(&lhs.shape, d))
        .collect();
    for (tensor, used) in [(lhs, &lhs_all), (rhs, &rhs_all)] {
        for (d, &extent) in tensor.shape.iter().enumerate() {
            if !used.contains(&(d as i64)) {
                expected.push(extent);
            }
        }
    }
    cx.check_result_shape(0, &result.shape, &expected);
}

/// `dot` (the legacy form of `dot_general`).
pub(super) fn dot(cx: &mut OpCx<'_, '_>) {
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
    if !(1..=2).contains(&lhs.rank()) || !(1..=2).contains(&rhs.rank()) {
        cx.error(format!(
            "operands must have rank 1 or 2, found {} and {}",
            lhs.rank(),
            rhs.rank()
        ));
        return;
    }
    let lhs_k = lhs.shape[lhs.rank() - 1];
    let rhs_k = rhs.shape[0];
    if !dim_compatible(lhs_k, rhs_k) {
        cx.error(format!(
            "contracted extents differ: lhs {lhs_k}, rhs {rhs_k}"
        ));
        return;
    }
    let mut expected = Vec::new();
    if lhs.rank() == 2 {
        expected.push(lhs.shape[0]);
    }
    if rhs.rank() == 2 {
        expected.push(rhs.shape[1]);
    }
    cx.check_result_shape(0, &result.shape, &expected);
}

/// Whether `from` promotes to `to` (the spec's `is_promotable`): equal, or of one class
/// (boolean, signed, unsigned, float, complex) and no wider.
fn promotable(from: ElementType, to: ElementType) -> bool {
    let class = |e: ElementType| {
        (
            e.is_pred(),
            e.is_signed_int(),
            e.is_unsigned_int(),
            e.is_float(),
            e.is_complex(),
        )
    };
    from == to || (class(from) == class(to) && from.bit_width() <= to.bit_width())
}

/// Checks a reduction body (of `reduce`, `reduce_window`, `scatter`, `select_and_scatter`'s
/// scatter region): `2N` scalar arguments of the accumulator types, to which the given
/// element types promote, and `N` returned values of the accumulator types. Returns the
/// body's accumulator element types.
fn check_reducer(
    cx: &mut OpCx<'_, '_>,
    region_idx: usize,
    what: &str,
    inits: &[&TensorType],
) -> Option<Vec<ElementType>> {
    let block = cx.region_block(region_idx, what)?;
    let args = cx.block_arg_types(block);
    let n = inits.len();
    if args.len() != 2 * n {
        cx.error(format!(
            "the {what} region takes {} arguments, expected {}",
            args.len(),
            2 * n
        ));
        return None;
    }
    let mut elements = Vec::with_capacity(n);
    for (idx, arg) in args.iter().enumerate() {
        match arg {
            Type::Tensor(t) if t.rank() == 0 => {}
            other => {
                cx.error(format!(
                    "argument #{idx} of the {what} region must be a scalar tensor, found {other}"
                ));
                return None;
            }
        }
    }
    for idx in 0..n {
        if args[idx] != args[idx + n] {
            cx.error(format!(
                "arguments #{idx} and #{} of the {what} region must have the same type",
                idx + n
            ));
            return None;
        }
        let Type::Tensor(acc) = args[idx] else {
            return None;
        };
        if !promotable(inits[idx].element_type, acc.element_type) {
            cx.error(format!(
                "argument #{idx} of the {what} region has element type {}, to which {} does not promote",
                acc.element_type, inits[idx].element_type
            ));
        }
        elements.push(acc.element_type);
    }
    let expected: Vec<&Type> = args[..n].to_vec();
    cx.check_region_returns(block, what, &expected);
    Some(elements)
}

/// Splits `reduce`/`reduce_window` operands into inputs and init values.
fn split_inputs<'a>(
    cx: &mut OpCx<'a, '_>,
) -> Option<(
    Vec<&'a TensorType>,
    Vec<&'a TensorType>,
    Vec<&'a TensorType>,
)> {
    let operands = operand_tensors(cx)?;
    let results = result_tensors(cx)?;
    let n = operands.len() / 2;
    if operands.is_empty() || operands.len() % 2 != 0 || results.len() != n {
        cx.error(format!(
            "expects N inputs, N init values and N results with N >= 1, found {} operands and {} results",
            operands.len(),
            results.len()
        ));
        return None;
    }
    let inputs = operands[..n].to_vec();
    let inits = operands[n..].to_vec();
    for (idx, input) in inputs.iter().enumerate() {
        if !shapes_compatible(&input.shape, &inputs[0].shape) {
            cx.error(format!(
                "input #{idx} has shape {}, but input #0 has {}",
                fmt_shape(&input.shape),
                fmt_shape(&inputs[0].shape)
            ));
            return None;
        }
    }
    for (idx, init) in inits.iter().enumerate() {
        if init.rank() != 0 {
            cx.error(format!("init value #{idx} must be a scalar, found {init}"));
            return None;
        }
    }
    Some((inputs, inits, results))
}

/// `reduce`.
pub(super) fn reduce(cx: &mut OpCx<'_, '_>) {
    let Some((inputs, inits, results)) = split_inputs(cx) else {
        return;
    };
    let elements = check_reducer(cx, 0, "body", &inits);
    let Some(dims) = cx.i64s("dimensions") else {
        return;
    };
    let rank = inputs[0].rank();
    if !cx.check_dims("dimensions", &dims, rank) {
        return;
    }
    let expected: Vec<i64> = (0..rank)
        .filter(|d| !dims.contains(&(*d as i64)))
        .map(|d| inputs[0].shape[d])
        .collect();
    for (idx, result) in results.iter().enumerate() {
        cx.check_result_shape(idx, &result.shape, &expected);
        if let Some(e) = elements.as_ref().and_then(|e| e.get(idx)) {
            cx.check_same_element(&format!("result #{idx}"), result.element_type, *e);
        }
    }
}

/// A window attribute with one positive entry per dimension (default all ones).
fn window_attr(cx: &mut OpCx<'_, '_>, name: &str, rank: usize, required: bool) -> Option<Vec<i64>> {
    let values = if required {
        cx.i64s(name)?
    } else {
        cx.opt_i64s(name).unwrap_or_else(|| vec![1; rank])
    };
    if values.len() != rank {
        cx.error(format!(
            "`{name}` has {} entries, expected {rank}",
            values.len()
        ));
        return None;
    }
    if let Some(v) = values.iter().find(|&&v| v <= 0) {
        cx.error(format!("`{name}` entry {v} must be positive"));
        return None;
    }
    Some(values)
}

/// `padding` as `rank` (low, high) pairs (default zeros).
fn padding_attr(cx: &mut OpCx<'_, '_>, rank: usize) -> Option<Vec<(i64, i64)>> {
    let flat = cx.opt_i64s("padding").unwrap_or_else(|| vec![0; 2 * rank]);
    if flat.len() != 2 * rank {
        cx.error(format!(
            "`padding` has {} entries, expected {rank} (low, high) pairs",
            flat.len()
        ));
        return None;
    }
    Some(flat.chunks_exact(2).map(|p| (p[0], p[1])).collect())
}

/// The extent of a windowed dimension (`reduce_window` and `convolution`), or `None` when
/// dynamic. Negative results are reported as an error by the caller through `Err`.
fn window_output_extent(
    extent: i64,
    base_dilation: i64,
    (low, high): (i64, i64),
    window: i64,
    window_dilation: i64,
    stride: i64,
) -> Option<Result<i64, i128>> {
    if extent == DYNAMIC {
        return None;
    }
    let extent = i128::from(extent);
    let dilated = if extent == 0 {
        0
    } else {
        (extent - 1) * i128::from(base_dilation) + 1
    };
    let padded = dilated + i128::from(low) + i128::from(high);
    let dilated_window = (i128::from(window) - 1) * i128::from(window_dilation) + 1;
    if padded < 0 {
        return Some(Err(padded));
    }
    let out = if padded < dilated_window {
        0
    } else {
        (padded - dilated_window) / i128::from(stride) + 1
    };
    Some(Ok(i64::try_from(out).unwrap_or(i64::MAX)))
}

/// `reduce_window`.
pub(super) fn reduce_window(cx: &mut OpCx<'_, '_>) {
    let Some((inputs, inits, results)) = split_inputs(cx) else {
        return;
    };
    let elements = check_reducer(cx, 0, "body", &inits);
    let rank = inputs[0].rank();
    let (Some(window), Some(strides), Some(base), Some(window_dil), Some(padding)) = (
        window_attr(cx, "window_dimensions", rank, true),
        window_attr(cx, "window_strides", rank, false),
        window_attr(cx, "base_dilations", rank, false),
        window_attr(cx, "window_dilations", rank, false),
        padding_attr(cx, rank),
    ) else {
        return;
    };
    let mut expected = Vec::with_capacity(rank);
    for d in 0..rank {
        match window_output_extent(
            inputs[0].shape[d],
            base[d],
            padding[d],
            window[d],
            window_dil[d],
            strides[d],
        ) {
            None => expected.push(DYNAMIC),
            Some(Ok(e)) => expected.push(e),
            Some(Err(padded)) => {
                cx.error(format!("padding makes dimension {d} negative ({padded})"));
                return;
            }
        }
    }
    for (idx, result) in results.iter().enumerate() {
        cx.check_result_shape(idx, &result.shape, &expected);
        if let Some(e) = elements.as_ref().and_then(|e| e.get(idx)) {
            cx.check_same_element(&format!("result #{idx}"), result.element_type, *e);
        }
    }
}

/// `convolution`.
pub(super) fn convolution(cx: &mut OpCx<'_, '_>) {
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
    let rank = lhs.rank();
    if rank < 2 || rhs.rank() != rank || result.rank() != rank {
        cx.error(format!(
            "lhs, rhs and result must share one rank of at least 2, found {}, {} and {}",
            rank,
            rhs.rank(),
            result.rank()
        ));
        return;
    }
    let n_spatial = rank - 2;
    let names = [
        (
            "input",
            [
                "input_batch_dimension",
                "input_feature_dimension",
                "input_spatial_dimensions",
            ],
        ),
        (
            "kernel",
            [
                "kernel_input_feature_dimension",
                "kernel_output_feature_dimension",
                "kernel_spatial_dimensions",
            ],
        ),
        (
            "output",
            [
                "output_batch_dimension",
                "output_feature_dimension",
                "output_spatial_dimensions",
            ],
        ),
    ];
    let mut numbers = Vec::with_capacity(3);
    for (what, [first, second, spatial]) in names {
        let (Some(a), Some(b), Some(s)) = (cx.int(first), cx.int(second), cx.i64s(spatial)) else {
            return;
        };
        let mut all = vec![a, b];
        all.extend_from_slice(&s);
        if !check_permutation(cx, &format!("the {what} dimension numbers"), &all, rank) {
            return;
        }
        numbers.push((a, b, s));
    }
    let (in_batch, in_feature, in_spatial) = &numbers[0];
    let (k_in_feature, k_out_feature, k_spatial) = &numbers[1];
    let (out_batch, out_feature, out_spatial) = &numbers[2];
    let (Some(strides), Some(lhs_dil), Some(rhs_dil), Some(padding)) = (
        window_attr(cx, "window_strides", n_spatial, false),
        window_attr(cx, "lhs_dilation", n_spatial, false),
        window_attr(cx, "rhs_dilation", n_spatial, false),
        padding_attr(cx, n_spatial),
    ) else {
        return;
    };
    let feature_groups = cx.opt_int("feature_group_count").unwrap_or(1);
    let batch_groups = cx.opt_int("batch_group_count").unwrap_or(1);
    if feature_groups <= 0 || batch_groups <= 0 {
        cx.error(format!(
            "`feature_group_count` ({feature_groups}) and `batch_group_count` ({batch_groups}) must be positive"
        ));
        return;
    }
    if feature_groups != 1 && batch_groups != 1 {
        cx.error("`feature_group_count` and `batch_group_count` cannot both exceed 1");
        return;
    }
    let input_batch = extent_of(&lhs.shape, *in_batch);
    let input_feature = extent_of(&lhs.shape, *in_feature);
    let kernel_in = extent_of(&rhs.shape, *k_in_feature);
    let kernel_out = extent_of(&rhs.shape, *k_out_feature);
    let divides = |extent: i64, by: i64| extent == DYNAMIC || extent % by == 0;
    if !divides(input_feature, feature_groups) {
        cx.error(format!(
            "input feature extent {input_feature} is not a multiple of `feature_group_count` {feature_groups}"
        ));
    }
    if input_feature != DYNAMIC
        && kernel_in != DYNAMIC
        && input_feature != kernel_in.saturating_mul(feature_groups)
    {
        cx.error(format!(
            "input feature extent {input_feature} must equal the kernel input feature extent {kernel_in} times `feature_group_count` {feature_groups}"
        ));
    }
    if !divides(input_batch, batch_groups) {
        cx.error(format!(
            "input batch extent {input_batch} is not a multiple of `batch_group_count` {batch_groups}"
        ));
    }
    if !divides(kernel_out, feature_groups) || !divides(kernel_out, batch_groups) {
        cx.error(format!(
            "kernel output feature extent {kernel_out} is not a multiple of the group counts"
        ));
    }
    let mut expected = vec![0; rank];
    expected[*out_batch as usize] = if input_batch == DYNAMIC {
        DYNAMIC
    } else {
        input_batch / batch_groups
    };
    expected[*out_feature as usize] = kernel_out;
    for d in 0..n_spatial {
        let window = extent_of(&rhs.shape, k_spatial[d]);
        let extent = match window_output_extent(
            extent_of(&lhs.shape, in_spatial[d]),
            lhs_dil[d],
            padding[d],
            window,
            rhs_dil[d],
            strides[d],
        ) {
            _ if window == DYNAMIC => DYNAMIC,
            None => DYNAMIC,
            Some(Ok(e)) => e,
            Some(Err(padded)) => {
                cx.error(format!(
                    "padding makes spatial dimension {d} negative ({padded})"
                ));
                return;
            }
        };
        expected[out_spatial[d] as usize] = extent;
    }
    cx.check_result_shape(0, &result.shape, &expected);
}

/// Checks that a list of dimension numbers is sorted ascending (and reports otherwise).
fn check_sorted(cx: &mut OpCx<'_, '_>, name: &str, dims: &[i64]) -> bool {
    if dims.windows(2).any(|w| w[0] >= w[1]) {
        cx.error(format!("`{name}` must be sorted and unique"));
        return false;
    }
    true
}

/// The index vector extent of start/scatter indices, or `None` after an error.
fn index_vector_extent(
    cx: &mut OpCx<'_, '_>,
    indices: &TensorType,
    index_vector_dim: i64,
) -> Option<i64> {
    if index_vector_dim < 0 || index_vector_dim as u64 > indices.rank() as u64 {
        cx.error(format!(
            "`index_vector_dim` {index_vector_dim} is out of range for indices of rank {}",
            indices.rank()
        ));
        return None;
    }
    Some(if index_vector_dim as usize == indices.rank() {
        1
    } else {
        indices.shape[index_vector_dim as usize]
    })
}

/// `gather`.
pub(super) fn gather(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_arity(2, 1) {
        return;
    }
    let (Some(operand), Some(indices), Some(result)) = (
        cx.operand_tensor(0),
        cx.operand_tensor(1),
        cx.result_tensor(0),
    ) else {
        return;
    };
    cx.check_same_element("result", result.element_type, operand.element_type);
    if !indices.element_type.is_int() {
        cx.error(format!(
            "start indices must have an integer element type, found {}",
            indices.element_type
        ));
    }
    let offset_dims = cx.opt_i64s("offset_dims").unwrap_or_default();
    let collapsed = cx.opt_i64s("collapsed_slice_dims").unwrap_or_default();
    let operand_batching = cx.opt_i64s("operand_batching_dims").unwrap_or_default();
    let indices_batching = cx
        .opt_i64s("start_indices_batching_dims")
        .unwrap_or_default();
    let start_index_map = cx.opt_i64s("start_index_map").unwrap_or_default();
    let (Some(index_vector_dim), Some(slice_sizes)) =
        (cx.int("index_vector_dim"), cx.i64s("slice_sizes"))
    else {
        return;
    };
    let Some(index_extent) = index_vector_extent(cx, indices, index_vector_dim) else {
        return;
    };
    let rank = operand.rank();
    if !cx.check_len_is_operand_rank("slice_sizes", slice_sizes.len(), rank) {
        return;
    }
    let windowed: Vec<i64> = collapsed.iter().chain(&operand_batching).copied().collect();
    let ok = check_sorted(cx, "offset_dims", &offset_dims)
        & check_sorted(cx, "collapsed_slice_dims", &collapsed)
        & check_sorted(cx, "operand_batching_dims", &operand_batching)
        & cx.check_dims(
            "collapsed_slice_dims and operand_batching_dims",
            &windowed,
            rank,
        )
        & cx.check_dims("start_index_map", &start_index_map, rank)
        & cx.check_dims(
            "start_indices_batching_dims",
            &indices_batching,
            indices.rank(),
        );
    if !ok {
        return;
    }
    if indices_batching.contains(&index_vector_dim) {
        cx.error("`start_indices_batching_dims` must not contain `index_vector_dim`");
        return;
    }
    if operand_batching.len() != indices_batching.len() {
        cx.error("`operand_batching_dims` and `start_indices_batching_dims` differ in length");
        return;
    }
    if !dim_compatible(index_extent, start_index_map.len() as i64) {
        cx.error(format!(
            "`start_index_map` has {} entries, but the index vector has {index_extent}",
            start_index_map.len()
        ));
        return;
    }
    for (d, (&size, &extent)) in slice_sizes.iter().zip(&operand.shape).enumerate() {
        if !cx.check_slice_size(d, size, extent) {
            return;
        }
        if windowed.contains(&(d as i64)) && size > 1 {
            cx.error(format!(
                "slice size of collapsed or batching dimension {d} must be 0 or 1, found {size}"
            ));
            return;
        }
    }
    let offsets: Vec<i64> = slice_sizes
        .iter()
        .enumerate()
        .filter(|(d, _)| !windowed.contains(&(*d as i64)))
        .map(|(_, &s)| s)
        .collect();
    let batch: Vec<i64> = indices
        .shape
        .iter()
        .enumerate()
        .filter(|(d, _)| *d as i64 != index_vector_dim)
        .map(|(_, &e)| e)
        .collect();
    let result_rank = batch.len() + offsets.len();
    if offsets.len() != offset_dims.len() {
        cx.error(format!(
            "`offset_dims` has {} entries, but {} operand dimensions are neither collapsed nor batching",
            offset_dims.len(),
            offsets.len()
        ));
        return;
    }
    if !cx.check_dims("offset_dims", &offset_dims, result_rank) {
        return;
    }
    let (mut batch_iter, mut offset_iter) = (batch.iter(), offsets.iter());
    let expected: Vec<i64> = (0..result_rank)
        .map(|d| {
            let next = if offset_dims.contains(&(d as i64)) {
                offset_iter.next()
            } else {
                batch_iter.next()
            };
            next.copied().unwrap_or(DYNAMIC)
        })
        .collect();
    cx.check_result_shape(0, &result.shape, &expected);
}

/// `scatter`.
pub(super) fn scatter(cx: &mut OpCx<'_, '_>) {
    let Some(operands) = operand_tensors(cx) else {
        return;
    };
    let Some(results) = result_tensors(cx) else {
        return;
    };
    let n_operands = operands.len();
    if n_operands < 3 || n_operands % 2 == 0 || results.len() != n_operands / 2 {
        cx.error(format!(
            "expects N inputs, scatter indices and N updates with N results, found {} operands and {} results",
            n_operands,
            results.len()
        ));
        return;
    }
    let n = n_operands / 2;
    let inputs = &operands[..n];
    let indices = operands[n];
    let updates = &operands[n + 1..];
    for idx in 0..n {
        if inputs[idx].element_type != results[idx].element_type
            || !shapes_compatible(&inputs[idx].shape, &results[idx].shape)
        {
            cx.error(format!(
                "result #{idx} has type {}, but input #{idx} has {}",
                results[idx], inputs[idx]
            ));
            return;
        }
        if !shapes_compatible(&inputs[idx].shape, &inputs[0].shape)
            || !shapes_compatible(&updates[idx].shape, &updates[0].shape)
        {
            cx.error("inputs must share one shape, and updates must share one shape");
            return;
        }
    }
    if !indices.element_type.is_int() {
        cx.error(format!(
            "scatter indices must have an integer element type, found {}",
            indices.element_type
        ));
    }
    let update_window_dims = cx.opt_i64s("update_window_dims").unwrap_or_default();
    let inserted = cx.opt_i64s("inserted_window_dims").unwrap_or_default();
    let input_batching = cx.opt_i64s("input_batching_dims").unwrap_or_default();
    let indices_batching = cx
        .opt_i64s("scatter_indices_batching_dims")
        .unwrap_or_default();
    let to_operand = cx
        .opt_i64s("scatter_dims_to_operand_dims")
        .unwrap_or_default();
    let Some(index_vector_dim) = cx.int("index_vector_dim") else {
        return;
    };
    let Some(index_extent) = index_vector_extent(cx, indices, index_vector_dim) else {
        return;
    };
    let rank = inputs[0].rank();
    let update_rank = updates[0].rank();
    let windowed: Vec<i64> = inserted.iter().chain(&input_batching).copied().collect();
    let ok = check_sorted(cx, "update_window_dims", &update_window_dims)
        & check_sorted(cx, "inserted_window_dims", &inserted)
        & check_sorted(cx, "input_batching_dims", &input_batching)
        & cx.check_dims("update_window_dims", &update_window_dims, update_rank)
        & cx.check_dims(
            "inserted_window_dims and input_batching_dims",
            &windowed,
            rank,
        )
        & cx.check_dims("scatter_dims_to_operand_dims", &to_operand, rank)
        & cx.check_dims(
            "scatter_indices_batching_dims",
            &indices_batching,
            indices.rank(),
        );
    if !ok {
        return;
    }
    if input_batching.len() != indices_batching.len() {
        cx.error("`input_batching_dims` and `scatter_indices_batching_dims` differ in length");
        return;
    }
    if !dim_compatible(index_extent, to_operand.len() as i64) {
        cx.error(format!(
            "`scatter_dims_to_operand_dims` has {} entries, but the index vector has {index_extent}",
            to_operand.len()
        ));
        return;
    }
    if update_window_dims.len() + windowed.len() != rank {
        cx.error(format!(
            "`update_window_dims` ({}) plus `inserted_window_dims` and `input_batching_dims` ({}) must count the input rank {rank}",
            update_window_dims.len(),
            windowed.len()
        ));
        return;
    }
    let index_batch_rank =
        indices.rank() - usize::from((index_vector_dim as usize) < indices.rank());
    if update_rank != update_window_dims.len() + index_batch_rank {
        cx.error(format!(
            "updates have rank {update_rank}, expected {} window plus {index_batch_rank} scatter dimensions",
            update_window_dims.len()
        ));
        return;
    }
    let inits: Vec<TensorType> = inputs
        .iter()
        .map(|t| TensorType::scalar(t.element_type))
        .collect();
    let init_refs: Vec<&TensorType> = inits.iter().collect();
    check_reducer(cx, 0, "update_computation", &init_refs);
}

/// `sort`.
pub(super) fn sort(cx: &mut OpCx<'_, '_>) {
    let Some(inputs) = operand_tensors(cx) else {
        return;
    };
    let Some(results) = result_tensors(cx) else {
        return;
    };
    if inputs.is_empty() || inputs.len() != results.len() {
        cx.error(format!(
            "expects N >= 1 inputs and N results, found {} and {}",
            inputs.len(),
            results.len()
        ));
        return;
    }
    for (idx, (input, result)) in inputs.iter().zip(&results).enumerate() {
        if !shapes_compatible(&input.shape, &inputs[0].shape) {
            cx.error(format!(
                "input #{idx} has shape {}, but input #0 has {}",
                fmt_shape(&input.shape),
                fmt_shape(&inputs[0].shape)
            ));
            return;
        }
        if input.element_type != result.element_type
            || !shapes_compatible(&input.shape, &result.shape)
        {
            cx.error(format!(
                "result #{idx} has type {result}, but input #{idx} has {input}"
            ));
        }
    }
    let rank = inputs[0].rank() as i64;
    let dimension = cx.opt_int("dimension").unwrap_or(-1);
    if dimension < -rank || dimension >= rank {
        cx.error(format!(
            "`dimension` {dimension} is out of range for rank {rank}"
        ));
    }
    let Some(block) = cx.region_block(0, "comparator") else {
        return;
    };
    let scalars: Vec<Type> = inputs
        .iter()
        .flat_map(|t| {
            let s = Type::Tensor(TensorType::scalar(t.element_type));
            [s.clone(), s]
        })
        .collect();
    let expected: Vec<&Type> = scalars.iter().collect();
    cx.check_region_args(block, "comparator", &expected);
    let pred = Type::Tensor(TensorType::scalar(ElementType::Pred));
    cx.check_region_returns(block, "comparator", &[&pred]);
}

/// `while`.
pub(super) fn while_loop(cx: &mut OpCx<'_, '_>) {
    let operands = cx.operand_types();
    let results = cx.result_types();
    if operands.len() != results.len() || operands.iter().zip(&results).any(|(a, b)| a != b) {
        cx.error("result types must equal operand types");
    }
    if cx.op.regions.len() != 2 {
        cx.error(format!(
            "expects 2 regions (cond, body), found {}",
            cx.op.regions.len()
        ));
        return;
    }
    if let Some(cond) = cx.region_block(0, "cond") {
        cx.check_region_args(cond, "cond", &operands);
        let pred = Type::Tensor(TensorType::scalar(ElementType::Pred));
        cx.check_region_returns(cond, "cond", &[&pred]);
    }
    if let Some(body) = cx.region_block(1, "body") {
        cx.check_region_args(body, "body", &operands);
        cx.check_region_returns(body, "body", &operands);
    }
}

/// Checks branches of `if`/`case`: no arguments, returning the result types.
fn check_branches(cx: &mut OpCx<'_, '_>) {
    let results = cx.result_types();
    for idx in 0..cx.op.regions.len() {
        let what = format!("branch #{idx}");
        if let Some(block) = cx.region_block(idx, &what) {
            cx.check_region_args(block, &what, &[]);
            cx.check_region_returns(block, &what, &results);
        }
    }
}

/// `if`.
pub(super) fn if_op(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_operands(1) {
        return;
    }
    if let Some(pred) = cx.operand_tensor(0) {
        if *pred != TensorType::scalar(ElementType::Pred) {
            cx.error(format!("predicate must be tensor<i1>, found {pred}"));
        }
    }
    if cx.op.regions.len() != 2 {
        cx.error(format!(
            "expects 2 regions (true and false branches), found {}",
            cx.op.regions.len()
        ));
        return;
    }
    check_branches(cx);
}

/// `case`.
pub(super) fn case(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_operands(1) {
        return;
    }
    if let Some(index) = cx.operand_tensor(0) {
        if *index != TensorType::scalar(ElementType::S32) {
            cx.error(format!("index must be tensor<i32>, found {index}"));
        }
    }
    if cx.op.regions.is_empty() {
        cx.error("expects at least one branch");
        return;
    }
    check_branches(cx);
}

/// `map`.
pub(super) fn map(cx: &mut OpCx<'_, '_>) {
    let Some(inputs) = operand_tensors(cx) else {
        return;
    };
    if !cx.expect_results(1) || inputs.is_empty() {
        if inputs.is_empty() {
            cx.error("expects at least one input");
        }
        return;
    }
    let Some(result) = cx.result_tensor(0) else {
        return;
    };
    for (idx, input) in inputs.iter().enumerate() {
        if !shapes_compatible(&input.shape, &inputs[0].shape) {
            cx.error(format!("input #{idx} has a different shape from input #0"));
            return;
        }
    }
    cx.check_result_shape(0, &result.shape, &inputs[0].shape);
    let Some(block) = cx.region_block(0, "computation") else {
        return;
    };
    let scalars: Vec<Type> = inputs
        .iter()
        .map(|t| Type::Tensor(TensorType::scalar(t.element_type)))
        .collect();
    let expected: Vec<&Type> = scalars.iter().collect();
    cx.check_region_args(block, "computation", &expected);
}

/// `select_and_scatter`.
pub(super) fn select_and_scatter(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_arity(3, 1) {
        return;
    }
    let (Some(operand), Some(source), Some(init), Some(result)) = (
        cx.operand_tensor(0),
        cx.operand_tensor(1),
        cx.operand_tensor(2),
        cx.result_tensor(0),
    ) else {
        return;
    };
    if init.rank() != 0 {
        cx.error(format!("init value must be a scalar, found {init}"));
        return;
    }
    if source.rank() != operand.rank() {
        cx.error("source must have the operand's rank");
    }
    cx.check_same_element("result", result.element_type, operand.element_type);
    cx.check_result_shape(0, &result.shape, &operand.shape);
    if let Some(block) = cx.region_block(0, "select") {
        let scalar = Type::Tensor(TensorType::scalar(operand.element_type));
        cx.check_region_args(block, "select", &[&scalar, &scalar]);
        let pred = Type::Tensor(TensorType::scalar(ElementType::Pred));
        cx.check_region_returns(block, "select", &[&pred]);
    }
    check_reducer(cx, 1, "scatter", &[init]);
}

/// Checks that a tensor has rank >= 2 with square trailing dimensions.
fn check_square(cx: &mut OpCx<'_, '_>, what: &str, t: &TensorType) -> bool {
    let rank = t.rank();
    if rank < 2 || !dim_compatible(t.shape[rank - 1], t.shape[rank - 2]) {
        cx.error(format!(
            "{what} must have rank >= 2 and square trailing dimensions, found {}",
            fmt_shape(&t.shape)
        ));
        return false;
    }
    true
}

/// `cholesky`.
pub(super) fn cholesky(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_arity(1, 1) {
        return;
    }
    let (Some(a), Some(result)) = (cx.operand_tensor(0), cx.result_tensor(0)) else {
        return;
    };
    if check_square(cx, "operand", a) {
        cx.check_result_shape(0, &result.shape, &a.shape);
        cx.check_same_element("result", result.element_type, a.element_type);
    }
}

/// `triangular_solve`.
pub(super) fn triangular_solve(cx: &mut OpCx<'_, '_>) {
    if !cx.expect_arity(2, 1) {
        return;
    }
    let (Some(a), Some(b), Some(result)) = (
        cx.operand_tensor(0),
        cx.operand_tensor(1),
        cx.result_tensor(0),
    ) else {
        return;
    };
    if !check_square(cx, "a", a) {
        return;
    }
    if b.rank() != a.rank() {
        cx.error(format!(
            "b has rank {}, but a has rank {}",
            b.rank(),
            a.rank()
        ));
        return;
    }
    cx.check_same_element("b", b.element_type, a.element_type);
    cx.check_result_shape(0, &result.shape, &b.shape);
}
