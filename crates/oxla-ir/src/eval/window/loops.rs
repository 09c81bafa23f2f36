//! `reduce_window` of one input with a simple body as direct loops over typed elements: each
//! output folds its own window, the windows never materialised as index lists.
//!
//! The window positions of an output are visited in row-major order and positions on
//! padding or base-dilation holes are skipped, as the general path does (one wave per
//! position, in row-major order), so every output combines the same values in the same
//! order and the bits agree. Trailing dimensions the window leaves alone (size 1, stride 1,
//! no padding or dilation: the channels of an NHWC pool) are folded as whole rows, one
//! loop over contiguous elements per window position.

use super::super::context::strides;
use super::super::threads;
use super::{advance, Geometry};

/// Outputs per parallel task: below about this much work a split costs more than it saves.
const MIN_TASK_WORK: usize = 1 << 16;

/// Folds every output's window of `x` into `out` (row-major, `geo.out_ext`) with `f`,
/// starting from `init`.
pub(super) fn fold_windows<T, F>(geo: &Geometry, x: &[T], init: T, f: F, out: &mut [T])
where
    T: Copy + Send + Sync,
    F: Fn(T, T) -> T + Copy + Send + Sync,
{
    let rank = geo.in_ext.len();
    // The first dimension of the trailing run the window leaves alone; never dimension 0,
    // so that at least one dimension is windowed.
    let lanes_from = (1..rank)
        .rev()
        .take_while(|&d| geo.untouched(d))
        .last()
        .unwrap_or(rank);
    let q = lanes_from - 1;
    let lanes: usize = geo.in_ext[lanes_from..].iter().product();
    let row_len = geo.out_ext[q] * lanes;
    if row_len == 0 || out.is_empty() {
        return;
    }
    let n_rows = out.len() / row_len;
    let work_per_row = row_len * geo.window.iter().product::<usize>().max(1);
    let rows_per_task = (MIN_TASK_WORK / work_per_row).max(1);
    let tasks = out.chunks_mut(rows_per_task * row_len).enumerate();
    let run = |(t, chunk): (usize, &mut [T])| {
        let first = t * rows_per_task;
        fold_rows(geo, q, lanes, x, init, f, first, chunk);
    };
    if n_rows > rows_per_task {
        threads::for_each(tasks, run);
    } else {
        tasks.for_each(run);
    }
}

/// Folds the outputs of rows `first..` (a row: one index of the dimensions before `q`, all
/// of `q` and the lanes) into `out`, whole rows.
#[allow(clippy::too_many_arguments)]
fn fold_rows<T: Copy, F: Fn(T, T) -> T>(
    geo: &Geometry,
    q: usize,
    lanes: usize,
    x: &[T],
    init: T,
    f: F,
    first: usize,
    out: &mut [T],
) {
    let in_str = strides(&geo.in_ext);
    let out_q = geo.out_ext[q];
    let mut o = unflatten(first, &geo.out_ext[..q]);
    // Input offsets of the window positions over dimensions before `q`, row-major.
    let mut prefix = Vec::new();
    let mut next = Vec::new();
    // Input offsets of the window positions along `q` for one output.
    let mut along = Vec::new();
    for row in out.chunks_mut(out_q * lanes) {
        prefix.clear();
        prefix.push(0);
        for d in 0..q {
            next.clear();
            for &base in &prefix {
                geo.for_each_source(d, o[d], |i| next.push(base + i * in_str[d]));
            }
            std::mem::swap(&mut prefix, &mut next);
        }
        for (oq, acc) in row.chunks_mut(lanes).enumerate() {
            along.clear();
            geo.for_each_source(q, oq, |i| along.push(i * in_str[q]));
            if let [acc] = acc {
                let mut a = init;
                for &p in &prefix {
                    for &k in &along {
                        a = f(a, x[p + k]);
                    }
                }
                *acc = a;
            } else {
                acc.fill(init);
                for &p in &prefix {
                    for &k in &along {
                        for (a, &v) in acc.iter_mut().zip(&x[p + k..p + k + lanes]) {
                            *a = f(*a, v);
                        }
                    }
                }
            }
        }
        advance(&mut o, &geo.out_ext[..q]);
    }
}

/// The row-major multi-index of flat position `flat` in `ext`.
fn unflatten(mut flat: usize, ext: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; ext.len()];
    for d in (0..ext.len()).rev() {
        if ext[d] > 0 {
            idx[d] = flat % ext[d];
            flat /= ext[d];
        }
    }
    idx
}
