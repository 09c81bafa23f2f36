//! `reduce_window` of one input with a simple body, and the selection of
//! `select_and_scatter` with a plain comparison, as direct loops over typed elements: each
//! output folds its own window, the windows never materialised as index lists.
//!
//! The window positions of an output are visited in row-major order and positions on
//! padding or base-dilation holes are skipped, as the general path does (one wave per
//! position, in row-major order), so every output combines the same values (or compares
//! the same candidates) in the same order and the bits agree. Trailing dimensions the window leaves alone (size 1, stride 1,
//! no padding or dilation: the channels of an NHWC pool) are folded as whole rows, one
//! loop over contiguous elements per window position.

use super::super::context::strides;
use super::super::threads;
use super::{advance, Geometry};

/// Outputs per parallel task: below about this much work a split costs more than it saves.
const MIN_TASK_WORK: usize = 1 << 16;

/// What each output accumulates over its window.
pub(super) trait WindowFold: Sync {
    type Acc: Copy + Send + Sync;
    /// The accumulator before the first position.
    fn start(&self) -> Self::Acc;
    /// Folds the input element at flat index `at` into `acc`.
    fn fold_one(&self, acc: Self::Acc, at: usize) -> Self::Acc;
    /// Folds the elements at `at..at + acc.len()` into `acc`, lane by lane.
    fn fold_row(&self, acc: &mut [Self::Acc], at: usize);
}

/// `reduce_window`: `acc = f(acc, x)` from `init`.
pub(super) struct Reduce<'a, T, F> {
    pub x: &'a [T],
    pub init: T,
    pub f: F,
}

impl<T: Copy + Send + Sync, F: Fn(T, T) -> T + Sync> WindowFold for Reduce<'_, T, F> {
    type Acc = T;
    fn start(&self) -> T {
        self.init
    }
    #[inline(always)]
    fn fold_one(&self, acc: T, at: usize) -> T {
        (self.f)(acc, self.x[at])
    }
    #[inline(always)]
    fn fold_row(&self, acc: &mut [T], at: usize) {
        let x = &self.x[at..at + acc.len()];
        for (a, &v) in acc.iter_mut().zip(x) {
            *a = (self.f)(*a, v);
        }
    }
}

/// No selection yet: the window has had no real element.
pub(super) const NONE: usize = usize::MAX;

/// `select_and_scatter`'s selection: the first real element, then each candidate replaces
/// the selection unless `keep(selected, candidate)`.
pub(super) struct Select<'a, T, P> {
    pub x: &'a [T],
    pub keep: P,
}

impl<T: Copy + Sync, P: Fn(T, T) -> bool + Sync> WindowFold for Select<'_, T, P> {
    type Acc = usize;
    fn start(&self) -> usize {
        NONE
    }
    #[inline(always)]
    fn fold_one(&self, acc: usize, at: usize) -> usize {
        if acc == NONE || !(self.keep)(self.x[acc], self.x[at]) {
            at
        } else {
            acc
        }
    }
    fn fold_row(&self, acc: &mut [usize], at: usize) {
        for (c, a) in acc.iter_mut().enumerate() {
            *a = self.fold_one(*a, at + c);
        }
    }
}

/// Folds every output's window into `out` (row-major, `geo.out_ext`) with `fold`, then
/// applies `finish` to each task's outputs while they are still in cache.
pub(super) fn fold_windows<W: WindowFold>(
    geo: &Geometry,
    fold: &W,
    out: &mut [W::Acc],
    finish: impl Fn(&mut [W::Acc]) + Sync,
) {
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
    let run = |(t, chunk): (usize, &mut [W::Acc])| {
        oxla_simd::vectorized(
            #[inline(always)]
            || {
                fold_rows(geo, q, lanes, fold, t * rows_per_task, chunk);
                finish(chunk);
            },
        );
    };
    if n_rows > rows_per_task {
        threads::for_each(tasks, run);
    } else {
        tasks.for_each(run);
    }
}

/// Lanes folded together in registers: an NHWC pool's channels, 32 at a time.
const LANE_BLOCK: usize = 32;

/// Folds the outputs of rows `first..` (a row: one index of the dimensions before `q`, all
/// of `q` and the lanes) into `out`, whole rows. Lanes go [`LANE_BLOCK`] at a time through
/// every window position in a local block the compiler keeps in vector registers, so each
/// output is stored once instead of once per position.
#[inline(always)]
fn fold_rows<W: WindowFold>(
    geo: &Geometry,
    q: usize,
    lanes: usize,
    fold: &W,
    first: usize,
    out: &mut [W::Acc],
) {
    let in_str = strides(&geo.in_ext);
    let out_q = geo.out_ext[q];
    let mut o = unflatten(first, &geo.out_ext[..q]);
    // Input offsets of the window positions over dimensions before `q`, row-major.
    let mut prefix = Vec::new();
    let mut next = Vec::new();
    // Input offsets of the window positions along `q`, output after output (the same for
    // every row): those of output `oq` are `along[along_at[oq]..along_at[oq + 1]]`.
    let mut along = Vec::new();
    let mut along_at = vec![0];
    for oq in 0..out_q {
        geo.for_each_source(q, oq, |i| along.push(i * in_str[q]));
        along_at.push(along.len());
    }
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
            let along = &along[along_at[oq]..along_at[oq + 1]];
            if let [acc] = acc {
                let mut a = fold.start();
                for &p in &prefix {
                    for &k in along {
                        a = fold.fold_one(a, p + k);
                    }
                }
                *acc = a;
            } else {
                let mut blocks = acc.chunks_exact_mut(LANE_BLOCK);
                let mut c = 0;
                for acc in &mut blocks {
                    let mut block = [fold.start(); LANE_BLOCK];
                    for &p in &prefix {
                        for &k in along {
                            fold.fold_row(&mut block, p + k + c);
                        }
                    }
                    acc.copy_from_slice(&block);
                    c += LANE_BLOCK;
                }
                let rest = blocks.into_remainder();
                if !rest.is_empty() {
                    rest.fill(fold.start());
                    for &p in &prefix {
                        for &k in along {
                            fold.fold_row(rest, p + k + c);
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
