//! Convolutions whose every group pairs one channel of the input with one output feature:
//! a depthwise convolution (`feature_group_count` = channels, one output feature each) and
//! the kernel gradient of one (`batch_group_count` = channels). A matrix product per group
//! would be a dot product of one column; here the channels are the vector lanes instead.
//! For every output position, each (tap, kernel input feature) pair adds the product of two
//! contiguous runs of channels, the input's and the kernel's, into the position's run of
//! the output.

use super::super::threads;
use super::super::typed::ArrayFloat;
use super::{Mac, Plan, PARALLEL_PRODUCT};

/// Where a channel-wise convolution finds its channels: contiguous in the input, in the
/// kernel's output features and in the output's features, one output feature per channel.
#[derive(Debug, PartialEq)]
pub(super) struct Lanes {
    channels: usize,
    /// Input offset of each output batch element (depthwise: the batch; a kernel gradient
    /// has one output batch element).
    lhs_batch: usize,
    /// Kernel input features summed per output element (1 for a depthwise convolution),
    /// and the input's and the kernel's offset of each.
    kernel_in: usize,
    lhs_feature: usize,
    rhs_feature: usize,
}

/// The lane layout of `p`, when it is a channel-wise convolution with its channels
/// contiguous everywhere.
pub(super) fn lanes(p: &Plan) -> Option<Lanes> {
    let contiguous_out = p.rhs_out_stride == 1 && p.out_feature_stride == 1;
    let channels = p.out_features;
    if channels < 2 || !contiguous_out {
        return None;
    }
    // Depthwise: group `g` reads input feature `g` and writes output feature `g`.
    if p.feature_groups == channels
        && p.batch_groups == 1
        && p.kernel_in == 1
        && p.lhs_feature_stride == 1
    {
        return Some(Lanes {
            channels,
            lhs_batch: p.lhs_batch_stride,
            kernel_in: 1,
            lhs_feature: 0,
            rhs_feature: 0,
        });
    }
    // Kernel gradient of a depthwise convolution: group `g` reads input batch element `g`
    // (the forward channel) and writes output feature `g`, summing the kernel's input
    // features (the forward batch).
    if p.batch_groups == channels
        && p.feature_groups == 1
        && p.in_batch == channels
        && p.lhs_batch_stride == 1
    {
        return Some(Lanes {
            channels,
            lhs_batch: 0,
            kernel_in: p.kernel_in,
            lhs_feature: p.lhs_feature_stride,
            rhs_feature: p.rhs_in_stride,
        });
    }
    None
}

/// Elements of each operand one chunk of taps reads for a row, sized so that the chunk's
/// input and kernel runs stay in the second cache level while the rows after it read the
/// same region (a kernel gradient's rows are windows over the whole image).
const CHUNK_ELEMENTS: usize = 1 << 15;

/// Runs `p`, laid out as `lanes` says, into `out` (zeroed). Output rows (batch element,
/// position) split over the threads; `None` when an offset falls outside an operand.
pub(super) fn run<T: ArrayFloat + Mac>(
    p: &Plan,
    lanes: &Lanes,
    lhs: &[T],
    rhs: &[T],
    out: &mut [T],
) -> Option<()> {
    let c = lanes.channels;
    let n_pos = p.taps.len();
    let rows = p.out_batch * n_pos;
    if rows == 0 {
        return Some(());
    }
    let taps: usize = p.taps.iter().map(|t| t.1.len()).sum();
    let work = taps * p.out_batch * lanes.kernel_in * c;
    let parts = if work >= PARALLEL_PRODUCT {
        threads::count().clamp(1, rows.max(1))
    } else {
        1
    };
    let per_part = rows.div_ceil(parts).max(1);
    // Row `k` (batch element `k / n_pos`, position `k % n_pos`) of the output lies at
    // `k * c` when the positions are outermost in order and the batch, if any, above them.
    let in_order = p.taps.iter().enumerate().all(|(q, t)| t.0 == q * c)
        && (p.out_batch <= 1 || p.out_batch_stride == n_pos * c);
    let mut staged = Vec::new();
    let dst = if in_order {
        out.get_mut(..rows * c)?
    } else {
        staged = vec![T::ZERO; rows * c];
        &mut staged[..]
    };
    let done = threads::all_chunks(dst, per_part * c, |j, part| {
        run_rows(p, lanes, lhs, rhs, j * per_part, part).is_some()
    });
    if !done {
        return None;
    }
    if !in_order {
        for (k, row) in staged.chunks_exact(c).enumerate() {
            let at = (k / n_pos) * p.out_batch_stride + p.taps.get(k % n_pos)?.0;
            out.get_mut(at..at + c)?.copy_from_slice(row);
        }
    }
    Some(())
}

/// Rows `first..` of the output into `dst`, whole rows of `lanes.channels` (zeroed), the
/// taps of every row taken a chunk at a time.
fn run_rows<T: ArrayFloat + Mac>(
    p: &Plan,
    lanes: &Lanes,
    lhs: &[T],
    rhs: &[T],
    first: usize,
    dst: &mut [T],
) -> Option<()> {
    let c = lanes.channels;
    let n_pos = p.taps.len();
    let chunk = (CHUNK_ELEMENTS / (lanes.kernel_in * c).max(1)).max(1);
    let longest = p.taps.iter().map(|t| t.1.len()).max().unwrap_or(0);
    oxla_simd::vectorized(
        #[inline(always)]
        || {
            for t0 in (0..longest).step_by(chunk) {
                for (j, row) in dst.chunks_exact_mut(c).enumerate() {
                    let k = first + j;
                    let pairs = &p.taps.get(k % n_pos)?.1;
                    let Some(pairs) = pairs.get(t0..(t0 + chunk).min(pairs.len())) else {
                        continue;
                    };
                    let row_lhs = (k / n_pos) * lanes.lhs_batch;
                    let mut lane = 0;
                    for block in row.chunks_exact_mut(64) {
                        add_products::<T, 64>(block, lhs, rhs, pairs, row_lhs, lane, lanes)?;
                        lane += 64;
                    }
                    let rest = row.chunks_exact_mut(64).into_remainder();
                    let mut blocks = rest.chunks_exact_mut(16);
                    for block in &mut blocks {
                        add_products::<T, 16>(block, lhs, rhs, pairs, row_lhs, lane, lanes)?;
                        lane += 16;
                    }
                    for block in blocks.into_remainder().chunks_exact_mut(1) {
                        add_products::<T, 1>(block, lhs, rhs, pairs, row_lhs, lane, lanes)?;
                        lane += 1;
                    }
                }
            }
            Some(())
        },
    )
}

/// Adds to `acc`, the `N` lanes from `lane` on of a row whose input starts at `row_lhs`,
/// the products of `pairs` (input and kernel offsets of taps) for every kernel input
/// feature, summed in registers.
#[inline(always)]
fn add_products<T: Mac, const N: usize>(
    acc: &mut [T],
    lhs: &[T],
    rhs: &[T],
    pairs: &[(usize, usize)],
    row_lhs: usize,
    lane: usize,
    lanes: &Lanes,
) -> Option<()> {
    let mut sum: [T; N] = (&*acc).try_into().ok()?;
    for i in 0..lanes.kernel_in {
        let (lb, rb) = (
            row_lhs + lane + i * lanes.lhs_feature,
            lane + i * lanes.rhs_feature,
        );
        for &(l, r) in pairs {
            let x: &[T; N] = lhs.get(lb + l..lb + l + N)?.try_into().ok()?;
            let w: &[T; N] = rhs.get(rb + r..rb + r + N)?.try_into().ok()?;
            for k in 0..N {
                sum[k] = T::mac(sum[k], x[k], w[k]);
            }
        }
    }
    acc.copy_from_slice(&sum);
    Some(())
}
