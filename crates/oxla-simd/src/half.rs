//! `f16` <-> `f32` conversion of slices with the F16C instructions, where the CPU has them:
//! eight values per instruction instead of the dozen integer operations per value the
//! bit-level conversions take.
//!
//! Both are exact IEEE conversions: widening is exact (an `f16` denormal becomes a normal
//! `f32`, a NaN is quieted with its payload kept), narrowing rounds to nearest even, to
//! infinity past the largest finite `f16`, and a NaN keeps the top of its payload, quieted.
//! The thread's denormal flushing does not change them (an `f32` denormal rounds to a signed
//! zero either way).

/// Whether the CPU has F16C (with the AVX it extends), detected once.
fn has_f16c() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| {
            std::is_x86_feature_detected!("f16c") && std::is_x86_feature_detected!("avx")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `dst[i] = f32 of the f16 with bits src[i]` for every `i` below both lengths; false,
/// writing nothing, on a CPU without F16C (the caller converts its own way).
pub fn f16_to_f32(src: &[u16], dst: &mut [f32]) -> bool {
    if !has_f16c() {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `has_f16c()` reported F16C and AVX on this CPU.
    unsafe {
        x86::f16_to_f32(src, dst)
    };
    true
}

/// `dst[i] = bits of the f16 nearest src[i]` for every `i` below both lengths; false,
/// writing nothing, on a CPU without F16C.
pub fn f32_to_f16(src: &[f32], dst: &mut [u16]) -> bool {
    if !has_f16c() {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `has_f16c()` reported F16C and AVX on this CPU.
    unsafe {
        x86::f32_to_f16(src, dst)
    };
    true
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Eight values per step; the tail goes through an eight-value buffer.
    #[target_feature(enable = "avx,f16c")]
    pub(super) fn f16_to_f32(src: &[u16], dst: &mut [f32]) {
        let n = src.len().min(dst.len());
        let (src, dst) = (&src[..n], &mut dst[..n]);
        let mut s = src.chunks_exact(8);
        let mut d = dst.chunks_exact_mut(8);
        let convert = |from: &[u16], to: &mut [f32]| {
            debug_assert!(from.len() == 8 && to.len() == 8);
            // SAFETY: `from` holds eight u16 (16 bytes) and `to` eight f32 (32 bytes); the
            // load and the store are unaligned.
            unsafe {
                let h = _mm_loadu_si128(from.as_ptr().cast());
                _mm256_storeu_ps(to.as_mut_ptr(), _mm256_cvtph_ps(h));
            }
        };
        for (from, to) in (&mut s).zip(&mut d) {
            convert(from, to);
        }
        let (from, to) = (s.remainder(), d.into_remainder());
        if !from.is_empty() {
            let mut h = [0u16; 8];
            let mut f = [0.0f32; 8];
            h[..from.len()].copy_from_slice(from);
            convert(&h, &mut f);
            to.copy_from_slice(&f[..from.len()]);
        }
    }

    #[target_feature(enable = "avx,f16c")]
    pub(super) fn f32_to_f16(src: &[f32], dst: &mut [u16]) {
        let n = src.len().min(dst.len());
        let (src, dst) = (&src[..n], &mut dst[..n]);
        let mut s = src.chunks_exact(8);
        let mut d = dst.chunks_exact_mut(8);
        let convert = |from: &[f32], to: &mut [u16]| {
            debug_assert!(from.len() == 8 && to.len() == 8);
            // SAFETY: `from` holds eight f32 (32 bytes) and `to` eight u16 (16 bytes); the
            // load and the store are unaligned. Rounding mode 0 is to nearest even.
            unsafe {
                let h =
                    _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(from.as_ptr()));
                _mm_storeu_si128(to.as_mut_ptr().cast(), h);
            }
        };
        for (from, to) in (&mut s).zip(&mut d) {
            convert(from, to);
        }
        let (from, to) = (s.remainder(), d.into_remainder());
        if !from.is_empty() {
            let mut f = [0.0f32; 8];
            let mut h = [0u16; 8];
            f[..from.len()].copy_from_slice(from);
            convert(&f, &mut h);
            to.copy_from_slice(&h[..from.len()]);
        }
    }
}
