//! `fft`: FFT, IFFT, RFFT and IRFFT over the trailing one to three dimensions.
//!
//! Transforms run one axis at a time in `complex<f64>` and round once to the result type:
//! an iterative radix-2 transform for power-of-two lengths, a direct DFT with a twiddle
//! table otherwise. Inverse transforms scale by `1/n` per axis. IRFFT first inverts the
//! leading axes, then rebuilds each last-axis line from Hermitian symmetry and keeps the
//! real part.

use super::context::OpCx;
use super::convert::convert_array;
use super::element::{decode, encode, Array};
use crate::attrs::FftType;
use crate::{Attribute, ElementType, IrError, Literal, TensorType};
use num_complex::Complex64;
use std::f64::consts::PI;

/// Transforms `line` in place (forward: exp(-2 pi i jk / n); inverse also scales by 1/n).
fn transform(line: &mut [Complex64], inverse: bool) {
    let n = line.len();
    if n <= 1 {
        return;
    }
    let sign = if inverse { 1.0 } else { -1.0 };
    if n.is_power_of_two() {
        // Bit-reversal permutation, then butterflies.
        let bits = n.trailing_zeros();
        for i in 0..n {
            let j = i.reverse_bits() >> (usize::BITS - bits);
            if j > i {
                line.swap(i, j);
            }
        }
        let mut len = 2;
        while len <= n {
            let step = sign * 2.0 * PI / len as f64;
            for start in (0..n).step_by(len) {
                for k in 0..len / 2 {
                    let w = Complex64::from_polar(1.0, step * k as f64);
                    let u = line[start + k];
                    let v = line[start + k + len / 2] * w;
                    line[start + k] = u + v;
                    line[start + k + len / 2] = u - v;
                }
            }
            len *= 2;
        }
    } else {
        let twiddle: Vec<Complex64> = (0..n)
            .map(|k| Complex64::from_polar(1.0, sign * 2.0 * PI * k as f64 / n as f64))
            .collect();
        let input = line.to_vec();
        for (k, out) in line.iter_mut().enumerate() {
            let mut s = Complex64::new(0.0, 0.0);
            for (j, x) in input.iter().enumerate() {
                s += x * twiddle[(j * k) % n];
            }
            *out = s;
        }
    }
    if inverse {
        let scale = 1.0 / n as f64;
        for x in line.iter_mut() {
            *x *= scale;
        }
    }
}

/// Applies `transform` along axis `axis` of a row-major buffer of extents `ext`.
fn along_axis(data: &mut [Complex64], ext: &[usize], axis: usize, inverse: bool) {
    let n = ext[axis];
    let inner: usize = ext[axis + 1..].iter().product();
    let outer: usize = ext[..axis].iter().product();
    let mut line = vec![Complex64::new(0.0, 0.0); n];
    for o in 0..outer {
        for i in 0..inner {
            let base = o * n * inner + i;
            for (k, x) in line.iter_mut().enumerate() {
                *x = data[base + k * inner];
            }
            transform(&mut line, inverse);
            for (k, x) in line.iter().enumerate() {
                data[base + k * inner] = *x;
            }
        }
    }
}

fn to_complex(lit: &Literal) -> Vec<Complex64> {
    match convert_array(&decode(lit), ElementType::C128) {
        Array::C128(v) => v,
        _ => Vec::new(),
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
    let mut data = to_complex(x);
    let out: Vec<Complex64> = match fft_type {
        FftType::Fft | FftType::Ifft => {
            let inverse = fft_type == FftType::Ifft;
            for axis in lead..rank {
                along_axis(&mut data, &in_ext, axis, inverse);
            }
            data
        }
        FftType::Rfft => {
            for axis in lead..rank {
                along_axis(&mut data, &in_ext, axis, false);
            }
            // Keep the first `half` entries of every last-axis line.
            data.chunks_exact(last.max(1))
                .flat_map(|line| line[..half.min(line.len())].to_vec())
                .collect()
        }
        FftType::Irfft => {
            for axis in lead..rank - 1 {
                along_axis(&mut data, &in_ext, axis, true);
            }
            let mut res = Vec::with_capacity(out_ext.iter().product());
            let mut line = vec![Complex64::new(0.0, 0.0); last];
            for spectrum in data.chunks_exact(half) {
                for (j, v) in line.iter_mut().enumerate() {
                    *v = if j < half {
                        spectrum[j]
                    } else {
                        spectrum[last - j].conj()
                    };
                }
                transform(&mut line, true);
                res.extend(line.iter().map(|z| Complex64::new(z.re, 0.0)));
            }
            res
        }
    };
    let out_arr = convert_array(&Array::C128(out), out_et);
    encode(&out_arr, TensorType::new(out_ty.shape.clone(), out_et))
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
