//! Runtime CPU-feature dispatch for the evaluator's hot elementwise loops.
//!
//! oxla builds for the baseline target of its architecture (SSE2 on x86-64) so one binary
//! runs on every machine. The loops here are compiled a second and third time with AVX2 and
//! AVX-512 enabled, and each call picks the widest version the CPU supports. The loop body
//! is the caller's closure, inlined into every version, so all versions compute the same
//! bits: Rust never contracts `a * b + c` into a fused multiply-add on its own, and the
//! wider versions only process more elements per instruction.
//!
//! This crate holds the only `unsafe` the dispatch needs: calling a function compiled for
//! CPU features is sound once those features were detected at run time. It also wraps the
//! `gemm` crate's pointer-based matrix product in a bounds-checked slice API ([`matmul`]),
//! sets the thread's denormal flushing ([`FlushDenormals`]), and holds the lane-wise row
//! folds of reductions written with AVX2 intrinsics ([`fold_lanes_f32`]), where the
//! compiler's own vectorization of the same loop is poor, and odd functions evaluated as
//! sixteen polynomials whose coefficients each lane picks from registers
//! ([`OddPiecewise`]), which the compiler would turn into gathers, and `f16` <-> `f32`
//! conversion of slices with the F16C instructions ([`f16_to_f32`], [`f32_to_f16`]).

mod denormals;
mod fold;
mod half;
mod matmul;
mod piecewise;
mod transpose;
pub use denormals::{FlushDenormals, KeepDenormals};
pub use fold::{fold_lanes_f32, LaneFold, FOLD_LANES};
pub use half::{f16_to_f32, f32_to_f16};
pub use matmul::{matmul, matmul_add, GemmScalar, Strided};
pub use piecewise::OddPiecewise;
pub use transpose::transpose32;

/// Which instruction-set level this CPU offers, detected once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// The build target's baseline.
    Baseline,
    /// x86-64 with AVX2 and FMA.
    Avx2,
    /// x86-64 with AVX-512 (F, BW, DQ, VL) besides AVX2 and FMA.
    Avx512,
}

/// The widest level the running CPU supports.
pub fn level() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static LEVEL: OnceLock<Level> = OnceLock::new();
        *LEVEL.get_or_init(|| {
            let avx2 =
                std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma");
            let avx512 = avx2
                && std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512bw")
                && std::is_x86_feature_detected!("avx512dq")
                && std::is_x86_feature_detected!("avx512vl");
            if avx512 {
                Level::Avx512
            } else if avx2 {
                Level::Avx2
            } else {
                Level::Baseline
            }
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Level::Baseline
    }
}

#[inline(always)]
fn map_body<T: Copy, U>(src: &[T], dst: &mut [U], f: &impl Fn(T) -> U) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = f(s);
    }
}

#[inline(always)]
fn zip_body<A: Copy, B: Copy, U>(a: &[A], b: &[B], dst: &mut [U], f: &impl Fn(A, B) -> U) {
    for ((d, &x), &y) in dst.iter_mut().zip(a).zip(b) {
        *d = f(x, y);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{map_body, zip_body};

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn run_avx2<R>(f: impl FnOnce() -> R) -> R {
        f()
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
    pub(super) fn run_avx512<R>(f: impl FnOnce() -> R) -> R {
        f()
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn map_avx2<T: Copy, U>(src: &[T], dst: &mut [U], f: &impl Fn(T) -> U) {
        map_body(src, dst, f)
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
    pub(super) fn map_avx512<T: Copy, U>(src: &[T], dst: &mut [U], f: &impl Fn(T) -> U) {
        map_body(src, dst, f)
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn zip_avx2<A: Copy, B: Copy, U>(
        a: &[A],
        b: &[B],
        dst: &mut [U],
        f: &impl Fn(A, B) -> U,
    ) {
        zip_body(a, b, dst, f)
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
    pub(super) fn zip_avx512<A: Copy, B: Copy, U>(
        a: &[A],
        b: &[B],
        dst: &mut [U],
        f: &impl Fn(A, B) -> U,
    ) {
        zip_body(a, b, dst, f)
    }
}

/// Runs `f` compiled for the widest vectors the CPU has: whatever inlines into it is
/// vectorized for that level. Mark the closure itself `#[inline(always)]`
/// (`vectorized(#[inline(always)] || ...)`) as well as the loops it calls: a closure the
/// inliner leaves out of line is compiled for the baseline CPU only.
#[inline]
pub fn vectorized<R>(f: impl FnOnce() -> R) -> R {
    match level() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `level()` reported AVX-512 F/BW/DQ/VL, AVX2 and FMA on this CPU.
        Level::Avx512 => unsafe { x86::run_avx512(f) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `level()` reported AVX2 and FMA on this CPU.
        Level::Avx2 => unsafe { x86::run_avx2(f) },
        _ => f(),
    }
}

/// `dst[i] = f(src[i])` for every `i` below both lengths, on the widest vectors the CPU has.
/// `f` should be a small `#[inline]` function or closure so it inlines into each version.
#[inline]
pub fn map<T: Copy, U>(src: &[T], dst: &mut [U], f: impl Fn(T) -> U) {
    match level() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `level()` reported AVX-512 F/BW/DQ/VL, AVX2 and FMA on this CPU.
        Level::Avx512 => unsafe { x86::map_avx512(src, dst, &f) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `level()` reported AVX2 and FMA on this CPU.
        Level::Avx2 => unsafe { x86::map_avx2(src, dst, &f) },
        _ => map_body(src, dst, &f),
    }
}

/// `dst[i] = f(a[i], b[i])` for every `i` below all three lengths, on the widest vectors the
/// CPU has.
#[inline]
pub fn zip<A: Copy, B: Copy, U>(a: &[A], b: &[B], dst: &mut [U], f: impl Fn(A, B) -> U) {
    match level() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `level()` reported AVX-512 F/BW/DQ/VL, AVX2 and FMA on this CPU.
        Level::Avx512 => unsafe { x86::zip_avx512(a, b, dst, &f) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `level()` reported AVX2 and FMA on this CPU.
        Level::Avx2 => unsafe { x86::zip_avx2(a, b, dst, &f) },
        _ => zip_body(a, b, dst, &f),
    }
}

/// Asks the CPU to bring the cache lines of `data` (at most its first 4 KiB) into the cache
/// ahead of a use: for loops that visit scattered rows of a large array (gathers, scatters),
/// which otherwise wait on memory one row at a time. Changes no values; does nothing on
/// other architectures.
#[inline]
pub fn prefetch<T>(data: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        const LINE: usize = 64;
        let bytes = std::mem::size_of_val(data).min(4096);
        let first = data.as_ptr().cast::<i8>();
        for offset in (0..bytes).step_by(LINE) {
            // SAFETY: `first + offset` lies inside `data`. A prefetch is only a hint: it
            // reads nothing a program can see and never faults.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    first.add(offset),
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = data;
}

/// `x as i32` (truncation toward zero, saturation at `i32::MIN` and `i32::MAX`, NaN to 0)
/// written as selects around one unchecked conversion, so that [`map`] vectorizes it: `as`
/// itself stays a scalar loop.
#[inline(always)]
pub fn f32_to_i32(x: f32) -> i32 {
    // The largest f32 below 2^31; at and above 2^31 the result saturates below.
    const BELOW_2_31: f32 = 2_147_483_520.0;
    let clamped = if x.is_nan() {
        0.0
    } else {
        x.clamp(-2_147_483_648.0, BELOW_2_31)
    };
    // SAFETY: `clamped` is finite and inside [-2^31, 2^31), so its truncation is an i32.
    let truncated = unsafe { clamped.to_int_unchecked::<i32>() };
    if x >= 2_147_483_648.0 {
        i32::MAX
    } else {
        truncated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_to_i32_is_as() {
        let mut xs = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.99,
            -1.99,
            2_147_483_520.0,
            2_147_483_648.0,
            -2_147_483_648.0,
            -2_147_483_904.0,
            1e30,
            -1e30,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::from_bits(1),
        ];
        xs.extend((0..1000).map(|i| (i as f32 - 500.0) * 12_345.678));
        let mut got = vec![0i32; xs.len()];
        map(&xs, &mut got, f32_to_i32);
        for (x, g) in xs.iter().zip(&got) {
            assert_eq!(*g, *x as i32, "{x:e}");
        }
    }

    #[test]
    fn every_level_computes_the_same_bits() {
        // A body with rounding-sensitive arithmetic: any contraction or reassociation in a
        // wider version would change some of these bits.
        let f = |x: f32| {
            let y = f64::from(x);
            ((y * 1.000_000_1 + 0.3) * y - 0.7) as f32
        };
        let src: Vec<f32> = (0..10_007)
            .map(|i| (i as f32 - 5000.0) * 0.001_37)
            .collect();
        let mut want = vec![0.0f32; src.len()];
        map_body(&src, &mut want, &f);
        let mut got = vec![0.0f32; src.len()];
        map(&src, &mut got, f);
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        let g = |x: f32, y: f32| x * y + x / (y + 3.0);
        let mut want2 = vec![0.0f32; src.len()];
        zip_body(&src, &want, &mut want2, &g);
        let mut got2 = vec![0.0f32; src.len()];
        zip(&src, &want, &mut got2, g);
        assert_eq!(
            got2.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want2.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn vectorized_runs_the_closure_once() {
        let mut calls = 0;
        let sum: f32 = vectorized(|| {
            calls += 1;
            (0..100).map(|i| i as f32).sum()
        });
        assert_eq!((sum, calls), (4950.0, 1));
    }

    #[test]
    fn shorter_slice_bounds_the_loop() {
        let mut dst = [0u32; 3];
        map(&[1u32, 2, 3, 4, 5], &mut dst, |x| x * 10);
        assert_eq!(dst, [10, 20, 30]);
        let mut dst = [7u32; 4];
        zip(&[1u32, 2], &[5u32, 6, 7], &mut dst, |x, y| x + y);
        assert_eq!(dst, [6, 8, 7, 7]);
    }
}
