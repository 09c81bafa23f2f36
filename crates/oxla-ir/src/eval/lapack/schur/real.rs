//! The real Schur form: `gees` of a real matrix, with `lahqr`'s double-shift QR and
//! `lanv2`'s standardized 2x2 blocks.

use super::*;

/// `gees` of a real matrix: the real Schur form.
pub(in crate::eval::lapack) struct RealSchur<T> {
    /// Row-major, quasi upper triangular with standardized 2x2 blocks.
    pub t: Vec<T>,
    /// Row-major, orthogonal; empty when not asked for.
    pub z: Vec<T>,
    pub wr: Vec<T>,
    pub wi: Vec<T>,
    /// 0, or LAPACK's `info` when the QR iteration failed to converge.
    pub info: i32,
}

/// `gees` (no sorting) of the real row-major `n x n` matrix `a`.
pub(in crate::eval::lapack) fn real_gees<T: Real>(a: &[T], n: usize, want_z: bool) -> RealSchur<T> {
    let zero = T::zero();
    if n == 0 {
        return RealSchur {
            t: Vec::new(),
            z: Vec::new(),
            wr: Vec::new(),
            wi: Vec::new(),
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
    let (mut wr, mut wi) = (vec![zero; n + 1], vec![zero; n + 1]);
    for i in (1..ilo).chain(ihi + 1..=n) {
        wr[i] = h[(i, i)];
    }
    let mut info = 0;
    if ilo == ihi {
        wr[ilo] = h[(ilo, ilo)];
    } else {
        info = lahqr_real(&mut h, ilo, ihi, &mut wr, &mut wi, z.as_mut());
        if n > 2 {
            clear_below_subdiagonal(&mut h);
        }
    }
    if let Some(z) = z.as_mut() {
        gebak_permute(z, ilo, ihi, &perm);
    }
    if let Some(c) = cscale {
        unscale_real(
            &mut h,
            z.as_mut(),
            &mut wr,
            &mut wi,
            (ilo, ihi),
            info,
            anrm,
            c,
        );
    }
    RealSchur {
        t: h.row_major(),
        z: z.map(|z| z.row_major()).unwrap_or_default(),
        wr: wr[1..].to_vec(),
        wi: wi[1..].to_vec(),
        info,
    }
}

/// Undoes `gees`'s scaling of a real matrix: `T` and the eigenvalues scaled back, and a
/// 2x2 block whose complex pair underflowed split as LAPACK splits it.
#[allow(clippy::too_many_arguments)]
fn unscale_real<T: Real>(
    h: &mut Mat<T>,
    mut z: Option<&mut Mat<T>>,
    wr: &mut [T],
    wi: &mut [T],
    (ilo, ihi): (usize, usize),
    info: i32,
    anrm: T,
    cscale: T,
) {
    let n = h.n;
    let zero = T::zero();
    lascl(h, Part::UpperHessenberg, cscale, anrm);
    for i in 1..=n {
        wr[i] = h[(i, i)];
    }
    let smlnum = T::min_positive_value().sqrt() / T::epsilon();
    let ieval = info.max(0) as usize;
    if cscale == smlnum {
        let (i1, i2) = if ieval > 0 {
            scale_steps(cscale, anrm, |mul| {
                for w in wi[1..ilo].iter_mut() {
                    *w = *w * mul;
                }
            });
            (ieval + 1, ihi.saturating_sub(1))
        } else {
            (ilo, ihi.saturating_sub(1))
        };
        let mut inxt = i1.saturating_sub(1);
        for i in i1..=i2 {
            if i < inxt {
                continue;
            }
            if wi[i] == zero {
                inxt = i + 1;
            } else {
                if h[(i + 1, i)] == zero {
                    wi[i] = zero;
                    wi[i + 1] = zero;
                } else if h[(i, i + 1)] == zero {
                    wi[i] = zero;
                    wi[i + 1] = zero;
                    if i > 1 {
                        h.swap_cols(i, i + 1, 1..=i - 1);
                    }
                    if n > i + 1 {
                        h.swap_rows(i, i + 1, i + 2..=n);
                    }
                    if let Some(z) = z.as_deref_mut() {
                        z.swap_cols(i, i + 1, 1..=n);
                    }
                    h[(i, i + 1)] = h[(i + 1, i)];
                    h[(i + 1, i)] = zero;
                }
                inxt = i + 2;
            }
        }
    }
    scale_steps(cscale, anrm, |mul| {
        for w in wi[ieval + 1..=n].iter_mut() {
            *w = *w * mul;
        }
    });
}

/// The standardized Schur factorization of a real 2x2 block (`lanv2`): `[a b; c d]`
/// becomes `[a' b'; c' d']` with `c' = 0` (real eigenvalues) or `a' = d'` and
/// `b' c' < 0` (a complex pair), by the rotation `[cs sn; -sn cs]`. Returns the block,
/// the eigenvalues `(rt1r, rt1i, rt2r, rt2i)` and the rotation `(cs, sn)`.
#[allow(clippy::type_complexity)]
fn lanv2<T: Real>(mut a: T, mut b: T, mut c: T, mut d: T) -> ([T; 4], [T; 4], (T, T)) {
    let (zero, one) = (T::zero(), T::one());
    let half = T::from(0.5).unwrap();
    let multpl = T::from(4.0).unwrap();
    let safmin = T::min_positive_value();
    let eps = T::epsilon();
    let exponent = ((safmin / eps).to_f64().unwrap().ln() / 2f64.ln() / 2.0) as i32;
    let safmn2 = T::from(2.0).unwrap().powi(exponent);
    let safmx2 = one / safmn2;
    let (mut cs, mut sn);
    if c == zero {
        cs = one;
        sn = zero;
    } else if b == zero {
        cs = zero;
        sn = one;
        std::mem::swap(&mut a, &mut d);
        b = -c;
        c = zero;
    } else if a - d == zero && sign(one, b) != sign(one, c) {
        cs = one;
        sn = zero;
    } else {
        let mut temp = a - d;
        let mut p = half * temp;
        let bcmax = b.abs().max(c.abs());
        let bcmis = b.abs().min(c.abs()) * sign(one, b) * sign(one, c);
        let mut scale = p.abs().max(bcmax);
        let mut z = (p / scale) * p + (bcmax / scale) * bcmis;
        if z >= multpl * eps {
            // Real eigenvalues.
            z = p + sign(scale.sqrt() * z.sqrt(), p);
            a = d + z;
            d = d - (bcmax / z) * bcmis;
            let tau = lapy2(c, z);
            cs = z / tau;
            sn = c / tau;
            b = b - c;
            c = zero;
        } else {
            // Complex or nearly equal real eigenvalues: make the diagonal equal.
            let mut count = 0;
            let mut sigma = b + c;
            loop {
                count += 1;
                scale = temp.abs().max(sigma.abs());
                if scale >= safmx2 {
                    sigma = sigma * safmn2;
                    temp = temp * safmn2;
                    if count <= 20 {
                        continue;
                    }
                }
                if scale <= safmn2 {
                    sigma = sigma * safmx2;
                    temp = temp * safmx2;
                    if count <= 20 {
                        continue;
                    }
                }
                break;
            }
            p = half * temp;
            let mut tau = lapy2(sigma, temp);
            cs = (half * (one + sigma.abs() / tau)).sqrt();
            sn = -(p / (tau * cs)) * sign(one, sigma);
            let (aa, bb) = (a * cs + b * sn, -a * sn + b * cs);
            let (cc, dd) = (c * cs + d * sn, -c * sn + d * cs);
            a = aa * cs + cc * sn;
            b = bb * cs + dd * sn;
            c = -(aa * sn) + cc * cs;
            d = -bb * sn + dd * cs;
            temp = half * (a + d);
            a = temp;
            d = temp;
            if c != zero {
                if b != zero {
                    if sign(one, b) == sign(one, c) {
                        // Real eigenvalues after all: reduce to upper triangular form.
                        let sab = b.abs().sqrt();
                        let sac = c.abs().sqrt();
                        p = sign(sab * sac, c);
                        tau = one / (b + c).abs().sqrt();
                        a = temp + p;
                        d = temp - p;
                        b = b - c;
                        c = zero;
                        let cs1 = sab * tau;
                        let sn1 = sac * tau;
                        let t = cs * cs1 - sn * sn1;
                        sn = cs * sn1 + sn * cs1;
                        cs = t;
                    }
                } else {
                    b = -c;
                    c = zero;
                    let t = cs;
                    cs = -sn;
                    sn = t;
                }
            }
        }
    }
    let (rt1i, rt2i) = if c == zero {
        (zero, zero)
    } else {
        let im = b.abs().sqrt() * c.abs().sqrt();
        (im, -im)
    };
    ([a, b, c, d], [a, rt1i, d, rt2i], (cs, sn))
}

/// Applies the plane rotation `[cs sn; -sn cs]` to the pairs `(x[k], y[k])` (`rot`).
fn rotate<T: Real>(pairs: impl Iterator<Item = (usize, usize)>, m: &mut Mat<T>, cs: T, sn: T) {
    for (xi, yi) in pairs {
        let (x, y) = (m.data[xi], m.data[yi]);
        m.data[xi] = cs * x + sn * y;
        m.data[yi] = cs * y - sn * x;
    }
}

/// The double-shift QR iteration on rows and columns `ilo..=ihi` of the upper Hessenberg
/// `h` (`lahqr` with the whole Schur form wanted), accumulating into `z`. Returns 0, or
/// the row above which eigenvalues have not converged.
fn lahqr_real<T: Real>(
    h: &mut Mat<T>,
    ilo: usize,
    ihi: usize,
    wr: &mut [T],
    wi: &mut [T],
    mut z: Option<&mut Mat<T>>,
) -> i32 {
    let n = h.n;
    let (zero, one) = (T::zero(), T::one());
    let dat1 = T::from(0.75).unwrap();
    let dat2 = T::from(-0.4375).unwrap();
    const KEXSH: usize = 10;
    clear_band(h, ilo, ihi);
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
                h[(l, l - 1)] = zero;
            }
            if l + 1 >= i {
                converged = true;
                break;
            }
            kdefl += 1;
            let (mut h11, mut h12, mut h21, mut h22);
            if kdefl.is_multiple_of(2 * KEXSH) {
                let s = h[(i, i - 1)].abs() + h[(i - 1, i - 2)].abs();
                h11 = dat1 * s + h[(i, i)];
                h12 = dat2 * s;
                h21 = s;
                h22 = h11;
            } else if kdefl.is_multiple_of(KEXSH) {
                let s = h[(l + 1, l)].abs() + h[(l + 2, l + 1)].abs();
                h11 = dat1 * s + h[(l, l)];
                h12 = dat2 * s;
                h21 = s;
                h22 = h11;
            } else {
                h11 = h[(i - 1, i - 1)];
                h21 = h[(i, i - 1)];
                h12 = h[(i - 1, i)];
                h22 = h[(i, i)];
            }
            let s = h11.abs() + h12.abs() + h21.abs() + h22.abs();
            let (rt1r, rt1i, rt2r, rt2i);
            if s == zero {
                rt1r = zero;
                rt1i = zero;
                rt2r = zero;
                rt2i = zero;
            } else {
                h11 = h11 / s;
                h21 = h21 / s;
                h12 = h12 / s;
                h22 = h22 / s;
                let tr = (h11 + h22) / T::from(2.0).unwrap();
                let det = (h11 - tr) * (h22 - tr) - h12 * h21;
                let rtdisc = det.abs().sqrt();
                if det >= zero {
                    // A complex conjugate pair of shifts.
                    rt1r = tr * s;
                    rt2r = rt1r;
                    rt1i = rtdisc * s;
                    rt2i = -rt1i;
                } else {
                    // Real shifts: use the one nearer h22 twice.
                    let (a, b) = (tr + rtdisc, tr - rtdisc);
                    let r = if (a - h22).abs() <= (b - h22).abs() {
                        a * s
                    } else {
                        b * s
                    };
                    rt1r = r;
                    rt2r = r;
                    rt1i = zero;
                    rt2i = zero;
                }
            }
            // Look for two consecutive small subdiagonal elements.
            let mut v = [zero; 3];
            let mut m = i - 2;
            loop {
                let h21s = h[(m + 1, m)];
                let s = (h[(m, m)] - rt2r).abs() + rt2i.abs() + h21s.abs();
                let h21s = h[(m + 1, m)] / s;
                v[0] = h21s * h[(m, m + 1)] + (h[(m, m)] - rt1r) * ((h[(m, m)] - rt2r) / s)
                    - rt1i * (rt2i / s);
                v[1] = h21s * (h[(m, m)] + h[(m + 1, m + 1)] - rt1r - rt2r);
                v[2] = h21s * h[(m + 2, m + 1)];
                let s = v[0].abs() + v[1].abs() + v[2].abs();
                v[0] = v[0] / s;
                v[1] = v[1] / s;
                v[2] = v[2] / s;
                if m == l {
                    break;
                }
                let h00 = h[(m - 1, m - 1)].abs() + h[(m, m)].abs() + h[(m + 1, m + 1)].abs();
                if h[(m, m - 1)].abs() * (v[1].abs() + v[2].abs()) <= ulp * v[0].abs() * h00 {
                    break;
                }
                m -= 1;
            }
            // The double-shift QR step.
            for k in m..i {
                let nr = 3.min(i - k + 1);
                if k > m {
                    for (r, slot) in v.iter_mut().enumerate().take(nr) {
                        *slot = h[(k + r, k - 1)];
                    }
                }
                let (beta, t1) = larfg(v[0], &mut v[1..nr]);
                v[0] = beta;
                if k > m {
                    h[(k, k - 1)] = v[0];
                    h[(k + 1, k - 1)] = zero;
                    if k + 1 < i {
                        h[(k + 2, k - 1)] = zero;
                    }
                } else if m > l {
                    h[(k, k - 1)] = h[(k, k - 1)] * (one - t1);
                }
                let v2 = v[1];
                let t2 = t1 * v2;
                if nr == 3 {
                    let v3 = v[2];
                    let t3 = t1 * v3;
                    for j in k..=i2 {
                        let sum = h[(k, j)] + v2 * h[(k + 1, j)] + v3 * h[(k + 2, j)];
                        h[(k, j)] = h[(k, j)] - sum * t1;
                        h[(k + 1, j)] = h[(k + 1, j)] - sum * t2;
                        h[(k + 2, j)] = h[(k + 2, j)] - sum * t3;
                    }
                    for j in i1..=(k + 3).min(i) {
                        let sum = h[(j, k)] + v2 * h[(j, k + 1)] + v3 * h[(j, k + 2)];
                        h[(j, k)] = h[(j, k)] - sum * t1;
                        h[(j, k + 1)] = h[(j, k + 1)] - sum * t2;
                        h[(j, k + 2)] = h[(j, k + 2)] - sum * t3;
                    }
                    if let Some(z) = z.as_deref_mut() {
                        for j in ilo..=ihi {
                            let sum = z[(j, k)] + v2 * z[(j, k + 1)] + v3 * z[(j, k + 2)];
                            z[(j, k)] = z[(j, k)] - sum * t1;
                            z[(j, k + 1)] = z[(j, k + 1)] - sum * t2;
                            z[(j, k + 2)] = z[(j, k + 2)] - sum * t3;
                        }
                    }
                } else if nr == 2 {
                    for j in k..=i2 {
                        let sum = h[(k, j)] + v2 * h[(k + 1, j)];
                        h[(k, j)] = h[(k, j)] - sum * t1;
                        h[(k + 1, j)] = h[(k + 1, j)] - sum * t2;
                    }
                    for j in i1..=i {
                        let sum = h[(j, k)] + v2 * h[(j, k + 1)];
                        h[(j, k)] = h[(j, k)] - sum * t1;
                        h[(j, k + 1)] = h[(j, k + 1)] - sum * t2;
                    }
                    if let Some(z) = z.as_deref_mut() {
                        for j in ilo..=ihi {
                            let sum = z[(j, k)] + v2 * z[(j, k + 1)];
                            z[(j, k)] = z[(j, k)] - sum * t1;
                            z[(j, k + 1)] = z[(j, k + 1)] - sum * t2;
                        }
                    }
                }
            }
        }
        if !converged {
            return i as i32;
        }
        if l == i {
            // One eigenvalue has converged.
            wr[i] = h[(i, i)];
            wi[i] = zero;
        } else if l + 1 == i {
            // A pair has converged: standardize the 2x2 block.
            let (block, rts, (cs, sn)) =
                lanv2(h[(i - 1, i - 1)], h[(i - 1, i)], h[(i, i - 1)], h[(i, i)]);
            h[(i - 1, i - 1)] = block[0];
            h[(i - 1, i)] = block[1];
            h[(i, i - 1)] = block[2];
            h[(i, i)] = block[3];
            wr[i - 1] = rts[0];
            wi[i - 1] = rts[1];
            wr[i] = rts[2];
            wi[i] = rts[3];
            let nn = h.n;
            let at = |r: usize, c: usize| (r - 1) + (c - 1) * nn;
            if i2 > i {
                rotate((i + 1..=i2).map(|j| (at(i - 1, j), at(i, j))), h, cs, sn);
            }
            rotate((i1..i - 1).map(|r| (at(r, i - 1), at(r, i))), h, cs, sn);
            if let Some(z) = z.as_deref_mut() {
                rotate((ilo..=ihi).map(|r| (at(r, i - 1), at(r, i))), z, cs, sn);
            }
        }
        kdefl = 0;
        if l == 0 {
            break;
        }
        i = l - 1;
    }
    0
}
