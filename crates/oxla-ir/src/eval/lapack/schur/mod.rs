//! The Schur factorization `A = Z T Z^H` the way LAPACK's `gees` computes it.
//!
//! A Schur form is not unique: the order of the eigenvalues along `T`'s diagonal and the
//! signs (phases) of `Z`'s columns depend on every step of the algorithm. JAX programs
//! compare `jax.scipy.linalg.schur` with SciPy's, which is LAPACK's, so this module takes
//! LAPACK's steps in the matrix's own precision: the permutation part of balancing
//! (`gebal` with job `P`), the unblocked Hessenberg reduction (`gehd2`, which `gehrd` runs
//! below 128 rows) and its orthogonal factor (`orghr`/`org2r`), the double-shift QR of
//! small matrices (`lahqr`, with `lanv2`'s standardized 2x2 blocks for the real form), the
//! balancing permutation undone on `Z` (`gebak`) and the scaling of matrices whose entries
//! are near underflow or overflow. Up to 75 rows that is LAPACK's whole algorithm: small
//! real matrices get LAPACK's form, while on larger ones the rounding of LAPACK's products
//! (its BLAS's) and of these can lead the iterations apart, to another valid form: LAPACK's
//! own form changes under relative perturbations of 1e-15 for most matrices of 15 rows or
//! more, so past a few rows it is decided by rounding. Complex
//! forms depend on rounding noise itself: after each sweep `lahqr` makes the last
//! subdiagonal entry real by its phase, also when that entry is noise about to deflate, and
//! that phase ends up in a column of `Z`. Above 75
//! rows LAPACK's `hseqr` switches to its multishift QR with aggressive early deflation
//! (`laqr0`), which is not reproduced here, so larger matrices get a valid Schur form
//! whose eigenvalue order may differ from LAPACK's.
//!
//! Matrices are column-major inside and indexed from 1, as LAPACK's are, so the code reads
//! against the algorithm's description line by line; the entry points take and return
//! row-major matrices.

use num_complex::Complex;
use num_traits::{Float, NumCast, One, ToPrimitive, Zero};
use std::ops::{Add, Index, IndexMut, Mul, Neg, Sub};

mod complex;
mod real;

pub(super) use complex::complex_gees;
pub(super) use real::{real_gees, RealSchur};

/// The real element types of the Schur form: f32 and f64.
pub(super) trait Real: Float + std::fmt::Debug {}
impl Real for f32 {}
impl Real for f64 {}

/// A matrix element: a real number, or a complex number over one.
pub(super) trait Scalar:
    Copy + PartialEq + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Neg<Output = Self>
{
    /// The real type of the element's parts.
    type Real: Real;
    /// Whether the element has an imaginary part.
    const COMPLEX: bool;
    fn from_parts(re: Self::Real, im: Self::Real) -> Self;
    fn re(self) -> Self::Real;
    fn im(self) -> Self::Real;
    fn conj(self) -> Self;
    /// `self / other` without needless overflow or underflow (`ladiv` for complex numbers).
    fn div(self, other: Self) -> Self;
    fn scale(self, by: Self::Real) -> Self;
    /// The modulus (`abs` of Fortran).
    fn modulus(self) -> Self::Real;
    fn from_real(re: Self::Real) -> Self {
        Self::from_parts(re, Self::Real::zero())
    }
    fn zero_elem() -> Self {
        Self::from_real(Self::Real::zero())
    }
    fn one_elem() -> Self {
        Self::from_real(Self::Real::one())
    }
    /// `|re| + |im|`, LAPACK's `cabs1`.
    fn abs1(self) -> Self::Real {
        self.re().abs() + self.im().abs()
    }
}

impl<T: Real> Scalar for T {
    type Real = T;
    const COMPLEX: bool = false;
    fn from_parts(re: T, _im: T) -> T {
        re
    }
    fn re(self) -> T {
        self
    }
    fn im(self) -> T {
        T::zero()
    }
    fn conj(self) -> T {
        self
    }
    fn div(self, other: T) -> T {
        self / other
    }
    fn scale(self, by: T) -> T {
        self * by
    }
    fn modulus(self) -> T {
        self.abs()
    }
}

impl<T: Real> Scalar for Complex<T> {
    type Real = T;
    const COMPLEX: bool = true;
    fn from_parts(re: T, im: T) -> Self {
        Complex::new(re, im)
    }
    fn re(self) -> T {
        self.re
    }
    fn im(self) -> T {
        self.im
    }
    fn conj(self) -> Self {
        Complex::conj(&self)
    }
    fn div(self, other: Self) -> Self {
        ladiv(self, other)
    }
    fn scale(self, by: T) -> Self {
        Complex::new(self.re * by, self.im * by)
    }
    fn modulus(self) -> T {
        lapy2(self.re, self.im)
    }
}

/// Complex division by Smith's method: scale by the divisor's larger part.
fn ladiv<T: Real>(a: Complex<T>, b: Complex<T>) -> Complex<T> {
    if b.im.abs() <= b.re.abs() {
        let r = b.im / b.re;
        let d = b.re + b.im * r;
        Complex::new((a.re + a.im * r) / d, (a.im - a.re * r) / d)
    } else {
        let r = b.re / b.im;
        let d = b.im + b.re * r;
        Complex::new((a.re * r + a.im) / d, (a.im * r - a.re) / d)
    }
}

/// `|a|` with the sign of `b` (Fortran's `sign`; a negative zero counts as negative).
fn sign<T: Real>(a: T, b: T) -> T {
    a.abs().copysign(b)
}

/// `sqrt(x^2 + y^2)` scaled by the larger magnitude (`lapy2`).
fn lapy2<T: Real>(x: T, y: T) -> T {
    if x.is_nan() {
        return x;
    }
    if y.is_nan() {
        return y;
    }
    let (xa, ya) = (x.abs(), y.abs());
    let (w, z) = (xa.max(ya), xa.min(ya));
    if z == T::zero() || w > T::max_value() {
        w
    } else {
        w * (T::one() + (z / w) * (z / w)).sqrt()
    }
}

/// `sqrt(x^2 + y^2 + z^2)` scaled by the largest magnitude (`lapy3`).
fn lapy3<T: Real>(x: T, y: T, z: T) -> T {
    let (xa, ya, za) = (x.abs(), y.abs(), z.abs());
    let w = xa.max(ya).max(za);
    if w == T::zero() || w > T::max_value() {
        xa + ya + za
    } else {
        w * ((xa / w) * (xa / w) + (ya / w) * (ya / w) + (za / w) * (za / w)).sqrt()
    }
}

/// The Euclidean norm, nearly correctly rounded: LAPACK's BLAS computes it in wider
/// precision than the elements' (the x87's 80 bits for f64, f64 for f32), and the Schur
/// form's signs follow the last bits of the reflectors built from it. Squares are summed as
/// double-f64 (an f64 and its error term), then rounded once; magnitudes that could
/// overflow or underflow are scaled by a power of two first, which is exact.
fn nrm2<S: Scalar>(x: &[S]) -> S::Real {
    let zero = S::Real::zero();
    let big = x
        .iter()
        .fold(zero, |m, v| m.max(v.re().abs()).max(v.im().abs()));
    if big == zero || !big.is_finite() {
        return big;
    }
    let big = big.to_f64().unwrap_or(f64::MAX);
    // A power of two near 1 / big keeps every square and the sum in range.
    let scale = if (1e-140..=1e140).contains(&big) {
        1.0
    } else {
        2f64.powi((-(big.log2().round() as i32)).clamp(-1000, 1000))
    };
    let (mut hi, mut lo) = (0.0f64, 0.0f64);
    let mut add_square = |v: f64| {
        let v = v * scale;
        let sq = v * v;
        let sq_err = v.mul_add(v, -sq);
        let sum = hi + sq;
        let bv = sum - hi;
        let sum_err = (hi - (sum - bv)) + (sq - bv);
        hi = sum;
        lo += sum_err + sq_err;
    };
    for v in x {
        add_square(v.re().to_f64().unwrap_or(0.0));
        add_square(v.im().to_f64().unwrap_or(0.0));
    }
    let (sum, err) = (hi + lo, lo - ((hi + lo) - hi));
    let root = sum.sqrt();
    // One Newton step on the double-f64 sum: sqrt(s + e) = r + (s - r^2 + e) / (2 r).
    let residual = (-root).mul_add(root, sum) + err;
    let norm = (root + residual / (2.0 * root)) / scale;
    <S::Real as NumCast>::from(norm).unwrap_or(S::Real::max_value())
}

/// `DLAMCH('E')`: half the distance from 1 to the next number (rounding to nearest).
fn unit_roundoff<T: Real>() -> T {
    T::epsilon() * T::from(0.5).unwrap()
}

/// A square column-major matrix indexed from 1, `m[(row, col)]`.
#[derive(Clone)]
struct Mat<S> {
    n: usize,
    data: Vec<S>,
}

impl<S: Scalar> Mat<S> {
    fn from_row_major(a: &[S], n: usize) -> Self {
        let mut data = vec![S::zero_elem(); n * n];
        for i in 0..n {
            for j in 0..n {
                data[i + j * n] = a[i * n + j];
            }
        }
        Mat { n, data }
    }

    fn identity(n: usize) -> Self {
        let mut m = Mat {
            n,
            data: vec![S::zero_elem(); n * n],
        };
        for d in 1..=n {
            m[(d, d)] = S::one_elem();
        }
        m
    }

    fn row_major(&self) -> Vec<S> {
        let n = self.n;
        let mut out = vec![S::zero_elem(); n * n];
        for i in 0..n {
            for j in 0..n {
                out[i * n + j] = self.data[i + j * n];
            }
        }
        out
    }

    fn swap_rows(&mut self, a: usize, b: usize, cols: std::ops::RangeInclusive<usize>) {
        for j in cols {
            let (x, y) = (self[(a, j)], self[(b, j)]);
            self[(a, j)] = y;
            self[(b, j)] = x;
        }
    }

    fn swap_cols(&mut self, a: usize, b: usize, rows: std::ops::RangeInclusive<usize>) {
        for i in rows {
            let (x, y) = (self[(i, a)], self[(i, b)]);
            self[(i, a)] = y;
            self[(i, b)] = x;
        }
    }

    /// `C := (I - tau v v^H) C` on rows `r0..` (as many as `v` has) and columns `cols`.
    fn reflect_left(&mut self, r0: usize, cols: std::ops::RangeInclusive<usize>, v: &[S], tau: S) {
        if tau == S::zero_elem() {
            return;
        }
        for j in cols {
            let mut w = S::zero_elem();
            for (k, &vk) in v.iter().enumerate() {
                w = w + vk.conj() * self[(r0 + k, j)];
            }
            let f = tau * w;
            for (k, &vk) in v.iter().enumerate() {
                self[(r0 + k, j)] = self[(r0 + k, j)] - vk * f;
            }
        }
    }

    /// `C := C (I - tau v v^H)` on rows `rows` and columns `c0..` (as many as `v` has).
    fn reflect_right(&mut self, rows: std::ops::RangeInclusive<usize>, c0: usize, v: &[S], tau: S) {
        if tau == S::zero_elem() {
            return;
        }
        for i in rows {
            let mut w = S::zero_elem();
            for (k, &vk) in v.iter().enumerate() {
                w = w + self[(i, c0 + k)] * vk;
            }
            let f = tau * w;
            for (k, &vk) in v.iter().enumerate() {
                self[(i, c0 + k)] = self[(i, c0 + k)] - f * vk.conj();
            }
        }
    }
}

impl<S> Index<(usize, usize)> for Mat<S> {
    type Output = S;
    fn index(&self, (i, j): (usize, usize)) -> &S {
        &self.data[(i - 1) + (j - 1) * self.n]
    }
}

impl<S> IndexMut<(usize, usize)> for Mat<S> {
    fn index_mut(&mut self, (i, j): (usize, usize)) -> &mut S {
        &mut self.data[(i - 1) + (j - 1) * self.n]
    }
}

/// An elementary reflector `H = I - tau v v^H` (`v[0] = 1`, the rest written over `x`)
/// with `H^H [alpha; x] = [beta; 0]`, `beta` real (`larfg`). Returns `(beta, tau)`.
fn larfg<S: Scalar>(alpha: S, x: &mut [S]) -> (S, S) {
    let one = S::Real::one();
    let mut xnorm = nrm2(x);
    let (mut alphr, mut alphi) = (alpha.re(), alpha.im());
    if xnorm == S::Real::zero() && alphi == S::Real::zero() {
        return (alpha, S::zero_elem());
    }
    let norm = |re: S::Real, im: S::Real, xn: S::Real| {
        if S::COMPLEX {
            lapy3(re, im, xn)
        } else {
            lapy2(re, xn)
        }
    };
    let mut beta = -sign(norm(alphr, alphi, xnorm), alphr);
    let safmin = S::Real::min_positive_value() / unit_roundoff::<S::Real>();
    let mut knt = 0;
    if beta.abs() < safmin {
        let rsafmn = one / safmin;
        loop {
            knt += 1;
            for v in x.iter_mut() {
                *v = v.scale(rsafmn);
            }
            beta = beta * rsafmn;
            alphi = alphi * rsafmn;
            alphr = alphr * rsafmn;
            if !(beta.abs() < safmin && knt < 20) {
                break;
            }
        }
        xnorm = nrm2(x);
        beta = -sign(norm(alphr, alphi, xnorm), alphr);
    }
    let tau = S::from_parts((beta - alphr) / beta, -alphi / beta);
    let factor = S::one_elem().div(S::from_parts(alphr, alphi) - S::from_real(beta));
    for v in x.iter_mut() {
        *v = factor * *v;
    }
    for _ in 0..knt {
        beta = beta * safmin;
    }
    (S::from_real(beta), tau)
}

/// The permutation part of balancing (`gebal` with job `P`): rows and columns that isolate
/// an eigenvalue move to the bottom and top. Returns `(ilo, ihi, perm)`, `perm[j]` the
/// row and column swapped with `j` (1-based; `perm[0]` unused).
fn gebal_permute<S: Scalar>(a: &mut Mat<S>) -> (usize, usize, Vec<usize>) {
    let n = a.n;
    let mut perm: Vec<usize> = (0..=n).collect();
    let (mut k, mut l) = (1usize, n);
    let zero = S::zero_elem();
    // Rows with zeros off the diagonal (within columns 1..l) go to the bottom.
    let mut moved = true;
    while moved {
        moved = false;
        let start = l;
        for i in (1..=start).rev() {
            let isolated = (1..=l).all(|j| i == j || a[(i, j)] == zero);
            if isolated {
                perm[l] = i;
                if i != l {
                    a.swap_cols(i, l, 1..=l);
                    a.swap_rows(i, l, k..=n);
                }
                moved = true;
                if l == 1 {
                    return (1, 1, perm);
                }
                l -= 1;
            }
        }
    }
    // Columns with zeros off the diagonal (within rows k..l) go to the left.
    moved = true;
    while moved {
        moved = false;
        let (start, end) = (k, l);
        for j in start..=end {
            let isolated = (k..=l).all(|i| i == j || a[(i, j)] == zero);
            if isolated {
                perm[k] = j;
                if j != k {
                    a.swap_cols(j, k, 1..=l);
                    a.swap_rows(j, k, k..=n);
                }
                moved = true;
                k += 1;
            }
        }
    }
    (k, l, perm)
}

/// Undoes [`gebal_permute`] on the rows of `v` (`gebak` with job `P`, side `R`).
fn gebak_permute<S: Scalar>(v: &mut Mat<S>, ilo: usize, ihi: usize, perm: &[usize]) {
    let n = v.n;
    for ii in 1..=n {
        if (ilo..=ihi).contains(&ii) {
            continue;
        }
        let i = if ii < ilo { ilo - ii } else { ii };
        let k = perm[i];
        if k != i {
            v.swap_rows(i, k, 1..=n);
        }
    }
}

/// Hessenberg reduction of rows and columns `ilo..=ihi` (`gehd2`): `A = Q H Q^H`, the
/// reflectors below the first subdiagonal. Returns `tau` indexed from 1.
fn gehd2<S: Scalar>(a: &mut Mat<S>, ilo: usize, ihi: usize) -> Vec<S> {
    let n = a.n;
    let mut taus = vec![S::zero_elem(); n.max(1)];
    for i in ilo..ihi {
        let mut x: Vec<S> = (i + 2..=ihi).map(|r| a[(r, i)]).collect();
        let (beta, tau) = larfg(a[(i + 1, i)], &mut x);
        a[(i + 1, i)] = beta;
        for (k, &v) in x.iter().enumerate() {
            a[(i + 2 + k, i)] = v;
        }
        let v: Vec<S> = std::iter::once(S::one_elem()).chain(x).collect();
        a.reflect_right(1..=ihi, i + 1, &v, tau);
        a.reflect_left(i + 1, i + 1..=n, &v, tau.conj());
        taus[i] = tau;
    }
    taus
}

/// The unitary `Q` of [`gehd2`]'s reflectors (`orghr`, which runs `org2r` on rows and
/// columns `ilo + 1..=ihi`).
fn orghr<S: Scalar>(h: &Mat<S>, ilo: usize, ihi: usize, taus: &[S]) -> Mat<S> {
    let n = h.n;
    let mut q = Mat::identity(n);
    // Column j of the trailing block holds reflector j - 1's vector (shifted one right).
    for j in ilo + 1..=ihi {
        for i in j + 1..=ihi {
            q[(i, j)] = h[(i, j - 1)];
        }
    }
    let nh = ihi - ilo;
    let o = ilo;
    for i in (1..=nh).rev() {
        let tau = taus[ilo + i - 1];
        if i < nh {
            let v: Vec<S> = std::iter::once(S::one_elem())
                .chain((i + 1..=nh).map(|r| q[(o + r, o + i)]))
                .collect();
            q.reflect_left(o + i, o + i + 1..=o + nh, &v, tau);
        }
        for r in i + 1..=nh {
            q[(o + r, o + i)] = -tau * q[(o + r, o + i)];
        }
        q[(o + i, o + i)] = S::one_elem() - tau;
        for r in 1..i {
            q[(o + r, o + i)] = S::zero_elem();
        }
    }
    q
}

/// Which part of a matrix [`lascl`] scales.
#[derive(Clone, Copy, PartialEq)]
enum Part {
    All,
    UpperHessenberg,
    Upper,
}

/// Multiplies `part` of `a` by `cto / cfrom` in steps that neither overflow nor underflow
/// (`lascl`).
fn lascl<S: Scalar>(a: &mut Mat<S>, part: Part, cfrom: S::Real, cto: S::Real) {
    let n = a.n;
    scale_steps(cfrom, cto, |mul| {
        for j in 1..=n {
            let rows = match part {
                Part::All => n,
                Part::UpperHessenberg => (j + 1).min(n),
                Part::Upper => j,
            };
            for i in 1..=rows {
                a[(i, j)] = a[(i, j)].scale(mul);
            }
        }
    });
}

/// The factors `lascl` multiplies by, one call of `apply` each.
fn scale_steps<T: Real>(cfrom: T, cto: T, mut apply: impl FnMut(T)) {
    let smlnum = T::min_positive_value();
    let bignum = T::one() / smlnum;
    let (mut cfromc, mut ctoc) = (cfrom, cto);
    loop {
        let cfrom1 = cfromc * smlnum;
        let (mul, done);
        if cfrom1 == cfromc {
            mul = ctoc / cfromc;
            done = true;
        } else {
            let cto1 = ctoc / bignum;
            if cto1 == ctoc {
                mul = ctoc;
                done = true;
                cfromc = T::one();
            } else if cfrom1.abs() > ctoc.abs() && ctoc != T::zero() {
                mul = smlnum;
                done = false;
                cfromc = cfrom1;
            } else if cto1.abs() > cfromc.abs() {
                mul = bignum;
                done = false;
                ctoc = cto1;
            } else {
                mul = ctoc / cfromc;
                done = true;
                if mul == T::one() {
                    return;
                }
            }
        }
        apply(mul);
        if done {
            return;
        }
    }
}

/// Whether `gees` scales the matrix first, and to what: entries whose largest magnitude
/// lies below `sqrt(safmin) / eps` or above its reciprocal.
fn scaling<S: Scalar>(a: &Mat<S>) -> (S::Real, Option<S::Real>) {
    let zero = S::Real::zero();
    let smlnum = S::Real::min_positive_value().sqrt() / S::Real::epsilon();
    let bignum = S::Real::one() / smlnum;
    let mut anrm = zero;
    for &v in &a.data {
        let m = v.modulus();
        if anrm < m || m.is_nan() {
            anrm = m;
        }
    }
    let cscale = if anrm > zero && anrm < smlnum {
        Some(smlnum)
    } else if anrm > bignum {
        Some(bignum)
    } else {
        None
    };
    (anrm, cscale)
}

/// Zeroes what lies below the first subdiagonal (`hseqr`'s final `laset`).
fn clear_below_subdiagonal<S: Scalar>(h: &mut Mat<S>) {
    let n = h.n;
    for j in 1..=n {
        for i in j + 2..=n {
            h[(i, j)] = S::zero_elem();
        }
    }
}

/// `lahqr`'s thresholds for an active block of `nh` rows: a subdiagonal entry at most
/// `smlnum` is negligible outright, one at most `ulp` times its neighbours relatively.
struct Tolerances<T> {
    smlnum: T,
    ulp: T,
}

impl<T: Real> Tolerances<T> {
    fn new(nh: usize) -> Self {
        let ulp = T::epsilon();
        let smlnum = T::min_positive_value() * (T::from(nh).unwrap() / ulp);
        Tolerances { smlnum, ulp }
    }
}

/// Zeroes rows `j + 2` and `j + 3` of each column `j` of the active block `ilo..=ihi`
/// (`lahqr`'s clearing of what a double-shift bulge could leave below the subdiagonal).
fn clear_band<S: Scalar>(h: &mut Mat<S>, ilo: usize, ihi: usize) {
    for j in ilo..=ihi.saturating_sub(3) {
        if j + 3 > ihi {
            break;
        }
        h[(j + 2, j)] = S::zero_elem();
        h[(j + 3, j)] = S::zero_elem();
    }
    if ilo + 2 <= ihi {
        h[(ihi, ihi - 2)] = S::zero_elem();
    }
}

/// The row `k` in `l + 1..=i` of the last negligible subdiagonal entry `h[k, k - 1]` of the
/// active block `ilo..=ihi`, or `l` if there is none: `lahqr`'s deflation test (Ahues and
/// Tisseur's criterion), with `cabs1` as the modulus. The subdiagonal of a complex `lahqr`
/// is real, so its entries are measured by their real parts where LAPACK does.
fn small_subdiagonal<S: Scalar>(
    h: &Mat<S>,
    l: usize,
    i: usize,
    ilo: usize,
    ihi: usize,
    smlnum: S::Real,
    ulp: S::Real,
) -> usize {
    let mut k = i;
    while k > l {
        if h[(k, k - 1)].abs1() <= smlnum {
            break;
        }
        let mut tst = h[(k - 1, k - 1)].abs1() + h[(k, k)].abs1();
        if tst == S::Real::zero() {
            if k >= ilo + 2 {
                tst = tst + h[(k - 1, k - 2)].re().abs();
            }
            if k < ihi {
                tst = tst + h[(k + 1, k)].re().abs();
            }
        }
        if h[(k, k - 1)].re().abs() <= ulp * tst {
            let ab = h[(k, k - 1)].abs1().max(h[(k - 1, k)].abs1());
            let ba = h[(k, k - 1)].abs1().min(h[(k - 1, k)].abs1());
            let diff = (h[(k - 1, k - 1)] - h[(k, k)]).abs1();
            let aa = h[(k, k)].abs1().max(diff);
            let bb = h[(k, k)].abs1().min(diff);
            let s = aa + ab;
            if ba * (ab / s) <= smlnum.max(ulp * (bb * (aa / s))) {
                break;
            }
        }
        k -= 1;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nrm2_is_rounded_once_at_every_magnitude() {
        // Exact norms stay exact, scaled by powers of two far into overflow and underflow.
        for scale in [
            1.0,
            2f64.powi(-1060),
            2f64.powi(-600),
            2f64.powi(600),
            2f64.powi(1000),
        ] {
            let x = [3.0 * scale, 4.0 * scale];
            assert_eq!(nrm2(&x), 5.0 * scale, "scale {scale:e}");
            let z = [
                Complex::new(2.0 * scale, 4.0 * scale),
                Complex::new(-5.0 * scale, 0.0),
            ];
            assert_eq!(nrm2(&z), 45f64.sqrt() * scale, "scale {scale:e}");
        }
        assert_eq!(nrm2::<f64>(&[]), 0.0);
        assert_eq!(nrm2(&[0.0f64, -0.0]), 0.0);
        assert!(nrm2(&[1.0, f64::INFINITY]).is_infinite());
        // f32 elements: the f64 norm rounded once.
        let x: Vec<f32> = (1..200).map(|k| (k as f32).sqrt() * 1.1).collect();
        let wide = x
            .iter()
            .map(|&v| (v as f64) * (v as f64))
            .sum::<f64>()
            .sqrt();
        assert_eq!(nrm2(&x), wide as f32);
        // f64 elements: within an ulp of the exact norm,
        // computed here from exact squares of integers (sums below 2^53), and near the naive
        // sum for values whose squares round.
        let x: Vec<f64> = (1..1000).map(|k| k as f64 * 3.0).collect();
        let exact = x.iter().map(|v| v * v).sum::<f64>().sqrt();
        let eighth: Vec<f64> = x.iter().map(|v| v / 8.0).collect();
        assert!((nrm2(&x) - exact).abs() <= f64::EPSILON * exact);
        assert!((nrm2(&eighth) - exact / 8.0).abs() <= f64::EPSILON * exact / 8.0);
        let thirds: Vec<f64> = (1..1000).map(|k| k as f64 / 3.0).collect();
        let naive = thirds.iter().map(|v| v * v).sum::<f64>().sqrt();
        assert!((nrm2(&thirds) - naive).abs() <= 1e-14 * naive);
    }
}
