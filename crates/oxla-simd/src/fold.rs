//! Lane-wise folds of a contiguous f32 row: the inner loop of a reduction along the last
//! axis (a row sum, a row maximum), with enough independent accumulators to hide the
//! latency of each vector add or max.
//!
//! Every level computes the same bits: lane `j` folds `x[j], x[32 + j], x[64 + j], ...`
//! from left to right, whatever the vector width.

/// The number of independent accumulators of [`fold_lanes_f32`].
pub const FOLD_LANES: usize = 32;

/// How [`fold_lanes_f32`] combines an accumulator `a` with the next element `b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaneFold {
    /// `a + b`.
    Add,
    /// `if b > a { b } else { a }`: a NaN `b` is skipped (and noted).
    Max,
    /// `if b < a { b } else { a }`: a NaN `b` is skipped (and noted).
    Min,
}

/// The [`FOLD_LANES`] accumulators of a lane-wise fold of the whole chunks of `x` (elements
/// past the last whole chunk are not read; the first chunk starts the accumulators), and
/// whether any element read was NaN (always `false` for [`LaneFold::Add`]). `None` when
/// `x` holds less than one chunk.
pub fn fold_lanes_f32(x: &[f32], op: LaneFold) -> Option<([f32; FOLD_LANES], bool)> {
    if x.len() < FOLD_LANES {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    match super::level() {
        // SAFETY: `level()` reported AVX-512 (F, BW, DQ, VL) on this CPU.
        super::Level::Avx512 => return Some(unsafe { x86::fold_lanes_avx512(x, op) }),
        // SAFETY: `level()` reported AVX2 (and FMA) on this CPU.
        super::Level::Avx2 => return Some(unsafe { x86::fold_lanes_avx2(x, op) }),
        super::Level::Baseline => {}
    }
    Some(fold_lanes_scalar(x, op))
}

/// The definition, for every CPU.
fn fold_lanes_scalar(x: &[f32], op: LaneFold) -> ([f32; FOLD_LANES], bool) {
    let mut chunks = x.chunks_exact(FOLD_LANES);
    let mut acc = [0.0f32; FOLD_LANES];
    acc.copy_from_slice(chunks.next().unwrap_or(&[0.0; FOLD_LANES]));
    let mut nan = op != LaneFold::Add && acc.iter().any(|v| v.is_nan());
    for c in chunks {
        for (a, &b) in acc.iter_mut().zip(c) {
            *a = match op {
                LaneFold::Add => *a + b,
                LaneFold::Max => {
                    if b > *a {
                        b
                    } else {
                        *a
                    }
                }
                LaneFold::Min => {
                    if b < *a {
                        b
                    } else {
                        *a
                    }
                }
            };
        }
        if op != LaneFold::Add {
            nan |= c.iter().any(|v| v.is_nan());
        }
    }
    (acc, nan)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{LaneFold, FOLD_LANES};
    use std::arch::x86_64::*;

    /// [`super::fold_lanes_scalar`] on four AVX2 registers per accumulator set.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn fold_lanes_avx2(x: &[f32], op: LaneFold) -> ([f32; FOLD_LANES], bool) {
        let mut chunks = x.chunks_exact(FOLD_LANES);
        let first = chunks.next().expect("the caller checked one whole chunk");
        let load = |c: &[f32], i: usize| {
            debug_assert_eq!(c.len(), FOLD_LANES);
            // SAFETY: `c` is one whole chunk of FOLD_LANES = 32 elements and `i < 4`, so the
            // eight floats at `8 * i` lie inside it; the load is unaligned.
            unsafe { _mm256_loadu_ps(c.as_ptr().add(8 * i)) }
        };
        let mut acc = [0, 1, 2, 3].map(|i| load(first, i));
        // Lane `j` of `ordered[k]` stays all ones while no element read in lanes `j` and
        // `8 + j` (k = 0) or `16 + j` and `24 + j` (k = 1) of a chunk was NaN: one ordered
        // compare of two registers per pair, two chains so neither waits on the other.
        let mut ordered = [
            _mm256_cmp_ps::<_CMP_ORD_Q>(acc[0], acc[1]),
            _mm256_cmp_ps::<_CMP_ORD_Q>(acc[2], acc[3]),
        ];
        match op {
            LaneFold::Add => {
                for c in chunks {
                    for (i, a) in acc.iter_mut().enumerate() {
                        *a = _mm256_add_ps(*a, load(c, i));
                    }
                }
            }
            LaneFold::Max | LaneFold::Min => {
                let max = op == LaneFold::Max;
                for c in chunks {
                    let b = [0, 1, 2, 3].map(|i| load(c, i));
                    for (a, &b) in acc.iter_mut().zip(&b) {
                        // `maxps(b, a)` is `b > a ? b : a`, NaN `b` giving `a`.
                        *a = if max {
                            _mm256_max_ps(b, *a)
                        } else {
                            _mm256_min_ps(b, *a)
                        };
                    }
                    ordered[0] = _mm256_and_ps(ordered[0], _mm256_cmp_ps::<_CMP_ORD_Q>(b[0], b[1]));
                    ordered[1] = _mm256_and_ps(ordered[1], _mm256_cmp_ps::<_CMP_ORD_Q>(b[2], b[3]));
                }
            }
        }
        let mut out = [0.0f32; FOLD_LANES];
        for (i, a) in acc.iter().enumerate() {
            // SAFETY: `out` holds 32 floats and `8 * i + 8 <= 32`; the store is unaligned.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(8 * i), *a) };
        }
        let any_nan = op != LaneFold::Add
            && _mm256_movemask_ps(_mm256_and_ps(ordered[0], ordered[1])) != 0xff;
        (out, any_nan)
    }

    /// [`super::fold_lanes_scalar`] on two AVX-512 registers per accumulator set, NaNs
    /// noted in a mask register: half the instructions of the AVX2 loop, which matters when
    /// the row is in cache.
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
    pub(super) fn fold_lanes_avx512(x: &[f32], op: LaneFold) -> ([f32; FOLD_LANES], bool) {
        let mut chunks = x.chunks_exact(FOLD_LANES);
        let first = chunks.next().expect("the caller checked one whole chunk");
        let load = |c: &[f32], i: usize| {
            debug_assert_eq!(c.len(), FOLD_LANES);
            // SAFETY: `c` is one whole chunk of FOLD_LANES = 32 elements and `i < 2`, so the
            // sixteen floats at `16 * i` lie inside it; the load is unaligned.
            unsafe { _mm512_loadu_ps(c.as_ptr().add(16 * i)) }
        };
        let mut acc = [0, 1].map(|i| load(first, i));
        // Lane `j` of `ordered` stays set while no element read in lane `j` or `16 + j`
        // was NaN: one masked compare per chunk, chained through the mask register.
        let mut ordered: __mmask16 = _mm512_cmp_ps_mask::<_CMP_ORD_Q>(acc[0], acc[1]);
        match op {
            LaneFold::Add => {
                for c in chunks {
                    acc[0] = _mm512_add_ps(acc[0], load(c, 0));
                    acc[1] = _mm512_add_ps(acc[1], load(c, 1));
                }
            }
            LaneFold::Max | LaneFold::Min => {
                let max = op == LaneFold::Max;
                for c in chunks {
                    let b = [load(c, 0), load(c, 1)];
                    // `maxps(b, a)` is `b > a ? b : a`, NaN `b` giving `a`.
                    for (a, &b) in acc.iter_mut().zip(&b) {
                        *a = if max {
                            _mm512_max_ps(b, *a)
                        } else {
                            _mm512_min_ps(b, *a)
                        };
                    }
                    ordered = _mm512_mask_cmp_ps_mask::<_CMP_ORD_Q>(ordered, b[0], b[1]);
                }
            }
        }
        let mut out = [0.0f32; FOLD_LANES];
        for (i, a) in acc.iter().enumerate() {
            // SAFETY: `out` holds 32 floats and `16 * i + 16 <= 32`; the store is unaligned.
            unsafe { _mm512_storeu_ps(out.as_mut_ptr().add(16 * i), *a) };
        }
        (out, op != LaneFold::Add && ordered != 0xffff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                match s % 32 {
                    0 => 0.0,
                    1 => -0.0,
                    2 => f32::INFINITY,
                    3 => f32::NEG_INFINITY,
                    _ => (s >> 8) as f32 / 4096.0 - 2048.0,
                }
            })
            .collect()
    }

    /// Every level this CPU runs: the definition, then the vector loops it supports.
    fn levels() -> Vec<LevelFold> {
        let mut all: Vec<LevelFold> = vec![|x, op| fold_lanes_scalar(x, op)];
        #[cfg(target_arch = "x86_64")]
        {
            use crate::Level;
            if crate::level() != Level::Baseline {
                // SAFETY: `level()` reported AVX2 (and FMA) on this CPU.
                all.push(|x, op| unsafe { x86::fold_lanes_avx2(x, op) });
            }
            if crate::level() == Level::Avx512 {
                // SAFETY: `level()` reported AVX-512 on this CPU.
                all.push(|x, op| unsafe { x86::fold_lanes_avx512(x, op) });
            }
        }
        all
    }

    type LevelFold = fn(&[f32], LaneFold) -> ([f32; FOLD_LANES], bool);

    #[test]
    fn every_level_gives_the_definitions_bits() {
        let bits = |(l, n): ([f32; FOLD_LANES], bool)| (l.map(f32::to_bits), n);
        for fold in levels() {
            for n in [32, 33, 64, 95, 1000, 4096] {
                for op in [LaneFold::Add, LaneFold::Max, LaneFold::Min] {
                    let mut x = values(n, n as u32);
                    let (want, nan) = fold_lanes_scalar(&x, op);
                    assert_eq!(bits(fold(&x, op)), (want.map(f32::to_bits), nan));
                    assert!(!nan);
                    // A NaN inside the whole chunks is noted by max and min, in the first
                    // chunk too; one past them is not read.
                    for at in [
                        5,
                        10,
                        17,
                        26,
                        n / 64 * 32 + 5,
                        n / 64 * 32 + 12,
                        n / 64 * 32 + 30,
                    ] {
                        let keep = x[at];
                        x[at] = f32::NAN;
                        assert_eq!(fold(&x, op).1, op != LaneFold::Add, "NaN at {at} of {n}");
                        x[at] = keep;
                    }
                    if n % 32 != 0 {
                        x[n - 1] = f32::NAN;
                        assert!(!fold(&x, op).1);
                    }
                }
            }
        }
        assert_eq!(fold_lanes_f32(&[1.0; 31], LaneFold::Add), None);
    }

    #[test]
    fn lanes_fold_left_to_right() {
        let x: Vec<f32> = (0..96).map(|i| i as f32).collect();
        let (sums, _) = fold_lanes_f32(&x, LaneFold::Add).unwrap();
        let (maxs, _) = fold_lanes_f32(&x, LaneFold::Max).unwrap();
        let (mins, _) = fold_lanes_f32(&x, LaneFold::Min).unwrap();
        for j in 0..32 {
            let j32 = j as f32;
            assert_eq!(sums[j], 3.0 * j32 + 96.0);
            assert_eq!(maxs[j], j32 + 64.0);
            assert_eq!(mins[j], j32);
        }
    }
}
