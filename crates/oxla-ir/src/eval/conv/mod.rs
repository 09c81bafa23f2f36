//! `convolution`: general dimension numbers, strides, padding, dilations and groups.
//!
//! Both operands are converted to the result element type (as `dot_general` does) and the
//! sum is computed directly: for every output position, the valid (input, kernel) spatial
//! offset pairs are found once, then reused for every batch, feature and kernel feature.
//! `feature_group_count` splits input features and output features into matching groups;
//! `batch_group_count` splits the batch and the output features the same way.
//! Float convolutions turn each group into matrix products (im2col, see [`run_float`]),
//! except those with one channel per group (depthwise ones and their kernel gradients),
//! which run with the channels as vector lanes ([`channelwise`]); positions that use a few
//! taps each in a few patterns (lhs dilation) run a product per pattern ([`patterns`]);
//! a batch of a few contiguous values (an RGB layer's kernel gradient) sums outer products
//! in registers ([`outer`]).
//! Tests are in `tests.rs`.

use super::context::{extents, strides, OpCx};
use super::convert::convert_array;
use super::dot::Mac;
use super::element::{decode, encode, Array};
use super::gemm::{matmul_into, Strided};
use super::typed::{self, ArrayFloat};
use crate::{IrError, Literal, TensorType};

mod channelwise;
mod outer;
mod patterns;

/// The validated index arithmetic of one convolution.
pub(crate) struct Plan {
    /// Output batch, output features, and flat output index per (batch, feature, spatial).
    out_batch: usize,
    out_features: usize,
    /// Kernel input features per group.
    kernel_in: usize,
    feature_groups: usize,
    batch_groups: usize,
    in_batch: usize,
    lhs_batch_stride: usize,
    lhs_feature_stride: usize,
    rhs_in_stride: usize,
    rhs_out_stride: usize,
    out_batch_stride: usize,
    out_feature_stride: usize,
    /// Per output spatial position: its flat output offset and the (lhs, rhs) offset pairs.
    taps: Vec<(usize, Vec<(usize, usize)>)>,
    n_out: usize,
    /// The window matrix's layout, worked out once with the plan.
    windows: Windows,
}

/// How the im2col window matrix is laid out: its column blocks are the kernel taps some
/// output position uses (in kernel-offset order), `kernel_in` columns each.
#[derive(Debug)]
struct Windows {
    /// The kernel offset of each column block.
    taps: Vec<usize>,
    /// The column block of each kernel offset (`usize::MAX` for unused ones).
    tap_of: Vec<usize>,
    /// With features innermost (NHWC), per output position the copies of its window
    /// (input offset, column, length), `runs[run_starts[q]..run_starts[q + 1]]` for
    /// position `q`: taps whose inputs and columns both follow on from the previous tap's
    /// (the taps along a row of the kernel, say) merge into one run. Empty otherwise.
    runs: Vec<(usize, usize, usize)>,
    run_starts: Vec<usize>,
    /// The positions grouped by the taps they use, when few patterns cover them and the
    /// groups' matrices are much smaller than the whole one (see [`patterns`]); else empty.
    groups: Vec<patterns::PatternGroup>,
}

impl Windows {
    fn new(taps: &[(usize, Vec<(usize, usize)>)], kin: usize, lhs_feature_stride: usize) -> Self {
        let mut used: Vec<bool> = Vec::new();
        for &(_, r) in taps.iter().flat_map(|(_, pairs)| pairs) {
            if r >= used.len() {
                used.resize(r + 1, false);
            }
            used[r] = true;
        }
        let columns: Vec<usize> = (0..used.len()).filter(|&r| used[r]).collect();
        let mut tap_of = vec![usize::MAX; used.len()];
        for (t, &r) in columns.iter().enumerate() {
            tap_of[r] = t;
        }
        let mut runs: Vec<(usize, usize, usize)> = Vec::new();
        let mut run_starts = Vec::new();
        if lhs_feature_stride == 1 {
            run_starts.push(0);
            for (_, pairs) in taps {
                let first = runs.len();
                for &(l, r) in pairs {
                    let d = tap_of[r].saturating_mul(kin);
                    // Runs never reach across positions.
                    let own = runs.len() > first;
                    match runs.last_mut() {
                        Some((l0, d0, len)) if own && *l0 + *len == l && *d0 + *len == d => {
                            *len += kin
                        }
                        _ => runs.push((l, d, kin)),
                    }
                }
                run_starts.push(runs.len());
            }
        }
        Windows {
            groups: patterns::group_positions(taps, &columns, &tap_of),
            taps: columns,
            tap_of,
            runs,
            run_starts,
        }
    }

    /// The copies of position `q`'s window, when the windows are copied in runs.
    fn runs_of(&self, q: usize) -> Option<&[(usize, usize, usize)]> {
        let (&a, &b) = (self.run_starts.get(q)?, self.run_starts.get(q + 1)?);
        self.runs.get(a..b)
    }
}

fn plan(
    cx: OpCx<'_>,
    lhs: &TensorType,
    rhs: &TensorType,
    out: &TensorType,
) -> Result<Plan, IrError> {
    let rank = lhs.rank();
    if rank < 2 || rhs.rank() != rank || out.rank() != rank {
        return Err(cx.invalid("operands and result must have the same rank, at least 2"));
    }
    let n_sp = rank - 2;
    let dim =
        |name: &str| -> Result<usize, IrError> { Ok(cx.dims(name, &[cx.int(name)?], rank)?[0]) };
    let list = |name: &str| -> Result<Vec<usize>, IrError> {
        let v = cx.dims(name, &cx.i64s(name)?, rank)?;
        if v.len() != n_sp {
            return Err(cx.invalid(format!("`{name}` must list {n_sp} dimensions")));
        }
        Ok(v)
    };
    let (ib, ifeat, isp) = (
        dim("input_batch_dimension")?,
        dim("input_feature_dimension")?,
        list("input_spatial_dimensions")?,
    );
    let (ki, ko, ksp) = (
        dim("kernel_input_feature_dimension")?,
        dim("kernel_output_feature_dimension")?,
        list("kernel_spatial_dimensions")?,
    );
    let (ob, ofeat, osp) = (
        dim("output_batch_dimension")?,
        dim("output_feature_dimension")?,
        list("output_spatial_dimensions")?,
    );
    for (what, dims) in [
        ("input", [vec![ib, ifeat], isp.clone()].concat()),
        ("kernel", [vec![ki, ko], ksp.clone()].concat()),
        ("output", [vec![ob, ofeat], osp.clone()].concat()),
    ] {
        let mut seen = vec![false; rank];
        for d in dims {
            if std::mem::replace(&mut seen[d], true) {
                return Err(cx.invalid(format!("{what} dimension numbers repeat dimension {d}")));
            }
        }
    }
    let ones = vec![1i64; n_sp];
    let per_dim = |name: &str, default: Vec<i64>| -> Result<Vec<i64>, IrError> {
        let v = cx.i64s_or(name, default)?;
        if v.len() != n_sp {
            return Err(cx.invalid(format!("`{name}` must have {n_sp} entries")));
        }
        Ok(v)
    };
    let stride = per_dim("window_strides", ones.clone())?;
    let lhs_dil = per_dim("lhs_dilation", ones.clone())?;
    let rhs_dil = per_dim("rhs_dilation", ones)?;
    if stride
        .iter()
        .chain(&lhs_dil)
        .chain(&rhs_dil)
        .any(|&v| v < 1)
    {
        return Err(cx.invalid("strides and dilations must be positive"));
    }
    let padding = cx.i64s_or("padding", vec![0; 2 * n_sp])?;
    if padding.len() != 2 * n_sp {
        return Err(cx.invalid(format!("`padding` must have {n_sp} pairs")));
    }
    let reversal: Vec<bool> = match cx.op.attr("window_reversal") {
        None => vec![false; n_sp],
        Some(crate::Attribute::DenseBoolArray(v)) if v.len() == n_sp => v.clone(),
        Some(_) => return Err(cx.invalid("`window_reversal` must be one bool per spatial dim")),
    };
    let positive = |name: &str| -> Result<usize, IrError> {
        match cx.op.attr(name) {
            None => Ok(1),
            Some(_) => usize::try_from(cx.int(name)?)
                .ok()
                .filter(|&v| v > 0)
                .ok_or_else(|| cx.invalid(format!("`{name}` must be positive"))),
        }
    };
    let feature_groups = positive("feature_group_count")?;
    let batch_groups = positive("batch_group_count")?;
    let (le, re, oe) = (
        extents(&lhs.shape),
        extents(&rhs.shape),
        extents(&out.shape),
    );
    let (ls, rs, os) = (strides(&le), strides(&re), strides(&oe));
    let (in_batch, in_features) = (le[ib], le[ifeat]);
    let (kernel_in, kernel_out) = (re[ki], re[ko]);
    if in_features != kernel_in * feature_groups
        || kernel_out % feature_groups != 0
        || kernel_out % batch_groups != 0
        || in_batch % batch_groups != 0
        || (feature_groups > 1 && batch_groups > 1)
    {
        return Err(cx.invalid(format!(
            "feature sizes (input {in_features}, kernel {kernel_in}x{kernel_out}) and batch \
             {in_batch} do not fit feature_group_count {feature_groups} and batch_group_count \
             {batch_groups}"
        )));
    }
    let mut out_sp = Vec::with_capacity(n_sp);
    for d in 0..n_sp {
        // In i128 so that no attribute value can overflow.
        let dilated = if le[isp[d]] == 0 {
            0
        } else {
            (le[isp[d]] as i128 - 1) * i128::from(lhs_dil[d]) + 1
        };
        let padded = dilated + i128::from(padding[2 * d]) + i128::from(padding[2 * d + 1]);
        let span = if re[ksp[d]] == 0 {
            0
        } else {
            (re[ksp[d]] as i128 - 1) * i128::from(rhs_dil[d]) + 1
        };
        let size = if padded < span {
            0
        } else {
            (padded - span) / i128::from(stride[d]) + 1
        };
        out_sp.push(usize::try_from(size).map_err(|_| cx.invalid("the output is too large"))?);
    }
    let want_sp: Vec<usize> = osp.iter().map(|&d| oe[d]).collect();
    if want_sp != out_sp || oe[ob] != in_batch / batch_groups || oe[ofeat] != kernel_out {
        return Err(cx.invalid(format!(
            "result type {out} does not match the convolution shape"
        )));
    }
    let k_sp: Vec<usize> = ksp.iter().map(|&d| re[d]).collect();
    let n_taps: usize = k_sp.iter().product();
    let n_pos: usize = out_sp.iter().product();
    let mut taps = Vec::with_capacity(n_pos);
    let mut x = vec![0usize; n_sp];
    for _ in 0..n_pos {
        let out_off: usize = (0..n_sp).map(|d| x[d] * os[osp[d]]).sum();
        let mut pairs = Vec::new();
        let mut k = vec![0usize; n_sp];
        for _ in 0..n_taps {
            let mut lhs_off = Some(0usize);
            let mut rhs_off = 0usize;
            for d in 0..n_sp {
                let pos = x[d] as i128 * i128::from(stride[d])
                    + k[d] as i128 * i128::from(rhs_dil[d])
                    - i128::from(padding[2 * d]);
                let dil = i128::from(lhs_dil[d]);
                // The input index, when the position falls on an input element (without
                // lhs dilation, the 128-bit division is skipped: it dominated planning).
                let at = match dil {
                    1 => pos,
                    _ if pos % dil == 0 => pos / dil,
                    _ => -1,
                };
                if at < 0 || at >= le[isp[d]] as i128 {
                    lhs_off = None;
                    break;
                }
                lhs_off = lhs_off.map(|o| o + at as usize * ls[isp[d]]);
                let kk = if reversal[d] {
                    k_sp[d] - 1 - k[d]
                } else {
                    k[d]
                };
                rhs_off += kk * rs[ksp[d]];
            }
            if let Some(l) = lhs_off {
                pairs.push((l, rhs_off));
            }
            advance(&mut k, &k_sp);
        }
        taps.push((out_off, pairs));
        advance(&mut x, &out_sp);
    }
    Ok(Plan {
        out_batch: oe[ob],
        out_features: kernel_out,
        kernel_in,
        feature_groups,
        batch_groups,
        in_batch,
        lhs_batch_stride: ls[ib],
        lhs_feature_stride: ls[ifeat],
        rhs_in_stride: rs[ki],
        rhs_out_stride: rs[ko],
        out_batch_stride: os[ob],
        out_feature_stride: os[ofeat],
        windows: Windows::new(&taps, kernel_in, ls[ifeat]),
        taps,
        n_out: oe.iter().product(),
    })
}

fn advance(idx: &mut [usize], ext: &[usize]) {
    for d in (0..idx.len()).rev() {
        idx[d] += 1;
        if idx[d] < ext[d] {
            return;
        }
        idx[d] = 0;
    }
}

fn run<T: Mac>(p: &Plan, lhs: &[T], rhs: &[T]) -> Vec<T> {
    let mut out = vec![T::zero(); p.n_out];
    let per_feature_group = p.out_features / p.feature_groups;
    let per_batch_group = p.out_features / p.batch_groups;
    let batch_per_group = p.in_batch / p.batch_groups;
    for nb in 0..p.out_batch {
        for o in 0..p.out_features {
            let group = o / per_feature_group;
            let n = (o / per_batch_group) * batch_per_group + nb;
            let out_base = nb * p.out_batch_stride + o * p.out_feature_stride;
            for (out_off, pairs) in &p.taps {
                let mut acc = T::zero();
                for i in 0..p.kernel_in {
                    let c = group * p.kernel_in + i;
                    let lhs_base = n * p.lhs_batch_stride + c * p.lhs_feature_stride;
                    let rhs_base = i * p.rhs_in_stride + o * p.rhs_out_stride;
                    for &(l, r) in pairs {
                        acc = T::mac(acc, lhs[lhs_base + l], rhs[rhs_base + r]);
                    }
                }
                out[out_base + out_off] = acc;
            }
        }
    }
    out
}

/// Products of at least this many multiply-adds split their blocks over threads.
const PARALLEL_PRODUCT: usize = 1 << 20;

/// The float convolution as matrix products (im2col): per group, batch element and block
/// of output positions, the input windows become the rows of a matrix whose columns are
/// (kernel tap, input feature) pairs, multiplied by the kernel laid out the same way.
/// `None` when a product's views do not fit (the caller then takes the direct loop).
/// `out` (`p.n_out` elements) must be zeroed. Large products with the output written in
/// place split their blocks over threads, each building its own window matrix.
fn run_float<T: ArrayFloat + Mac>(p: &Plan, lhs: &[T], rhs: &[T], out: &mut [T]) -> Option<()> {
    let taps = &p.windows.taps;
    let tap_of = &p.windows.tap_of;
    let copies_runs = !p.windows.run_starts.is_empty();
    let kin = p.kernel_in;
    let kdim = taps.len() * kin;
    let groups = p.feature_groups.max(p.batch_groups);
    let per_group = p.out_features / groups;
    let batch_per_group = p.in_batch / p.batch_groups;
    let n_pos = p.taps.len();
    // No output position, no output feature, or no tap or input feature to sum over:
    // every output is the empty sum.
    if n_pos == 0 || per_group == 0 || kdim == 0 {
        return Some(());
    }
    // One channel per group (depthwise): the channels are the vector lanes.
    if let Some(lanes) = channelwise::lanes(p) {
        return channelwise::run(p, &lanes, lhs, rhs, out);
    }
    // Rows of the window matrix are (batch element, output position) pairs, so one
    // product covers many batch elements; the matrix is bounded to 2^17 elements, so it
    // stays in the second cache level between being built and being read.
    let total = p.out_batch * n_pos;
    let block = ((1usize << 17) / kdim.max(1)).clamp(1, total.max(1));
    // Large products split their blocks over the threads (at least one block each).
    let threads = if total * kdim * per_group >= PARALLEL_PRODUCT {
        super::threads::count().max(1)
    } else {
        1
    };
    let block = block.min(total.div_ceil(threads)).max(1);
    // With one group and the output's features innermost after its positions in order
    // (NHWC), the product's rows are consecutive runs of the output: it writes there.
    let direct = groups == 1
        && p.out_feature_stride == 1
        && p.out_batch_stride == n_pos * per_group
        && p.taps.iter().enumerate().all(|(q, t)| t.0 == q * per_group);
    // A batch of a few values innermost (the kernel gradient of a layer over RGB images)
    // with the kernel's features contiguous: outer products summed in registers.
    if outer::fits(p) {
        return outer::run(p, lhs, rhs, out);
    }
    // Inputs with their batch innermost (an NHWC convolution's kernel gradient) copy their
    // windows in runs along the batch, a few output positions at a time.
    if groups == 1 && p.in_batch > 1 && p.lhs_batch_stride == 1 {
        return run_by_position(p, lhs, rhs, out);
    }
    // Positions using a few of the taps each (an lhs-dilated convolution's): a product per
    // pattern of taps.
    if groups == 1 && !p.windows.groups.is_empty() {
        return patterns::run(p, lhs, rhs, out);
    }
    let mut w = vec![T::ZERO; kdim * per_group];
    // The window matrix of products on this thread (threaded ones build their own).
    let mut a = vec![
        T::ZERO;
        if direct && threads > 1 {
            0
        } else {
            block * kdim
        }
    ];
    let mut c = vec![T::ZERO; if direct { 0 } else { block * per_group }];
    for g in 0..groups {
        kernel_matrix(p, rhs, &p.windows.taps, g, per_group, &mut w)?;
        let c0 = if p.feature_groups > 1 { g * kin } else { 0 };
        let batch_of = |q: usize| {
            let nb = q / n_pos;
            let n = if p.batch_groups > 1 {
                g * batch_per_group + nb
            } else {
                nb
            };
            (nb, n, q % n_pos)
        };
        // Row `k` of `a` is the window of row `start + k` of the product.
        let fill = |start: usize, a: &mut [T]| -> Option<()> {
            for (k, arow) in a.chunks_exact_mut(kdim).enumerate() {
                let (_, n, pos) = batch_of(start + k);
                // Taps falling into the padding stay zero; a full row is overwritten.
                if p.taps.get(pos)?.1.len() != taps.len() {
                    arow.fill(T::ZERO);
                }
                let lhs_base = n * p.lhs_batch_stride + c0 * p.lhs_feature_stride;
                if copies_runs {
                    // Features innermost (NHWC): one contiguous copy per run of taps.
                    for &(l, d, len) in p.windows.runs_of(pos)? {
                        let src = lhs.get(lhs_base + l..lhs_base + l + len)?;
                        copy_run(arow.get_mut(d..d + len)?, src);
                    }
                    continue;
                }
                for &(l, r) in &p.taps.get(pos)?.1 {
                    let t = *tap_of.get(r)?;
                    let dst = arow.get_mut(t * kin..(t + 1) * kin)?;
                    for (i, d) in dst.iter_mut().enumerate() {
                        *d = lhs.get(lhs_base + i * p.lhs_feature_stride + l).copied()?;
                    }
                }
            }
            Some(())
        };
        let sa = Strided {
            offset: 0,
            row: kdim,
            col: 1,
        };
        let sw = Strided {
            offset: 0,
            row: per_group,
            col: 1,
        };
        if direct && threads > 1 {
            // Blocks of rows over the threads, each building its own window matrix and
            // running its products on its own thread, into its own rows of the output.
            let rows_out = out.get_mut(..total * per_group)?;
            let mut parts: Vec<Vec<(usize, &mut [T])>> = (0..threads).map(|_| Vec::new()).collect();
            for (b, c) in rows_out.chunks_mut(block * per_group).enumerate() {
                parts[b % threads].push((b * block, c));
            }
            let mut done = vec![true; threads];
            let (fill, w) = (&fill, &w);
            // Each thread's window matrix comes from its buffer cache: `fill` writes every
            // element of the rows it is given.
            super::threads::for_each(parts.into_iter().zip(done.iter_mut()), |(part, ok)| {
                typed::with_scratch(block * kdim, |a: &mut [T]| {
                    for (start, c) in part {
                        let rows = c.len() / per_group;
                        let a = &mut a[..rows * kdim];
                        *ok &= fill(start, a).is_some()
                            && oxla_simd::matmul(rows, kdim, per_group, a, sa, w, sw, c, false);
                    }
                })
            });
            return done.iter().all(|&ok| ok).then_some(());
        }
        for start in (0..total).step_by(block) {
            let rows = block.min(total - start);
            let a = &mut a[..rows * kdim];
            fill(start, a)?;
            if direct {
                let c = out.get_mut(start * per_group..(start + rows) * per_group)?;
                if !matmul_into(rows, kdim, per_group, a, sa, &w, sw, c, true) {
                    return None;
                }
                continue;
            }
            let c = &mut c[..rows * per_group];
            if !matmul_into(rows, kdim, per_group, a, sa, &w, sw, c, true) {
                return None;
            }
            for (k, crow) in c.chunks_exact(per_group).enumerate() {
                let (nb, _, pos) = batch_of(start + k);
                let base = nb * p.out_batch_stride
                    + p.taps.get(pos)?.0
                    + g * per_group * p.out_feature_stride;
                if p.out_feature_stride == 1 {
                    out.get_mut(base..base + per_group)?.copy_from_slice(crow);
                } else {
                    for (oo, &v) in crow.iter().enumerate() {
                        out[base + oo * p.out_feature_stride] = v;
                    }
                }
            }
        }
    }
    Some(())
}

/// Copies `src` into `dst` (of the same length): a short run in fixed-size pieces, cheaper
/// than a `memcpy` call (which a plain loop over the last few elements would become).
fn copy_run<T: Copy>(dst: &mut [T], src: &[T]) {
    let len = dst.len().min(src.len());
    if len > 256 {
        dst[..len].copy_from_slice(&src[..len]);
        return;
    }
    let mut pieces = dst[..len].chunks_exact_mut(8);
    for (d, s) in (&mut pieces).zip(src.chunks_exact(8)) {
        d.copy_from_slice(s);
    }
    let rest = pieces.into_remainder();
    let tail = &src[len - rest.len()..len];
    macro_rules! fixed {
        ($($n:literal)*) => {
            match rest.len() {
                $($n => rest[..$n].copy_from_slice(&tail[..$n]),)*
                _ => {}
            }
        };
    }
    fixed!(1 2 3 4 5 6 7);
}

/// Writes into `w` the kernel of group `g` as the right-hand side of [`run_float`]'s
/// products: row `t * kernel_in + i` holds the `per_group` output features of kernel
/// offset `taps[t]` (the window matrix's tap block `t`) and kernel input feature `i`.
fn kernel_matrix<T: ArrayFloat>(
    p: &Plan,
    rhs: &[T],
    taps: &[usize],
    g: usize,
    per_group: usize,
    w: &mut [T],
) -> Option<()> {
    let kin = p.kernel_in;
    for (t, &r) in taps.iter().enumerate() {
        for i in 0..kin {
            let row = w.get_mut((t * kin + i) * per_group..(t * kin + i + 1) * per_group)?;
            let first = i * p.rhs_in_stride + g * per_group * p.rhs_out_stride + r;
            if p.rhs_out_stride == 1 {
                copy_run(row, rhs.get(first..first + per_group)?);
                continue;
            }
            for (oo, wv) in row.iter_mut().enumerate() {
                *wv = *rhs.get(first + oo * p.rhs_out_stride)?;
            }
        }
    }
    Some(())
}

/// Elements of one window chunk of [`run_by_position`], sized to stay in the second cache
/// level while its product reads it.
const POSITION_CHUNK: usize = 1 << 16;

/// Rows [`run_by_position`] gives each product at least, taking several positions of a
/// small batch together (a product of a few rows spends its time packing the kernel).
const POSITION_ROWS: usize = 64;

/// Blocks of the result [`run_by_position`] computed on one thread: the first position of
/// each and its `(position, batch) x out_features` values.
type PositionBlocks<T> = Vec<(usize, Vec<T>)>;

/// The float convolution a few output positions at a time, for an input whose batch
/// dimension is innermost and one group (the kernel gradient of an NHWC convolution, where
/// the forward pass's batch is the input feature and its channels the batch). For a run of
/// output positions, the `(position, batch) x out_features` block of the result is the
/// window matrix (columns: the window's (tap, input feature) pairs, each a contiguous run
/// of the batch per position, copied) times the kernel rows of [`kernel_matrix`]; a long
/// window is summed in chunks of taps that stay in cache, accumulating into the block.
/// Runs of positions split over the threads. `out` must be zeroed.
fn run_by_position<T: ArrayFloat>(p: &Plan, lhs: &[T], rhs: &[T], out: &mut [T]) -> Option<()> {
    let (batch, features, kin) = (p.out_batch, p.out_features, p.kernel_in);
    let n_taps = p.windows.taps.len();
    let n_pos = p.taps.len();
    let mut w = vec![T::ZERO; n_taps * kin * features];
    kernel_matrix(p, rhs, &p.windows.taps, 0, features, &mut w)?;
    let work = n_pos * n_taps * kin * batch * features;
    let threads = if work >= PARALLEL_PRODUCT {
        super::threads::count().clamp(1, n_pos.max(1))
    } else {
        1
    };
    // Positions per product (enough for every thread to have one), and its rows.
    let span = POSITION_ROWS
        .div_ceil(batch.max(1))
        .min(n_pos.div_ceil(threads))
        .max(1);
    let rows_max = span * batch;
    let runs = n_pos.div_ceil(span);
    // Taps per chunk: the copied windows stay within `POSITION_CHUNK` elements.
    let chunk_taps = (POSITION_CHUNK / (kin * rows_max).max(1)).clamp(1, n_taps.max(1));
    // The block of positions `q0..q1`, rows `(q - q0) * batch + b`, into `c` (zeroed);
    // `offsets` is a work area for the input offset of every (position, tap) of a chunk.
    let block = |q0: usize,
                 q1: usize,
                 windows: &mut [T],
                 offsets: &mut Vec<usize>,
                 c: &mut [T]|
     -> Option<()> {
        let m = (q1 - q0) * batch;
        let positions = p.taps.get(q0..q1)?;
        let mut started = false;
        for t0 in (0..n_taps).step_by(chunk_taps) {
            let t1 = (t0 + chunk_taps).min(n_taps);
            let width = t1 - t0;
            offsets.clear();
            offsets.resize((q1 - q0) * width, usize::MAX);
            let mut present = false;
            for (j, (_, pairs)) in positions.iter().enumerate() {
                for &(l, r) in pairs {
                    let t = *p.windows.tap_of.get(r)?;
                    if (t0..t1).contains(&t) {
                        offsets[j * width + t - t0] = l;
                        present = true;
                    }
                }
            }
            if !present {
                continue;
            }
            let rows = width * kin;
            let a = windows.get_mut(..rows * m)?;
            // Row `(t, i)` holds each position's run of the batch in turn (zeros for a tap
            // in the padding), so the copies write the window chunk in order.
            for (k, row) in a.chunks_exact_mut(m).enumerate() {
                let (t, i) = (k / kin, k % kin);
                for (j, dst) in row.chunks_exact_mut(batch).enumerate() {
                    match offsets[j * width + t] {
                        usize::MAX => dst.fill(T::ZERO),
                        l => {
                            let src = l + i * p.lhs_feature_stride;
                            copy_run(dst, lhs.get(src..src + batch)?);
                        }
                    }
                }
            }
            // The copies are the window matrix stored by columns.
            let sa = Strided {
                offset: 0,
                row: 1,
                col: m,
            };
            let sw = Strided {
                offset: t0 * kin * features,
                row: features,
                col: 1,
            };
            let done = if started {
                oxla_simd::matmul_add(m, rows, features, a, sa, &w, sw, c, false)
            } else {
                oxla_simd::matmul(m, rows, features, a, sa, &w, sw, c, false)
            };
            if !done {
                return None;
            }
            started = true;
        }
        Some(())
    };
    // Each thread takes every `threads`-th run of positions and returns its blocks.
    let mut parts: Vec<Option<PositionBlocks<T>>> = vec![None; threads];
    super::threads::for_each(parts.iter_mut().enumerate(), |(k, part)| {
        let mut blocks = Vec::new();
        let mut offsets = Vec::new();
        let ok = typed::with_scratch(chunk_taps * kin * rows_max, |windows: &mut [T]| {
            (k..runs).step_by(threads).all(|run| {
                let (q0, q1) = (run * span, ((run + 1) * span).min(n_pos));
                let mut c = vec![T::ZERO; (q1 - q0) * batch * features];
                let ok = block(q0, q1, windows, &mut offsets, &mut c).is_some();
                blocks.push((q0, c));
                ok
            })
        });
        *part = ok.then_some(blocks);
    });
    // Output `(b, o)` of position `q` is at `q`'s offset plus these strides.
    let (obs, ofs) = (p.out_batch_stride, p.out_feature_stride);
    for part in parts {
        for (q0, c) in part? {
            for (k, row) in c.chunks_exact(features).enumerate() {
                let base = p.taps.get(q0 + k / batch)?.0 + (k % batch) * obs;
                for (o, &v) in row.iter().enumerate() {
                    *out.get_mut(base + o * ofs)? = v;
                }
            }
        }
    }
    Some(())
}

/// The convolution on `T` (f32 or f64) operands of the result's element type, read in
/// place; `None` when they are not, or when [`run_float`] declines.
fn convolution_float<T: ArrayFloat + Mac>(
    p: &Plan,
    lhs: &Literal,
    rhs: &Literal,
    out_ty: &TensorType,
) -> Option<Result<Literal, IrError>> {
    if out_ty.element_type != T::ET {
        return None;
    }
    let (x, y) = (typed::view::<T>(lhs)?, typed::view::<T>(rhs)?);
    let mut done = false;
    let lit = typed::build::<T>(out_ty.clone(), p.n_out, |out| {
        done = run_float(p, &x, &y, out).is_some();
    });
    done.then_some(lit)
}

/// [`run_float`], or [`run`] where it declines.
fn run_float_or_loop<T: ArrayFloat + Mac>(p: &Plan, lhs: &[T], rhs: &[T]) -> Vec<T> {
    let mut out = vec![T::zero(); p.n_out];
    match run_float(p, lhs, rhs, &mut out) {
        Some(()) => out,
        None => run(p, lhs, rhs),
    }
}

/// The plan of `convolution` op `cx` on operands of types `lhs` and `rhs`: where each
/// output position reads, computed once per op and operand types (see `PlanCache`).
pub(crate) fn plan_for(cx: OpCx<'_>, lhs: &TensorType, rhs: &TensorType) -> Result<Plan, IrError> {
    plan(cx, lhs, rhs, cx.result_tensor(0)?)
}

/// Evaluates `convolution` with `p`, its plan for the operands' types.
pub(crate) fn convolution_with(
    cx: OpCx<'_>,
    lhs: &Literal,
    rhs: &Literal,
    p: &Plan,
) -> Result<Literal, IrError> {
    let out_ty = cx.result_tensor(0)?;
    let et = out_ty.element_type;
    let fast = convolution_float::<f32>(p, lhs, rhs, out_ty)
        .or_else(|| convolution_float::<f64>(p, lhs, rhs, out_ty));
    if let Some(res) = fast {
        return res;
    }
    let a = convert_array(&decode(lhs), et);
    let b = convert_array(&decode(rhs), et);
    let out = match (a, b) {
        (Array::Pred(x), Array::Pred(y)) => Array::Pred(run(p, &x, &y)),
        (Array::S8(x), Array::S8(y)) => Array::S8(run(p, &x, &y)),
        (Array::S16(x), Array::S16(y)) => Array::S16(run(p, &x, &y)),
        (Array::S32(x), Array::S32(y)) => Array::S32(run(p, &x, &y)),
        (Array::S64(x), Array::S64(y)) => Array::S64(run(p, &x, &y)),
        (Array::U8(x), Array::U8(y)) => Array::U8(run(p, &x, &y)),
        (Array::U16(x), Array::U16(y)) => Array::U16(run(p, &x, &y)),
        (Array::U32(x), Array::U32(y)) => Array::U32(run(p, &x, &y)),
        (Array::U64(x), Array::U64(y)) => Array::U64(run(p, &x, &y)),
        // Narrower float operands widened to an f32/f64 result: the same kernel as
        // operands of the result type, so the two give the same sums.
        (Array::F32(x), Array::F32(y)) => Array::F32(run_float_or_loop(p, &x, &y)),
        (Array::F64(x), Array::F64(y)) => Array::F64(run_float_or_loop(p, &x, &y)),
        (Array::C64(x), Array::C64(y)) => Array::C64(run(p, &x, &y)),
        (Array::C128(x), Array::C128(y)) => Array::C128(run(p, &x, &y)),
        _ => return Err(cx.invalid("operands do not convert to the result element type")),
    };
    encode(&out, out_ty.clone())
}

#[cfg(test)]
mod tests;
