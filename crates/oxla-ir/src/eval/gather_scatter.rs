//! `gather` and `scatter`: index-driven slicing and updating, with batching dimensions.
//!
//! Both ops split an element's position into a *batch* part (which index vector it uses)
//! and a *window* part (where it lies inside the slice). The flat operand position is then
//! `base[batch] + offset[window]`, so each part is computed once and the element loop only
//! adds. Gather clamps start indices so the whole slice stays in bounds (as the spec says);
//! scatter skips every update whose window would leave the operand (as XLA does).
//!
//! The common JAX patterns (`emb[idx]`, `x.at[idx].add(v)`, `a.at[i:j, k:l].set(v)`) put
//! the window dimensions last in the result or updates, so each batch position reads or
//! writes one window: a few runs of contiguous elements. Those run as block copies, and a
//! scatter combines each run in place with the same element kernels as `add`, `maximum`,
//! ... (updates in the general path's order, so repeated indices combine alike), on the
//! input's own bytes when this is its last use. Other layouts and bodies take the general
//! element-by-element path.

use super::body::classify;
use super::body::BodyKind;
use super::context::{extents, strides, OpCx};
use super::element::{decode, Scalar};
use super::elementwise::{float_zip, int_zip};
use super::shape::fast_paths;
use super::typed::Plain;
use super::{take_operands, tensor_operand, Frame, Interp, Value};
use crate::{ElementType, IrError, Literal, OpKind, ValueId};

/// Index values of an integer tensor, widened.
fn index_values(cx: OpCx<'_>, lit: &Literal) -> Result<Vec<i128>, IrError> {
    let et = lit.ty.element_type;
    if !et.is_int() {
        return Err(cx.invalid(format!("indices must be integers, not {et}")));
    }
    fn widened<T: Plain + Into<i128>>(data: &[u8]) -> Vec<i128> {
        super::typed::view_bytes::<T>(data)
            .iter()
            .map(|&v| v.into())
            .collect()
    }
    if fast_paths() {
        use ElementType as E;
        match et {
            E::S32 => return Ok(widened::<i32>(&lit.data)),
            E::S64 => return Ok(widened::<i64>(&lit.data)),
            E::U32 => return Ok(widened::<u32>(&lit.data)),
            E::U64 => return Ok(widened::<u64>(&lit.data)),
            E::S16 => return Ok(widened::<i16>(&lit.data)),
            E::U16 => return Ok(widened::<u16>(&lit.data)),
            E::S8 => return Ok(widened::<i8>(&lit.data)),
            E::U8 => return Ok(widened::<u8>(&lit.data)),
            _ => {}
        }
    }
    let arr = decode(lit);
    Ok((0..arr.len())
        .map(|i| match arr.scalar_at(i) {
            Scalar::Int(v) => v,
            _ => 0,
        })
        .collect())
}

fn distinct_dims(
    cx: OpCx<'_>,
    name: &str,
    values: &[i64],
    rank: usize,
) -> Result<Vec<usize>, IrError> {
    let dims = cx.dims(name, values, rank)?;
    for (i, d) in dims.iter().enumerate() {
        if dims[..i].contains(d) {
            return Err(cx.invalid(format!("`{name}` repeats dimension {d}")));
        }
    }
    Ok(dims)
}

/// The batch part shared by gather and scatter: for every batch position (the index
/// tensor's dims except `index_vector_dim`, row-major), the full start index into the
/// operand before clamping or bounds checks.
struct Batches {
    /// Extents of the batch dims, in order.
    shape: Vec<usize>,
    /// Per batch position, one start coordinate per operand dim (`rank` each).
    starts: Vec<i128>,
    /// The operand rank.
    rank: usize,
}

impl Batches {
    /// The start coordinates of every batch position, in order.
    fn each(&self) -> impl Iterator<Item = &[i128]> {
        self.starts.chunks_exact(self.rank.max(1))
    }
}

#[allow(clippy::too_many_arguments)]
fn batch_starts(
    cx: OpCx<'_>,
    indices: &Literal,
    index_vector_dim: i64,
    start_map: &[usize],
    operand_batching: &[usize],
    indices_batching: &[i64],
    operand_shape: &[usize],
) -> Result<Batches, IrError> {
    let idx_rank = indices.ty.rank();
    let ivd = usize::try_from(index_vector_dim)
        .ok()
        .filter(|&d| d <= idx_rank)
        .ok_or_else(|| {
            cx.invalid(format!(
                "index_vector_dim {index_vector_dim} is out of range"
            ))
        })?;
    let idx_ext = extents(&indices.ty.shape);
    let idx_str = strides(&idx_ext);
    let vec_len = if ivd < idx_rank { idx_ext[ivd] } else { 1 };
    if vec_len != start_map.len() {
        return Err(cx.invalid(format!(
            "index vectors have {vec_len} entries but the start index map has {}",
            start_map.len()
        )));
    }
    let batch_dims: Vec<usize> = (0..idx_rank).filter(|&d| d != ivd).collect();
    let indices_batching = cx.dims("indices batching dims", indices_batching, idx_rank)?;
    if indices_batching.len() != operand_batching.len() || indices_batching.contains(&ivd) {
        return Err(cx.invalid("batching dimension lists do not pair up"));
    }
    // Position of each indices batching dim among the batch dims.
    let mut batching_pos = Vec::new();
    for (&ob, &ib) in operand_batching.iter().zip(&indices_batching) {
        if operand_shape[ob] != idx_ext[ib] {
            return Err(cx.invalid(format!(
                "operand batching dim {ob} and indices batching dim {ib} differ in size"
            )));
        }
        batching_pos.push(batch_dims.iter().position(|&d| d == ib).unwrap_or(0));
    }
    let shape: Vec<usize> = batch_dims.iter().map(|&d| idx_ext[d]).collect();
    let n_batch: usize = shape.iter().product();
    let values = index_values(cx, indices)?;
    let rank = operand_shape.len();
    let width = rank.max(1);
    let mut starts = vec![0i128; n_batch * width];
    // Entry `k` of the index vector of the batch position at `pos` is
    // `values[base + k * vector_stride]`, with `base` kept up to date as `pos` steps.
    let vector_stride = if ivd < idx_rank { idx_str[ivd] } else { 0 };
    let batch_strides: Vec<usize> = batch_dims.iter().map(|&d| idx_str[d]).collect();
    let mut pos = vec![0usize; shape.len()];
    let mut base = 0usize;
    for start in starts.chunks_exact_mut(width) {
        for (k, &d) in start_map.iter().enumerate() {
            start[d] = values[base + k * vector_stride];
        }
        for (&ob, &bp) in operand_batching.iter().zip(&batching_pos) {
            start[ob] = pos[bp] as i128;
        }
        for d in (0..pos.len()).rev() {
            pos[d] += 1;
            base += batch_strides[d];
            if pos[d] < shape[d] {
                break;
            }
            base -= batch_strides[d] * shape[d];
            pos[d] = 0;
        }
    }
    Ok(Batches {
        shape,
        starts,
        rank,
    })
}

/// Per operand dim (`extents`): the highest start that keeps a window of `window` inside,
/// for the dims the index vectors address (`start_map`), `None` for the others.
fn highest_starts(start_map: &[usize], extents: &[usize], window: &[usize]) -> Vec<Option<i128>> {
    (0..extents.len())
        .map(|d| {
            start_map
                .contains(&d)
                .then(|| (extents[d] - window[d]) as i128)
        })
        .collect()
}

/// What a start outside `0..=highest` does: moves to the nearest end (gather) or drops
/// the batch position (scatter).
#[derive(Clone, Copy, PartialEq)]
enum OutOfRange {
    Clamp,
    Skip,
}

/// The batch shape and, per batch position, the flat operand offset of its window (each
/// start in `0..=highest` of its dim, or handled by `out_of_range`, times the operand's
/// `strides`), read straight from the index values when each index vector is contiguous
/// (`index_vector_dim` last, or implicit) and names distinct dims: `x[i]`, `take`, row
/// lookups and row updates, without the general path's per-position start vectors. `None`
/// for other layouts and element types (and for any malformed attribute, which the general
/// path reports).
fn contiguous_bases(
    indices: &Literal,
    index_vector_dim: i64,
    start_map: &[usize],
    highest: &[Option<i128>],
    strides: &[usize],
    out_of_range: OutOfRange,
) -> Option<(Vec<usize>, Vec<Option<usize>>)> {
    fn bases<T: Plain + Into<i128>>(
        data: &[u8],
        dims: &[(i128, usize)],
        out_of_range: OutOfRange,
    ) -> Vec<Option<usize>> {
        let values = super::typed::view_bytes::<T>(data);
        let offset = |v: T, &(hi, stride): &(i128, usize)| {
            let v: i128 = v.into();
            if (0..=hi).contains(&v) {
                Some(v as usize * stride)
            } else if out_of_range == OutOfRange::Clamp {
                Some(v.clamp(0, hi.max(0)) as usize * stride)
            } else {
                None
            }
        };
        match dims {
            [dim] => values.iter().map(|&v| offset(v, dim)).collect(),
            _ => values
                .chunks_exact(dims.len())
                .map(|vector| vector.iter().zip(dims).map(|(&v, d)| offset(v, d)).sum())
                .collect(),
        }
    }
    let shape = extents(&indices.ty.shape);
    let ivd = usize::try_from(index_vector_dim).ok()?;
    let batch_shape = match ivd.cmp(&shape.len()) {
        std::cmp::Ordering::Equal if start_map.len() == 1 => shape.clone(),
        std::cmp::Ordering::Less if ivd + 1 == shape.len() && shape[ivd] == start_map.len() => {
            shape[..ivd].to_vec()
        }
        _ => return None,
    };
    let distinct = start_map
        .iter()
        .enumerate()
        .all(|(i, d)| !start_map[..i].contains(d));
    if start_map.is_empty() || !distinct {
        return None;
    }
    let dims: Vec<(i128, usize)> = start_map
        .iter()
        .map(|&d| Some((highest.get(d).copied().flatten()?, *strides.get(d)?)))
        .collect::<Option<_>>()?;
    use ElementType as E;
    let data = &indices.data;
    let bases = match indices.ty.element_type {
        E::S32 => bases::<i32>(data, &dims, out_of_range),
        E::S64 => bases::<i64>(data, &dims, out_of_range),
        E::U32 => bases::<u32>(data, &dims, out_of_range),
        E::U64 => bases::<u64>(data, &dims, out_of_range),
        _ => return None,
    };
    Some((batch_shape, bases))
}

/// Splits every position of `out_shape` into (batch linear index, window linear index),
/// where `window_dims` are the out dims forming the window (in order) and the others the
/// batch. Calls `f(batch, window)` in row-major order.
fn for_each_split(out_shape: &[usize], window_dims: &[usize], mut f: impl FnMut(usize, usize)) {
    let rank = out_shape.len();
    let n: usize = out_shape.iter().product();
    if n == 0 {
        return;
    }
    let is_window: Vec<bool> = (0..rank).map(|d| window_dims.contains(&d)).collect();
    let win_ext: Vec<usize> = window_dims.iter().map(|&d| out_shape[d]).collect();
    let batch_ext: Vec<usize> = (0..rank)
        .filter(|&d| !is_window[d])
        .map(|d| out_shape[d])
        .collect();
    let win_str = strides(&win_ext);
    let batch_str = strides(&batch_ext);
    // Per out dim: its stride in the window or batch space.
    let mut dim_stride = vec![0usize; rank];
    let (mut wi, mut bi) = (0, 0);
    for d in 0..rank {
        if is_window[d] {
            dim_stride[d] = win_str[wi];
            wi += 1;
        } else {
            dim_stride[d] = batch_str[bi];
            bi += 1;
        }
    }
    let mut idx = vec![0usize; rank];
    let (mut b, mut w) = (0usize, 0usize);
    for _ in 0..n {
        f(b, w);
        for d in (0..rank).rev() {
            idx[d] += 1;
            if is_window[d] {
                w += dim_stride[d];
            } else {
                b += dim_stride[d];
            }
            if idx[d] < out_shape[d] {
                break;
            }
            if is_window[d] {
                w -= dim_stride[d] * out_shape[d];
            } else {
                b -= dim_stride[d] * out_shape[d];
            }
            idx[d] = 0;
        }
    }
}

/// Flat operand offsets of every position of a window with extents `win_ext` laid over
/// operand dims `win_operand_dims`.
fn window_offsets(
    win_ext: &[usize],
    win_operand_dims: &[usize],
    operand_strides: &[usize],
) -> Vec<usize> {
    let n: usize = win_ext.iter().product();
    let mut res = Vec::with_capacity(n);
    let mut idx = vec![0usize; win_ext.len()];
    for _ in 0..n {
        res.push(
            idx.iter()
                .zip(win_operand_dims)
                .map(|(&i, &d)| i * operand_strides[d])
                .sum(),
        );
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < win_ext[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    res
}

/// True when `dims` are the last `dims.len()` of `rank` dimensions, in order: then each
/// batch position's window is one contiguous block of the result (or updates).
fn trails(dims: &[usize], rank: usize) -> bool {
    let first = rank.wrapping_sub(dims.len());
    dims.iter()
        .enumerate()
        .all(|(i, &d)| d == first.wrapping_add(i))
}

/// How many windows (or runs) ahead of the one being moved gathers and scatters prefetch.
const PREFETCH_AHEAD: usize = 8;

/// Scatters into tables of at most this many bytes do not prefetch their places.
const PREFETCH_FROM_BYTES: usize = 256 << 10;

/// Where a window's elements lie in the operand, relative to its first element: runs of
/// `run` contiguous elements starting at each of `starts`, in the window's row-major order.
struct WindowRuns {
    run: usize,
    starts: Vec<usize>,
}

impl WindowRuns {
    /// The runs of a window with extents `win_ext` over operand dims `win_operand_dims`:
    /// trailing window dims merge into one run while each steps through the operand by the
    /// length of the run so far (the operand's innermost dims, all but the outermost of
    /// them covered whole).
    fn new(win_ext: &[usize], win_operand_dims: &[usize], operand_strides: &[usize]) -> Self {
        let mut run = 1;
        let mut k = win_ext.len();
        while k > 0 && operand_strides[win_operand_dims[k - 1]] == run {
            run *= win_ext[k - 1];
            k -= 1;
        }
        let starts = window_offsets(&win_ext[..k], &win_operand_dims[..k], operand_strides);
        WindowRuns { run, starts }
    }

    /// The elements of the window at each of `bases` (flat operand positions) in turn, as
    /// one block copy per run; `None` when a run leaves `src`.
    fn gather(&self, src: &[u8], esize: usize, bases: &[usize]) -> Option<Vec<u8>> {
        let bytes = self.run * esize;
        let window = self.starts.len() * bytes;
        if window == 0 || bases.is_empty() {
            return Some(Vec::new());
        }
        let last = self.starts.iter().max().map_or(0, |&s| s + self.run);
        if bases.iter().any(|&b| (b + last) * esize > src.len()) {
            return None;
        }
        let mut data = super::pool::take_for_overwrite(bases.len() * window);
        super::shape::split_bytes(&mut data, window, |at, piece| {
            let bases = &bases[at / window..];
            for (k, out) in piece.chunks_exact_mut(window).enumerate() {
                // The windows a few places ahead are on their way while this one is copied.
                if let Some(&ahead) = bases.get(k + PREFETCH_AHEAD) {
                    for &start in &self.starts {
                        let at = (ahead + start) * esize;
                        oxla_simd::prefetch(&src[at..at + bytes]);
                    }
                }
                let base = bases[k];
                for (o, &start) in out.chunks_exact_mut(bytes).zip(&self.starts) {
                    let at = (base + start) * esize;
                    o.copy_from_slice(&src[at..at + bytes]);
                }
            }
        });
        Some(data)
    }
}

impl WindowRuns {
    /// Scatters `update` (batch positions in order, each window whole) into `inputs[0]`
    /// at `bases` (`None`: the window leaves the input and is dropped) with a body that
    /// replaces or combines by one op, run by run in the general path's order (so repeated
    /// positions combine alike): the result, or `None` (leaving `inputs` as they were) for
    /// other bodies and element types, which the general path takes.
    fn scatter(
        &self,
        body: &BodyKind,
        inputs: &mut Vec<Literal>,
        update: &Literal,
        bases: &[Option<usize>],
    ) -> Option<Literal> {
        let et = inputs.first()?.ty.element_type;
        if update.ty.element_type != et {
            return None;
        }
        let combine = match body {
            BodyKind::Replace => None,
            BodyKind::Simple(kind) if combines(et, kind) => Some(kind),
            _ => return None,
        };
        let input = inputs.pop()?;
        let ty = input.ty.clone();
        let mut acc = super::shape::owned_bytes(input);
        let esize = et.byte_size();
        let done = match combine {
            None => self.scatter_copies(&mut acc, &update.data, esize, bases),
            Some(kind) => self.scatter_combining(et, kind, &mut acc, &update.data, bases),
        };
        // The bytes keep their length, so they still fit the type.
        let lit = Literal {
            ty,
            data: acc.into(),
        };
        if done {
            Some(lit)
        } else {
            inputs.push(lit);
            None
        }
    }

    /// Copies each run of `update` over its place in `acc`; false, writing nothing, when a
    /// run does not fit.
    fn scatter_copies(
        &self,
        acc: &mut [u8],
        update: &[u8],
        esize: usize,
        bases: &[Option<usize>],
    ) -> bool {
        if !self.fits(acc.len(), update.len(), esize, bases) {
            return false;
        }
        self.for_each_place(
            acc,
            update,
            esize,
            bases,
            || (),
            |_, dst, src| dst.copy_from_slice(src),
        );
        true
    }

    /// Runs `apply(state, place, run)` for each run of `update` and its place in `acc`
    /// (both in bytes, elements of `esize`), in the order of the runs, prefetching the place
    /// a few runs ahead. A large `acc` whose places all start at multiples of the run (rows
    /// of a table) splits over the threads by destination: each thread takes, in order, the
    /// runs whose places lie in its piece (runs at one place stay on one thread, in order,
    /// so the result is the same). `state` (from `init`, one per thread) is scratch for
    /// `apply`. The caller has checked that every run fits.
    fn for_each_place<S>(
        &self,
        acc: &mut [u8],
        update: &[u8],
        esize: usize,
        bases: &[Option<usize>],
        init: impl Fn() -> S + Sync,
        apply: impl Fn(&mut S, &mut [u8], &[u8]) + Sync,
    ) {
        let bytes = self.run * esize;
        if bytes == 0 {
            return;
        }
        // Run `k`'s place in bytes, computed as it is needed (a list of them would be a
        // large allocation per call for a scatter of many single elements).
        let runs_per_window = self.starts.len().max(1);
        let place = |k: usize| -> Option<usize> {
            let base = (*bases.get(k / runs_per_window)?)?;
            Some((base + *self.starts.get(k % runs_per_window)?) * esize)
        };
        let runs = bases.len() * self.starts.len();
        let aligned = (0..runs).filter_map(place).all(|p| p % bytes == 0);
        let unit = if aligned { bytes } else { acc.len().max(1) };
        // A table in the second-level cache gains nothing from prefetching.
        let prefetch = acc.len() > PREFETCH_FROM_BYTES;
        super::shape::split_bytes(acc, unit, |first, piece| {
            let mut state = init();
            let end = first + piece.len();
            let mine = |k: usize| place(k).filter(|&p| p >= first && p < end);
            for (k, src) in update.chunks_exact(bytes).enumerate().take(runs) {
                if prefetch {
                    if let Some(ahead) = mine(k + PREFETCH_AHEAD) {
                        oxla_simd::prefetch(&piece[ahead - first..ahead - first + bytes]);
                    }
                }
                if let Some(at) = mine(k) {
                    apply(&mut state, &mut piece[at - first..at - first + bytes], src);
                }
            }
        });
    }

    /// Whether every run lies inside an input of `acc_len` bytes and `update` (of
    /// `update_len` bytes) holds exactly one window per base.
    fn fits(
        &self,
        acc_len: usize,
        update_len: usize,
        esize: usize,
        bases: &[Option<usize>],
    ) -> bool {
        let window = self.run * self.starts.len() * esize;
        let last = self.starts.iter().max().map_or(0, |&s| s + self.run);
        update_len == window * bases.len()
            && bases
                .iter()
                .flatten()
                .all(|&b| self.run == 0 || (b + last) * esize <= acc_len)
    }

    /// Combines each run of `update` into its place in `acc` by `kind` (the element kernels
    /// of the elementwise op: `acc = kind(acc, update)`); false, writing nothing, when a
    /// run does not fit or `acc` cannot be viewed as elements of `et`.
    fn scatter_combining(
        &self,
        et: ElementType,
        kind: &OpKind,
        acc: &mut [u8],
        update: &[u8],
        bases: &[Option<usize>],
    ) -> bool {
        if !self.fits(acc.len(), update.len(), et.byte_size(), bases) {
            return false;
        }
        use ElementType as E;
        match (et, kind) {
            // Sums (`x.at[i].add(y)`, segment sums, gradients of gathers), the common case,
            // add in place: no copy of the old values, no kernel call per run.
            (E::F32, OpKind::Add) => self.add_runs(acc, update, bases, |x: f32, y| x + y),
            (E::F64, OpKind::Add) => self.add_runs(acc, update, bases, |x: f64, y| x + y),
            (E::S32, OpKind::Add) => self.add_runs(acc, update, bases, i32::wrapping_add),
            (E::F32, _) => self.combine_runs(float_zip::<f32>, kind, acc, update, bases),
            (E::F64, _) => self.combine_runs(float_zip::<f64>, kind, acc, update, bases),
            (E::S8, _) => self.combine_runs(int_zip::<i8>, kind, acc, update, bases),
            (E::S16, _) => self.combine_runs(int_zip::<i16>, kind, acc, update, bases),
            (E::S32, _) => self.combine_runs(int_zip::<i32>, kind, acc, update, bases),
            (E::S64, _) => self.combine_runs(int_zip::<i64>, kind, acc, update, bases),
            (E::U8, _) => self.combine_runs(int_zip::<u8>, kind, acc, update, bases),
            (E::U16, _) => self.combine_runs(int_zip::<u16>, kind, acc, update, bases),
            (E::U32, _) => self.combine_runs(int_zip::<u32>, kind, acc, update, bases),
            (E::U64, _) => self.combine_runs(int_zip::<u64>, kind, acc, update, bases),
            _ => false,
        }
    }

    /// Combines each run of `update` into its place in `acc` by `add(old, new)`, in place;
    /// false, writing nothing, when `acc` cannot be viewed as elements of `T`.
    fn add_runs<T: Plain>(
        &self,
        acc: &mut [u8],
        update: &[u8],
        bases: &[Option<usize>],
        add: impl Fn(T, T) -> T + Sync,
    ) -> bool {
        self.for_each_typed_place(
            acc,
            update,
            bases,
            || (),
            |_, dst: &mut [T], src| {
                for (d, &s) in dst.iter_mut().zip(src) {
                    *d = add(*d, s);
                }
            },
        )
    }

    /// [`Self::scatter_combining`] on elements of `T`, with `zip(kind, out, a, b)` the
    /// elementwise kernel; each run's old values go through a small buffer, as the kernel
    /// writes a slice other than the ones it reads.
    fn combine_runs<T: Plain>(
        &self,
        zip: impl Fn(&OpKind, &mut [T], &[T], &[T]) -> bool + Sync,
        kind: &OpKind,
        acc: &mut [u8],
        update: &[u8],
        bases: &[Option<usize>],
    ) -> bool {
        let run = self.run;
        self.for_each_typed_place(
            acc,
            update,
            bases,
            || vec![T::default(); run],
            |old, dst, src| {
                old.copy_from_slice(dst);
                zip(kind, dst, old, src);
            },
        )
    }

    /// [`Self::for_each_place`] with the places and runs viewed as elements of `T`; false,
    /// writing nothing, when `acc` cannot be viewed so.
    fn for_each_typed_place<T: Plain, S>(
        &self,
        acc: &mut [u8],
        update: &[u8],
        bases: &[Option<usize>],
        init: impl Fn() -> S + Sync,
        apply: impl Fn(&mut S, &mut [T], &[T]) + Sync,
    ) -> bool {
        if !cfg!(target_endian = "little") || bytemuck::try_cast_slice_mut::<u8, T>(acc).is_err() {
            return false;
        }
        // Aligned once here (copied only if it is not), so each run views as `T`s below.
        let update = super::typed::view_bytes::<T>(update);
        let update: &[u8] = bytemuck::cast_slice(&update);
        let size = std::mem::size_of::<T>();
        self.for_each_place(acc, update, size, bases, init, |state, dst, src| {
            // Places are whole elements inside `acc`, which views as `T`s.
            apply(
                state,
                bytemuck::cast_slice_mut(dst),
                bytemuck::cast_slice(src),
            )
        });
        true
    }
}

/// Whether the elementwise kernels ([`float_zip`], [`int_zip`]) cover `kind` on `et`.
fn combines(et: ElementType, kind: &OpKind) -> bool {
    super::elementwise::zip_bytes(et, kind, &mut [], &[], &[])
}

/// Evaluates `gather`.
pub(crate) fn gather(
    cx: OpCx<'_>,
    operand: &Literal,
    indices: &Literal,
) -> Result<Literal, IrError> {
    let rank = operand.ty.rank();
    let op_ext = extents(&operand.ty.shape);
    let op_str = strides(&op_ext);
    let out_ty = cx.result_tensor(0)?;
    let out_rank = out_ty.rank();
    let offset_dims = distinct_dims(
        cx,
        "offset_dims",
        &cx.i64s_or("offset_dims", Vec::new())?,
        out_rank,
    )?;
    let collapsed = distinct_dims(
        cx,
        "collapsed_slice_dims",
        &cx.i64s_or("collapsed_slice_dims", Vec::new())?,
        rank,
    )?;
    let operand_batching = distinct_dims(
        cx,
        "operand_batching_dims",
        &cx.i64s_or("operand_batching_dims", Vec::new())?,
        rank,
    )?;
    let start_map = cx.dims("start_index_map", &cx.i64s("start_index_map")?, rank)?;
    let slice_sizes = cx.i64s("slice_sizes")?;
    if slice_sizes.len() != rank {
        return Err(cx.invalid("`slice_sizes` must have one entry per operand dimension"));
    }
    let mut sizes = Vec::with_capacity(rank);
    for (d, &s) in slice_sizes.iter().enumerate() {
        let s = usize::try_from(s)
            .ok()
            .filter(|&s| s <= op_ext[d])
            .ok_or_else(|| cx.invalid(format!("slice size {s} does not fit operand dim {d}")))?;
        if (collapsed.contains(&d) || operand_batching.contains(&d)) && s > 1 {
            return Err(cx.invalid(format!(
                "collapsed or batching dim {d} must have slice size 1"
            )));
        }
        sizes.push(s);
    }
    // Clamped there.
    let highest = highest_starts(&start_map, &op_ext, &sizes);
    let index_vector_dim = cx.int("index_vector_dim")?;
    let indices_batching = cx.i64s_or("start_indices_batching_dims", Vec::new())?;
    let direct = (fast_paths() && operand_batching.is_empty() && indices_batching.is_empty())
        .then(|| {
            let (shape, bases) = contiguous_bases(
                indices,
                index_vector_dim,
                &start_map,
                &highest,
                &op_str,
                OutOfRange::Clamp,
            )?;
            Some((shape, bases.into_iter().collect::<Option<Vec<usize>>>()?))
        })
        .flatten();
    let (batch_shape, bases) = match direct {
        Some(direct) => direct,
        None => {
            let batches = batch_starts(
                cx,
                indices,
                index_vector_dim,
                &start_map,
                &operand_batching,
                &indices_batching,
                &op_ext,
            )?;
            let bases: Vec<usize> = batches
                .each()
                .map(|start| {
                    start
                        .iter()
                        .zip(&highest)
                        .zip(&op_str)
                        .map(|((&s, &hi), &st)| {
                            let s = hi.map_or(s, |hi| s.clamp(0, hi));
                            s as usize * st
                        })
                        .sum()
                })
                .collect();
            (batches.shape, bases)
        }
    };
    let win_operand_dims: Vec<usize> = (0..rank)
        .filter(|d| !collapsed.contains(d) && !operand_batching.contains(d))
        .collect();
    if win_operand_dims.len() != offset_dims.len()
        || batch_shape.len() + offset_dims.len() != out_rank
    {
        return Err(cx.invalid("offset dims and batch dims do not make up the result rank"));
    }
    let out_ext = extents(&out_ty.shape);
    let win_ext: Vec<usize> = win_operand_dims.iter().map(|&d| sizes[d]).collect();
    let want_win: Vec<usize> = offset_dims.iter().map(|&d| out_ext[d]).collect();
    let want_batch: Vec<usize> = (0..out_rank)
        .filter(|d| !offset_dims.contains(d))
        .map(|d| out_ext[d])
        .collect();
    if want_win != win_ext
        || want_batch != batch_shape
        || out_ty.element_type != operand.ty.element_type
    {
        return Err(cx.invalid(format!(
            "result type {out_ty} does not match the gathered shape"
        )));
    }
    let esize = operand.ty.element_type.byte_size();
    if fast_paths() && trails(&offset_dims, out_rank) {
        let runs = WindowRuns::new(&win_ext, &win_operand_dims, &op_str);
        let data = runs
            .gather(&operand.data, esize, &bases)
            .ok_or_else(|| cx.invalid("a gathered element lies outside the operand"))?;
        return Literal::new(out_ty.clone(), data);
    }
    let offsets = window_offsets(&win_ext, &win_operand_dims, &op_str);
    let mut data = Vec::with_capacity(out_ty.byte_size().unwrap_or(0));
    let mut ok = true;
    for_each_split(&out_ext, &offset_dims, |b, w| {
        let at = (bases[b] + offsets[w]) * esize;
        match operand.data.get(at..at + esize) {
            Some(bytes) => data.extend_from_slice(bytes),
            None => ok = false,
        }
    });
    if !ok {
        return Err(cx.invalid("a gathered element lies outside the operand"));
    }
    Literal::new(out_ty.clone(), data)
}

impl<'m> Interp<'m> {
    /// Evaluates `scatter` with any number of inputs and any update body; inputs in `moves`
    /// (last uses) are updated in place.
    pub(super) fn exec_scatter(
        &mut self,
        frame: &mut Frame<'m>,
        cx: OpCx<'m>,
        moves: &[ValueId],
    ) -> Result<Vec<Value>, IrError> {
        let n_operands = cx.op.operands.len();
        if n_operands < 3 || n_operands.is_multiple_of(2) {
            return Err(cx.invalid("expects N inputs, the indices and N updates"));
        }
        let n = n_operands / 2;
        cx.expect_results(n)?;
        for &id in &cx.op.operands {
            tensor_operand(frame, cx, id)?;
        }
        let mut lits = Vec::with_capacity(n_operands);
        for value in take_operands(frame, cx.op, moves) {
            match value {
                Value::Tensor(lit) => lits.push(lit),
                _ => return Err(cx.invalid("operands must be tensors")),
            }
        }
        let updates = lits.split_off(n + 1);
        let indices = lits.pop().ok_or_else(|| cx.invalid("missing indices"))?;
        let mut inputs = lits;
        let rank = inputs[0].ty.rank();
        for (i, (x, u)) in inputs.iter().zip(&updates).enumerate() {
            if x.ty.shape != inputs[0].ty.shape || u.ty.shape != updates[0].ty.shape {
                return Err(cx.invalid("all inputs (and all updates) must have one shape"));
            }
            let rt = cx.result_tensor(i)?;
            if *rt != x.ty {
                return Err(cx.invalid(format!("result {i} must have the type of input {i}")));
            }
        }
        let in_ext = extents(&inputs[0].ty.shape);
        let in_str = strides(&in_ext);
        let upd_ext = extents(&updates[0].ty.shape);
        let upd_rank = upd_ext.len();
        let window_dims = distinct_dims(
            cx,
            "update_window_dims",
            &cx.i64s_or("update_window_dims", Vec::new())?,
            upd_rank,
        )?;
        let inserted = distinct_dims(
            cx,
            "inserted_window_dims",
            &cx.i64s_or("inserted_window_dims", Vec::new())?,
            rank,
        )?;
        let input_batching = distinct_dims(
            cx,
            "input_batching_dims",
            &cx.i64s_or("input_batching_dims", Vec::new())?,
            rank,
        )?;
        let to_operand = cx.dims(
            "scatter_dims_to_operand_dims",
            &cx.i64s("scatter_dims_to_operand_dims")?,
            rank,
        )?;
        let win_operand_dims: Vec<usize> = (0..rank)
            .filter(|d| !inserted.contains(d) && !input_batching.contains(d))
            .collect();
        if win_operand_dims.len() != window_dims.len() {
            return Err(cx.invalid("updates shape does not match the indices and window dims"));
        }
        let win_ext: Vec<usize> = window_dims.iter().map(|&d| upd_ext[d]).collect();
        let mut full_win = vec![1usize; rank];
        for (&d, &e) in win_operand_dims.iter().zip(&win_ext) {
            if e > in_ext[d] {
                return Err(cx.invalid(format!("update window is larger than input dim {d}")));
            }
            full_win[d] = e;
        }
        // A batch position whose window leaves the input is skipped entirely.
        let index_vector_dim = cx.int("index_vector_dim")?;
        let indices_batching = cx.i64s_or("scatter_indices_batching_dims", Vec::new())?;
        let highest = highest_starts(&to_operand, &in_ext, &full_win);
        let direct = (fast_paths() && input_batching.is_empty() && indices_batching.is_empty())
            .then(|| {
                contiguous_bases(
                    &indices,
                    index_vector_dim,
                    &to_operand,
                    &highest,
                    &in_str,
                    OutOfRange::Skip,
                )
            })
            .flatten();
        let (batch_shape, bases) = match direct {
            Some(direct) => direct,
            None => {
                let batches = batch_starts(
                    cx,
                    &indices,
                    index_vector_dim,
                    &to_operand,
                    &input_batching,
                    &indices_batching,
                    &in_ext,
                )?;
                let bases: Vec<Option<usize>> = batches
                    .each()
                    .map(|start| {
                        let mut base = 0usize;
                        for d in 0..rank {
                            let s = start[d];
                            if s < 0 || s + full_win[d] as i128 > in_ext[d] as i128 {
                                return None;
                            }
                            base += s as usize * in_str[d];
                        }
                        Some(base)
                    })
                    .collect();
                (batches.shape, bases)
            }
        };
        let upd_batch: Vec<usize> = (0..upd_rank)
            .filter(|d| !window_dims.contains(d))
            .map(|d| upd_ext[d])
            .collect();
        if upd_batch != batch_shape {
            return Err(cx.invalid("updates shape does not match the indices and window dims"));
        }
        let body = classify(super::body::region(cx, 0)?, n);
        // The updates and indices taken at their last use go back to the buffer cache, as
        // the values the interpreter frees do.
        let recycle_rest = |updates: Vec<Literal>| {
            updates.into_iter().for_each(super::recycle);
            super::recycle(indices);
        };
        if fast_paths() && n == 1 && trails(&window_dims, upd_rank) {
            let runs = WindowRuns::new(&win_ext, &win_operand_dims, &in_str);
            if let Some(lit) = runs.scatter(&body.kind, &mut inputs, &updates[0], &bases) {
                recycle_rest(updates);
                return Ok(vec![Value::Tensor(lit)]);
            }
        }
        let offsets = window_offsets(&win_ext, &win_operand_dims, &in_str);
        let mut dsts = Vec::new();
        let mut srcs = Vec::new();
        let mut src = 0usize;
        for_each_split(&upd_ext, &window_dims, |b, w| {
            if let Some(base) = bases[b] {
                dsts.push(base + offsets[w]);
                srcs.push(src);
            }
            src += 1;
        });
        self.combine_all(frame, cx, &body, &mut inputs, &updates, &dsts, &srcs)?;
        recycle_rest(updates);
        Ok(inputs.into_iter().map(Value::Tensor).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::{Attribute, ElementType, OpKind, Type};

    fn gather_attrs(
        offset: &[i64],
        collapsed: &[i64],
        start_map: &[i64],
        ivd: i64,
        sizes: &[i64],
    ) -> Vec<(&'static str, Attribute)> {
        vec![
            ("offset_dims", i64s(offset)),
            ("collapsed_slice_dims", i64s(collapsed)),
            ("start_index_map", i64s(start_map)),
            ("index_vector_dim", int(ivd)),
            ("slice_sizes", i64s(sizes)),
        ]
    }

    #[test]
    fn gather_rows_clamps_out_of_bounds_starts() {
        // x[i] rows of a 3x2 matrix, for i in [2, -5, 7, 0]: -5 clamps to 0, 7 to 2.
        let x = i32s(&[3, 2], &[0, 1, 10, 11, 20, 21]);
        let idx = i32s(&[4, 1], &[2, -5, 7, 0]);
        let r = run_op(
            OpKind::Gather,
            &[x, idx],
            t(&[4, 2], ElementType::S32),
            gather_attrs(&[1], &[0], &[0], 1, &[1, 2]),
        )
        .unwrap();
        assert_eq!(to_i32(&r), vec![20, 21, 0, 1, 20, 21, 0, 1]);
    }

    #[test]
    fn gather_window_clamps_so_the_slice_fits() {
        // Slices of size 2 from a length-5 vector starting at 4 clamp to start 3.
        let x = f32s(&[5], &[0.0, 1.0, 2.0, 3.0, 4.0]);
        let idx = i32s(&[2], &[4, 1]);
        let r = run_op(
            OpKind::Gather,
            &[x, idx],
            t(&[2, 2], ElementType::F32),
            gather_attrs(&[1], &[], &[0], 1, &[2]),
        )
        .unwrap();
        assert_eq!(to_f32(&r), vec![3.0, 4.0, 1.0, 2.0]);
    }

    #[test]
    fn gather_with_batching_dims() {
        // operand [2, 3]: batch b picks element idx[b] of row b (take_along_axis).
        let x = i32s(&[2, 3], &[0, 1, 2, 10, 11, 12]);
        let idx = i32s(&[2, 1], &[2, 1]);
        let mut attrs = gather_attrs(&[], &[1], &[1], 1, &[1, 1]);
        attrs.push(("operand_batching_dims", i64s(&[0])));
        attrs.push(("start_indices_batching_dims", i64s(&[0])));
        let r = run_op(OpKind::Gather, &[x, idx], t(&[2], ElementType::S32), attrs).unwrap();
        assert_eq!(to_i32(&r), vec![2, 11]);
    }

    #[test]
    fn gather_rejects_a_wrong_result_shape() {
        let x = i32s(&[3, 2], &[0; 6]);
        let idx = i32s(&[4, 1], &[0; 4]);
        let r = run_op(
            OpKind::Gather,
            &[x, idx],
            t(&[4, 3], ElementType::S32),
            gather_attrs(&[1], &[0], &[0], 1, &[1, 2]),
        );
        assert!(r.is_err());
    }

    fn scatter_module(
        body: &str,
        input: &crate::Literal,
        idx: &crate::Literal,
        upd: &crate::Literal,
        attrs: Vec<(&'static str, Attribute)>,
    ) -> crate::Module {
        let et = input.ty.element_type;
        let types: Vec<Type> = [input, idx, upd]
            .iter()
            .map(|l| Type::Tensor(l.ty.clone()))
            .collect();
        let (mut b, p) = FuncBuilder::new(&types);
        let s = t(&[], et);
        let region = b.region(&[s.clone(), s.clone()], |b, a| match body {
            "add" => vec![b.op(OpKind::Add, &[a[0], a[1]], s.clone(), vec![])],
            "set" => vec![a[1]],
            "multiply" => vec![b.op(OpKind::Multiply, &[a[0], a[1]], s.clone(), vec![])],
            // old * 2 + new: not a single op, so it takes the general path.
            _ => {
                let two = b.constant(&i32s(&[], &[2]));
                let m = b.op(OpKind::Multiply, &[a[0], two], s.clone(), vec![]);
                vec![b.op(OpKind::Add, &[m, a[1]], s.clone(), vec![])]
            }
        });
        let r = b.op_full(
            OpKind::Scatter,
            &p,
            &[Type::Tensor(input.ty.clone())],
            attrs,
            vec![region],
        );
        b.finish(&r)
    }

    fn scatter_attrs() -> Vec<(&'static str, Attribute)> {
        vec![
            ("update_window_dims", i64s(&[])),
            ("inserted_window_dims", i64s(&[0])),
            ("scatter_dims_to_operand_dims", i64s(&[0])),
            ("index_vector_dim", int(1)),
        ]
    }

    #[test]
    fn scatter_add_accumulates_duplicates_and_skips_out_of_bounds() {
        let x = i32s(&[4], &[1, 1, 1, 1]);
        let idx = i32s(&[5, 1], &[1, 3, 1, 4, -1]);
        let upd = i32s(&[5], &[10, 20, 30, 40, 50]);
        for body in ["add", "general"] {
            let m = scatter_module(body, &x, &idx, &upd, scatter_attrs());
            let r = crate::eval::run_function(&m, "main", &[x.clone(), idx.clone(), upd.clone()])
                .unwrap();
            // add: x[1] += 10 + 30, x[3] += 20; general (old*2+new): x[1] = (1*2+10)*2+30 = 54.
            let want = if body == "add" {
                vec![1, 41, 1, 21]
            } else {
                vec![1, 54, 1, 22]
            };
            assert_eq!(to_i32(&r[0]), want, "{body}");
        }
    }

    #[test]
    fn large_row_scatters_split_over_threads_combine_repeats_in_order() {
        // A table over 2 MiB (the scatter splits over the threads by rows), rows hit several
        // times and rows outside it; each row's updates must combine in their order.
        let (rows, width, n) = (4100usize, 160usize, 3000usize);
        let row_of = |k: usize| -> i32 {
            match k % 97 {
                0 => -1,
                1 => rows as i32,
                _ => ((k * 7919) % 613) as i32 * 6, // repeats: 613 distinct rows
            }
        };
        let idx: Vec<i32> = (0..n).map(row_of).collect();
        let value = |k: usize, j: usize| ((k * 31 + j * 17) % 101) as f32 * 0.37 - 11.0;
        let table: Vec<f32> = (0..rows * width).map(|e| (e % 89) as f32 * 0.5).collect();
        let updates: Vec<f32> = (0..n * width)
            .map(|e| value(e / width, e % width))
            .collect();
        let x = f32s(&[rows as i64, width as i64], &table);
        let ix = i32s(&[n as i64, 1], &idx);
        let u = f32s(&[n as i64, width as i64], &updates);
        let attrs = || {
            vec![
                ("update_window_dims", i64s(&[1])),
                ("inserted_window_dims", i64s(&[0])),
                ("scatter_dims_to_operand_dims", i64s(&[0])),
                ("index_vector_dim", int(1)),
            ]
        };
        for body in ["add", "set", "multiply"] {
            let mut want = table.clone();
            for (k, &r) in idx.iter().enumerate() {
                if r < 0 || r as usize >= rows {
                    continue;
                }
                for j in 0..width {
                    let (old, new) = (&mut want[r as usize * width + j], value(k, j));
                    *old = match body {
                        "add" => *old + new,
                        "set" => new,
                        _ => *old * new,
                    };
                }
            }
            let m = scatter_module(body, &x, &ix, &u, attrs());
            let r =
                crate::eval::run_function(&m, "main", &[x.clone(), ix.clone(), u.clone()]).unwrap();
            let got = r[0].to_f32_vec().unwrap();
            assert!(
                got.iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{body}"
            );
        }
        // Wrapping integer sums, through the same split.
        let xi = i32s(
            &[rows as i64, width as i64],
            &vec![i32::MAX - 5; rows * width],
        );
        let ui = i32s(&[n as i64, width as i64], &vec![3; n * width]);
        let m = scatter_module("add", &xi, &ix, &ui, attrs());
        let r = crate::eval::run_function(&m, "main", &[xi.clone(), ix.clone(), ui]).unwrap();
        let mut want = vec![i32::MAX - 5; rows * width];
        for &r in &idx {
            if r >= 0 && (r as usize) < rows {
                for v in &mut want[r as usize * width..(r as usize + 1) * width] {
                    *v = v.wrapping_add(3);
                }
            }
        }
        assert_eq!(to_i32(&r[0]), want);
    }

    #[test]
    fn scatter_set_replaces_and_skips_windows_that_leave_the_input() {
        // Rows of width 2 written into a 2x3 input at column starts 1 and 2; start 2 would
        // write column 3, which does not exist, so that whole window is dropped.
        let x = i32s(&[2, 3], &[0; 6]);
        let idx = i32s(&[2, 2], &[0, 1, 1, 2]);
        let upd = i32s(&[2, 2], &[7, 8, 9, 9]);
        let attrs = vec![
            ("update_window_dims", i64s(&[1])),
            ("inserted_window_dims", i64s(&[0])),
            ("scatter_dims_to_operand_dims", i64s(&[0, 1])),
            ("index_vector_dim", int(1)),
        ];
        let m = scatter_module("set", &x, &idx, &upd, attrs);
        let r = crate::eval::run_function(&m, "main", &[x, idx, upd]).unwrap();
        assert_eq!(to_i32(&r[0]), vec![0, 7, 8, 0, 0, 0]);
    }
}
