//! Data movement ops: constant, iota, broadcast, reshape, transpose, slice, dynamic slice and
//! update, concatenate, pad and reverse.
//!
//! These ops never look at element values: they move element-sized byte chunks, mostly
//! through one strided copy ([`strided_copy`]) that copies contiguous rows at once.

use super::context::{extents, strides, OpCx};
use super::convert::convert_literal;
use super::element::int_at;
use super::typed::{self, Plain};
use crate::{Attribute, ElementType, IrError, Literal, TensorType};

fn internal(detail: &str) -> IrError {
    IrError::Eval {
        detail: format!("internal: {detail}"),
    }
}

/// Whether the fast paths of this module and `gather_scatter` may run. Tests switch them
/// off ([`with_general_paths`]) to compare them with the general paths they stand for.
pub(crate) fn fast_paths() -> bool {
    #[cfg(test)]
    {
        !GENERAL_ONLY.with(std::cell::Cell::get)
    }
    #[cfg(not(test))]
    {
        true
    }
}

#[cfg(test)]
thread_local! {
    static GENERAL_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with the fast paths of the data-movement ops switched off on this thread.
#[cfg(test)]
pub(crate) fn with_general_paths<R>(f: impl FnOnce() -> R) -> R {
    GENERAL_ONLY.with(|g| g.set(true));
    let r = f();
    GENERAL_ONLY.with(|g| g.set(false));
    r
}

/// Copies the elements of `src` visited by an index space of extents `out`, where index
/// `i` reads element `offset + sum(i[k] * strides[k])` (strides may be 0 or negative).
///
/// Dimensions that step through the source as one are merged first, so each row is as long
/// as the layout allows; a row is then one `memcpy` (stride 1), one fill (stride 0, a
/// broadcast) or one reversed copy (stride -1, `reverse`), and large outputs split over
/// the threads.
pub(crate) fn strided_copy(
    src: &[u8],
    esize: usize,
    out: &[usize],
    strides: &[isize],
    offset: isize,
) -> Result<Vec<u8>, IrError> {
    let n: usize = out.iter().product();
    if n == 0 || esize == 0 {
        return Ok(Vec::new());
    }
    let fast = fast_paths();
    let (out, strides) = if fast {
        merge_dims(out, strides)
    } else {
        (out.to_vec(), strides.to_vec())
    };
    // The lowest and highest elements read bound every read.
    let (mut lo, mut hi) = (offset, offset);
    for (&e, &s) in out.iter().zip(&strides) {
        let reach = (e as isize - 1) * s;
        lo += reach.min(0);
        hi += reach.max(0);
    }
    if lo < 0 {
        return Err(internal("negative source index"));
    }
    if (hi as usize + 1) * esize > src.len() {
        return Err(internal("source index out of range"));
    }
    let view = StridedView {
        src,
        esize,
        out: &out,
        strides: &strides,
        offset,
        fast,
    };
    if fast && strides.iter().all(|&s| s == 0) {
        // A broadcast zero (`jnp.zeros`, a scatter's or reduction's start): a zeroed buffer
        // needs no second pass, and a fresh one none at all.
        let at = offset as usize * esize;
        if src[at..at + esize].iter().all(|&b| b == 0) {
            return Ok(super::pool::take_zeroed(n * esize));
        }
    }
    let mut res = super::pool::take_for_overwrite(n * esize);
    if fast {
        split_bytes(&mut res, esize, |at, piece| {
            view.copy_range(at / esize, piece)
        });
    } else {
        view.copy_range(0, &mut res);
    }
    Ok(res)
}

/// The index space of [`strided_copy`], whose reads its caller has checked against `src`.
struct StridedView<'a> {
    src: &'a [u8],
    esize: usize,
    out: &'a [usize],
    strides: &'a [isize],
    offset: isize,
    /// Whether rows of stride 0 and -1 may take their fast forms.
    fast: bool,
}

impl StridedView<'_> {
    /// Writes the elements from flat output position `first` on into `dst`, row piece by
    /// row piece.
    fn copy_range(&self, first: usize, dst: &mut [u8]) {
        let esize = self.esize;
        let rank = self.out.len();
        let (inner, inner_stride) = match rank {
            0 => (1, 1),
            _ => (self.out[rank - 1], self.strides[rank - 1]),
        };
        // The index of `first` and the source element it reads.
        let mut idx = vec![0usize; rank];
        let mut rest = first;
        let mut base = self.offset;
        for d in (0..rank).rev() {
            idx[d] = rest % self.out[d];
            rest /= self.out[d];
            base += idx[d] as isize * self.strides[d];
        }
        let mut dst = dst;
        while !dst.is_empty() {
            let col = idx.last().copied().unwrap_or(0);
            let count = (inner - col).min(dst.len() / esize);
            let (row, tail) = std::mem::take(&mut dst).split_at_mut(count * esize);
            self.copy_row(base, inner_stride, row);
            dst = tail;
            if dst.is_empty() {
                break;
            }
            // On to the start of the next row.
            base -= col as isize * inner_stride;
            if let Some(last) = idx.last_mut() {
                *last = 0;
            }
            for d in (0..rank.saturating_sub(1)).rev() {
                idx[d] += 1;
                base += self.strides[d];
                if idx[d] < self.out[d] {
                    break;
                }
                base -= self.strides[d] * self.out[d] as isize;
                idx[d] = 0;
            }
        }
    }

    /// Writes elements `base + j * stride` of the source to consecutive slots of `row`.
    fn copy_row(&self, base: isize, stride: isize, row: &mut [u8]) {
        let esize = self.esize;
        let count = row.len() / esize;
        if count == 0 {
            return;
        }
        let last = base + (count as isize - 1) * stride;
        let lo = base.min(last) as usize;
        let hi = base.max(last) as usize;
        let span = &self.src[lo * esize..(hi + 1) * esize];
        match stride {
            1 => row.copy_from_slice(span),
            0 if self.fast => fill_piece(row, span),
            -1 if self.fast => reverse_elements(span, row, esize),
            _ => match esize {
                4 => gather::<4>(self.src, row, base, stride),
                8 => gather::<8>(self.src, row, base, stride),
                2 => gather::<2>(self.src, row, base, stride),
                1 => gather::<1>(self.src, row, base, stride),
                _ => {
                    for (j, out) in row.chunks_exact_mut(esize).enumerate() {
                        let p = (base + j as isize * stride) as usize * esize;
                        out.copy_from_slice(&self.src[p..p + esize]);
                    }
                }
            },
        }
    }
}

/// Merges adjacent dimensions that step through the source as one (`strides[d] ==
/// strides[d + 1] * out[d + 1]`, negative strides included) and drops dimensions of extent
/// 1; the index space visits the same elements in the same order.
fn merge_dims(out: &[usize], strides: &[isize]) -> (Vec<usize>, Vec<isize>) {
    let mut ext: Vec<usize> = Vec::with_capacity(out.len());
    let mut st: Vec<isize> = Vec::with_capacity(out.len());
    for (&e, &s) in out.iter().zip(strides) {
        if e == 1 {
            continue;
        }
        match (ext.last_mut(), st.last_mut()) {
            (Some(pe), Some(ps)) if *ps == s * e as isize => {
                *pe *= e;
                *ps = s;
            }
            _ => {
                ext.push(e);
                st.push(s);
            }
        }
    }
    (ext, st)
}

/// Bytes from which a fill or block copy splits over the evaluator's threads.
const PARALLEL_BYTES: usize = 2 << 20;

/// Runs `job(offset, piece)` on consecutive pieces of `dst` that together cover it, each a
/// whole number of `unit`-byte elements: one piece, or one per thread when `dst` is large.
pub(crate) fn split_bytes(dst: &mut [u8], unit: usize, job: impl Fn(usize, &mut [u8]) + Sync) {
    let threads = super::threads::count().max(1);
    if dst.len() < PARALLEL_BYTES || threads == 1 || unit == 0 {
        job(0, dst);
        return;
    }
    let per = dst.len().div_ceil(threads).next_multiple_of(unit);
    let pieces = dst.chunks_mut(per).enumerate();
    super::threads::for_each(pieces, |(i, piece)| job(i * per, piece));
}

/// Fills `dst` (a whole number of elements) with copies of the one element `value`, split
/// over the threads when large.
pub(crate) fn fill_elements(dst: &mut [u8], value: &[u8]) {
    split_bytes(dst, value.len(), |_, piece| fill_piece(piece, value));
}

/// [`fill_elements`] on one thread: a `memset` when the element's bytes are all alike,
/// otherwise copies of a block built by doubling.
fn fill_piece(dst: &mut [u8], value: &[u8]) {
    let esize = value.len();
    if esize == 0 || dst.is_empty() {
        return;
    }
    if value.iter().all(|&b| b == value[0]) {
        dst.fill(value[0]);
        return;
    }
    // A block of whole elements that stays in the first cache level.
    let block = (4096 / esize).max(1) * esize;
    let first = block.min(dst.len());
    dst[..esize].copy_from_slice(value);
    let mut filled = esize;
    while filled < first {
        let n = filled.min(first - filled);
        dst.copy_within(..n, filled);
        filled += n;
    }
    let (head, rest) = dst.split_at_mut(first);
    for chunk in rest.chunks_mut(first) {
        chunk.copy_from_slice(&head[..chunk.len()]);
    }
}

/// Writes the elements of `src` to `dst` in reverse order (`esize` bytes each).
fn reverse_elements(src: &[u8], dst: &mut [u8], esize: usize) {
    match esize {
        4 => reverse_typed::<u32>(src, dst),
        8 => reverse_typed::<u64>(src, dst),
        2 => reverse_typed::<u16>(src, dst),
        1 => reverse_typed::<u8>(src, dst),
        _ => {
            for (o, i) in dst
                .chunks_exact_mut(esize)
                .zip(src.chunks_exact(esize).rev())
            {
                o.copy_from_slice(i);
            }
        }
    }
}

/// [`reverse_elements`] on elements of `T`'s size: as `T` slices (which vectorizes) when
/// both are aligned for it, element by element otherwise.
fn reverse_typed<T: bytemuck::Pod>(src: &[u8], dst: &mut [u8]) {
    if let (Ok(s), Ok(d)) = (
        bytemuck::try_cast_slice::<u8, T>(src),
        bytemuck::try_cast_slice_mut::<u8, T>(dst),
    ) {
        for (o, &i) in d.iter_mut().zip(s.iter().rev()) {
            *o = i;
        }
        return;
    }
    let size = std::mem::size_of::<T>();
    for (o, i) in dst.chunks_exact_mut(size).zip(src.chunks_exact(size).rev()) {
        o.copy_from_slice(i);
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
    let ext = extents(&ty.shape);
    let len = ext[dim];
    if let Some(lit) = iota_typed(ty, len, ext[dim + 1..].iter().product()) {
        return lit;
    }
    let values: Vec<u8> = (0..len as i64).flat_map(i64::to_le_bytes).collect();
    let indices = Literal::new(TensorType::new(vec![len as i64], ElementType::S64), values)?;
    let indices = convert_literal(&indices, ty.element_type)?;
    broadcast_to(cx, &indices, ty, &[dim])
}

/// `iota` of a plain element type written directly, split over the threads when large:
/// element `i` holds `(i / inner) % len` converted as `convert` does (integers wrap, floats
/// round to nearest); `None` for other element types.
fn iota_typed(ty: &TensorType, len: usize, inner: usize) -> Option<Result<Literal, IrError>> {
    fn fill<T: Plain + Send>(
        ty: &TensorType,
        len: usize,
        inner: usize,
        of: impl Fn(u64) -> T + Sync,
    ) -> Result<Literal, IrError> {
        let n = ty.num_elements().unwrap_or(0);
        let inner = inner.max(1);
        typed::build_overwritten::<T>(ty.clone(), n, |out| {
            let per = n.div_ceil(super::threads::count()).max(1 << 16);
            super::threads::for_each(out.chunks_mut(per).enumerate(), |(c, mut part)| {
                // Runs of `inner` equal values, or (with `inner` 1) of consecutive ones
                // up to the wrap at `len`.
                let start = c * per;
                let mut q = (start / inner) % len;
                let mut offset = start % inner;
                while !part.is_empty() {
                    let m = if inner == 1 { len - q } else { inner - offset };
                    let (run, rest) = part.split_at_mut(m.min(part.len()));
                    if inner == 1 {
                        for (k, v) in run.iter_mut().enumerate() {
                            *v = of((q + k) as u64);
                        }
                        q += run.len();
                    } else {
                        run.fill(of(q as u64));
                        q += 1;
                        offset = 0;
                    }
                    if q == len {
                        q = 0;
                    }
                    part = rest;
                }
            });
        })
    }
    use ElementType as E;
    Some(match ty.element_type {
        E::S8 | E::U8 => fill(ty, len, inner, |i| i as u8),
        E::S16 | E::U16 => fill(ty, len, inner, |i| i as u16),
        E::S32 | E::U32 => fill(ty, len, inner, |i| i as u32),
        E::S64 | E::U64 => fill(ty, len, inner, |i| i),
        E::F32 => fill(ty, len, inner, |i| i as f32),
        E::F64 => fill(ty, len, inner, |i| i as f64),
        _ => return None,
    })
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
    // Unit dimensions added in order (`[n] -> [n, 1]`) leave the elements where they are:
    // the result shares the operand's bytes, as a reshape does.
    let in_order = dims.windows(2).all(|w| w[0] < w[1]);
    if fast_paths() && in_order && ty.num_elements() == x.ty.num_elements() {
        return Literal::from_shared(ty.clone(), x.data.clone());
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
        let src = src.get(base..last)?;
        let plane_out = &mut dst[p * plane..(p + 1) * plane];
        if !transpose_copy(src, col_stride, plane_out, rows, cols, true) {
            return None;
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

/// `dst[p * cols + j] = src[j * src_stride + p]` for `p < rows` and `j < cols`: the
/// `cols x rows` matrix at the start of `src` (rows `src_stride` apart) transposed into the
/// tight `rows x cols` matrix at the start of `dst`. 32-bit elements go through
/// [`transpose32_split`] (split over the threads when `parallel`), others through
/// [`copy_tiles`]. `false`, writing nothing, when a slice is too short for its view.
pub(crate) fn transpose_copy<T: bytemuck::Pod>(
    src: &[T],
    src_stride: usize,
    dst: &mut [T],
    rows: usize,
    cols: usize,
    parallel: bool,
) -> bool {
    if rows == 0 || cols == 0 {
        return true;
    }
    let src_len = (cols - 1)
        .checked_mul(src_stride)
        .and_then(|x| x.checked_add(rows));
    let fits = src_stride >= rows
        && src_len.is_some_and(|n| n <= src.len())
        && rows.checked_mul(cols).is_some_and(|n| n <= dst.len());
    if !fits {
        return false;
    }
    // 32-bit elements: 8 x 8 blocks in vector registers.
    if std::mem::size_of::<T>() == 4 {
        let from: Result<&[u32], _> = bytemuck::try_cast_slice(src);
        let to: Result<&mut [u32], _> = bytemuck::try_cast_slice_mut(dst);
        if let (Ok(from), Ok(to)) = (from, to) {
            return transpose32_split(from, src_stride, to, rows, cols, parallel);
        }
    }
    copy_tiles(src, 0, src_stride, dst, rows, cols);
    true
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

/// The bytes of `lit` for writing: its own when nothing else shares them (a value at its
/// last use), otherwise a copy in a buffer of the thread's cache.
pub(crate) fn owned_bytes(lit: Literal) -> Vec<u8> {
    std::sync::Arc::try_unwrap(lit.data).unwrap_or_else(|shared| {
        let mut bytes = super::pool::take_for_overwrite(shared.len());
        split_bytes(&mut bytes, 1, |at, piece| {
            piece.copy_from_slice(&shared[at..at + piece.len()]);
        });
        bytes
    })
}

/// Evaluates `dynamic_update_slice` (start indices clamped into range), writing into the
/// operand's own bytes when nothing else shares them.
pub(crate) fn dynamic_update_slice(
    cx: OpCx<'_>,
    x: Literal,
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
        return Ok(x);
    }
    let ty = x.ty.clone();
    let mut out = owned_bytes(x);
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
    Literal::new(ty, out)
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
    let chunks: Vec<usize> = inputs
        .iter()
        .map(|lit| lit.ty.shape[dim] as usize * inner)
        .collect();
    let row: usize = chunks.iter().sum();
    let mut out = super::pool::take_for_overwrite(ty.byte_size().unwrap_or(0));
    if row == 0 {
        return Literal::new(ty, out);
    }
    // Output row `o` is row `o` of each input in turn.
    let fill = |first: usize, piece: &mut [u8]| {
        for (k, out_row) in piece.chunks_exact_mut(row).enumerate() {
            let o = first + k;
            let mut at = 0;
            for (lit, &chunk) in inputs.iter().zip(&chunks) {
                out_row[at..at + chunk].copy_from_slice(&lit.data[o * chunk..(o + 1) * chunk]);
                at += chunk;
            }
        }
    };
    if fast_paths() {
        split_bytes(&mut out, row, |at, piece| fill(at / row, piece));
    } else {
        fill(0, &mut out[..outer * row]);
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
    let ty = TensorType::new(out_shape.clone(), et);
    if ty
        .byte_size()
        .is_none_or(|n| n > super::context::MAX_TENSOR_BYTES)
    {
        return Err(cx.unsupported(format!("padded type {ty} is too large")));
    }
    let data = if fast_paths() {
        pad_rows(x, &value.data, &lo, &interior, &out_shape)
    } else {
        pad_elements(x, &value.data, &lo, &interior, &out_shape)
    };
    Literal::new(ty, data)
}

/// `pad` element by element: the output filled with the padding value, then each input
/// element that lands inside it copied to its place.
fn pad_elements(
    x: &Literal,
    value: &[u8],
    lo: &[i64],
    interior: &[i64],
    out_shape: &[i64],
) -> Vec<u8> {
    let rank = x.ty.rank();
    let esize = x.ty.element_type.byte_size();
    let in_ext = extents(&x.ty.shape);
    let n_out: usize = extents(out_shape).iter().product();
    let mut out = value.repeat(n_out);
    let out_st = strides(&extents(out_shape));
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
    out
}

/// One dimension of a padding: input extent, output extent, low edge padding (negative
/// crops) and the step between input elements in the output (interior padding + 1).
#[derive(Clone, Copy)]
struct PadDim {
    input: usize,
    output: usize,
    lo: i64,
    step: i64,
}

impl PadDim {
    /// The input index that lands at output position `pos`, if any.
    fn source(&self, pos: usize) -> Option<usize> {
        let q = pos as i64 - self.lo;
        (q >= 0 && q % self.step == 0 && q / self.step < self.input as i64)
            .then(|| (q / self.step) as usize)
    }

    /// The input indices that land inside the output, as a range.
    fn kept(&self) -> std::ops::Range<usize> {
        if self.output == 0 {
            return 0..0;
        }
        // The smallest i with lo + i * step >= 0, and one past the largest with
        // lo + i * step < output.
        let first = if self.lo >= 0 {
            0
        } else {
            (-self.lo + self.step - 1) / self.step
        };
        let end = (self.output as i64 - 1 - self.lo).div_euclid(self.step) + 1;
        let end = end.clamp(0, self.input as i64);
        let first = first.min(end);
        first as usize..end as usize
    }
}

/// `pad` by output rows (the last dimension, after merging trailing unpadded dimensions
/// into it): each row is appended once, either all padding or the padding around the
/// elements of one input row, so every output byte is written once.
fn pad_rows(x: &Literal, value: &[u8], lo: &[i64], interior: &[i64], out_shape: &[i64]) -> Vec<u8> {
    let esize = x.ty.element_type.byte_size();
    let n_out: usize = extents(out_shape).iter().product();
    let mut dims: Vec<PadDim> = extents(&x.ty.shape)
        .iter()
        .zip(out_shape)
        .zip(lo.iter().zip(interior))
        .map(|((&input, &output), (&lo, &interior))| PadDim {
            input,
            output: output as usize,
            lo,
            step: interior + 1,
        })
        .collect();
    // An unpadded last dimension joins the one before it when that one has no interior
    // padding: its edge padding becomes whole rows of the merged dimension.
    while dims.len() >= 2 {
        let [.., outer, inner] = dims.as_slice() else {
            break;
        };
        let unpadded = inner.lo == 0 && inner.step == 1 && inner.input == inner.output;
        if !unpadded || outer.step != 1 {
            break;
        }
        let (outer, inner) = (*outer, *inner);
        dims.pop();
        let merged = dims.last_mut().expect("two dimensions");
        merged.input = outer.input * inner.input;
        merged.output = outer.output * inner.output;
        merged.lo = outer.lo * inner.input as i64;
    }
    let mut out = super::pool::take_empty(n_out * esize);
    if n_out == 0 || esize == 0 {
        return out;
    }
    let Some((row, outer)) = dims.split_last() else {
        // A scalar pads to itself.
        out.extend_from_slice(&x.data);
        return out;
    };
    let mut padding_row = vec![0u8; row.output * esize];
    fill_elements(&mut padding_row, value);
    let kept = row.kept();
    let in_strides = strides(&outer.iter().map(|d| d.input).collect::<Vec<_>>());
    let row_len = row.input;
    let mut pos = vec![0usize; outer.len()];
    for _ in 0..n_out / row.output.max(1) {
        // The input row landing on this output row, if every outer position has one.
        let source = outer
            .iter()
            .zip(&pos)
            .zip(&in_strides)
            .try_fold(0usize, |acc, ((d, &p), &st)| Some(acc + d.source(p)? * st));
        match source {
            Some(r) if !kept.is_empty() => {
                let src =
                    &x.data[(r * row_len + kept.start) * esize..(r * row_len + kept.end) * esize];
                let first = (row.lo + kept.start as i64 * row.step) as usize;
                if row.step == 1 {
                    out.extend_from_slice(&padding_row[..first * esize]);
                    out.extend_from_slice(src);
                    let rest = row.output - first - kept.len();
                    out.extend_from_slice(&padding_row[..rest * esize]);
                } else {
                    let start = out.len();
                    out.extend_from_slice(&padding_row);
                    let step = row.step as usize * esize;
                    let dst = out[start + first * esize..].chunks_mut(step);
                    for (o, v) in dst.zip(src.chunks_exact(esize)) {
                        o[..esize].copy_from_slice(v);
                    }
                }
            }
            _ => out.extend_from_slice(&padding_row),
        }
        for d in (0..pos.len()).rev() {
            pos[d] += 1;
            if pos[d] < outer[d].output {
                break;
            }
            pos[d] = 0;
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broadcast_zero_clears_a_reused_buffer_and_other_fills_still_fill() {
        // Large enough to split over the threads; the cache hands back the dirty buffer.
        let n = 3 * PARALLEL_BYTES / 4 + 5;
        let len = n * 4;
        let _wanted = super::super::pool::take_for_overwrite(len);
        super::super::pool::give(vec![0xAB; len]);
        let zero = strided_copy(&0f32.to_le_bytes(), 4, &[n], &[0], 0).unwrap();
        assert_eq!(zero.len(), len);
        assert!(zero.iter().all(|&b| b == 0));
        super::super::pool::give(zero);
        // -0.0 has a nonzero byte: it is copied, not taken as a zero.
        let negative = strided_copy(&(-0f32).to_le_bytes(), 4, &[n / 2, 2], &[0, 0], 0).unwrap();
        assert!(negative.chunks(4).all(|e| e == (-0f32).to_le_bytes()));
    }
}
