//! The complex Schur form: `gees` of a complex matrix, with `lahqr`'s single-shift QR.

use super::*;

/// `gees` of a complex matrix: the complex Schur form.
pub(in crate::eval::lapack) struct ComplexSchur<T> {
    /// Row-major, upper triangular.
    pub t: Vec<Complex<T>>,
    /// Row-major, unitary; empty when not asked for.
    pub z: Vec<Complex<T>>,
    pub w: Vec<Complex<T>>,
    /// 0, or LAPACK's `info` when the QR iteration failed to converge.
    pub info: i32,
}

/// `gees` (no sorting) of the complex row-major `n x n` matrix `a`.
pub(in crate::eval::lapack) fn complex_gees<T: Real>(
    a: &[Complex<T>],
    n: usize,
    want_z: bool,
) -> ComplexSchur<T> {
    if n == 0 {
        return ComplexSchur {
            t: Vec::new(),
            z: Vec::new(),
            w: Vec::new(),
            info: 0,
        };
    }
    let mut h = Mat::from_row_major(a, n);
    let (anrm, cscale) = scaling(&h);
    if let Some(c) = cscale {
        lascl(&mut h, Part::All, anrm, c);
    }
    let (ilo, ihi, perm) = gebal_permute(&mut h);
    let taus = gehd2(&mut h, ilo, ihi);
    let mut z = want_z.then(|| orghr(&h, ilo, ihi, &taus));
    let mut w = vec![Complex::<T>::zero_elem(); n + 1];
    for i in (1..ilo).chain(ihi + 1..=n) {
        w[i] = h[(i, i)];
    }
    let mut info = 0;
    if ilo == ihi {
        w[ilo] = h[(ilo, ilo)];
    } else {
        info = lahqr_complex(&mut h, ilo, ihi, &mut w, z.as_mut());
        if n > 2 {
            clear_below_subdiagonal(&mut h);
        }
    }
    if let Some(z) = z.as_mut() {
        gebak_permute(z, ilo, ihi, &perm);
    }
    if let Some(c) = cscale {
        lascl(&mut h, Part::Upper, c, anrm);
        for i in 1..=n {
            w[i] = h[(i, i)];
        }
    }
    ComplexSchur {
        t: h.row_major(),
        z: z.map(|z| z.row_major()).unwrap_or_default(),
        w: w[1..].to_vec(),
        info,
    }
}

/// The single-shift complex QR iteration on rows and columns `ilo..=ihi` of the upper
/// Hessenberg `h` (`lahqr` with the whole Schur form wanted), accumulating into `z`.
/// Returns 0, or the row above which eigenvalues have not converged.
fn lahqr_complex<T: Real>(
    h: &mut Mat<Complex<T>>,
    ilo: usize,
    ihi: usize,
    w: &mut [Complex<T>],
    mut z: Option<&mut Mat<Complex<T>>>,
) -> i32 {
    type C<T> = Complex<T>;
    let n = h.n;
    let (rzero, rone) = (T::zero(), T::one());
    let czero = C::<T>::zero_elem();
    let half = T::from(0.5).unwrap();
    let dat1 = T::from(0.75).unwrap();
    const KEXSH: usize = 10;
    // A complex number divided by a real one, part by part.
    let over = |z: C<T>, r: T| C::new(z.re / r, z.im / r);
    let scale_row =
        |h: &mut Mat<C<T>>, r: usize, cols: std::ops::RangeInclusive<usize>, f: C<T>| {
            for j in cols {
                h[(r, j)] = f * h[(r, j)];
            }
        };
    let scale_col =
        |m: &mut Mat<C<T>>, c: usize, rows: std::ops::RangeInclusive<usize>, f: C<T>| {
            for r in rows {
                m[(r, c)] = f * m[(r, c)];
            }
        };
    clear_band(h, ilo, ihi);
    let (jlo, jhi) = (1usize, n);
    // Make the subdiagonal real.
    for i in ilo + 1..=ihi {
        if h[(i, i - 1)].im != rzero {
            let sub = h[(i, i - 1)];
            let sc = over(sub, sub.abs1());
            let sc = over(sc.conj(), sc.modulus());
            h[(i, i - 1)] = C::from_real(sub.modulus());
            scale_row(h, i, i..=jhi, sc);
            scale_col(h, i, jlo..=jhi.min(i + 1), sc.conj());
            if let Some(z) = z.as_deref_mut() {
                scale_col(z, i, ilo..=ihi, sc.conj());
            }
        }
    }
    let nh = ihi - ilo + 1;
    let Tolerances { smlnum, ulp } = Tolerances::new(nh);
    let (i1, i2) = (1usize, n);
    let itmax = 30 * nh.max(10);
    let mut kdefl = 0usize;
    let mut i = ihi;
    while i >= ilo {
        let mut l = ilo;
        let mut converged = false;
        for _its in 0..=itmax {
            // Look for a single small subdiagonal element.
            let k = small_subdiagonal(h, l, i, ilo, ihi, smlnum, ulp);
            l = k;
            if l > ilo {
                h[(l, l - 1)] = czero;
            }
            if l >= i {
                converged = true;
                break;
            }
            kdefl += 1;
            let t = if kdefl.is_multiple_of(2 * KEXSH) {
                let s = dat1 * h[(i, i - 1)].re.abs();
                C::from_real(s) + h[(i, i)]
            } else if kdefl.is_multiple_of(KEXSH) {
                let s = dat1 * h[(l + 1, l)].re.abs();
                C::from_real(s) + h[(l, l)]
            } else {
                let mut t = h[(i, i)];
                let u = h[(i - 1, i)].sqrt() * h[(i, i - 1)].sqrt();
                let mut s = u.abs1();
                if s != rzero {
                    let x = (h[(i - 1, i - 1)] - t).scale(half);
                    let sx = x.abs1();
                    s = s.max(x.abs1());
                    let (xs, us) = (over(x, s), over(u, s));
                    let mut y = (xs * xs + us * us).sqrt().scale(s);
                    if sx > rzero {
                        let along = over(x, sx);
                        if along.re * y.re + along.im * y.im < rzero {
                            y = -y;
                        }
                    }
                    t = t - u * ladiv(u, x + y);
                }
                t
            };
            // Look for two consecutive small subdiagonal elements.
            let mut v: [C<T>; 2];
            let mut m = i - 1;
            loop {
                let (h11, h22) = (h[(m, m)], h[(m + 1, m + 1)]);
                let mut h11s = h11 - t;
                let mut h21 = h[(m + 1, m)].re;
                let s = h11s.abs1() + h21.abs();
                h11s = over(h11s, s);
                h21 = h21 / s;
                v = [h11s, C::from_real(h21)];
                if m == l {
                    break;
                }
                let h10 = h[(m, m - 1)].re;
                if h10.abs() * h21.abs() <= ulp * (h11s.abs1() * (h11.abs1() + h22.abs1())) {
                    break;
                }
                m -= 1;
            }
            // The single-shift QR step.
            for k in m..i {
                if k > m {
                    v = [h[(k, k - 1)], h[(k + 1, k - 1)]];
                }
                let (beta, t1) = larfg(v[0], &mut v[1..2]);
                v[0] = beta;
                if k > m {
                    h[(k, k - 1)] = v[0];
                    h[(k + 1, k - 1)] = czero;
                }
                let v2 = v[1];
                let t2 = (t1 * v2).re;
                for j in k..=i2 {
                    let sum = t1.conj() * h[(k, j)] + h[(k + 1, j)].scale(t2);
                    h[(k, j)] = h[(k, j)] - sum;
                    h[(k + 1, j)] = h[(k + 1, j)] - sum * v2;
                }
                for j in i1..=(k + 2).min(i) {
                    let sum = t1 * h[(j, k)] + h[(j, k + 1)].scale(t2);
                    h[(j, k)] = h[(j, k)] - sum;
                    h[(j, k + 1)] = h[(j, k + 1)] - sum * v2.conj();
                }
                if let Some(z) = z.as_deref_mut() {
                    for j in ilo..=ihi {
                        let sum = t1 * z[(j, k)] + z[(j, k + 1)].scale(t2);
                        z[(j, k)] = z[(j, k)] - sum;
                        z[(j, k + 1)] = z[(j, k + 1)] - sum * v2.conj();
                    }
                }
                if k == m && m > l {
                    // A reflection of the first column made h(m, m-1) complex: make it
                    // real again with a diagonal unitary similarity.
                    let mut temp = C::from_real(rone) - t1;
                    temp = over(temp, temp.modulus());
                    h[(m + 1, m)] = h[(m + 1, m)] * temp.conj();
                    if m + 2 <= i {
                        h[(m + 2, m + 1)] = h[(m + 2, m + 1)] * temp;
                    }
                    for j in m..=i {
                        if j != m + 1 {
                            if i2 > j {
                                scale_row(h, j, j + 1..=i2, temp);
                            }
                            if j > i1 {
                                scale_col(h, j, i1..=j - 1, temp.conj());
                            }
                            if let Some(z) = z.as_deref_mut() {
                                scale_col(z, j, ilo..=ihi, temp.conj());
                            }
                        }
                    }
                }
            }
            // Make h(i, i-1) real.
            let temp = h[(i, i - 1)];
            if temp.im != rzero {
                let rtemp = temp.modulus();
                h[(i, i - 1)] = C::from_real(rtemp);
                let temp = over(temp, rtemp);
                if i2 > i {
                    scale_row(h, i, i + 1..=i2, temp.conj());
                }
                if i > i1 {
                    scale_col(h, i, i1..=i - 1, temp);
                }
                if let Some(z) = z.as_deref_mut() {
                    scale_col(z, i, ilo..=ihi, temp);
                }
            }
        }
        if !converged {
            return i as i32;
        }
        w[i] = h[(i, i)];
        kdefl = 0;
        if l == 0 {
            break;
        }
        i = l - 1;
    }
    0
}
