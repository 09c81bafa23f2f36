//! Convolutions whose input batch is a few contiguous values and whose kernel's output
//! features are contiguous: the kernel gradient of an NHWC layer over RGB or grayscale
//! images, where JAX makes the forward channels (three) the batch and the forward batch the
//! summed feature. An im2col matrix would copy runs of three floats; here every output
//! position keeps its `batch x features` block in registers and, for each (tap, kernel input
//! feature) pair of its window, adds the outer product of the input's few batch values and
//! the kernel's run of output features.

use super::super::threads;
use super::super::typed::ArrayFloat;
use super::{Mac, Plan, PARALLEL_PRODUCT};

/// The largest batch kept in registers: four rows of 16 lanes.
const MAX_BATCH: usize = 4;

/// Output features per register block.
const LANES: usize = 16;

/// Whether `p` runs here: one group, at most [`MAX_BATCH`] batch elements innermost in the
/// input (its features apart: an im2col row would copy runs of the batch alone), output
/// features contiguous in the kernel and enough of them to fill vector lanes.
pub(super) fn fits(p: &Plan) -> bool {
    p.feature_groups == 1
        && p.batch_groups == 1
        && (1..=MAX_BATCH).contains(&p.in_batch)
        && p.lhs_batch_stride == 1
        && p.lhs_feature_stride > 1
        && p.rhs_out_stride == 1
        && p.out_features >= LANES / 2
}

/// Runs `p` (which [`fits`]) into `out` (zeroed): output positions split over the threads;
/// `None` when an offset falls outside an operand or the output.
pub(super) fn run<T: ArrayFloat + Mac>(
    p: &Plan,
    lhs: &[T],
    rhs: &[T],
    out: &mut [T],
) -> Option<()> {
    let n_pos = p.taps.len();
    let block = p.in_batch * p.out_features;
    if n_pos == 0 || block == 0 {
        return Some(());
    }
    let taps: usize = p.taps.iter().map(|t| t.1.len()).sum();
    let work = taps * p.kernel_in * block;
    let parts = if work >= PARALLEL_PRODUCT {
        threads::count().clamp(1, n_pos)
    } else {
        1
    };
    let per_part = n_pos.div_ceil(parts);
    // Each position's `batch x features` block, written to the output afterwards.
    let mut blocks = vec![T::ZERO; n_pos * block];
    let done = threads::all_chunks(&mut blocks, per_part * block, |j, part| {
        oxla_simd::vectorized(
            #[inline(always)]
            || {
                for (k, dst) in part.chunks_exact_mut(block).enumerate() {
                    position(p, lhs, rhs, j * per_part + k, dst)?;
                }
                Some(())
            },
        )
        .is_some()
    });
    if !done {
        return None;
    }
    for ((at, _), values) in p.taps.iter().zip(blocks.chunks_exact(block)) {
        for (b, row) in values.chunks_exact(p.out_features).enumerate() {
            let base = at + b * p.out_batch_stride;
            if p.out_feature_stride == 1 {
                out.get_mut(base..base + row.len())?.copy_from_slice(row);
            } else {
                for (o, &v) in row.iter().enumerate() {
                    *out.get_mut(base + o * p.out_feature_stride)? = v;
                }
            }
        }
    }
    Some(())
}

/// The `batch x features` block of output position `q` into `dst`, [`LANES`] features at a
/// time (then one at a time), with the batch as a constant for the register block.
#[inline(always)]
fn position<T: Mac>(p: &Plan, lhs: &[T], rhs: &[T], q: usize, dst: &mut [T]) -> Option<()> {
    match p.in_batch {
        1 => features::<T, 1>(p, lhs, rhs, q, dst),
        2 => features::<T, 2>(p, lhs, rhs, q, dst),
        3 => features::<T, 3>(p, lhs, rhs, q, dst),
        _ => features::<T, 4>(p, lhs, rhs, q, dst),
    }
}

/// [`position`] for a batch of `B`.
#[inline(always)]
fn features<T: Mac, const B: usize>(
    p: &Plan,
    lhs: &[T],
    rhs: &[T],
    q: usize,
    dst: &mut [T],
) -> Option<()> {
    let f = p.out_features;
    let mut lane = 0;
    while lane + LANES <= f {
        let sums = outer_sums::<T, B, LANES>(p, lhs, rhs, q, lane)?;
        for (b, row) in sums.iter().enumerate() {
            dst.get_mut(b * f + lane..b * f + lane + LANES)?
                .copy_from_slice(row);
        }
        lane += LANES;
    }
    while lane < f {
        let sums = outer_sums::<T, B, 1>(p, lhs, rhs, q, lane)?;
        for (b, row) in sums.iter().enumerate() {
            *dst.get_mut(b * f + lane)? = row[0];
        }
        lane += 1;
    }
    Some(())
}

/// The sums of output position `q` for the `N` features from `lane` on and every batch
/// element: for each (input, kernel) offset pair of its window and each kernel input
/// feature, the batch values times the kernel's run of features, added in registers.
#[inline(always)]
fn outer_sums<T: Mac, const B: usize, const N: usize>(
    p: &Plan,
    lhs: &[T],
    rhs: &[T],
    q: usize,
    lane: usize,
) -> Option<[[T; N]; B]> {
    let mut sums = [[T::zero(); N]; B];
    let pairs = &p.taps.get(q)?.1;
    for i in 0..p.kernel_in {
        let (lb, rb) = (i * p.lhs_feature_stride, lane + i * p.rhs_in_stride);
        for &(l, r) in pairs {
            let w: &[T; N] = rhs.get(rb + r..rb + r + N)?.try_into().ok()?;
            for (b, row) in sums.iter_mut().enumerate() {
                let x = *lhs.get(lb + l + b * p.lhs_batch_stride)?;
                for k in 0..N {
                    row[k] = T::mac(row[k], x, w[k]);
                }
            }
        }
    }
    Some(sums)
}
