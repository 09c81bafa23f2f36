//! Real `f32`/`f64` dense factorizations and triangular solves, and general (real or
//! complex) eigendecompositions, on `faer`: the fast paths of [`super::lapack`] and
//! [`super::linalg`].
//!
//! `faer`'s blocked, vectorized and threaded kernels compute in the matrices' own precision
//! (as LAPACK does; f32 symmetric eigenproblems excepted, see [`Real`]), where the general
//! paths compute every type in `complex<f64>` one element at a time. Matrices are row-major slices here, viewed by `faer` through strides.
//! Each routine answers `None` where its result would not be LAPACK's: a matrix with a
//! non-finite entry, a Cholesky factorization that meets a pivot that is not positive, an
//! LU factorization with an exactly zero pivot, an iteration that does not converge. The
//! callers then take the general path, which follows LAPACK step by step in those cases
//! (the partial factor, `info`, zeros rather than NaN in a singular LU).

use super::linalg::TriangularSolve;
use super::threads;
use super::typed::Plain;
use crate::attrs::Transpose;
use faer::diag::Diag;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor as llt_factor;
use faer::linalg::lu::partial_pivoting::factor as lu_factor;
use faer::linalg::qr::no_pivoting::factor as qr_factor;
use faer::linalg::triangular_solve as trsm;
use faer::linalg::{evd, householder, matmul};
use faer::traits::ext::ComplexFieldExt;
use faer::traits::RealField;
use faer::{Accum, Conj, Mat, MatMut, MatRef, Par, Side};
use num_complex::Complex;

/// The element types the fast paths serve, and the type their symmetric eigenvalue
/// problems are solved in (f64 for f32 too: faer's f32 eigenvalues miss LAPACK's accuracy,
/// a few units of `8 eps |a|`).
pub(super) trait Real: RealField + Plain {
    type Eigen: Real;
    fn widen(self) -> Self::Eigen;
    fn narrow(x: Self::Eigen) -> Self;
}
impl Real for f32 {
    type Eigen = f64;
    fn widen(self) -> f64 {
        f64::from(self)
    }
    fn narrow(x: f64) -> f32 {
        x as f32
    }
}
impl Real for f64 {
    type Eigen = f64;
    fn widen(self) -> f64 {
        self
    }
    fn narrow(x: f64) -> f64 {
        x
    }
}

fn finite<T: Real>(a: &[T]) -> bool {
    a.iter().all(|v| v.is_finite())
}

/// The row-major `rows x cols` `src` transposed into the row-major `cols x rows` `dst`; the
/// same bytes read the other way, a row-major matrix into a column-major one and back. faer
/// works on column-major matrices at full speed (its LU at half speed on a row-major view)
/// and its own copies between the two orders go element by element.
fn transpose<T: Real>(src: &[T], rows: usize, cols: usize, dst: &mut [T]) {
    let fits = super::shape::transpose_copy(src, cols, dst, cols, rows, false);
    debug_assert!(
        fits,
        "a {rows}x{cols} transpose into {} elements",
        dst.len()
    );
}

/// The row-major `rows x cols` `a` as a column-major matrix.
fn column_major<T: Real>(a: &[T], rows: usize, cols: usize) -> Vec<T> {
    let mut out = vec![T::zero_impl(); rows * cols];
    transpose(a, rows, cols, &mut out);
    out
}

fn side(lower: bool) -> Side {
    if lower {
        Side::Lower
    } else {
        Side::Upper
    }
}

/// The `n x n` Cholesky factor of the triangle `lower` says of the row-major `a`, written
/// into that triangle of `out` (`L` with `a = L L^T`, or `U = L^T` with `a = U^T U`); the
/// other triangle of `out` is left as it is.
pub(super) fn cholesky<T: Real>(a: &[T], n: usize, lower: bool, out: &mut [T]) -> Option<()> {
    if !finite(a) {
        return None;
    }
    // faer factors the lower triangle of a column-major matrix in place. The row-major
    // upper triangle, read column-major, is the lower one of the transpose: the same matrix.
    let mut mat = if lower {
        column_major(a, n, n)
    } else {
        a.to_vec()
    };
    threads::install(|| {
        let par = factor_par(n, n, n);
        let params = Default::default();
        let scratch = llt_factor::cholesky_in_place_scratch::<T>(n, par, params);
        let mut buffer = MemBuffer::new(scratch);
        llt_factor::cholesky_in_place(
            MatMut::from_column_major_slice_mut(&mut mat, n, n),
            Default::default(),
            par,
            MemStack::new(&mut buffer),
            params,
        )
        .ok()
    })?;
    // `U = L^T` row-major is `L` column-major; `L` row-major is its transpose.
    let rows = if lower { column_major(&mat, n, n) } else { mat };
    for (i, (out, l)) in out
        .chunks_exact_mut(n)
        .zip(rows.chunks_exact(n))
        .enumerate()
    {
        let part = if lower { 0..=i } else { i..=n - 1 };
        out[part.clone()].copy_from_slice(&l[part]);
    }
    Some(())
}

/// LU factorization with partial pivoting of the row-major `m x n` matrix in `a`, in place
/// as LAPACK's `getrf` leaves it (unit-lower `L` below the diagonal, `U` on and above),
/// with LAPACK's 1-based row interchanges.
pub(super) fn lu<T: Real>(a: &mut [T], m: usize, n: usize) -> Option<Vec<i32>> {
    if !finite(a) {
        return None;
    }
    let k = m.min(n);
    let mut mat = column_major(a, m, n);
    let mut forward = vec![0usize; m];
    let mut inverse = vec![0usize; m];
    threads::install(|| {
        let par = factor_par(m, n, k);
        let params = Default::default();
        let scratch = lu_factor::lu_in_place_scratch::<usize, T>(m, n, par, params);
        let mut buffer = MemBuffer::new(scratch);
        lu_factor::lu_in_place(
            MatMut::from_column_major_slice_mut(&mut mat, m, n),
            &mut forward,
            &mut inverse,
            par,
            MemStack::new(&mut buffer),
            params,
        );
    });
    if (0..k).any(|j| mat[j * m + j] == T::zero_impl()) {
        return None;
    }
    transpose(&mat, n, m, a);
    // Row `forward[j]` of the operand is row `j` of `P a = L U`; LAPACK's pivots say which
    // row to swap into place `j`, one step after another.
    let mut row_at: Vec<usize> = (0..m).collect();
    let mut place: Vec<usize> = (0..m).collect();
    let mut pivots = Vec::with_capacity(k);
    for (j, &want) in forward.iter().take(k).enumerate() {
        let p = place[want];
        pivots.push(i32::try_from(p + 1).ok()?);
        let displaced = row_at[j];
        row_at.swap(j, p);
        place[want] = j;
        place[displaced] = p;
    }
    Some(pivots)
}

/// Eigenvalues (ascending) of the symmetric matrix whose `lower` (or upper) triangle `a`
/// holds, and with `vectors` the row-major matrix whose columns are their eigenvectors;
/// computed in `T::Eigen` and rounded once.
pub(super) fn eigh<T: Real>(
    a: &[T],
    n: usize,
    lower: bool,
    vectors: bool,
) -> Option<(Vec<T>, Vec<T>)> {
    if !finite(a) {
        return None;
    }
    let wide: Vec<T::Eigen> = a.iter().map(|&x| x.widen()).collect();
    let view = MatRef::from_row_major_slice(&wide, n, n);
    let narrow = |v: Vec<T::Eigen>| v.into_iter().map(T::narrow).collect();
    threads::install(|| {
        if !vectors {
            let w = view.self_adjoint_eigenvalues(side(lower)).ok()?;
            return Some((narrow(w), Vec::new()));
        }
        let evd = view.self_adjoint_eigen(side(lower)).ok()?;
        let w = evd.S().column_vector().iter().copied().collect();
        Some((narrow(w), narrow(row_major(evd.U()))))
    })
}

/// The singular values (descending) of the row-major `m x n` matrix `a` and, for `mode`
/// `'A'` (all) or `'S'` (the first `min(m, n)`), the row-major `U` and `V^T`.
pub(super) fn svd<T: Real>(
    a: &[T],
    m: usize,
    n: usize,
    mode: char,
) -> Option<(Vec<T>, Vec<T>, Vec<T>)> {
    if !finite(a) {
        return None;
    }
    let view = MatRef::from_row_major_slice(a, m, n);
    threads::install(|| {
        let decomposition = match mode {
            'A' => view.svd(),
            'S' => view.thin_svd(),
            _ => return Some((view.singular_values().ok()?, Vec::new(), Vec::new())),
        };
        let d = decomposition.ok()?;
        let s = d.S().column_vector().iter().copied().collect();
        Some((s, row_major(d.U()), row_major(d.V().transpose())))
    })
}

fn row_major<T: Real>(x: MatRef<'_, T>) -> Vec<T> {
    (0..x.nrows())
        .flat_map(|i| (0..x.ncols()).map(move |j| x[(i, j)]))
        .collect()
}

/// Solves the `system` in place in the row-major `rows x cols` matrix `b`, reading only
/// the triangle of the row-major `n x n` `a` it names. For real matrices the adjoint is
/// the transpose.
pub(super) fn solve_triangular<T: Real>(
    a: &[T],
    n: usize,
    b: &mut [T],
    rows: usize,
    cols: usize,
    system: &TriangularSolve,
) {
    let mut m = MatRef::from_row_major_slice(a, n, n);
    let mut m_lower = system.lower;
    if system.transpose != Transpose::NoTranspose {
        m = m.transpose();
        m_lower = !m_lower;
    }
    let mut x = MatMut::from_row_major_slice_mut(b, rows, cols);
    if !system.left {
        // x m = b  <=>  m^T x^T = b^T.
        m = m.transpose();
        m_lower = !m_lower;
        x = x.transpose_mut();
    }
    threads::install(|| {
        let par = Par::rayon(0);
        match (m_lower, system.unit) {
            (true, false) => trsm::solve_lower_triangular_in_place(m, x, par),
            (true, true) => trsm::solve_unit_lower_triangular_in_place(m, x, par),
            (false, false) => trsm::solve_upper_triangular_in_place(m, x, par),
            (false, true) => trsm::solve_unit_upper_triangular_in_place(m, x, par),
        }
    });
}

/// LAPACK's (`iparmq`) number of simultaneous shifts in a multishift QR sweep over an active
/// block of `nh` rows.
extern "C" fn lapack_shift_count(_n: usize, nh: usize) -> usize {
    let ns = match nh {
        0..30 => 2,
        30..60 => 4,
        60..150 => 10,
        150..590 => 10.max(nh / (nh as f64).log2().round() as usize),
        590..3000 => 64,
        3000..6000 => 128,
        _ => 256,
    };
    (ns - ns % 2).max(2)
}

/// LAPACK's (`iparmq`) aggressive-early-deflation window for an active block of `nh` rows.
extern "C" fn lapack_deflation_window(n: usize, nh: usize) -> usize {
    let ns = lapack_shift_count(n, nh);
    if nh <= 500 {
        ns
    } else {
        3 * ns / 2
    }
}

/// `faer`'s eigendecomposition tuned as LAPACK's `hseqr` is: the double-shift QR below 75
/// rows, LAPACK's shift counts and deflation windows above, and a sweep skipped when
/// deflation took 14% of the window. For real matrices of up to a few dozen rows the QR
/// iteration then deflates the eigenvalues in LAPACK's order, the order `geev` returns them
/// in; past 75 rows and for most complex matrices the order differs (the values agree).
fn lapack_evd_params<T: faer::traits::ComplexField>() -> faer::Spec<evd::EvdParams, T> {
    let mut params = faer::Spec::new(<evd::EvdParams as faer::Auto<T>>::auto());
    params.schur.recommended_shift_count = lapack_shift_count;
    params.schur.recommended_deflation_window = lapack_deflation_window;
    params.schur.blocking_threshold = 75;
    params.schur.nibble_threshold = 14;
    params
}

/// faer's eigenvectors of complex Schur forms go wrong when denormals flush to zero (`A v !=
/// w v` for a 5x5 matrix), as the evaluator's threads compute otherwise; the general
/// eigendecompositions keep denormals, and run on the calling thread, whose setting the
/// guard controls.
const EIG_PAR: Par = Par::Seq;

/// Scratch space for `faer`'s eigendecomposition of an `n x n` matrix.
fn evd_buffer<T: faer::traits::ComplexField>(
    n: usize,
    left: bool,
    right: bool,
    params: faer::Spec<evd::EvdParams, T>,
) -> MemBuffer {
    let vectors = |wanted: bool| {
        if wanted {
            evd::ComputeEigenvectors::Yes
        } else {
            evd::ComputeEigenvectors::No
        }
    };
    MemBuffer::new(evd::evd_scratch::<T>(
        n,
        vectors(left),
        vectors(right),
        EIG_PAR,
        params,
    ))
}

/// A general matrix's eigenvalues and its left and right eigenvectors, as `geev` returns
/// them: row-major `n x n` with the vectors as columns (empty when not asked for), each of
/// unit norm with its component of largest magnitude real.
pub(super) struct Eig<T> {
    pub values: Vec<Complex<T>>,
    pub left: Vec<Complex<T>>,
    pub right: Vec<Complex<T>>,
}

/// A complex element: `faer`'s `c32`/`c64` are `num_complex`'s.
type Cx<T> = Complex<T>;

/// `geev` of the real row-major `n x n` matrix `a`: complex-conjugate eigenvalues come in
/// pairs, positive imaginary part first, with conjugate eigenvectors.
pub(super) fn eig_real<T: Real>(a: &[T], n: usize, left: bool, right: bool) -> Option<Eig<T>> {
    if !finite(a) {
        return None;
    }
    let view = MatRef::from_row_major_slice(a, n, n);
    let (mut s_re, mut s_im) = (Diag::<T>::zeros(n), Diag::<T>::zeros(n));
    let mut ul = left.then(|| Mat::<T>::zeros(n, n));
    let mut ur = right.then(|| Mat::<T>::zeros(n, n));
    {
        let _keep = oxla_simd::KeepDenormals::new();
        let par = EIG_PAR;
        let params = lapack_evd_params::<T>();
        let mut buffer = evd_buffer::<T>(n, left, right, params);
        evd::evd_real(
            view,
            s_re.as_mut(),
            s_im.as_mut(),
            ul.as_mut().map(|u| u.as_mut()),
            ur.as_mut().map(|u| u.as_mut()),
            par,
            MemStack::new(&mut buffer),
            params,
        )
        .ok()
    }?;
    let (re, im) = (s_re.column_vector(), s_im.column_vector());
    let values: Vec<Cx<T>> = (0..n).map(|j| Cx::new(re[j], im[j])).collect();
    if !values.iter().all(|v| v.re.is_finite() && v.im.is_finite()) {
        return None;
    }
    // Column `j` of a real pair's first eigenvalue holds the real part, column `j + 1` the
    // imaginary part (LAPACK's packing).
    let unpack = |u: Option<Mat<T>>| match u {
        None => Vec::new(),
        Some(u) => {
            let mut out = vec![Cx::new(T::zero_impl(), T::zero_impl()); n * n];
            let mut j = 0;
            while j < n {
                let pair = values[j].im != T::zero_impl() && j + 1 < n;
                for i in 0..n {
                    if pair {
                        let (x, y) = (u[(i, j)], u[(i, j + 1)]);
                        out[i * n + j] = Cx::new(x, y);
                        out[i * n + j + 1] = Cx::new(x, -y);
                    } else {
                        out[i * n + j] = Cx::new(u[(i, j)], T::zero_impl());
                    }
                }
                j += if pair { 2 } else { 1 };
            }
            normalize_columns(&mut out, n);
            out
        }
    };
    Some(Eig {
        left: unpack(ul),
        right: unpack(ur),
        values,
    })
}

/// `geev` of the complex row-major `n x n` matrix `a`.
pub(super) fn eig_complex<T: Real>(a: &[Cx<T>], n: usize, left: bool, right: bool) -> Option<Eig<T>>
where
    Cx<T>: faer::traits::ComplexField<Real = T>,
{
    if !a.iter().all(|v| v.re.is_finite() && v.im.is_finite()) {
        return None;
    }
    let view = MatRef::from_row_major_slice(a, n, n);
    let mut s = Diag::<Cx<T>>::zeros(n);
    let mut ul = left.then(|| Mat::<Cx<T>>::zeros(n, n));
    let mut ur = right.then(|| Mat::<Cx<T>>::zeros(n, n));
    {
        let _keep = oxla_simd::KeepDenormals::new();
        let par = EIG_PAR;
        let params = lapack_evd_params::<Cx<T>>();
        let mut buffer = evd_buffer::<Cx<T>>(n, left, right, params);
        evd::evd_cplx(
            view,
            s.as_mut(),
            ul.as_mut().map(|u| u.as_mut()),
            ur.as_mut().map(|u| u.as_mut()),
            par,
            MemStack::new(&mut buffer),
            params,
        )
        .ok()
    }?;
    let values: Vec<Cx<T>> = s.column_vector().iter().copied().collect();
    if !values.iter().all(|v| v.re.is_finite() && v.im.is_finite()) {
        return None;
    }
    let unpack = |u: Option<Mat<Cx<T>>>| match u {
        None => Vec::new(),
        Some(u) => {
            let mut out: Vec<Cx<T>> = (0..n)
                .flat_map(|i| (0..n).map(move |j| (i, j)))
                .map(|(i, j)| u[(i, j)])
                .collect();
            normalize_columns(&mut out, n);
            out
        }
    };
    Some(Eig {
        left: unpack(ul),
        right: unpack(ur),
        values,
    })
}

/// Scales each column of the row-major `n x n` `v` to unit norm and turns it so that its
/// component of largest magnitude (the first of equals) is real and positive.
fn normalize_columns<T: Real>(v: &mut [Cx<T>], n: usize) {
    for j in 0..n {
        let mut norm2 = T::zero_impl();
        let (mut big_at, mut big_abs2) = (0, T::zero_impl());
        for i in 0..n {
            let z = v[i * n + j];
            let abs2 = z.re * z.re + z.im * z.im;
            norm2 += abs2;
            if abs2 > big_abs2 {
                (big_at, big_abs2) = (i, abs2);
            }
        }
        if norm2.partial_cmp(&T::zero_impl()) != Some(std::cmp::Ordering::Greater) {
            continue;
        }
        // Multiply by conj(big) / (|big| |v|).
        let big = v[big_at * n + j];
        let scale = T::one_impl() / (big_abs2.sqrt() * norm2.sqrt());
        let phase = Cx::new(big.re * scale, -big.im * scale);
        for i in 0..n {
            let z = v[i * n + j];
            v[i * n + j] = Cx::new(
                z.re * phase.re - z.im * phase.im,
                z.re * phase.im + z.im * phase.re,
            );
        }
        // Real by construction: drop the rounding residue.
        v[big_at * n + j].im = T::zero_impl();
    }
}

/// Threads for a factorization (or reflector product) of `m x n` with `k` steps: below about
/// `2^25` multiply-adds faer's threads spend more time meeting at barriers than working.
fn factor_par(m: usize, n: usize, k: usize) -> Par {
    if m.saturating_mul(n).saturating_mul(k) < 1 << 25 {
        Par::Seq
    } else {
        Par::rayon(0)
    }
}

/// Householder QR of the row-major `m x n` matrix in `a`, in place as LAPACK's `geqrf`
/// leaves it (`R` on and above the diagonal, each reflector's vector below it with its
/// leading 1 implied), and the reflectors' scalars (`H = I - tau v v^T`). The reflectors
/// are LAPACK's: `beta = -sign(alpha) |x|`, `v = x / (alpha - beta)`. `None` (and `a` as
/// it was) for a wide or rank-deficient matrix, or a non-finite entry.
pub(super) fn qr<T: Real>(a: &mut [T], m: usize, n: usize) -> Option<Vec<T>> {
    if m < n || !finite(a) {
        return None;
    }
    let k = m.min(n);
    if k == 0 {
        return Some(Vec::new());
    }
    let mut mat = column_major(a, m, n);
    let block = qr_factor::recommended_block_size::<T>(m, n).clamp(1, k);
    let mut factor = Mat::<T>::zeros(block, k);
    let info = threads::install(|| {
        let par = factor_par(m, n, k);
        let params = Default::default();
        let scratch = qr_factor::qr_in_place_scratch::<T>(m, n, block, par, params);
        let mut buffer = MemBuffer::new(scratch);
        qr_factor::qr_in_place(
            MatMut::from_column_major_slice_mut(&mut mat, m, n),
            factor.as_mut(),
            par,
            MemStack::new(&mut buffer),
            params,
        )
    });
    // faer skips a column that is zero, or at rounding level, on and below the diagonal
    // (an identity reflector for LAPACK, scalar 0, the column kept), and the reflectors after
    // it then sit off the diagonal; its rank, the reflectors it made, shows that when there
    // are no more columns than rows. Such matrices, and wide ones, take the general path.
    if info.rank < k {
        return None;
    }
    // faer writes each reflector as `I - v v^T / t` (`t` on its block factor's diagonal,
    // infinite for the last row's, which has nothing below the diagonal); LAPACK's scalar
    // is `1 / t`.
    let taus = (0..k)
        .map(|j| {
            let t = factor[(j % block, j)];
            if t.is_finite() {
                t.recip()
            } else {
                T::zero_impl()
            }
        })
        .collect();
    transpose(&mat, n, m, a);
    Some(taus)
}

/// The first `n` columns of `Q = H_1 ... H_k` from the reflectors LAPACK's `geqrf` packs
/// below the diagonal of the row-major `m x n` `a` and their scalars `taus` (`k` of them):
/// LAPACK's `orgqr`, as row-major `m x n`. `None` for a non-finite scalar or entry, or a zero
/// scalar before a non-zero one (not counting the last row's).
pub(super) fn householder_product<T: Real>(
    a: &[T],
    taus: &[T],
    m: usize,
    n: usize,
) -> Option<Vec<T>> {
    if !finite(a) || !finite(taus) {
        return None;
    }
    let mut q_data = vec![T::zero_impl(); m * n];
    let mut q = MatMut::from_column_major_slice_mut(&mut q_data, m, n);
    for d in 0..n.min(m) {
        q[(d, d)] = T::one_impl();
    }
    // With as many reflectors as rows, the last one has nothing below the diagonal: it
    // scales the last row by `1 - tau`, and, being applied first, only the identity's last
    // diagonal entry (faer's sequences leave such a reflector out).
    let mut k = taus.len();
    if k > 0 && k == m {
        if m - 1 < n {
            q[(m - 1, m - 1)] = T::one_impl() - taus[k - 1];
        }
        k -= 1;
    }
    // Zero scalars are identities: trailing ones are left out, others go to the general
    // path.
    while k > 0 && taus[k - 1] == T::zero_impl() {
        k -= 1;
    }
    let taus = &taus[..k];
    if taus.iter().any(|&t| t == T::zero_impl()) {
        return None;
    }
    if k > 0 {
        // The reflectors' vectors, column-major: below the diagonal of `a`'s first `k`
        // columns, with the leading 1 on it.
        let mut vectors = column_major(a, m, n);
        vectors.truncate(m * k);
        for (j, column) in vectors.chunks_exact_mut(m).enumerate() {
            column[..j].fill(T::zero_impl());
            column[j] = T::one_impl();
        }
        let basis = MatRef::from_column_major_slice(&vectors, m, k);
        // The block factors for `H_s ... H_(s+b-1) = I - V F^-1 V^T`: `F` upper triangular,
        // `1 / tau` on the diagonal and `V^T V` above it.
        let block = qr_factor::recommended_block_size::<T>(m, k).clamp(1, k);
        let mut factor = Mat::<T>::zeros(block, k);
        let mut gram = Mat::<T>::zeros(block, block);
        threads::install(|| {
            let par = factor_par(m, n, k);
            for start in (0..k).step_by(block) {
                let b = block.min(k - start);
                let v = basis.subcols(start, b);
                let mut g = gram.as_mut().submatrix_mut(0, 0, b, b);
                matmul::matmul(
                    g.as_mut(),
                    Accum::Replace,
                    v.transpose(),
                    v,
                    T::one_impl(),
                    par,
                );
                for j in 0..b {
                    for i in 0..j {
                        factor[(i, start + j)] = g[(i, j)];
                    }
                    factor[(j, start + j)] = taus[start + j].recip();
                }
            }
            let scratch =
                householder::apply_block_householder_sequence_on_the_left_in_place_scratch::<T>(
                    m, block, n,
                );
            let mut buffer = MemBuffer::new(scratch);
            householder::apply_block_householder_sequence_on_the_left_in_place_with_conj(
                basis.as_ref(),
                factor.as_ref(),
                Conj::No,
                q.as_mut(),
                par,
                MemStack::new(&mut buffer),
            );
        });
    }
    let mut out = vec![T::zero_impl(); m * n];
    transpose(&q_data, n, m, &mut out);
    Some(out)
}
