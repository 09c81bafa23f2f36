//! LAPACK routines lent to the evaluator by the process it runs in.
//!
//! Where LAPACK leaves a choice open, the answer is decided by the rounding of every
//! step, BLAS kernels included: the order of the eigenvalues along a Schur form's diagonal
//! (see [`super::schur`]) and of `geev`'s eigenvalues, and the signs (phases) of
//! eigenvectors and singular vectors. JAX's cpu backend and SciPy both call the LAPACK
//! that SciPy ships, so the only way to return their answer is to call that same LAPACK.
//! The plugin lends its process's routines (the Python package finds them in
//! `scipy.linalg.cython_lapack`) through [`lend_lapack`]: `?gees`, `?syevd`/`?heevd`,
//! `?gesdd`, `?gesvd` and `?geev`. While one is lent, the matching `lapack_*_ffi` call
//! runs it, with the workspaces and conventions of JAX's cpu kernels; otherwise (the Rust
//! runtime, the C ABI, a process without SciPy) oxla's own routine does.
//!
//! A lent routine sees LAPACK's conventions (column-major matrices); this module turns
//! the evaluator's row-major matrices into them and back.

use super::{from_i32, real_literal};
use crate::eval::typed::view_bytes;
use crate::{Literal, TensorType};
use num_complex::Complex;
use std::sync::{Arc, LazyLock, RwLock};

/// An element type the lent routines work in: `f32`, `f64` and their complex types.
pub trait LapackElement: Copy + Default + Send + Sync + 'static {
    /// The real type of the same precision.
    type Real: LapackElement<Real = Self::Real>;
    /// Whether the type is not `f32` or `f64`.
    const COMPLEX: bool;
    /// The elements of literal bytes of this type.
    fn read(data: &[u8]) -> Vec<Self>;
    /// `values` as a literal of `ty`.
    fn literal(values: &[Self], ty: &TensorType) -> Option<Literal>;
    /// Whether the value is finite (both parts of a complex one).
    fn is_finite(self) -> bool;
}

macro_rules! lapack_element {
    ($t:ty) => {
        impl LapackElement for $t {
            type Real = $t;
            const COMPLEX: bool = false;
            fn read(data: &[u8]) -> Vec<Self> {
                view_bytes::<$t>(data).into_owned()
            }
            fn literal(values: &[Self], ty: &TensorType) -> Option<Literal> {
                real_literal(values, ty)
            }
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
        }
        impl LapackElement for Complex<$t> {
            type Real = $t;
            const COMPLEX: bool = true;
            fn read(data: &[u8]) -> Vec<Self> {
                view_bytes::<$t>(data)
                    .chunks_exact(2)
                    .map(|z| Complex::new(z[0], z[1]))
                    .collect()
            }
            fn literal(values: &[Self], ty: &TensorType) -> Option<Literal> {
                let parts: Vec<$t> = values.iter().flat_map(|z| [z.re, z.im]).collect();
                real_literal(&parts, ty)
            }
            fn is_finite(self) -> bool {
                self.re.is_finite() && self.im.is_finite()
            }
        }
    };
}
lapack_element!(f32);
lapack_element!(f64);

/// A real [`LapackElement`]: `f32` or `f64`.
pub trait LapackReal:
    LapackElement<Real = Self> + PartialEq + std::ops::Neg<Output = Self>
{
}
impl LapackReal for f32 {}
impl LapackReal for f64 {}

/// The real type of a [`LapackElement`].
type RealOf<E> = <E as LapackElement>::Real;

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

/// LAPACK's `?syevd` (real) or `?heevd` (complex) with JAX's cpu workspaces: reads one
/// triangle (the lower with `true` as the last argument) of the column-major matrix of
/// order `n` (n > 0), overwrites it with the eigenvectors when asked for (the first
/// `bool`) and returns `(w, info)`.
pub type Syevd<E> =
    dyn Fn(&mut [E], usize, bool, bool) -> Option<(Vec<RealOf<E>>, i32)> + Send + Sync;

/// LAPACK's `?gesdd` or `?gesvd` (with `jobu = jobvt`) of the column-major `m x n` matrix
/// (m, n > 0), which it overwrites, in mode `A`, `S` or `N` (the `u8`), with `vt`'s
/// leading dimension `ldvt` (the last argument, at least 1): returns `(s, u, vt, info)`,
/// `u` column-major `m x u_cols` (`m` or `min(m, n)` columns), `vt` column-major
/// `ldvt x n`; without vectors `u` and `vt` are whatever the routine left.
pub type Svd<E> = dyn Fn(&mut [E], usize, usize, u8, usize) -> Option<(Vec<RealOf<E>>, Vec<E>, Vec<E>, i32)>
    + Send
    + Sync;

/// LAPACK's `?geev` of a real type: overwrites the column-major matrix of order `n`
/// (n > 0); computes the left and right eigenvectors when asked for (the two `bool`s);
/// returns `(wr, wi, vl, vr, info)`, `vl` and `vr` column-major in LAPACK's packed real
/// form (a complex pair in two adjacent columns).
pub type RealGeev<T> = dyn Fn(&mut [T], usize, bool, bool) -> Option<(Vec<T>, Vec<T>, Vec<T>, Vec<T>, i32)>
    + Send
    + Sync;

/// LAPACK's `?geev` of a complex type, as [`RealGeev`]: returns `(w, vl, vr, info)`.
pub type ComplexGeev<T> = dyn Fn(
        &mut [Complex<T>],
        usize,
        bool,
        bool,
    ) -> Option<(Vec<Complex<T>>, Vec<Complex<T>>, Vec<Complex<T>>, i32)>
    + Send
    + Sync;

/// The routines lent now, by LAPACK name.
#[derive(Clone, Default)]
pub struct LentLapack {
    /// `sgees`, for `f32` matrices.
    pub sgees: Option<Arc<RealGees<f32>>>,
    /// `dgees`, for `f64` matrices.
    pub dgees: Option<Arc<RealGees<f64>>>,
    /// `cgees`, for `complex<f32>` matrices.
    pub cgees: Option<Arc<ComplexGees<f32>>>,
    /// `zgees`, for `complex<f64>` matrices.
    pub zgees: Option<Arc<ComplexGees<f64>>>,
    /// `ssyevd`, for `f32` matrices.
    pub ssyevd: Option<Arc<Syevd<f32>>>,
    /// `dsyevd`, for `f64` matrices.
    pub dsyevd: Option<Arc<Syevd<f64>>>,
    /// `cheevd`, for `complex<f32>` matrices.
    pub cheevd: Option<Arc<Syevd<Complex<f32>>>>,
    /// `zheevd`, for `complex<f64>` matrices.
    pub zheevd: Option<Arc<Syevd<Complex<f64>>>>,
    /// `sgesdd`, for `f32` matrices.
    pub sgesdd: Option<Arc<Svd<f32>>>,
    /// `dgesdd`, for `f64` matrices.
    pub dgesdd: Option<Arc<Svd<f64>>>,
    /// `cgesdd`, for `complex<f32>` matrices.
    pub cgesdd: Option<Arc<Svd<Complex<f32>>>>,
    /// `zgesdd`, for `complex<f64>` matrices.
    pub zgesdd: Option<Arc<Svd<Complex<f64>>>>,
    /// `sgesvd`, for `f32` matrices.
    pub sgesvd: Option<Arc<Svd<f32>>>,
    /// `dgesvd`, for `f64` matrices.
    pub dgesvd: Option<Arc<Svd<f64>>>,
    /// `cgesvd`, for `complex<f32>` matrices.
    pub cgesvd: Option<Arc<Svd<Complex<f32>>>>,
    /// `zgesvd`, for `complex<f64>` matrices.
    pub zgesvd: Option<Arc<Svd<Complex<f64>>>>,
    /// `sgeev`, for `f32` matrices.
    pub sgeev: Option<Arc<RealGeev<f32>>>,
    /// `dgeev`, for `f64` matrices.
    pub dgeev: Option<Arc<RealGeev<f64>>>,
    /// `cgeev`, for `complex<f32>` matrices.
    pub cgeev: Option<Arc<ComplexGeev<f32>>>,
    /// `zgeev`, for `complex<f64>` matrices.
    pub zgeev: Option<Arc<ComplexGeev<f64>>>,
}

static LENT: LazyLock<RwLock<LentLapack>> = LazyLock::new(Default::default);

/// Changes the lent routines: `change` gets the table and may set or clear any entry.
pub fn lend_lapack(change: impl FnOnce(&mut LentLapack)) {
    change(&mut LENT.write().unwrap_or_else(|p| p.into_inner()));
}

/// The routines lent now.
pub fn lent_lapack() -> LentLapack {
    LENT.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The transpose of the row-major `rows x cols` matrix `a`, i.e. `a` column-major (and a
/// column-major `cols x rows` matrix row-major).
pub(super) fn transposed<T: Copy>(a: &[T], rows: usize, cols: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(rows * cols);
    for j in 0..cols {
        out.extend((0..rows).map(|i| a[i * cols + j]));
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
    let mut m = transposed(a, n, n);
    let (wr, wi, z, info) = gees(&mut m, n, want_z)?;
    let ok = wr.len() == n && wi.len() == n && (!want_z || z.len() == n * n);
    ok.then(|| {
        let z = if want_z {
            transposed(&z, n, n)
        } else {
            Vec::new()
        };
        (transposed(&m, n, n), z, wr, wi, info)
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
    let mut m = transposed(a, n, n);
    let (w, z, info) = gees(&mut m, n, want_z)?;
    let ok = w.len() == n && (!want_z || z.len() == n * n);
    ok.then(|| {
        let z = if want_z {
            transposed(&z, n, n)
        } else {
            Vec::new()
        };
        (transposed(&m, n, n), z, w, info)
    })
}

/// The result types of a `syevd` call: vectors, values, info.
pub(super) type SyevdTypes<'a> = [&'a TensorType; 3];

/// `syevd`/`heevd` of each of the `batch` row-major `n x n` matrices of `a` by the lent
/// routine: the call's results `[v, w, info]`, or `None` when none is lent, `n` is 0 or the
/// routine declines. Without vectors `v` holds what LAPACK left in the matrix.
pub(super) fn syevd<E: LapackElement>(
    routine: Option<&Syevd<E>>,
    a: &Literal,
    batch: usize,
    n: usize,
    [lower, vectors]: [bool; 2],
    [v_ty, w_ty, info_ty]: SyevdTypes<'_>,
) -> Option<Vec<Literal>> {
    let routine = routine.filter(|_| n > 0)?;
    let values = E::read(&a.data);
    let (mut vs, mut ws, mut infos) = (Vec::new(), Vec::new(), Vec::new());
    for b in 0..batch {
        let mut m = transposed(values.get(b * n * n..(b + 1) * n * n)?, n, n);
        let (w, info) = routine(&mut m, n, vectors, lower)?;
        if w.len() != n {
            return None;
        }
        vs.extend(transposed(&m, n, n));
        ws.extend(w);
        infos.push(info);
    }
    Some(vec![
        E::literal(&vs, v_ty)?,
        RealOf::<E>::literal(&ws, w_ty)?,
        from_i32(infos, info_ty).ok()?,
    ])
}

/// The shape of an SVD call: `m`, `n`, the mode character, `u`'s columns and `vt`'s rows.
#[derive(Clone, Copy)]
pub(super) struct SvdShape {
    pub m: usize,
    pub n: usize,
    pub mode: char,
    pub u_cols: usize,
    pub vt_rows: usize,
}

/// The result types of an SVD call: the overwritten matrix, s, u, vt, info.
pub(super) type SvdTypes<'a> = [&'a TensorType; 5];

/// `gesdd`/`gesvd` of each of the `batch` row-major `m x n` matrices of `a` by the lent
/// routine: the call's results `[a, s, u, vt, info]`, or `None` when none is lent, a
/// dimension is 0 or the routine declines (the caller keeps non-finite matrices away). Without vectors `u` and `vt` are zeros.
pub(super) fn svd<E: LapackElement>(
    routine: Option<&Svd<E>>,
    a: &Literal,
    batch: usize,
    shape: SvdShape,
    [a_ty, s_ty, u_ty, vt_ty, info_ty]: SvdTypes<'_>,
) -> Option<Vec<Literal>> {
    let SvdShape {
        m,
        n,
        mode,
        u_cols,
        vt_rows,
    } = shape;
    let routine = routine.filter(|_| m > 0 && n > 0)?;
    let vectors = mode != 'N';
    let ldvt = if vectors {
        vt_rows
    } else {
        vt_ty
            .shape
            .iter()
            .rev()
            .nth(1)
            .map_or(1, |&d| d.max(1) as usize)
    };
    let values = E::read(&a.data);
    let (mut outs, mut ss, mut us, mut vts, mut infos) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for b in 0..batch {
        let mut col = transposed(values.get(b * m * n..(b + 1) * m * n)?, m, n);
        let (s, u, vt, info) = routine(&mut col, m, n, mode as u8, ldvt)?;
        if s.len() != m.min(n) || (vectors && (u.len() != m * u_cols || vt.len() != ldvt * n)) {
            return None;
        }
        outs.extend(transposed(&col, n, m));
        ss.extend(s);
        if vectors {
            us.extend(transposed(&u, u_cols, m));
            vts.extend(transposed(&vt, n, vt_rows));
        }
        infos.push(info);
    }
    if !vectors {
        us = vec![E::default(); u_ty.num_elements()?];
        vts = vec![E::default(); vt_ty.num_elements()?];
    }
    Some(vec![
        E::literal(&outs, a_ty)?,
        RealOf::<E>::literal(&ss, s_ty)?,
        E::literal(&us, u_ty)?,
        E::literal(&vts, vt_ty)?,
        from_i32(infos, info_ty).ok()?,
    ])
}

/// The result types of a `geev` call: the eigenvalues (`wr` and `wi` for real matrices,
/// `w` for complex ones), vl, vr, info.
pub(super) type GeevTypes<'a> = &'a [&'a TensorType];

/// What JAX's cpu kernel reports for a matrix with a non-finite entry, which it does not
/// hand to LAPACK.
const NOT_FINITE: i32 = -4;

/// `geev` of each of the `batch` row-major real `n x n` matrices of `a` by the lent
/// routine, as JAX's cpu kernel calls it: a matrix with a non-finite entry is not
/// decomposed (info -4), and the eigenvectors are unpacked to complex ones where info is
/// 0. The call's results `[wr, wi, vl, vr, info]`, or `None` when none is lent, `n` is 0
/// or the routine declines; eigenvectors not asked for, or not computed, are zeros.
pub(super) fn real_geev<T: LapackReal>(
    routine: Option<&RealGeev<T>>,
    a: &Literal,
    batch: usize,
    n: usize,
    [left, right]: [bool; 2],
    tys: GeevTypes<'_>,
) -> Option<Vec<Literal>>
where
    Complex<T>: LapackElement<Real = T>,
{
    let routine = routine.filter(|_| n > 0)?;
    let [wr_ty, wi_ty, vl_ty, vr_ty, info_ty] = tys else {
        return None;
    };
    let values = T::read(&a.data);
    let zeros = || vec![Complex::<T>::default(); n * n];
    let (mut wrs, mut wis, mut vls, mut vrs, mut infos) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for b in 0..batch {
        let matrix = values.get(b * n * n..(b + 1) * n * n)?;
        if !matrix.iter().all(|x| x.is_finite()) {
            wrs.extend(vec![T::default(); n]);
            wis.extend(vec![T::default(); n]);
            vls.extend(zeros());
            vrs.extend(zeros());
            infos.push(NOT_FINITE);
            continue;
        }
        let mut col = transposed(matrix, n, n);
        let (wr, wi, vl, vr, info) = routine(&mut col, n, left, right)?;
        let fits = |v: &[T], asked: bool| !asked || v.len() == n * n;
        if wr.len() != n || wi.len() != n || !fits(&vl, left) || !fits(&vr, right) {
            return None;
        }
        let unpack = |packed: &[T], asked: bool| {
            if asked && info == 0 {
                transposed(&unpack_eigenvectors(&wi, packed, n), n, n)
            } else {
                zeros()
            }
        };
        vls.extend(unpack(&vl, left));
        vrs.extend(unpack(&vr, right));
        wrs.extend(wr);
        wis.extend(wi);
        infos.push(info);
    }
    Some(vec![
        T::literal(&wrs, wr_ty)?,
        T::literal(&wis, wi_ty)?,
        Complex::<T>::literal(&vls, vl_ty)?,
        Complex::<T>::literal(&vrs, vr_ty)?,
        from_i32(infos, info_ty).ok()?,
    ])
}

/// LAPACK's packed real eigenvectors (column-major, a complex pair `j, j + 1` as the real
/// and imaginary parts in columns `j` and `j + 1`) as complex column-major ones.
fn unpack_eigenvectors<T: LapackReal>(wi: &[T], packed: &[T], n: usize) -> Vec<Complex<T>>
where
    Complex<T>: LapackElement<Real = T>,
{
    let mut out = vec![Complex::<T>::default(); n * n];
    let mut j = 0;
    while j < n {
        let column = |c: usize| &packed[c * n..(c + 1) * n];
        // A NaN imaginary part is not a pair (`!=` holds for NaN, so test equality).
        let single = wi[j] == T::default() || !wi[j].is_finite() || j + 1 == n;
        if single {
            for (o, &re) in out[j * n..(j + 1) * n].iter_mut().zip(column(j)) {
                *o = Complex::new(re, T::default());
            }
            j += 1;
        } else {
            for k in 0..n {
                let (re, im) = (column(j)[k], column(j + 1)[k]);
                out[j * n + k] = Complex::new(re, im);
                out[(j + 1) * n + k] = Complex::new(re, -im);
            }
            j += 2;
        }
    }
    out
}

/// `geev` of each of the `batch` row-major complex `n x n` matrices of `a` by the lent
/// routine, as [`real_geev`]: the call's results `[w, vl, vr, info]`.
pub(super) fn complex_geev<T: LapackElement<Real = T>>(
    routine: Option<&ComplexGeev<T>>,
    a: &Literal,
    batch: usize,
    n: usize,
    [left, right]: [bool; 2],
    tys: GeevTypes<'_>,
) -> Option<Vec<Literal>>
where
    Complex<T>: LapackElement<Real = T>,
{
    let routine = routine.filter(|_| n > 0)?;
    let [w_ty, vl_ty, vr_ty, info_ty] = tys else {
        return None;
    };
    let values = Complex::<T>::read(&a.data);
    let zeros = || vec![Complex::<T>::default(); n * n];
    let (mut ws, mut vls, mut vrs, mut infos) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for b in 0..batch {
        let matrix = values.get(b * n * n..(b + 1) * n * n)?;
        if !matrix.iter().all(|x| x.is_finite()) {
            ws.extend(vec![Complex::<T>::default(); n]);
            vls.extend(zeros());
            vrs.extend(zeros());
            infos.push(NOT_FINITE);
            continue;
        }
        let mut col = transposed(matrix, n, n);
        let (w, vl, vr, info) = routine(&mut col, n, left, right)?;
        let fits = |v: &[Complex<T>], asked: bool| !asked || v.len() == n * n;
        if w.len() != n || !fits(&vl, left) || !fits(&vr, right) {
            return None;
        }
        let back = |v: &[Complex<T>], asked: bool| {
            if asked {
                transposed(v, n, n)
            } else {
                zeros()
            }
        };
        vls.extend(back(&vl, left));
        vrs.extend(back(&vr, right));
        ws.extend(w);
        infos.push(info);
    }
    Some(vec![
        Complex::<T>::literal(&ws, w_ty)?,
        Complex::<T>::literal(&vls, vl_ty)?,
        Complex::<T>::literal(&vrs, vr_ty)?,
        from_i32(infos, info_ty).ok()?,
    ])
}
