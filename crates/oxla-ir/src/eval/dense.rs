//! Real `f32`/`f64` dense factorizations and triangular solves on `faer`: the fast paths of
//! [`super::lapack`] and [`super::linalg`].
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
use faer::linalg::triangular_solve as trsm;
use faer::traits::ext::ComplexFieldExt;
use faer::traits::RealField;
use faer::{MatMut, MatRef, Par, Side};

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
    let llt = threads::install(|| MatRef::from_row_major_slice(a, n, n).llt(side(lower)).ok())?;
    let l = llt.L();
    for i in 0..n {
        for j in 0..=i {
            let at = if lower { i * n + j } else { j * n + i };
            out[at] = l[(i, j)];
        }
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
    let lu = threads::install(|| MatRef::from_row_major_slice(a, m, n).partial_piv_lu());
    let (l, u) = (lu.L(), lu.U());
    if (0..k).any(|j| u[(j, j)] == T::zero_impl()) {
        return None;
    }
    for i in 0..m {
        for j in 0..n {
            a[i * n + j] = if j < i { l[(i, j)] } else { u[(i, j)] };
        }
    }
    // Row `forward[j]` of the operand is row `j` of `P a = L U`; LAPACK's pivots say which
    // row to swap into place `j`, one step after another.
    let forward = lu.P().arrays().0;
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
