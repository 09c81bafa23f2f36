//! `fft`: FFT, IFFT, RFFT and IRFFT over the trailing one to three dimensions.
//!
//! Transforms run in the operand's own precision (complex<f32> for `c64`/`f32`, as XLA's
//! CPU backend computes, complex<f64> for `c128`/`f64`) with `rustfft`'s planned
//! transforms (any length; vectorized radix kernels, Bluestein for large primes) and
//! `realfft`'s half-length real transforms for RFFT and IRFFT along the last axis. The last
//! axis is transformed in place, line after line; any other axis is first gathered into
//! contiguous lines, transformed, and put back. Lines split over the evaluator's threads.
//! Inverse transforms scale by `1/n` over all transformed axes once, at the end. IRFFT
//! inverts the leading axes first, then each last-axis half spectrum (the imaginary parts
//! of its first and, for even lengths, last entry are ignored, as a Hermitian spectrum's
//! are zero).

use super::context::OpCx;
use super::threads;
use super::typed::{build_overwritten, view_bytes, with_scratch, Plain};
use crate::attrs::FftType;
use crate::{Attribute, ElementType, IrError, Literal, TensorType};
use num_complex::Complex;
use realfft::RealFftPlanner;
use rustfft::{FftDirection, FftNum, FftPlanner};
use std::sync::Mutex;

/// Complex values per thread below which a transform runs on the calling thread alone.
const PER_THREAD: usize = 1 << 14;

/// Columns gathered into lines (and put back) together along an axis other than the last.
const TILE: usize = 16;

/// A float type the transforms compute in: its planners, shared by every call (a plan,
/// its twiddles and its kernels, is built once per length and direction).
trait Float: FftNum + Plain {
    fn planner() -> &'static Mutex<FftPlanner<Self>>;
    fn real_planner() -> &'static Mutex<RealFftPlanner<Self>>;
}

macro_rules! float {
    ($t:ty) => {
        impl Float for $t {
            fn planner() -> &'static Mutex<FftPlanner<Self>> {
                static PLANNER: std::sync::OnceLock<Mutex<FftPlanner<$t>>> =
                    std::sync::OnceLock::new();
                PLANNER.get_or_init(|| Mutex::new(FftPlanner::new()))
            }
            fn real_planner() -> &'static Mutex<RealFftPlanner<Self>> {
                static PLANNER: std::sync::OnceLock<Mutex<RealFftPlanner<$t>>> =
                    std::sync::OnceLock::new();
                PLANNER.get_or_init(|| Mutex::new(RealFftPlanner::new()))
            }
        }
    };
}
float!(f32);
float!(f64);

/// Locks a planner; a panic while planning cannot leave it inconsistent (it only adds
/// finished plans), so a poisoned lock is taken over.
fn lock<P>(m: &Mutex<P>) -> std::sync::MutexGuard<'_, P> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Lines per part when `lines` lines of `len` values split over the threads.
fn lines_per_part(lines: usize, len: usize) -> usize {
    let parts = (lines * len / PER_THREAD).clamp(1, threads::count());
    lines.div_ceil(parts).max(1)
}

/// Transforms every `n`-long line of the row-major `data` whose extents are `ext` along
/// axis `axis`.
fn along_axis<T: Float>(data: &mut [Complex<T>], ext: &[usize], axis: usize, inverse: bool) {
    let n = ext[axis];
    if n <= 1 || data.is_empty() {
        return;
    }
    let direction = if inverse {
        FftDirection::Inverse
    } else {
        FftDirection::Forward
    };
    let plan = lock(T::planner()).plan_fft(n, direction);
    let inner: usize = ext[axis + 1..].iter().product();
    if inner == 1 {
        let per = lines_per_part(data.len() / n, n);
        threads::for_each(data.chunks_mut(per * n), |part: &mut [Complex<T>]| {
            let mut scratch = vec![Complex::default(); plan.get_inplace_scratch_len()];
            plan.process_with_scratch(part, &mut scratch);
        });
        return;
    }
    // Gather: line (o, c) of `lines` is column c of block o (an n x inner matrix), and is
    // transformed while the tile is in cache. Both copies go a tile of `TILE` columns at a
    // time, so that reads and writes each run along `TILE` sequential streams.
    let block = n * inner;
    let stride = line_stride(n, std::mem::size_of::<Complex<T>>());
    let count = data.len() / n;
    // The lines live in a buffer of the thread's cache: every value is written before read.
    with_scratch::<T, _>(2 * count * stride, |parts| {
        let lines = bytemuck::cast_slice_mut::<T, Complex<T>>(parts);
        let per = lines_per_part(count, n);
        let src: &[Complex<T>] = data;
        threads::for_each(
            lines.chunks_mut(per * stride).enumerate(),
            |(p, part): (usize, &mut [Complex<T>])| {
                let first = p * per;
                let count = part.len() / stride;
                let mut scratch = vec![Complex::default(); plan.get_inplace_scratch_len()];
                let mut l = 0;
                while l < count {
                    let (o, c0) = ((first + l) / inner, (first + l) % inner);
                    let w = TILE.min(inner - c0).min(count - l);
                    let tile = &mut part[l * stride..(l + w) * stride];
                    for k in 0..n {
                        let row = &src[o * block + k * inner + c0..][..w];
                        for (j, &v) in row.iter().enumerate() {
                            tile[j * stride + k] = v;
                        }
                    }
                    for line in tile.chunks_exact_mut(stride) {
                        plan.process_with_scratch(&mut line[..n], &mut scratch);
                    }
                    l += w;
                }
            },
        );
        // Scatter back: row (o, k) of `data` takes entry k of lines (o, 0..inner).
        let rows = data.len() / inner;
        let per = lines_per_part(rows, inner);
        let lines = &lines[..];
        threads::for_each(
            data.chunks_mut(per * inner).enumerate(),
            |(p, part): (usize, &mut [Complex<T>])| {
                let first = p * per;
                let count = part.len() / inner;
                let mut r = 0;
                while r < count {
                    let (o, k0) = ((first + r) / n, (first + r) % n);
                    let h = (n - k0).min(count - r);
                    let from = &lines[o * inner * stride..][..inner * stride];
                    for c0 in (0..inner).step_by(TILE) {
                        let w = TILE.min(inner - c0);
                        for k in 0..h {
                            let row = &mut part[(r + k) * inner + c0..][..w];
                            for (j, v) in row.iter_mut().enumerate() {
                                *v = from[(c0 + j) * stride + k0 + k];
                            }
                        }
                    }
                    r += h;
                }
            },
        );
    });
}

/// The distance between gathered lines of `n` values of `size` bytes: `n`, or more where the
/// lines of a tile would fall into the same cache sets (a multiple of 4 KiB apart, as with
/// power-of-two lengths), so that a tile's `TILE` streams spread over the sets.
fn line_stride(n: usize, size: usize) -> usize {
    let pad = 256 / size;
    let gap = (n * size) % 4096;
    if !(256..=4096 - 256).contains(&gap) {
        n + pad
    } else {
        n
    }
}

/// Multiplies every value by `1 / count` (an inverse transform's scaling).
fn scale<T: Float>(data: &mut [Complex<T>], count: usize) {
    let s = T::from_f64(1.0 / count as f64).unwrap_or_else(T::one);
    let per = lines_per_part(data.len(), 1);
    threads::for_each(data.chunks_mut(per), |part: &mut [Complex<T>]| {
        for v in part {
            *v = Complex::new(v.re * s, v.im * s);
        }
    });
}

/// The operand's values as complex numbers of `T` (a complex operand's parts in order).
fn complex_values<T: Float>(x: &Literal) -> Vec<Complex<T>> {
    view_bytes::<T>(&x.data)
        .chunks_exact(2)
        .map(|p| Complex::new(p[0], p[1]))
        .collect()
}

/// A complex literal of type `ty` with `n` values that `fill` writes.
fn build_complex<T: Float>(
    ty: TensorType,
    n: usize,
    fill: impl FnOnce(&mut [Complex<T>]),
) -> Result<Literal, IrError> {
    build_overwritten::<T>(ty, 2 * n, |parts| {
        fill(bytemuck::cast_slice_mut::<T, Complex<T>>(parts))
    })
}

/// The transform itself, in `T`: extents of the operand and result, the transform lengths
/// (over the trailing dimensions). Results are computed in their own buffers.
fn run<T: Float>(
    fft_type: FftType,
    x: &Literal,
    in_ext: &[usize],
    out_ext: &[usize],
    lens: &[usize],
    out_ty: TensorType,
) -> Result<Literal, IrError> {
    let rank = in_ext.len();
    let lead = rank - lens.len();
    let total: usize = lens.iter().product();
    let out_len: usize = out_ext.iter().product();
    if total == 0 || in_ext.contains(&0) || out_ext.contains(&0) {
        let parts = if out_ty.element_type.is_complex() {
            2
        } else {
            1
        };
        return build_overwritten::<T>(out_ty, parts * out_len, |out| out.fill(T::zero()));
    }
    let last = lens[lens.len() - 1];
    match fft_type {
        FftType::Fft | FftType::Ifft => {
            let inverse = fft_type == FftType::Ifft;
            let input = view_bytes::<T>(&x.data);
            build_complex::<T>(out_ty, out_len, |data| {
                bytemuck::cast_slice_mut::<Complex<T>, T>(data).copy_from_slice(&input);
                for axis in lead..rank {
                    along_axis(data, in_ext, axis, inverse);
                }
                if inverse {
                    scale(data, total);
                }
            })
        }
        FftType::Rfft => {
            let real = view_bytes::<T>(&x.data);
            let half = out_ext[rank - 1];
            let plan = lock(T::real_planner()).plan_fft_forward(last);
            let per = lines_per_part(real.len() / last, last);
            build_complex::<T>(out_ty, out_len, |data| {
                threads::for_each(
                    real.chunks(per * last).zip(data.chunks_mut(per * half)),
                    |(input, output): (&[T], &mut [Complex<T>])| {
                        // The transform uses its input as scratch: one line is copied at a time.
                        let mut line = vec![T::zero(); last];
                        let mut scratch = plan.make_scratch_vec();
                        for (i, o) in input.chunks_exact(last).zip(output.chunks_exact_mut(half)) {
                            line.copy_from_slice(i);
                            // Only buffer lengths can fail, and they are right by construction.
                            let _ = plan.process_with_scratch(&mut line, o, &mut scratch);
                        }
                    },
                );
                for axis in lead..rank - 1 {
                    along_axis(data, out_ext, axis, false);
                }
            })
        }
        FftType::Irfft => {
            let mut data = complex_values::<T>(x);
            for axis in lead..rank - 1 {
                along_axis(&mut data, in_ext, axis, true);
            }
            let half = in_ext[rank - 1];
            let plan = lock(T::real_planner()).plan_fft_inverse(last);
            let per = lines_per_part(data.len() / half, last);
            let s = T::from_f64(1.0 / total as f64).unwrap_or_else(T::one);
            build_overwritten::<T>(out_ty, out_len, |real| {
                threads::for_each(
                    data.chunks_mut(per * half).zip(real.chunks_mut(per * last)),
                    |(input, output): (&mut [Complex<T>], &mut [T])| {
                        let mut scratch = plan.make_scratch_vec();
                        for (i, o) in input
                            .chunks_exact_mut(half)
                            .zip(output.chunks_exact_mut(last))
                        {
                            // The only other error says that imaginary parts the transform
                            // ignores were not zero.
                            let _ = plan.process_with_scratch(i, o, &mut scratch);
                            for v in o.iter_mut() {
                                *v = *v * s;
                            }
                        }
                    },
                );
            })
        }
    }
}

/// Evaluates `fft`.
pub(crate) fn fft(cx: OpCx<'_>, x: &Literal) -> Result<Literal, IrError> {
    let fft_type = match cx.attr("fft_type")? {
        Attribute::FftType(t) => *t,
        _ => return Err(cx.invalid("`fft_type` has the wrong kind")),
    };
    let lengths = cx.i64s("fft_length")?;
    let out_ty = cx.result_tensor(0)?;
    let rank = x.ty.rank();
    let k = lengths.len();
    if !(1..=3).contains(&k) || k > rank || out_ty.rank() != rank {
        return Err(cx.invalid(format!(
            "fft_length {lengths:?} does not fit an operand of rank {rank}"
        )));
    }
    let in_et = x.ty.element_type;
    let out_et = out_ty.element_type;
    let real_in = matches!(fft_type, FftType::Rfft);
    let real_out = matches!(fft_type, FftType::Irfft);
    let types_ok = match (in_et, out_et) {
        (ElementType::F32, ElementType::C64) | (ElementType::F64, ElementType::C128) => real_in,
        (ElementType::C64, ElementType::F32) | (ElementType::C128, ElementType::F64) => real_out,
        (ElementType::C64, ElementType::C64) | (ElementType::C128, ElementType::C128) => {
            !real_in && !real_out
        }
        _ => false,
    };
    if !types_ok {
        return Err(cx.invalid(format!("{fft_type:?} cannot map {in_et} to {out_et}")));
    }
    let lead = rank - k;
    let lens: Vec<usize> = lengths.iter().map(|&l| l.max(0) as usize).collect();
    let in_ext: Vec<usize> = x.ty.shape.iter().map(|&d| d.max(0) as usize).collect();
    let out_ext: Vec<usize> = out_ty.shape.iter().map(|&d| d.max(0) as usize).collect();
    let last = lens[k - 1];
    let half = last / 2 + 1;
    // Expected trailing extents of operand and result.
    let (want_in, want_out): (Vec<usize>, Vec<usize>) = match fft_type {
        FftType::Fft | FftType::Ifft => (lens.clone(), lens.clone()),
        FftType::Rfft => {
            let mut o = lens.clone();
            o[k - 1] = half;
            (lens.clone(), o)
        }
        FftType::Irfft => {
            let mut i = lens.clone();
            i[k - 1] = half;
            (i, lens.clone())
        }
    };
    if in_ext[lead..] != want_in[..]
        || out_ext[lead..] != want_out[..]
        || in_ext[..lead] != out_ext[..lead]
    {
        return Err(cx.invalid(format!(
            "shapes {:?} -> {:?} do not fit fft_length {lengths:?}",
            x.ty.shape, out_ty.shape
        )));
    }
    let out_ty = TensorType::new(out_ty.shape.clone(), out_et);
    match in_et {
        ElementType::F32 | ElementType::C64 => {
            run::<f32>(fft_type, x, &in_ext, &out_ext, &lens, out_ty)
        }
        _ => run::<f64>(fft_type, x, &in_ext, &out_ext, &lens, out_ty),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::attrs::FftType;
    use crate::{Attribute, ElementType, Literal, OpKind};

    fn c128(shape: &[i64], v: &[(f64, f64)]) -> Literal {
        lit_bytes(
            shape,
            ElementType::C128,
            v.iter()
                .flat_map(|(re, im)| [re.to_le_bytes(), im.to_le_bytes()].concat())
                .collect(),
        )
    }

    fn parts(lit: &Literal) -> Vec<(f64, f64)> {
        lit.data
            .chunks_exact(16)
            .map(|c| {
                (
                    f64::from_le_bytes(c[..8].try_into().unwrap()),
                    f64::from_le_bytes(c[8..].try_into().unwrap()),
                )
            })
            .collect()
    }

    fn attrs(t: FftType, len: &[i64]) -> Vec<(&'static str, Attribute)> {
        vec![
            ("fft_type", Attribute::FftType(t)),
            ("fft_length", i64s(len)),
        ]
    }

    fn close(a: &[(f64, f64)], b: &[(f64, f64)]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!(
                (x.0 - y.0).abs() < 1e-9 && (x.1 - y.1).abs() < 1e-9,
                "{a:?} vs {b:?}"
            );
        }
    }

    #[test]
    fn fft_of_known_signals() {
        // DFT of [1, 2, 3, 4] is [10, -2+2i, -2, -2-2i] (hand computed).
        let x = c128(&[4], &[(1.0, 0.0), (2.0, 0.0), (3.0, 0.0), (4.0, 0.0)]);
        let r = run_op(
            OpKind::Fft,
            &[x],
            t(&[4], ElementType::C128),
            attrs(FftType::Fft, &[4]),
        )
        .unwrap();
        close(
            &parts(&r),
            &[(10.0, 0.0), (-2.0, 2.0), (-2.0, 0.0), (-2.0, -2.0)],
        );
        // Length 3 (direct DFT): [1, 1, 1] -> [3, 0, 0].
        let x = c128(&[3], &[(1.0, 0.0), (1.0, 0.0), (1.0, 0.0)]);
        let r = run_op(
            OpKind::Fft,
            &[x],
            t(&[3], ElementType::C128),
            attrs(FftType::Fft, &[3]),
        )
        .unwrap();
        close(&parts(&r), &[(3.0, 0.0), (0.0, 0.0), (0.0, 0.0)]);
    }

    #[test]
    fn ifft_inverts_fft_in_two_dims() {
        let v: Vec<(f64, f64)> = (0..6).map(|i| (i as f64, (i * i) as f64 * 0.5)).collect();
        let x = c128(&[2, 3], &v);
        let f = run_op(
            OpKind::Fft,
            &[x],
            t(&[2, 3], ElementType::C128),
            attrs(FftType::Fft, &[2, 3]),
        )
        .unwrap();
        let back = run_op(
            OpKind::Fft,
            &[f],
            t(&[2, 3], ElementType::C128),
            attrs(FftType::Ifft, &[2, 3]),
        )
        .unwrap();
        close(&parts(&back), &v);
    }

    #[test]
    fn rfft_and_irfft_round_trip() {
        // rfft([1, 2, 3, 4, 5]) = [15, -2.5+3.4409548i, -2.5+0.8122992i] (numpy.fft.rfft).
        let x = f64s(&[5], &[1.0, 2.0, 3.0, 4.0, 5.0]);
        let r = run_op(
            OpKind::Fft,
            &[x],
            t(&[3], ElementType::C128),
            attrs(FftType::Rfft, &[5]),
        )
        .unwrap();
        let got = parts(&r);
        assert!((got[0].0 - 15.0).abs() < 1e-12);
        assert!((got[1].0 + 2.5).abs() < 1e-12 && (got[1].1 - 3.440_954_801_177_933).abs() < 1e-12);
        assert!((got[2].0 + 2.5).abs() < 1e-12 && (got[2].1 - 0.812_299_240_582_266).abs() < 1e-12);
        let back = run_op(
            OpKind::Fft,
            &[r],
            t(&[5], ElementType::F64),
            attrs(FftType::Irfft, &[5]),
        )
        .unwrap();
        for (a, b) in to_f64(&back).iter().zip([1.0, 2.0, 3.0, 4.0, 5.0]) {
            assert!((a - b).abs() < 1e-12);
        }
    }

    /// A direct DFT along `axis` in f64: the oracle the planned transforms are checked
    /// against (unscaled; the inverse direction has the positive exponent).
    fn direct_dft(
        data: &[(f64, f64)],
        ext: &[usize],
        axis: usize,
        inverse: bool,
    ) -> Vec<(f64, f64)> {
        let n = ext[axis];
        let inner: usize = ext[axis + 1..].iter().product();
        let sign = if inverse { 1.0 } else { -1.0 };
        let mut out = data.to_vec();
        for base in (0..data.len()).filter(|i| (i / inner).is_multiple_of(n)) {
            for k in 0..n {
                let mut s = (0.0, 0.0);
                for j in 0..n {
                    let a = sign * 2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64;
                    let (c, d) = (a.cos(), a.sin());
                    let (x, y) = data[base + j * inner];
                    s.0 += x * c - y * d;
                    s.1 += x * d + y * c;
                }
                out[base + k * inner] = s;
            }
        }
        out
    }

    fn noise(n: usize, seed: u64) -> Vec<(f64, f64)> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        (0..n).map(|_| (next(), next())).collect()
    }

    fn values_of(lit: &Literal) -> Vec<(f64, f64)> {
        match lit.ty.element_type {
            ElementType::C128 => parts(lit),
            ElementType::C64 => to_f32(&lit_bytes(
                &[lit.data.len() as i64 / 4],
                ElementType::F32,
                lit.data.to_vec(),
            ))
            .chunks_exact(2)
            .map(|p| (p[0] as f64, p[1] as f64))
            .collect(),
            ElementType::F64 => to_f64(lit).into_iter().map(|v| (v, 0.0)).collect(),
            _ => to_f32(lit).into_iter().map(|v| (v as f64, 0.0)).collect(),
        }
    }

    fn literal(shape: &[usize], et: ElementType, v: &[(f64, f64)]) -> Literal {
        let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        let bytes: Vec<u8> = match et {
            ElementType::C128 => v
                .iter()
                .flat_map(|p| [p.0.to_le_bytes(), p.1.to_le_bytes()].concat())
                .collect(),
            ElementType::C64 => v
                .iter()
                .flat_map(|p| [(p.0 as f32).to_le_bytes(), (p.1 as f32).to_le_bytes()].concat())
                .collect(),
            ElementType::F64 => v.iter().flat_map(|p| p.0.to_le_bytes()).collect(),
            _ => v.iter().flat_map(|p| (p.0 as f32).to_le_bytes()).collect(),
        };
        lit_bytes(&dims, et, bytes)
    }

    /// The operand's values as the oracle sees them (rounded to the operand's type).
    fn rounded(shape: &[usize], et: ElementType, v: &[(f64, f64)]) -> Vec<(f64, f64)> {
        values_of(&literal(shape, et, v))
    }

    fn assert_near(got: &[(f64, f64)], want: &[(f64, f64)], tol: f64, what: &str) {
        assert_eq!(got.len(), want.len(), "{what}");
        let scale = want
            .iter()
            .fold(1.0f64, |m, p| m.max(p.0.abs()).max(p.1.abs()));
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g.0 - w.0).abs() <= tol * scale && (g.1 - w.1).abs() <= tol * scale,
                "{what}: element {i}: {g:?} vs {w:?}"
            );
        }
    }

    #[test]
    fn planned_transforms_match_a_direct_dft() {
        // Lengths with radix-2/3/5 factors, primes (Bluestein above rustfft's small
        // kernels), ones, over one to three axes; enough lines to split over threads.
        let shapes: &[(&[usize], usize)] = &[
            (&[8], 1),
            (&[7], 1),
            (&[3, 12], 1),
            (&[64, 96], 1),
            (&[2, 6, 5], 2),
            (&[4, 1, 9], 2),
            (&[2, 3, 10, 4], 3),
            (&[3, 97], 1),
            (&[40, 33], 2),
            (&[130, 256], 2),
            (&[512, 3], 2),
        ];
        for (seed, &(shape, k)) in shapes.iter().enumerate() {
            let rank = shape.len();
            let n: usize = shape.iter().product();
            let lens: Vec<i64> = shape[rank - k..].iter().map(|&d| d as i64).collect();
            let total: usize = shape[rank - k..].iter().product();
            let x = noise(n, seed as u64 + 1);
            for (cet, ret, tol) in [
                (ElementType::C128, ElementType::F64, 1e-11),
                (ElementType::C64, ElementType::F32, 2e-5),
            ] {
                let what = format!("{shape:?} over {k} axes, {cet}");
                // FFT and IFFT against the direct DFT of the rounded operand.
                for (kind, inverse) in [(FftType::Fft, false), (FftType::Ifft, true)] {
                    let input = rounded(shape, cet, &x);
                    let mut want = input.clone();
                    for axis in rank - k..rank {
                        want = direct_dft(&want, shape, axis, inverse);
                    }
                    if inverse {
                        want.iter_mut()
                            .for_each(|p| *p = (p.0 / total as f64, p.1 / total as f64));
                    }
                    let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
                    let got = run_op(
                        OpKind::Fft,
                        &[literal(shape, cet, &x)],
                        t(&dims, cet),
                        attrs(kind, &lens),
                    )
                    .unwrap();
                    assert_near(&values_of(&got), &want, tol, &format!("{kind:?} {what}"));
                }
                // RFFT: the direct DFT of the real operand, last axis cut to n/2 + 1.
                let real: Vec<(f64, f64)> = rounded(shape, ret, &x);
                let mut full = real.clone();
                for axis in rank - k..rank {
                    full = direct_dft(&full, shape, axis, false);
                }
                let last = shape[rank - 1];
                let half = last / 2 + 1;
                let spectrum: Vec<(f64, f64)> = full
                    .chunks_exact(last)
                    .flat_map(|l| l[..half].to_vec())
                    .collect();
                let mut half_shape = shape.to_vec();
                half_shape[rank - 1] = half;
                let half_dims: Vec<i64> = half_shape.iter().map(|&d| d as i64).collect();
                let got = run_op(
                    OpKind::Fft,
                    &[literal(shape, ret, &x)],
                    t(&half_dims, cet),
                    attrs(FftType::Rfft, &lens),
                )
                .unwrap();
                assert_near(&values_of(&got), &spectrum, tol, &format!("Rfft {what}"));
                // IRFFT of that spectrum gives the real operand back, also when the
                // imaginary parts it ignores (first entry, and last for even lengths) are
                // not zero.
                let mut spoiled = spectrum.clone();
                for line in spoiled.chunks_exact_mut(half) {
                    line[0].1 += 3.0;
                    if last % 2 == 0 {
                        line[half - 1].1 -= 2.0;
                    }
                }
                let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
                for input in [&spectrum, &spoiled] {
                    let got = run_op(
                        OpKind::Fft,
                        &[literal(&half_shape, cet, input)],
                        t(&dims, ret),
                        attrs(FftType::Irfft, &lens),
                    )
                    .unwrap();
                    assert_near(&values_of(&got), &real, tol * 4.0, &format!("Irfft {what}"));
                }
            }
        }
    }

    #[test]
    fn fft_rejects_mismatched_lengths() {
        let x = c128(&[4], &[(0.0, 0.0); 4]);
        assert!(run_op(
            OpKind::Fft,
            &[x],
            t(&[4], ElementType::C128),
            attrs(FftType::Fft, &[8])
        )
        .is_err());
    }
}
