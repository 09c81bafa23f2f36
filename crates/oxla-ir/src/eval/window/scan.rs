//! Cumulative reductions: a `reduce_window` whose window spans a whole dimension (JAX's
//! `cumsum`, `cumprod`, `cummax`, `cummin`, `cumlogsumexp`), in O(n) per line.
//!
//! Run as written, such a window costs O(n^2) per line and the general path's per-position
//! index lists grow with n^2. XLA's CPU backend does not run it as written either: its
//! `ReduceWindowRewriter` (base length 16) turns a scan longer than 16 into a tree, and its
//! order of combination is what JAX's `cpu` results show, so this module follows it:
//!
//! 1. pad the line with init values to a multiple of 16 and cut it into blocks of 16;
//! 2. scan each block as a window of 16 (each output folds its window from the init value
//!    in window order: a running fold forwards, one fold per output backwards);
//! 3. take each block's total (its last output forwards, its first backwards) and scan the
//!    totals exclusively, by the same rule (recursively when there are more than 16);
//! 4. combine each block's outputs with its exclusive total: `body(output, total)`.
//!
//! A scan of at most 16 runs as the plain window (step 2 on one unpadded block). Exclusive
//! scans (padding `n` instead of `n - 1`) are the inclusive scan shifted by one init value.

use super::super::threads;
use super::Geometry;

/// XLA CPU's base length: scans up to this long run as plain windows.
pub(super) const BASE: usize = 16;

/// Lines of elements per parallel task, at least.
const MIN_TASK_ELEMENTS: usize = 1 << 15;

/// A `reduce_window` that is a prefix scan along one dimension: `[outer, len, inner]` in,
/// `[outer, len (+ 1 when exclusive), inner]` out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Scan {
    pub outer: usize,
    pub len: usize,
    pub inner: usize,
    pub reverse: bool,
    pub exclusive: bool,
}

impl Scan {
    /// Output elements per line group (`[len or len + 1, inner]`).
    fn out_len(&self) -> usize {
        (self.len + usize::from(self.exclusive)) * self.inner
    }
}

/// The scan `geo` describes when XLA would rewrite it as a tree: every dimension but one
/// untouched by the window, and that one (longer than [`BASE`]) covered by a window as long,
/// stride 1, no dilation, padded by `n - 1` or `n` on one side only.
pub(super) fn scan_of(geo: &Geometry) -> Option<Scan> {
    let rank = geo.in_ext.len();
    let mut axes = (0..rank).filter(|&d| !geo.untouched(d));
    let axis = axes.next()?;
    if axes.next().is_some() {
        return None;
    }
    let n = geo.in_ext[axis];
    if n <= BASE
        || geo.window[axis] != n
        || geo.strides[axis] != 1
        || geo.base_dil[axis] != 1
        || geo.win_dil[axis] != 1
    {
        return None;
    }
    let n64 = n as i64;
    let (lo, hi) = (geo.pad_lo[axis], geo.pad_hi[axis]);
    let (reverse, pad) = match (lo, hi) {
        (p, 0) if p == n64 - 1 || p == n64 => (false, p),
        (0, p) if p == n64 - 1 || p == n64 => (true, p),
        _ => return None,
    };
    Some(Scan {
        outer: geo.in_ext[..axis].iter().product(),
        len: n,
        inner: geo.in_ext[axis + 1..].iter().product(),
        reverse,
        exclusive: pad == n64,
    })
}

/// Scans `x` (`[outer, len, inner]`) into `out` in XLA's order, with `f` and `init`.
pub(super) fn scan<T, F>(s: &Scan, x: &[T], init: T, f: F, out: &mut [T])
where
    T: Copy + Send + Sync,
    F: Fn(T, T) -> T + Copy + Send + Sync,
{
    let in_len = s.len * s.inner;
    let out_len = s.out_len();
    if in_len == 0 || out_len == 0 {
        return;
    }
    let per_task = (MIN_TASK_ELEMENTS / in_len).max(1);
    let run = |(t, chunk): (usize, &mut [T])| {
        for (k, line) in chunk.chunks_mut(out_len).enumerate() {
            let o = t * per_task + k;
            scan_lines(s, &x[o * in_len..(o + 1) * in_len], init, f, line);
        }
    };
    let tasks = out.chunks_mut(per_task * out_len).enumerate();
    if s.outer > per_task {
        threads::for_each(tasks, run);
    } else {
        tasks.for_each(run);
    }
}

/// One `[len, inner]` group: the inclusive scan, shifted for an exclusive one.
fn scan_lines<T: Copy, F: Fn(T, T) -> T>(s: &Scan, x: &[T], init: T, f: F, out: &mut [T]) {
    let inner = s.inner;
    let body = match (s.exclusive, s.reverse) {
        (false, _) => out,
        (true, false) => {
            let (first, rest) = out.split_at_mut(inner);
            first.fill(init);
            rest
        }
        (true, true) => {
            let (rest, last) = out.split_at_mut(out.len() - inner);
            last.fill(init);
            rest
        }
    };
    inclusive(x, inner, init, s.reverse, &f, body);
}

/// The inclusive scan of the `x.len() / inner` rows of `x` (each `inner` lanes) into `out`.
fn inclusive<T: Copy, F: Fn(T, T) -> T>(
    x: &[T],
    inner: usize,
    init: T,
    reverse: bool,
    f: &F,
    out: &mut [T],
) {
    let n = x.len() / inner;
    if n <= BASE {
        fold_block(x, inner, 0, init, reverse, f, out);
        return;
    }
    let block = BASE * inner;
    let n_blocks = n.div_ceil(BASE);
    let mut totals = Vec::with_capacity(n_blocks * inner);
    for (xb, ob) in x.chunks(block).zip(out.chunks_mut(block)) {
        let pad = BASE - xb.len() / inner;
        fold_block(xb, inner, pad, init, reverse, f, ob);
        let total = if reverse {
            &ob[..inner]
        } else {
            &ob[ob.len() - inner..]
        };
        totals.extend_from_slice(total);
        if pad > 0 && !reverse {
            // The padded rows' outputs are cut off, but the last total folds them in.
            let last = totals.len() - inner;
            for t in &mut totals[last..] {
                for _ in 0..pad {
                    *t = f(*t, init);
                }
            }
        }
    }
    let mut scanned = totals.clone();
    inclusive(&totals, inner, init, reverse, f, &mut scanned);
    // Block b combines with the totals before it (forwards) or after it (backwards).
    for (b, ob) in out.chunks_mut(block).enumerate() {
        let carry = match (reverse, b) {
            (false, 0) => None,
            (false, b) => Some(&scanned[(b - 1) * inner..b * inner]),
            (true, b) if b + 1 == n_blocks => None,
            (true, b) => Some(&scanned[(b + 1) * inner..(b + 2) * inner]),
        };
        match (carry, inner) {
            (Some(&[c]), 1) => ob.iter_mut().for_each(|v| *v = f(*v, c)),
            (Some(c), _) => ob.chunks_mut(inner).for_each(|row| combine_row(row, c, f)),
            (None, _) => ob.iter_mut().for_each(|v| *v = f(*v, init)),
        }
    }
}

/// Scans one block of rows of `x` as windows over it followed by `pad` rows of `init`:
/// forwards, row `i` folds rows `0..=i`; backwards, rows `i..` and the padding. Every
/// output starts from `init` and folds in window order.
fn fold_block<T: Copy, F: Fn(T, T) -> T>(
    x: &[T],
    inner: usize,
    pad: usize,
    init: T,
    reverse: bool,
    f: &F,
    out: &mut [T],
) {
    let n = x.len() / inner;
    if inner == 1 {
        // One lane per row (a scan along the last axis): the same folds on scalars, with
        // no row slices to copy or check.
        if !reverse {
            let mut acc = init;
            for (o, &v) in out.iter_mut().zip(x) {
                acc = f(acc, v);
                *o = acc;
            }
        } else {
            for (i, o) in out.iter_mut().enumerate().take(n) {
                let acc = x[i..].iter().fold(init, |acc, &v| f(acc, v));
                *o = (0..pad).fold(acc, |acc, _| f(acc, init));
            }
        }
        return;
    }
    if !reverse {
        out[..inner].fill(init);
        combine_row(&mut out[..inner], &x[..inner], f);
        for i in 1..n {
            let (done, rest) = out.split_at_mut(i * inner);
            let row = &mut rest[..inner];
            row.copy_from_slice(&done[(i - 1) * inner..]);
            combine_row(row, &x[i * inner..(i + 1) * inner], f);
        }
        return;
    }
    for i in 0..n {
        let row = &mut out[i * inner..(i + 1) * inner];
        row.fill(init);
        for k in i..n {
            combine_row(row, &x[k * inner..(k + 1) * inner], f);
        }
        for _ in 0..pad {
            row.iter_mut().for_each(|v| *v = f(*v, init));
        }
    }
}

/// `acc[l] = f(acc[l], x[l])` for every lane.
#[inline(always)]
fn combine_row<T: Copy, F: Fn(T, T) -> T>(acc: &mut [T], x: &[T], f: &F) {
    for (a, &v) in acc.iter_mut().zip(x) {
        *a = f(*a, v);
    }
}
