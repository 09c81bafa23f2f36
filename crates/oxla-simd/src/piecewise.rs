//! Odd functions of f32 evaluated as sixteen polynomials, one per interval of `|x|`, whose
//! coefficients are picked per lane from registers: sixteen intervals are one AVX-512
//! register per coefficient (one `vpermps` each), or two AVX2 registers and a blend.
//!
//! [`OddPiecewise::eval`] is the definition; [`OddPiecewise::map`] applies it to a slice on
//! the widest vectors the CPU has, with the same operations in the same order, so every
//! level computes the same bits.

/// The intervals of an [`OddPiecewise`] function.
pub const INTERVALS: usize = 16;

/// The coefficients per interval (a polynomial of degree 5 in the offset `s`).
pub const COEFFICIENTS: usize = 6;

/// The sign bit of an f32.
const SIGN: u32 = 0x8000_0000;

/// An odd function `f(x) = sign(x) g(|x|)`, with `g` evaluated on `a = min(|x|, clamp)`:
/// `a` falls in interval `i = floor(a * scale)` (below [`INTERVALS`]), at offset
/// `s = (a * scale - i) - center[i]` from a point inside it, and
/// `p = c[5][i] s^5 + ... + c[0][i]` by Horner's rule in fused multiply-adds. Interval 0
/// gives `a + a p` (so `g(a) / a` is what `1 + p` fits, accurate relative to small `a`);
/// every other interval gives `base[i] + s p`. NaN stays NaN (in interval 0).
#[derive(Clone, Copy, Debug)]
pub struct OddPiecewise {
    /// Magnitudes above this evaluate as this; `clamp * scale` must stay below 16.
    pub clamp: f32,
    /// Intervals per unit of `|x|`, a power of two (so `a * scale` is exact).
    pub scale: f32,
    /// Where in each interval `s` is 0, in units of the interval's width (0.5: the
    /// middle). Centers of intervals 1 to 15 at points where `g` is close to an f32 keep
    /// `base`'s rounding error small.
    pub center: [f32; INTERVALS],
    /// `coefficients[k][i]`: the coefficient of `s^k` in interval `i`.
    pub coefficients: [[f32; INTERVALS]; COEFFICIENTS],
    /// The constant term of intervals 1 to 15 (`base[0]` is not read).
    pub base: [f32; INTERVALS],
}

impl OddPiecewise {
    /// The function at `x`.
    #[inline]
    pub fn eval(&self, x: f32) -> f32 {
        let a = x.abs();
        let a = if a > self.clamp { self.clamp } else { a };
        let q = a * self.scale;
        let f = q.floor();
        // NaN converts to 0, as the vector conversion's low four bits give.
        let i = (f as usize) % INTERVALS;
        let s = (q - f) - self.center[i];
        let mut p = self.coefficients[COEFFICIENTS - 1][i];
        for k in (0..COEFFICIENTS - 1).rev() {
            p = p.mul_add(s, self.coefficients[k][i]);
        }
        let (m, b) = if i == 0 { (a, a) } else { (s, self.base[i]) };
        // The sign of `x` flips the result's: `f(-x) = -f(x)`.
        let r = m.mul_add(p, b);
        f32::from_bits(r.to_bits() ^ (x.to_bits() & SIGN))
    }

    /// `dst[j] = self.eval(src[j])` for every `j` below both lengths.
    pub fn map(&self, src: &[f32], dst: &mut [f32]) {
        let n = src.len().min(dst.len());
        let (src, dst) = (&src[..n], &mut dst[..n]);
        #[cfg(target_arch = "x86_64")]
        match super::level() {
            // SAFETY: `level()` reported AVX-512 (F, BW, DQ, VL) on this CPU.
            super::Level::Avx512 => return unsafe { x86::map_avx512(self, src, dst) },
            // SAFETY: `level()` reported AVX2 (and FMA) on this CPU.
            super::Level::Avx2 => return unsafe { x86::map_avx2(self, src, dst) },
            super::Level::Baseline => {}
        }
        for (d, &x) in dst.iter_mut().zip(src) {
            *d = self.eval(x);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{OddPiecewise, COEFFICIENTS, INTERVALS};
    use std::arch::x86_64::*;

    /// Rounding control of `roundscale`: toward negative infinity, exceptions suppressed.
    const FLOOR: i32 = _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC;

    /// [`OddPiecewise::eval`] sixteen lanes at a time, each coefficient table one register
    /// read through `vpermps` by the interval index; the tail through masked loads.
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
    pub(super) fn map_avx512(g: &OddPiecewise, src: &[f32], dst: &mut [f32]) {
        debug_assert_eq!(src.len(), dst.len());
        let table = |t: &[f32; INTERVALS]| {
            // SAFETY: `t` holds sixteen floats; the load is unaligned.
            unsafe { _mm512_loadu_ps(t.as_ptr()) }
        };
        let c: [__m512; COEFFICIENTS] = std::array::from_fn(|k| table(&g.coefficients[k]));
        let base = table(&g.base);
        let center = table(&g.center);
        let clamp = _mm512_set1_ps(g.clamp);
        let scale = _mm512_set1_ps(g.scale);
        let magnitude = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fff_ffff));
        let low_four = _mm512_set1_epi32(INTERVALS as i32 - 1);
        let eval = |x: __m512| {
            let a = _mm512_and_ps(x, magnitude);
            // `minps(c, a)` is `c < a ? c : a`: a NaN `a` stays.
            let a = _mm512_min_ps(clamp, a);
            let q = _mm512_mul_ps(a, scale);
            let f = _mm512_roundscale_ps::<FLOOR>(q);
            // NaN converts to 0x80000000, whose low four bits pick interval 0.
            let i = _mm512_and_si512(_mm512_cvttps_epi32(f), low_four);
            let s = _mm512_sub_ps(_mm512_sub_ps(q, f), _mm512_permutexvar_ps(i, center));
            let mut p = _mm512_permutexvar_ps(i, c[COEFFICIENTS - 1]);
            for k in (0..COEFFICIENTS - 1).rev() {
                p = _mm512_fmadd_ps(p, s, _mm512_permutexvar_ps(i, c[k]));
            }
            let first = _mm512_testn_epi32_mask(i, i);
            let m = _mm512_mask_mov_ps(s, first, a);
            let b = _mm512_mask_mov_ps(_mm512_permutexvar_ps(i, base), first, a);
            let r = _mm512_fmadd_ps(m, p, b);
            // `r ^ (x & !magnitude)`: the sign of `x` flips the result's.
            _mm512_castsi512_ps(_mm512_ternarylogic_epi32::<0xc6>(
                _mm512_castps_si512(magnitude),
                _mm512_castps_si512(r),
                _mm512_castps_si512(x),
            ))
        };
        let mut chunks = dst.chunks_exact_mut(16);
        let mut from = src.chunks_exact(16);
        for (d, x) in (&mut chunks).zip(&mut from) {
            // SAFETY: `x` and `d` are sixteen floats each; loads and stores are unaligned.
            unsafe { _mm512_storeu_ps(d.as_mut_ptr(), eval(_mm512_loadu_ps(x.as_ptr()))) };
        }
        let (d, x) = (chunks.into_remainder(), from.remainder());
        if !x.is_empty() {
            let k: __mmask16 = (1u32 << x.len()) as u16 - 1;
            // SAFETY: the mask covers the `x.len() == d.len() < 16` floats of the tails;
            // masked-off lanes are neither read nor written.
            unsafe {
                let v = _mm512_maskz_loadu_ps(k, x.as_ptr());
                _mm512_mask_storeu_ps(d.as_mut_ptr(), k, eval(v));
            }
        }
    }

    /// [`OddPiecewise::eval`] eight lanes at a time: each coefficient table is two
    /// registers (intervals 0-7 and 8-15), both permuted by the index's low three bits and
    /// blended on its fourth; the tail element by element.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn map_avx2(g: &OddPiecewise, src: &[f32], dst: &mut [f32]) {
        debug_assert_eq!(src.len(), dst.len());
        let halves = |t: &[f32; INTERVALS]| {
            // SAFETY: `t` holds sixteen floats, read as two unaligned loads of eight.
            unsafe {
                [
                    _mm256_loadu_ps(t.as_ptr()),
                    _mm256_loadu_ps(t.as_ptr().add(8)),
                ]
            }
        };
        let c: [[__m256; 2]; COEFFICIENTS] = std::array::from_fn(|k| halves(&g.coefficients[k]));
        let base = halves(&g.base);
        let center = halves(&g.center);
        let clamp = _mm256_set1_ps(g.clamp);
        let scale = _mm256_set1_ps(g.scale);
        let magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff));
        let low_four = _mm256_set1_epi32(INTERVALS as i32 - 1);
        let eval = |x: __m256| {
            let a = _mm256_and_ps(x, magnitude);
            let a = _mm256_min_ps(clamp, a);
            let q = _mm256_mul_ps(a, scale);
            let f = _mm256_round_ps::<FLOOR>(q);
            let i = _mm256_and_si256(_mm256_cvttps_epi32(f), low_four);
            // Bit 3 of the index moved to the sign bit: `blendv` takes the upper half there.
            let upper = _mm256_castsi256_ps(_mm256_slli_epi32::<28>(i));
            let pick = |t: &[__m256; 2]| {
                _mm256_blendv_ps(
                    _mm256_permutevar8x32_ps(t[0], i),
                    _mm256_permutevar8x32_ps(t[1], i),
                    upper,
                )
            };
            let s = _mm256_sub_ps(_mm256_sub_ps(q, f), pick(&center));
            let mut p = pick(&c[COEFFICIENTS - 1]);
            for k in (0..COEFFICIENTS - 1).rev() {
                p = _mm256_fmadd_ps(p, s, pick(&c[k]));
            }
            let first = _mm256_castsi256_ps(_mm256_cmpeq_epi32(i, _mm256_setzero_si256()));
            let m = _mm256_blendv_ps(s, a, first);
            let b = _mm256_blendv_ps(pick(&base), a, first);
            let r = _mm256_fmadd_ps(m, p, b);
            _mm256_xor_ps(r, _mm256_andnot_ps(magnitude, x))
        };
        let mut chunks = dst.chunks_exact_mut(8);
        let mut from = src.chunks_exact(8);
        for (d, x) in (&mut chunks).zip(&mut from) {
            // SAFETY: `x` and `d` are eight floats each; loads and stores are unaligned.
            unsafe { _mm256_storeu_ps(d.as_mut_ptr(), eval(_mm256_loadu_ps(x.as_ptr()))) };
        }
        for (d, &x) in chunks.into_remainder().iter_mut().zip(from.remainder()) {
            *d = g.eval(x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function whose coefficients differ in every interval and every power, so a lane
    /// that picks the wrong interval or coefficient gives another value.
    fn sample() -> OddPiecewise {
        OddPiecewise {
            clamp: 3.9,
            scale: 4.0,
            center: std::array::from_fn(|i| 0.25 + 0.03 * i as f32),
            coefficients: std::array::from_fn(|k| {
                std::array::from_fn(|i| (i as f32 + 1.0) / (k as f32 + 2.0) - 0.3 * k as f32)
            }),
            base: std::array::from_fn(|i| 0.1 * i as f32),
        }
    }

    fn arguments() -> Vec<f32> {
        let mut xs = vec![
            0.0,
            -0.0,
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE,
            1e-40,
            3.9,
            100.0,
        ];
        // Every interval's edges and insides, both signs, and lengths that leave tails.
        for j in 0..700 {
            let x = j as f32 * 0.006 - 0.1;
            xs.push(x);
            xs.push(-x * 1.01);
        }
        xs
    }

    type LevelMap = fn(&OddPiecewise, &[f32], &mut [f32]);

    /// Every vector loop this CPU runs.
    fn levels() -> Vec<LevelMap> {
        let mut all: Vec<LevelMap> = vec![];
        #[cfg(target_arch = "x86_64")]
        {
            use crate::Level;
            if crate::level() != Level::Baseline {
                // SAFETY: `level()` reported AVX2 (and FMA) on this CPU.
                all.push(|g, x, d| unsafe { x86::map_avx2(g, x, d) });
            }
            if crate::level() == Level::Avx512 {
                // SAFETY: `level()` reported AVX-512 on this CPU.
                all.push(|g, x, d| unsafe { x86::map_avx512(g, x, d) });
            }
        }
        all.push(|g, x, d| g.map(x, d));
        all
    }

    #[test]
    fn the_vector_loops_compute_the_definition() {
        let g = sample();
        let xs = arguments();
        for map in levels() {
            for n in [0, 1, 7, 8, 15, 16, 17, 33, xs.len()] {
                let mut out = vec![0.0; n];
                map(&g, &xs[..n], &mut out);
                for (&x, &y) in xs.iter().zip(&out) {
                    let want = g.eval(x);
                    assert!(
                        y.to_bits() == want.to_bits() || (y.is_nan() && want.is_nan()),
                        "x = {x}: {y} where the definition gives {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_definition_picks_the_interval_and_offset() {
        let g = sample();
        let horner = |i: usize, s: f32| {
            (0..COEFFICIENTS)
                .rev()
                .fold(0.0f32, |p, k| p.mul_add(s, g.coefficients[k][i]))
        };
        // 1.3 lies in interval 5 ([1.25, 1.5)), 0.2 of its width in, at offset 0.2 - 0.4
        // from its center.
        let s = (1.3f32 * 4.0 - 5.0) - g.center[5];
        let want = s.mul_add(horner(5, s), g.base[5]);
        assert_eq!(g.eval(1.3), want);
        assert_eq!(g.eval(-1.3), -want);
        // Interval 0 scales by the argument.
        let s = 0.1f32 * 4.0 - g.center[0];
        assert_eq!(g.eval(0.1), 0.1f32.mul_add(horner(0, s), 0.1));
        // Past the clamp, the clamp's value.
        assert_eq!(g.eval(50.0), g.eval(3.9));
        assert!(g.eval(f32::NAN).is_nan());
    }
}
