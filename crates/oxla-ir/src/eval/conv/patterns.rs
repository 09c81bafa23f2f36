//! Convolutions whose output positions each use a few of the kernel's taps, in a few
//! patterns: the input gradient of a strided convolution (a convolution with lhs
//! dilation), where a position's window falls on input elements at one to four of a 3x3
//! kernel's nine taps, which ones depending on the position's phase. One window matrix for
//! all positions would hold every tap's columns, mostly zeros; instead the positions are
//! grouped by the taps they use and each group runs its own product over those taps only.

use super::super::gemm::matmul_into;
use super::super::gemm::Strided;
use super::super::threads;
use super::super::typed::{self, ArrayFloat};
use super::{copy_run, kernel_matrix, Plan, PARALLEL_PRODUCT};
use std::collections::HashMap;

/// Output positions whose window matrix shares its columns: the kernel taps they use.
#[derive(Debug, PartialEq)]
pub(super) struct PatternGroup {
    /// The kernel offsets of the taps, in kernel order.
    pub(super) taps: Vec<usize>,
    /// Per column block of the whole window matrix (`Windows::taps`), its block in this
    /// group's matrix (`usize::MAX` where the group does not use it).
    block_of: Vec<usize>,
    /// The positions, in order.
    pub(super) positions: Vec<usize>,
}

/// Distinct tap patterns beyond which grouping is not tried.
const MAX_PATTERNS: usize = 256;

/// Groups the positions of `taps` (per position, its output offset and (input, kernel)
/// offset pairs) by the kernel taps they use. A pattern joins the smallest group whose taps
/// hold its own when it uses at least half of them (the positions at an edge, whose windows
/// lose a row or column of taps) or holds under 1/64 of the positions (a corner's);
/// otherwise it starts a group.
/// Empty when there are many patterns or grouping would drop under a quarter of the window
/// matrix's elements (a forward convolution, whose padded edges are its only short rows).
pub(super) fn group_positions(
    taps: &[(usize, Vec<(usize, usize)>)],
    columns: &[usize],
    tap_of: &[usize],
) -> Vec<PatternGroup> {
    let mut patterns: HashMap<Vec<usize>, Vec<usize>> = HashMap::new();
    for (q, (_, pairs)) in taps.iter().enumerate() {
        let used: Vec<usize> = pairs.iter().map(|&(_, r)| r).collect();
        patterns.entry(used).or_default().push(q);
        if patterns.len() > MAX_PATTERNS {
            return Vec::new();
        }
    }
    let mut patterns: Vec<(Vec<usize>, Vec<usize>)> = patterns.into_iter().collect();
    // Largest patterns first, so that a subset finds its superset; ties by first position.
    patterns.sort_by_key(|(used, positions)| (std::cmp::Reverse(used.len()), positions[0]));
    let mut groups: Vec<(Vec<usize>, Vec<usize>)> = Vec::new();
    for (used, positions) in patterns {
        let few = positions.len() * 64 <= taps.len();
        let home = groups
            .iter_mut()
            .filter(|(g, _)| {
                (used.len() * 2 >= g.len() || few) && used.iter().all(|r| g.contains(r))
            })
            .min_by_key(|(g, _)| g.len());
        match home {
            Some((_, members)) => members.extend(positions),
            None => groups.push((used, positions)),
        }
    }
    let grouped: usize = groups.iter().map(|(g, m)| g.len() * m.len()).sum();
    if groups.len() < 2 || grouped * 4 > columns.len() * taps.len() * 3 {
        return Vec::new();
    }
    groups
        .into_iter()
        .map(|(used, mut positions)| {
            positions.sort_unstable();
            let mut block_of = vec![usize::MAX; columns.len()];
            for (b, &r) in used.iter().enumerate() {
                if let Some(t) = tap_of.get(r) {
                    block_of[*t] = b;
                }
            }
            PatternGroup {
                taps: used,
                block_of,
                positions,
            }
        })
        .collect()
}

/// Runs `p` (one group, its positions grouped in `p.windows.groups`) into `out` (zeroed):
/// per position group, the rows (batch element, position) of its window matrix hold only
/// the group's taps, times the kernel rows of those taps. When the output's batch is its
/// outermost dimension, ranges of batch elements split over the threads, each writing its
/// own part of the output. `None` when a view does not fit.
pub(super) fn run<T: ArrayFloat>(p: &Plan, lhs: &[T], rhs: &[T], out: &mut [T]) -> Option<()> {
    let groups = &p.windows.groups;
    let (kin, features, batch) = (p.kernel_in, p.out_features, p.out_batch);
    if batch == 0 {
        return Some(());
    }
    let kernels = groups
        .iter()
        .map(|g| {
            let mut w = vec![T::ZERO; g.taps.len() * kin * features];
            kernel_matrix(p, rhs, &g.taps, 0, features, &mut w).map(|()| w)
        })
        .collect::<Option<Vec<_>>>()?;
    let work: usize = groups
        .iter()
        .map(|g| g.taps.len() * g.positions.len())
        .sum::<usize>()
        * kin
        * features
        * batch;
    // The output's batch is outermost when every position's outputs lie within one batch
    // stride and the batch strides cover the output.
    let span = p
        .taps
        .iter()
        .map(|(o, _)| o + (features - 1) * p.out_feature_stride)
        .max()?;
    let batch_outermost = span < p.out_batch_stride && batch * p.out_batch_stride == p.n_out;
    let parts = if work >= PARALLEL_PRODUCT && batch_outermost {
        threads::count().clamp(1, batch.max(1))
    } else {
        1
    };
    let per_part = batch.div_ceil(parts).max(1);
    // The parts the batch makes (fewer than asked when it does not divide evenly).
    let parts = batch.div_ceil(per_part);
    let stride = if parts > 1 {
        per_part * p.out_batch_stride
    } else {
        p.n_out
    };
    let done = threads::all_chunks(out, stride, |j, region| {
        let first = j * per_part;
        let count = per_part.min(batch - first);
        groups
            .iter()
            .zip(&kernels)
            .all(|(g, w)| run_group(p, g, w, lhs, first, count, region, parts == 1).is_some())
    });
    done.then_some(())
}

/// Window-matrix elements of one product, sized to stay in the second cache level.
const BLOCK_ELEMENTS: usize = 1 << 17;

/// The rows of group `g` for batch elements `first..first + count` into `region` (the
/// output from batch element `first` on), `w` the group's kernel rows.
#[allow(clippy::too_many_arguments)]
fn run_group<T: ArrayFloat>(
    p: &Plan,
    g: &PatternGroup,
    w: &[T],
    lhs: &[T],
    first: usize,
    count: usize,
    region: &mut [T],
    threaded: bool,
) -> Option<()> {
    let (kin, features) = (p.kernel_in, p.out_features);
    let kdim = g.taps.len() * kin;
    let n = g.positions.len();
    let total = count * n;
    if total == 0 || kdim == 0 {
        return Some(());
    }
    let block = (BLOCK_ELEMENTS / kdim).clamp(1, total);
    let sa = Strided {
        offset: 0,
        row: kdim,
        col: 1,
    };
    let sw = Strided {
        offset: 0,
        row: features,
        col: 1,
    };
    typed::with_scratch(block * (kdim + features), |scratch: &mut [T]| {
        let (a, c) = scratch.split_at_mut(block * kdim);
        for start in (0..total).step_by(block) {
            let rows = block.min(total - start);
            let a = &mut a[..rows * kdim];
            for (k, arow) in a.chunks_exact_mut(kdim).enumerate() {
                let (nb, q) = ((start + k) / n, *g.positions.get((start + k) % n)?);
                let pairs = &p.taps.get(q)?.1;
                if pairs.len() != g.taps.len() {
                    arow.fill(T::ZERO);
                }
                let base = (first + nb) * p.lhs_batch_stride;
                for &(l, r) in pairs {
                    let b = *g.block_of.get(*p.windows.tap_of.get(r)?)?;
                    let dst = arow.get_mut(b * kin..(b + 1) * kin)?;
                    if p.lhs_feature_stride == 1 {
                        copy_run(dst, lhs.get(base + l..base + l + kin)?);
                        continue;
                    }
                    for (i, d) in dst.iter_mut().enumerate() {
                        *d = *lhs.get(base + l + i * p.lhs_feature_stride)?;
                    }
                }
            }
            let c = &mut c[..rows * features];
            if !matmul_into(rows, kdim, features, a, sa, w, sw, c, threaded) {
                return None;
            }
            for (k, crow) in c.chunks_exact(features).enumerate() {
                let (nb, q) = ((start + k) / n, *g.positions.get((start + k) % n)?);
                let at = nb * p.out_batch_stride + p.taps.get(q)?.0;
                if p.out_feature_stride == 1 {
                    region.get_mut(at..at + features)?.copy_from_slice(crow);
                    continue;
                }
                for (o, &v) in crow.iter().enumerate() {
                    *region.get_mut(at + o * p.out_feature_stride)? = v;
                }
            }
        }
        Some(())
    })
}
