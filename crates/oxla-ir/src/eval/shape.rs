//! Data movement ops: constant, iota, broadcast, reshape, transpose, slice, dynamic slice and
//! update, concatenate, pad and reverse.
//!
//! These ops never look at element values: they move element-sized byte chunks, mostly
//! through one strided copy ([`strided_copy`]) that copies contiguous rows at once.

use super::context::{extents, strides, OpCx};
use super::convert::convert_literal;
use super::element::int_at;
use crate::{Attribute, ElementType, IrError, Literal, TensorType};

fn internal(detail: &str) -> IrError {
    IrError::Eval {
        detail: format!("internal: {detail}"),
    }
}

/// Copies the elements of `src` visited by an index space of extents `out`, where index
/// `i` reads element `offset + sum(i[k] * strides[k])` (strides may be 0 or negative).
pub(crate) fn strided_copy(
    src: &[u8],
    esize: usize,
    out: &[usize],
    strides: &[isize],
    offset: isize,
) -> Result<Vec<u8>, IrError> {
    let n: usize = out.iter().product();
    let mut res = super::pool::take_empty(n * esize);
    if n == 0 {
        return Ok(res);
    }
    let read = |res: &mut Vec<u8>, pos: isize, count: usize| -> Result<(), IrError> {
        let start = usize::try_from(pos).map_err(|_| internal("negative source index"))? * esize;
        let bytes = src
            .get(start..start + count * esize)
            .ok_or_else(|| internal("source index out of range"))?;
        res.extend_from_slice(bytes);
        Ok(())
    };
    let rank = out.len();
    if rank == 0 {
        read(&mut res, offset, 1)?;
        return Ok(res);
    }
    let inner = out[rank - 1];
    let inner_stride = strides[rank - 1];
    let mut idx = vec![0usize; rank];
    let mut base = offset;
    loop {
        if inner_stride == 1 {
            read(&mut res, base, inner)?;
        } else {
            // The row's first and last source elements bound all of it.
            let last = base + (inner as isize - 1) * inner_stride;
            usize::try_from(base.min(last)).map_err(|_| internal("negative source index"))?;
            let hi =
                usize::try_from(base.max(last)).map_err(|_| internal("negative source index"))?;
            if (hi + 1) * esize > src.len() {
                return Err(internal("source index out of range"));
            }
            let start = res.len();
            res.resize(start + inner * esize, 0);
            let row = &mut res[start..];
            match esize {
                4 => gather::<4>(src, row, base, inner_stride),
                8 => gather::<8>(src, row, base, inner_stride),
                2 => gather::<2>(src, row, base, inner_stride),
                1 => gather::<1>(src, row, base, inner_stride),
                _ => {
                    for (j, out) in row.chunks_exact_mut(esize).enumerate() {
                        let p = (base + j as isize * inner_stride) as usize * esize;
                        out.copy_from_slice(&src[p..p + esize]);
                    }
                }
            }
        }
        let mut d = rank - 1;
        loop {
            if d == 0 {
                return Ok(res);
            }
            d -= 1;
            idx[d] += 1;
            base += strides[d];
            if idx[d] < out[d] {
                break;
            }
            base -= strides[d] * out[d] as isize;
            idx[d] = 0;
        }
    }
}

/// Copies `N`-byte elements `base + j * stride` of `src` to consecutive slots of `row`
/// (the caller has checked that every index is in range).
fn gather<const N: usize>(src: &[u8], row: &mut [u8], base: isize, stride: isize) {
    if stride == 0 {
        let p = base as usize * N;
        let mut v = [0u8; N];
        v.copy_from_slice(&src[p..p + N]);
        for out in row.chunks_exact_mut(N) {
            out.copy_from_slice(&v);
        }
        return;
    }
    for (j, out) in row.chunks_exact_mut(N).enumerate() {
        let p = (base + j as isize * stride) as usize * N;
        out.copy_from_slice(&src[p..p + N]);
    }
}

fn istrides(extents: &[usize]) -> Vec<isize> {
    strides(extents).into_iter().map(|s| s as isize).collect()
}

/// Evaluates `constant`.
pub(crate) fn constant(cx: OpCx<'_>) -> Result<Literal, IrError> {
    cx.expect_operands(0)?;
    let ty = cx.result_tensor(0)?;
    let elements = match cx.attr("value")? {
        Attribute::Elements(e) => e,
        _ => return Err(cx.invalid("`value` is not a dense elements attribute")),
    };
    if elements.ty != *ty {
        return Err(cx.invalid(format!(
            "value has type {}, result has type {ty}",
            elements.ty
        )));
    }
    let esize = ty.element_type.byte_size();
    let want = ty.byte_size().unwrap_or(0);
    if elements.splat {
        if elements.data.len() != esize {
            return Err(cx.invalid("splat value must hold exactly one element"));
        }
        return Literal::new(ty.clone(), elements.data.repeat(want / esize.max(1)));
    }
    if elements.data.len() != want {
        return Err(cx.invalid(format!(
            "value holds {} bytes, {ty} needs {want}",
            elements.data.len()
        )));
    }
    Literal::new(ty.clone(), elements.data.to_vec())
}

/// Evaluates `iota`.
pub(crate) fn iota(cx: OpCx<'_>) -> Result<Literal, IrError> {
    cx.expect_operands(0)?;
    let ty = cx.result_tensor(0)?;
    let dim = cx.int("iota_dimension")?;
    let dim = cx.dims("iota_dimension", &[dim], ty.rank())?[0];
    // The indices along `dim`, converted once, then broadcast over the other dimensions.
    let len = extents(&ty.shape)[dim];
    let values: Vec<u8> = (0..len as i64).flat_map(i64::to_le_bytes).collect();
    let indices = Literal::new(TensorType::new(vec![len as i64], ElementType::S64), values)?;
    let indices = convert_literal(&indices, ty.element_type)?;
    broadcast_to(cx, &indices, ty, &[dim])
}

/// Broadcasts `x` into `ty`, operand dimension `i` becoming result dimension `dims[i]`.
fn broadcast_to(
    cx: OpCx<'_>,
    x: &Literal,
    ty: &TensorType,
    dims: &[usize],
) -> Result<Literal, IrError> {
    if x.ty.element_type != ty.element_type {
        return Err(cx.invalid("operand and result element types differ"));
    }
    if dims.len() != x.ty.rank() {
        return Err(cx.invalid(format!(
            "needs {} broadcast dimensions, has {}",
            x.ty.rank(),
            dims.len()
        )));
    }
    let in_ext = extents(&x.ty.shape);
    let in_st = istrides(&in_ext);
    let out_ext = extents(&ty.shape);
    let mut st = vec![0isize; out_ext.len()];
    for (i, &d) in dims.iter().enumerate() {
        if in_ext[i] != 1 && in_ext[i] != out_ext[d] {
            return Err(cx.invalid(format!(
                "operand dimension {i} of size {} cannot broadcast to {}",
                in_ext[i], out_ext[d]
            )));
        }
        if in_ext[i] != 1 {
            if st[d] != 0 {
                return Err(cx.invalid("broadcast dimensions repeat"));
            }
            st[d] = in_st[i];
        }
    }
    let data = strided_copy(&x.data, ty.element_type.byte_size(), &out_ext, &st, 0)?;
    Literal::new(ty.clone(), data)
}

/// Evaluates `broadcast_in_dim`.
pub(crate) fn broadcast_in_dim(cx: OpCx<'_>, x: &Literal) -> Result<Literal, IrError> {
    let ty = cx.result_tensor(0)?;
    let dims = cx.i64s("broadcast_dimensions")?;
    let dims = cx.dims("broadcast_dimensions", &dims, ty.rank())?;
    broadcast_to(cx, x, ty, &dims)
}

/// Evaluates the legacy `broadcast` (new leading dimensions `broadcast_sizes`).
pub(crate) fn broadcast(cx: OpCx<'_>, x: &Literal) -> Result<Literal, IrError> {
    let ty = cx.result_tensor(0)?;
    let lead = ty
        .rank()
        .checked_sub(x.ty.rank())
        .ok_or_else(|| cx.invalid("result rank too small"))?;
    let dims: Vec<usize> = (lead..ty.rank()).collect();
    broadcast_to(cx, x, ty, &dims)
}

/// Evaluates `reshape`.
pub(crate) fn reshape(cx: OpCx<'_>, x: &Literal) -> Result<Literal, IrError> {
    let ty = cx.result_tensor(0)?;
    if ty.element_type != x.ty.element_type || ty.num_elements() != x.ty.num_elements() {
        return Err(cx.invalid(format!("cannot reshape {} to {ty}", x.ty)));
    }
    Literal::from_shared(ty.clone(), x.data.clone())
}

/// Evaluates `transpose`.
pub(crate) fn transpose(cx: OpCx<'_>, x: &Literal) -> Result<Literal, IrError> {
    let perm = cx.i64s("permutation")?;
    let rank = x.ty.rank();
    let perm = cx.dims("permutation", &perm, rank)?;
    let mut seen = vec![false; rank];
    for &p in &perm {
        seen[p] = true;
    }
    if perm.len() != rank || seen.contains(&false) {
        return Err(cx.invalid("`permutation` is not a permutation of the operand dimensions"));
    }
    let in_ext = extents(&x.ty.shape);
    let in_st = istrides(&in_ext);
    let out_ext: Vec<usize> = perm.iter().map(|&p| in_ext[p]).collect();
    let st: Vec<isize> = perm.iter().map(|&p| in_st[p]).collect();
    let shape: Vec<i64> = out_ext.iter().map(|&e| e as i64).collect();
    let esize = x.ty.element_type.byte_size();
    let data = match esize {
        4 => transpose_tiled::<u32>(&x.data, &out_ext, &st),
        8 => transpose_tiled::<u64>(&x.data, &out_ext, &st),
        _ => None,
    };
    let data = match data {
        Some(data) => data,
        None => strided_copy(&x.data, esize, &out_ext, &st, 0)?,
    };
    Literal::new(TensorType::new(shape, x.ty.element_type), data)
}

/// A transpose whose last two output dimensions swap the source's innermost dimension
/// (stride 1) and another: copied in square tiles, so both the reads and the writes of a
/// tile stay within a few cache lines each, instead of one cache line per element read.
/// `None` for other permutations, or when the bytes cannot be viewed as `T`.
fn transpose_tiled<T: bytemuck::Pod>(src: &[u8], out: &[usize], st: &[isize]) -> Option<Vec<u8>> {
    let rank = out.len();
    if rank < 2 || st[rank - 2] != 1 || st[rank - 1] <= 1 {
        return None;
    }
    let src: &[T] = bytemuck::try_cast_slice(src).ok()?;
    let (rows, cols) = (out[rank - 2], out[rank - 1]);
    let col_stride = st[rank - 1] as usize;
    let n: usize = out.iter().product();
    let mut data = super::pool::take_for_overwrite(n * std::mem::size_of::<T>());
    let dst: &mut [T] = bytemuck::try_cast_slice_mut(&mut data).ok()?;
    let plane = rows * cols;
    if plane == 0 {
        return Some(data);
    }
    let lead = &out[..rank - 2];
    let mut idx = vec![0usize; lead.len()];
    for p in 0..n / plane {
        // The source offset of this plane; every offset below is checked by the indexing.
        let base = idx
            .iter()
            .zip(st)
            .map(|(&i, &s)| i as isize * s)
            .sum::<isize>();
        let base = usize::try_from(base).ok()?;
        // Source column `c` of the plane is `src[base + c * col_stride..][..rows]`.
        let last = base + (cols - 1) * col_stride + rows;
        let src = src.get(..last)?;
        let plane_out = &mut dst[p * plane..(p + 1) * plane];
        // 32-bit elements: 8 x 8 blocks in vector registers.
        if std::mem::size_of::<T>() == 4 {
            let from: &[u32] = bytemuck::try_cast_slice(&src[base..]).ok()?;
            let to: &mut [u32] = bytemuck::try_cast_slice_mut(plane_out).ok()?;
            if !transpose32_split(from, col_stride, to, rows, cols, true) {
                return None;
            }
        } else {
            copy_tiles(src, base, col_stride, plane_out, rows, cols);
        }
        for d in (0..lead.len()).rev() {
            idx[d] += 1;
            if idx[d] < lead[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Some(data)
}

/// [`oxla_simd::transpose32`] into the tight `rows x cols` matrix at the start of `dst`
/// (`dst[p * cols + j] = src[j * src_stride + p]`), its rows split over the evaluator's
/// threads (a multiple of 8 each) when `parallel` and the matrix is large. `false` when a
/// slice is too short for its view.
pub(crate) fn transpose32_split(
    src: &[u32],
    src_stride: usize,
    dst: &mut [u32],
    rows: usize,
    cols: usize,
    parallel: bool,
) -> bool {
    let threads = if parallel && rows.saturating_mul(cols) >= PARALLEL_TRANSPOSE {
        super::threads::count().max(1)
    } else {
        1
    };
    let per = rows.div_ceil(threads).next_multiple_of(8);
    if threads == 1 || per >= rows || cols == 0 {
        return oxla_simd::transpose32(src, src_stride, dst, cols, rows, cols);
    }
    let Some(dst) = dst.get_mut(..rows * cols) else {
        return false;
    };
    let mut ok = vec![true; rows.div_ceil(per)];
    let parts = dst.chunks_mut(per * cols).zip(ok.iter_mut()).enumerate();
    super::threads::for_each(parts, |(t, (out, ok))| {
        *ok = src.get(t * per..).is_some_and(|src| {
            oxla_simd::transpose32(src, src_stride, out, cols, out.len() / cols, cols)
        });
    });
    ok.iter().all(|&ok| ok)
}

/// Elements from which [`transpose32_split`] splits over the threads.
const PARALLEL_TRANSPOSE: usize = 1 << 16;

/// `out[r * cols + c] = src[base + r + c * col_stride]`, in square tiles so that both the
/// reads and the writes of a tile stay within a few cache lines each.
pub(crate) fn copy_tiles<T: Copy>(
    src: &[T],
    base: usize,
    col_stride: usize,
    plane_out: &mut [T],
    rows: usize,
    cols: usize,
) {
    const TILE: usize = 32;
    for r0 in (0..rows).step_by(TILE) {
        let r1 = (r0 + TILE).min(rows);
        for c0 in (0..cols).step_by(TILE) {
            let c1 = (c0 + TILE).min(cols);
            for r in r0..r1 {
                let row = &mut plane_out[r * cols + c0..r * cols + c1];
                for (k, o) in row.iter_mut().enumerate() {
                    *o = src[base + r + (c0 + k) * col_stride];
                }
            }
        }
    }
}

/// Permutes `x` by `perm` without an op (used by reduce and dot).
pub(crate) fn permute(x: &Literal, perm: &[usize]) -> Result<Literal, IrError> {
    let in_ext = extents(&x.ty.shape);
    let in_st = istrides(&in_ext);
    let out_ext: Vec<usize> = perm.iter().map(|&p| in_ext[p]).collect();
    let st: Vec<isize> = perm.iter().map(|&p| in_st[p]).collect();
    let shape: Vec<i64> = out_ext.iter().map(|&e| e as i64).collect();
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return Ok(x.clone());
    }
    let data = strided_copy(&x.data, x.ty.element_type.byte_size(), &out_ext, &st, 0)?;
    Literal::new(TensorType::new(shape, x.ty.element_type), data)
}

/// Evaluates `slice`.
pub(crate) fn slice(cx: OpCx<'_>, x: &Literal) -> Result<Literal, IrError> {
    let rank = x.ty.rank();
    let start = cx.i64s("start_indices")?;
    let limit = cx.i64s("limit_indices")?;
    let step = cx.i64s_or("strides", vec![1; rank])?;
    if start.len() != rank || limit.len() != rank || step.len() != rank {
        return Err(cx.invalid("slice attributes must have one entry per dimension"));
    }
    let in_ext = extents(&x.ty.shape);
    let in_st = istrides(&in_ext);
    let mut out_ext = Vec::with_capacity(rank);
    let mut st = Vec::with_capacity(rank);
    let mut offset = 0isize;
    for d in 0..rank {
        let (s, l, k) = (start[d], limit[d], step[d]);
        if s < 0 || l < s || l > in_ext[d] as i64 || k < 1 {
            return Err(cx.invalid(format!(
                "dimension {d}: slice [{s}, {l}) step {k} does not fit size {}",
                in_ext[d]
            )));
        }
        out_ext.push(((l - s + k - 1) / k) as usize);
        st.push(in_st[d] * k as isize);
        offset += s as isize * in_st[d];
    }
    let shape: Vec<i64> = out_ext.iter().map(|&e| e as i64).collect();
    let data = strided_copy(
        &x.data,
        x.ty.element_type.byte_size(),
        &out_ext,
        &st,
        offset,
    )?;
    Literal::new(TensorType::new(shape, x.ty.element_type), data)
}

/// Reads scalar start indices and clamps them so `sizes` fits inside `ext`.
fn clamped_starts(
    cx: OpCx<'_>,
    starts: &[&Literal],
    ext: &[usize],
    sizes: &[usize],
) -> Result<Vec<usize>, IrError> {
    if starts.len() != ext.len() {
        return Err(cx.invalid(format!(
            "needs {} start indices, has {}",
            ext.len(),
            starts.len()
        )));
    }
    starts
        .iter()
        .enumerate()
        .map(|(d, lit)| {
            if lit.ty.num_elements() != Some(1) {
                return Err(cx.invalid("start indices must be scalars"));
            }
            let v = int_at(lit, 0).ok_or_else(|| cx.invalid("start indices must be integers"))?;
            if sizes[d] > ext[d] {
                return Err(cx.invalid(format!(
                    "size {} exceeds dimension {d} of size {}",
                    sizes[d], ext[d]
                )));
            }
            let max = (ext[d] - sizes[d]) as i64;
            Ok(v.clamp(0, max) as usize)
        })
        .collect()
}

/// Evaluates `dynamic_slice` (start indices clamped into range, per the spec).
pub(crate) fn dynamic_slice(
    cx: OpCx<'_>,
    x: &Literal,
    starts: &[&Literal],
) -> Result<Literal, IrError> {
    let sizes = cx.i64s("slice_sizes")?;
    if sizes.len() != x.ty.rank() || sizes.iter().any(|&s| s < 0) {
        return Err(cx.invalid("`slice_sizes` must hold one non-negative size per dimension"));
    }
    let sizes: Vec<usize> = sizes.iter().map(|&s| s as usize).collect();
    let in_ext = extents(&x.ty.shape);
    let in_st = istrides(&in_ext);
    let start = clamped_starts(cx, starts, &in_ext, &sizes)?;
    let offset: isize = start
        .iter()
        .zip(&in_st)
        .map(|(&s, &st)| s as isize * st)
        .sum();
    let shape: Vec<i64> = sizes.iter().map(|&e| e as i64).collect();
    let data = strided_copy(
        &x.data,
        x.ty.element_type.byte_size(),
        &sizes,
        &in_st,
        offset,
    )?;
    Literal::new(TensorType::new(shape, x.ty.element_type), data)
}

/// Evaluates `dynamic_update_slice` (start indices clamped into range).
pub(crate) fn dynamic_update_slice(
    cx: OpCx<'_>,
    x: &Literal,
    update: &Literal,
    starts: &[&Literal],
) -> Result<Literal, IrError> {
    if update.ty.element_type != x.ty.element_type || update.ty.rank() != x.ty.rank() {
        return Err(cx.invalid("update must have the operand's element type and rank"));
    }
    let ext = extents(&x.ty.shape);
    let up_ext = extents(&update.ty.shape);
    let start = clamped_starts(cx, starts, &ext, &up_ext)?;
    let esize = x.ty.element_type.byte_size();
    let n_up: usize = up_ext.iter().product();
    if n_up == 0 {
        return Ok(x.clone());
    }
    let mut out = x.data.to_vec();
    let rank = ext.len();
    let st = strides(&ext);
    let inner = if rank == 0 { 1 } else { up_ext[rank - 1] };
    let rows = n_up / inner;
    let up_st = strides(&up_ext);
    for row in 0..rows {
        let mut dst = 0usize;
        for d in 0..rank {
            let i = if d + 1 == rank {
                0
            } else {
                (row * inner / up_st[d]) % up_ext[d]
            };
            dst += (start[d] + i) * st[d];
        }
        let src = row * inner * esize;
        let bytes = update
            .data
            .get(src..src + inner * esize)
            .ok_or_else(|| internal("update index out of range"))?;
        out.get_mut(dst * esize..(dst + inner) * esize)
            .ok_or_else(|| internal("operand index out of range"))?
            .copy_from_slice(bytes);
    }
    Literal::new(x.ty.clone(), out)
}

/// Evaluates `concatenate`.
pub(crate) fn concatenate(cx: OpCx<'_>, inputs: &[&Literal]) -> Result<Literal, IrError> {
    let first = inputs
        .first()
        .ok_or_else(|| cx.invalid("needs at least one operand"))?;
    let rank = first.ty.rank();
    let dim = cx.int("dimension")?;
    let dim = cx.dims("dimension", &[dim], rank)?[0];
    let et = first.ty.element_type;
    let mut shape = first.ty.shape.clone();
    shape[dim] = 0;
    for lit in inputs {
        let ok = lit.ty.element_type == et
            && lit.ty.rank() == rank
            && (0..rank).all(|d| d == dim || lit.ty.shape[d] == first.ty.shape[d]);
        if !ok {
            return Err(cx.invalid(format!("operand {} does not match {}", lit.ty, first.ty)));
        }
        shape[dim] += lit.ty.shape[dim];
    }
    let ext = extents(&first.ty.shape);
    let outer: usize = ext[..dim].iter().product();
    let inner: usize = ext[dim + 1..].iter().product::<usize>() * et.byte_size();
    let ty = TensorType::new(shape, et);
    let mut out = super::pool::take_empty(ty.byte_size().unwrap_or(0));
    for o in 0..outer {
        for lit in inputs {
            let chunk = lit.ty.shape[dim] as usize * inner;
            out.extend_from_slice(&lit.data[o * chunk..(o + 1) * chunk]);
        }
    }
    Literal::new(ty, out)
}

/// Evaluates `pad` (negative edge padding removes elements; interior padding spreads them).
pub(crate) fn pad(cx: OpCx<'_>, x: &Literal, value: &Literal) -> Result<Literal, IrError> {
    let rank = x.ty.rank();
    let lo = cx.i64s("edge_padding_low")?;
    let hi = cx.i64s("edge_padding_high")?;
    let interior = cx.i64s_or("interior_padding", vec![0; rank])?;
    if lo.len() != rank || hi.len() != rank || interior.len() != rank {
        return Err(cx.invalid("padding attributes must have one entry per dimension"));
    }
    if value.ty.element_type != x.ty.element_type || value.ty.num_elements() != Some(1) {
        return Err(cx.invalid("padding value must be a scalar of the operand's type"));
    }
    let in_ext = extents(&x.ty.shape);
    let mut out_shape = Vec::with_capacity(rank);
    for d in 0..rank {
        if interior[d] < 0 {
            return Err(cx.invalid("interior padding must be non-negative"));
        }
        let n = in_ext[d] as i64;
        let size = lo[d] + hi[d] + n + (n - 1).max(0) * interior[d];
        if size < 0 {
            return Err(cx.invalid(format!("dimension {d} would have negative size {size}")));
        }
        out_shape.push(size);
    }
    let et = x.ty.element_type;
    let esize = et.byte_size();
    let ty = TensorType::new(out_shape.clone(), et);
    if ty
        .byte_size()
        .is_none_or(|n| n > super::context::MAX_TENSOR_BYTES)
    {
        return Err(cx.unsupported(format!("padded type {ty} is too large")));
    }
    let n_out = ty.num_elements().unwrap_or(0);
    let mut out = value.data.repeat(n_out);
    let out_st = strides(&extents(&out_shape));
    let n_in: usize = in_ext.iter().product();
    let in_st = strides(&in_ext);
    'elements: for i in 0..n_in {
        let mut dst = 0usize;
        for d in 0..rank {
            let idx = ((i / in_st[d]) % in_ext[d]) as i64;
            let pos = lo[d] + idx * (interior[d] + 1);
            if pos < 0 || pos >= out_shape[d] {
                continue 'elements;
            }
            dst += pos as usize * out_st[d];
        }
        out[dst * esize..(dst + 1) * esize].copy_from_slice(&x.data[i * esize..(i + 1) * esize]);
    }
    Literal::new(ty, out)
}

/// Evaluates `reverse`.
pub(crate) fn reverse(cx: OpCx<'_>, x: &Literal) -> Result<Literal, IrError> {
    let dims = cx.i64s("dimensions")?;
    let dims = cx.dims("dimensions", &dims, x.ty.rank())?;
    let ext = extents(&x.ty.shape);
    let mut st = istrides(&ext);
    let mut offset = 0isize;
    for &d in &dims {
        if st[d] > 0 && ext[d] > 0 {
            offset += (ext[d] as isize - 1) * st[d];
            st[d] = -st[d];
        }
    }
    let data = strided_copy(&x.data, x.ty.element_type.byte_size(), &ext, &st, offset)?;
    Literal::new(x.ty.clone(), data)
}
