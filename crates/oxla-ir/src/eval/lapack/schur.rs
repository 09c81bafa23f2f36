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

/// `gees` of a real matrix: the real Schur form.
pub(super) struct RealSchur<T> {
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
pub(super) fn real_gees<T: Real>(a: &[T], n: usize, want_z: bool) -> RealSchur<T> {
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
    for j in ilo..=ihi.saturating_sub(3) {
        if j + 3 > ihi {
            break;
        }
        h[(j + 2, j)] = zero;
        h[(j + 3, j)] = zero;
    }
    if ilo + 2 <= ihi {
        h[(ihi, ihi - 2)] = zero;
    }
    let nh = ihi - ilo + 1;
    let safmin = T::min_positive_value();
    let ulp = T::epsilon();
    let smlnum = safmin * (T::from(nh).unwrap() / ulp);
    let (i1, i2) = (1usize, n);
    let itmax = 30 * nh.max(10);
    let mut kdefl = 0usize;
    let mut i = ihi;
    while i >= ilo {
        let mut l = ilo;
        let mut converged = false;
        for _its in 0..=itmax {
            // Look for a single small subdiagonal element.
            let mut k = i;
            while k > l {
                if h[(k, k - 1)].abs() <= smlnum {
                    break;
                }
                let mut tst = h[(k - 1, k - 1)].abs() + h[(k, k)].abs();
                if tst == zero {
                    if k >= ilo + 2 {
                        tst = tst + h[(k - 1, k - 2)].abs();
                    }
                    if k < ihi {
                        tst = tst + h[(k + 1, k)].abs();
                    }
                }
                if h[(k, k - 1)].abs() <= ulp * tst {
                    let ab = h[(k, k - 1)].abs().max(h[(k - 1, k)].abs());
                    let ba = h[(k, k - 1)].abs().min(h[(k - 1, k)].abs());
                    let aa = h[(k, k)].abs().max((h[(k - 1, k - 1)] - h[(k, k)]).abs());
                    let bb = h[(k, k)].abs().min((h[(k - 1, k - 1)] - h[(k, k)]).abs());
                    let s = aa + ab;
                    if ba * (ab / s) <= smlnum.max(ulp * (bb * (aa / s))) {
                        break;
                    }
                }
                k -= 1;
            }
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

/// `gees` of a complex matrix: the complex Schur form.
pub(super) struct ComplexSchur<T> {
    /// Row-major, upper triangular.
    pub t: Vec<Complex<T>>,
    /// Row-major, unitary; empty when not asked for.
    pub z: Vec<Complex<T>>,
    pub w: Vec<Complex<T>>,
    /// 0, or LAPACK's `info` when the QR iteration failed to converge.
    pub info: i32,
}

/// `gees` (no sorting) of the complex row-major `n x n` matrix `a`.
pub(super) fn complex_gees<T: Real>(a: &[Complex<T>], n: usize, want_z: bool) -> ComplexSchur<T> {
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
    for j in ilo..=ihi.saturating_sub(3) {
        if j + 3 > ihi {
            break;
        }
        h[(j + 2, j)] = czero;
        h[(j + 3, j)] = czero;
    }
    if ilo + 2 <= ihi {
        h[(ihi, ihi - 2)] = czero;
    }
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
    let safmin = T::min_positive_value();
    let ulp = T::epsilon();
    let smlnum = safmin * (T::from(nh).unwrap() / ulp);
    let (i1, i2) = (1usize, n);
    let itmax = 30 * nh.max(10);
    let mut kdefl = 0usize;
    let mut i = ihi;
    while i >= ilo {
        let mut l = ilo;
        let mut converged = false;
        for _its in 0..=itmax {
            // Look for a single small subdiagonal element.
            let mut k = i;
            while k > l {
                if h[(k, k - 1)].abs1() <= smlnum {
                    break;
                }
                let mut tst = h[(k - 1, k - 1)].abs1() + h[(k, k)].abs1();
                if tst == rzero {
                    if k >= ilo + 2 {
                        tst = tst + h[(k - 1, k - 2)].re.abs();
                    }
                    if k < ihi {
                        tst = tst + h[(k + 1, k)].re.abs();
                    }
                }
                if h[(k, k - 1)].re.abs() <= ulp * tst {
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
