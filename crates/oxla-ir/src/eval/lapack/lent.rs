//! LAPACK routines lent to the evaluator by the process it runs in.
//!
//! A Schur form is not unique, and which one LAPACK's `gees` returns is decided by the
//! rounding of every step, BLAS kernels included (see [`super::schur`]). JAX's cpu backend
//! and SciPy both call the LAPACK that SciPy ships, so the only way to return their Schur
//! form is to call that same LAPACK. The plugin lends its process's `?gees` routines (the
//! Python package finds them in `scipy.linalg.cython_lapack`) through [`lend_lapack`];
//! while one is lent, `lapack_?gees_ffi` runs it, and otherwise (the Rust runtime, the C
//! ABI, a process without SciPy) oxla's own `gees` does.
//!
//! A lent routine sees LAPACK's conventions (column-major matrices); this module turns
//! the evaluator's row-major matrices into them and back.

use num_complex::Complex;
use std::sync::{Arc, RwLock};

/// LAPACK's `?gees` of a real type without sorting: overwrites the column-major matrix of
/// order `n` (n > 0) with its Schur form `T` and returns `(wr, wi, Z, info)`, `Z`
/// column-major (empty unless asked for with `true`), or `None` when it cannot run.
pub type RealGees<T> =
    dyn Fn(&mut [T], usize, bool) -> Option<(Vec<T>, Vec<T>, Vec<T>, i32)> + Send + Sync;

/// LAPACK's `?gees` of a complex type without sorting, as [`RealGees`]: returns
/// `(w, Z, info)`.
pub type ComplexGees<T> = dyn Fn(&mut [Complex<T>], usize, bool) -> Option<(Vec<Complex<T>>, Vec<Complex<T>>, i32)>
    + Send
    + Sync;

/// The routines lent now, by LAPACK name.
#[derive(Clone, Default)]
pub struct LentLapack {
    /// `gees` of `f32` matrices.
    pub sgees: Option<Arc<RealGees<f32>>>,
    /// `gees` of `f64` matrices.
    pub dgees: Option<Arc<RealGees<f64>>>,
    /// `gees` of `complex<f32>` matrices.
    pub cgees: Option<Arc<ComplexGees<f32>>>,
    /// `gees` of `complex<f64>` matrices.
    pub zgees: Option<Arc<ComplexGees<f64>>>,
}

static LENT: RwLock<LentLapack> = RwLock::new(LentLapack {
    sgees: None,
    dgees: None,
    cgees: None,
    zgees: None,
});

/// Changes the lent routines: `change` gets the table and may set or clear any entry.
pub fn lend_lapack(change: impl FnOnce(&mut LentLapack)) {
    change(&mut LENT.write().unwrap_or_else(|p| p.into_inner()));
}

/// The routines lent now.
pub fn lent_lapack() -> LentLapack {
    LENT.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The transpose of the square matrix `a` of order `n`: row-major to column-major and back.
pub(super) fn transposed<T: Copy>(a: &[T], n: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(n * n);
    for j in 0..n {
        out.extend((0..n).map(|i| a[i * n + j]));
    }
    out
}

/// A real Schur form, row-major: `(t, z, wr, wi, info)`.
pub(super) type RealForm<T> = (Vec<T>, Vec<T>, Vec<T>, Vec<T>, i32);

/// A complex Schur form, row-major: `(t, z, w, info)`.
pub(super) type ComplexForm<T> = (Vec<Complex<T>>, Vec<Complex<T>>, Vec<Complex<T>>, i32);

/// The real Schur form of the row-major `n x n` matrix `a` by `gees`, or `None` when it
/// does not run (or `n` is 0). `z` is empty unless `want_z`.
pub(super) fn real_gees<T: Copy>(
    gees: Option<&RealGees<T>>,
    a: &[T],
    n: usize,
    want_z: bool,
) -> Option<RealForm<T>> {
    let gees = gees.filter(|_| n > 0)?;
    let mut m = transposed(a, n);
    let (wr, wi, z, info) = gees(&mut m, n, want_z)?;
    let ok = wr.len() == n && wi.len() == n && (!want_z || z.len() == n * n);
    ok.then(|| {
        let z = if want_z {
            transposed(&z, n)
        } else {
            Vec::new()
        };
        (transposed(&m, n), z, wr, wi, info)
    })
}

/// The complex Schur form of the row-major `n x n` matrix `a` by `gees`, as [`real_gees`].
pub(super) fn complex_gees<T: Copy>(
    gees: Option<&ComplexGees<T>>,
    a: &[Complex<T>],
    n: usize,
    want_z: bool,
) -> Option<ComplexForm<T>> {
    let gees = gees.filter(|_| n > 0)?;
    let mut m = transposed(a, n);
    let (w, z, info) = gees(&mut m, n, want_z)?;
    let ok = w.len() == n && (!want_z || z.len() == n * n);
    ok.then(|| {
        let z = if want_z {
            transposed(&z, n)
        } else {
            Vec::new()
        };
        (transposed(&m, n), z, w, info)
    })
}
