//! `?gesdd` (divide and conquer) and `?gesvd` (QR iteration): singular value
//! decompositions.
//!
//! Both are called as JAX's cpu kernels call them: `lda = ldu = m`, the workspace the
//! routine's query asks for (queried with `ldvt = n` in mode `A` and `min(m, n)`
//! otherwise), `iwork` of `8 min(m, n)` for `gesdd`, and for complex matrices `rwork` of
//! `7 min(m, n)` without vectors and `max(5k^2 + 5k, 2 max(m, n) k + 2k^2 + k)` with
//! them (`gesdd`), `5 min(m, n)` (`gesvd`).

use super::{job, order, query_then_call, size, Real};
use num_complex::Complex;
use oxla_ir::eval::{LapackElement, Svd};
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

/// Real `?gesdd`: `(jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, iwork, info)`.
type RealGesddFn<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_int,
    *const c_int,
    *mut T,
    *const c_int,
    *mut T,
    *mut T,
    *const c_int,
    *mut T,
    *const c_int,
    *mut T,
    *const c_int,
    *mut c_int,
    *mut c_int,
);

/// Complex `?gesdd`: `(jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, rwork, iwork,
/// info)`.
type ComplexGesddFn<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_int,
    *const c_int,
    *mut Complex<T>,
    *const c_int,
    *mut T,
    *mut Complex<T>,
    *const c_int,
    *mut Complex<T>,
    *const c_int,
    *mut Complex<T>,
    *const c_int,
    *mut T,
    *mut c_int,
    *mut c_int,
);

/// Real `?gesvd`: `(jobu, jobvt, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, info)`.
type RealGesvdFn<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_int,
    *const c_int,
    *mut T,
    *const c_int,
    *mut T,
    *mut T,
    *const c_int,
    *mut T,
    *const c_int,
    *mut T,
    *const c_int,
    *mut c_int,
);

/// Complex `?gesvd`: `(jobu, jobvt, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, rwork,
/// info)`.
type ComplexGesvdFn<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_int,
    *const c_int,
    *mut Complex<T>,
    *const c_int,
    *mut T,
    *mut Complex<T>,
    *const c_int,
    *mut Complex<T>,
    *const c_int,
    *mut Complex<T>,
    *const c_int,
    *mut T,
    *mut c_int,
);

/// The sizes of one SVD call: LAPACK's `m`, `n`, `ldvt` and the `ldvt` of the workspace
/// query, the buffers' lengths (`u`, `vt`, `s`) and `min(m, n)`.
struct Sizes {
    m: c_int,
    n: c_int,
    ldvt: c_int,
    query_ldvt: c_int,
    u_len: usize,
    vt_len: usize,
    k: usize,
}

/// The sizes of an SVD of the `m x n` matrix `a` in `mode` with `ldvt`, or `None` when a
/// dimension is 0 or too large, `a` has another length or `mode` is not `A`, `S` or `N`.
fn sizes(a_len: usize, m: usize, n: usize, mode: u8, ldvt: usize) -> Option<Sizes> {
    let (mi, ni, ldvt_i) = (order(m)?, order(n)?, order(ldvt)?);
    if a_len != m * n || !matches!(mode, b'A' | b'S' | b'N') {
        return None;
    }
    let k = m.min(n);
    let u_cols = if mode == b'A' { m } else { k };
    let query_ldvt = size(if mode == b'A' { n } else { k })?;
    Some(Sizes {
        m: mi,
        n: ni,
        ldvt: ldvt_i,
        query_ldvt,
        u_len: m * u_cols,
        vt_len: ldvt * n,
        k,
    })
}

/// The lent real `?gesdd` at `address` as the evaluator calls it.
///
/// # Safety
/// `address` must be a real `?gesdd` of element type `T`, as `oxla_lend_lapack_routine`
/// asks.
pub(super) unsafe fn real_gesdd<T: Real>(address: usize) -> Arc<Svd<T>> {
    // SAFETY: the caller promised a routine of this signature at `address`.
    let gesdd: RealGesddFn<T> =
        unsafe { std::mem::transmute::<*const c_void, RealGesddFn<T>>(address as *const c_void) };
    Arc::new(
        move |a: &mut [T], m: usize, n: usize, mode: u8, ldvt: usize| {
            let z = sizes(a.len(), m, n, mode, ldvt)?;
            let jobz = job(mode);
            let mut s = vec![T::default(); z.k];
            let mut u = vec![T::default(); z.u_len];
            let mut vt = vec![T::default(); z.vt_len];
            let mut iwork = vec![0 as c_int; 8 * z.k];
            let mut info: c_int = 0;
            query_then_call(1, |work: &mut [T], lwork: c_int, query: bool| {
                let ldvt = if query { z.query_ldvt } else { z.ldvt };
                // SAFETY: `a` holds m*n elements (lda = m), `s` min(m, n), `u` m times its
                // columns (ldu = m), `vt` ldvt*n (the query's ldvt is at most the call's),
                // `iwork` 8 min(m, n), `work` lwork elements or one for the query (lwork = -1).
                unsafe {
                    gesdd(
                        &jobz,
                        &z.m,
                        &z.n,
                        a.as_mut_ptr(),
                        &z.m,
                        s.as_mut_ptr(),
                        u.as_mut_ptr(),
                        &z.m,
                        vt.as_mut_ptr(),
                        &ldvt,
                        work.as_mut_ptr(),
                        &lwork,
                        iwork.as_mut_ptr(),
                        &mut info,
                    )
                }
            })?;
            Some((s, u, vt, info))
        },
    )
}

/// The lent complex `?gesdd` at `address` as the evaluator calls it.
///
/// # Safety
/// `address` must be a complex `?gesdd` of element type `Complex<T>`, as
/// `oxla_lend_lapack_routine` asks.
pub(super) unsafe fn complex_gesdd<T: Real>(address: usize) -> Arc<Svd<Complex<T>>>
where
    Complex<T>: LapackElement<Real = T>,
{
    // SAFETY: the caller promised a routine of this signature at `address`.
    let gesdd: ComplexGesddFn<T> = unsafe {
        std::mem::transmute::<*const c_void, ComplexGesddFn<T>>(address as *const c_void)
    };
    Arc::new(
        move |a: &mut [Complex<T>], m: usize, n: usize, mode: u8, ldvt: usize| {
            let z = sizes(a.len(), m, n, mode, ldvt)?;
            let jobz = job(mode);
            let zero = Complex::<T>::default();
            let mut s = vec![T::default(); z.k];
            let mut u = vec![zero; z.u_len];
            let mut vt = vec![zero; z.vt_len];
            let mut iwork = vec![0 as c_int; 8 * z.k];
            let k = z.k;
            let rwork_len = if mode == b'N' {
                7 * k
            } else {
                (5 * k * k + 5 * k).max(2 * m.max(n) * k + 2 * k * k + k)
            };
            let mut rwork = vec![T::default(); rwork_len.max(1)];
            let mut info: c_int = 0;
            query_then_call(1, |work: &mut [Complex<T>], lwork: c_int, query: bool| {
                let ldvt = if query { z.query_ldvt } else { z.ldvt };
                // SAFETY: as for the real `gesdd`, and `rwork` holds what LAPACK asks for in
                // this mode.
                unsafe {
                    gesdd(
                        &jobz,
                        &z.m,
                        &z.n,
                        a.as_mut_ptr(),
                        &z.m,
                        s.as_mut_ptr(),
                        u.as_mut_ptr(),
                        &z.m,
                        vt.as_mut_ptr(),
                        &ldvt,
                        work.as_mut_ptr(),
                        &lwork,
                        rwork.as_mut_ptr(),
                        iwork.as_mut_ptr(),
                        &mut info,
                    )
                }
            })?;
            Some((s, u, vt, info))
        },
    )
}

/// The lent real `?gesvd` at `address` as the evaluator calls it (`jobu = jobvt`).
///
/// # Safety
/// `address` must be a real `?gesvd` of element type `T`, as `oxla_lend_lapack_routine`
/// asks.
pub(super) unsafe fn real_gesvd<T: Real>(address: usize) -> Arc<Svd<T>> {
    // SAFETY: the caller promised a routine of this signature at `address`.
    let gesvd: RealGesvdFn<T> =
        unsafe { std::mem::transmute::<*const c_void, RealGesvdFn<T>>(address as *const c_void) };
    Arc::new(
        move |a: &mut [T], m: usize, n: usize, mode: u8, ldvt: usize| {
            let z = sizes(a.len(), m, n, mode, ldvt)?;
            let jobu = job(mode);
            let mut s = vec![T::default(); z.k];
            let mut u = vec![T::default(); z.u_len];
            let mut vt = vec![T::default(); z.vt_len];
            let mut info: c_int = 0;
            query_then_call(1, |work: &mut [T], lwork: c_int, query: bool| {
                let ldvt = if query { z.query_ldvt } else { z.ldvt };
                // SAFETY: `a` holds m*n elements (lda = m), `s` min(m, n), `u` m times its
                // columns (ldu = m), `vt` ldvt*n (the query's ldvt is at most the call's),
                // `work` lwork elements or one for the query (lwork = -1).
                unsafe {
                    gesvd(
                        &jobu,
                        &jobu,
                        &z.m,
                        &z.n,
                        a.as_mut_ptr(),
                        &z.m,
                        s.as_mut_ptr(),
                        u.as_mut_ptr(),
                        &z.m,
                        vt.as_mut_ptr(),
                        &ldvt,
                        work.as_mut_ptr(),
                        &lwork,
                        &mut info,
                    )
                }
            })?;
            Some((s, u, vt, info))
        },
    )
}

/// The lent complex `?gesvd` at `address` as the evaluator calls it (`jobu = jobvt`).
///
/// # Safety
/// `address` must be a complex `?gesvd` of element type `Complex<T>`, as
/// `oxla_lend_lapack_routine` asks.
pub(super) unsafe fn complex_gesvd<T: Real>(address: usize) -> Arc<Svd<Complex<T>>>
where
    Complex<T>: LapackElement<Real = T>,
{
    // SAFETY: the caller promised a routine of this signature at `address`.
    let gesvd: ComplexGesvdFn<T> = unsafe {
        std::mem::transmute::<*const c_void, ComplexGesvdFn<T>>(address as *const c_void)
    };
    Arc::new(
        move |a: &mut [Complex<T>], m: usize, n: usize, mode: u8, ldvt: usize| {
            let z = sizes(a.len(), m, n, mode, ldvt)?;
            let jobu = job(mode);
            let zero = Complex::<T>::default();
            let mut s = vec![T::default(); z.k];
            let mut u = vec![zero; z.u_len];
            let mut vt = vec![zero; z.vt_len];
            let mut rwork = vec![T::default(); 5 * z.k];
            let mut info: c_int = 0;
            query_then_call(1, |work: &mut [Complex<T>], lwork: c_int, query: bool| {
                let ldvt = if query { z.query_ldvt } else { z.ldvt };
                // SAFETY: as for the real `gesvd`, and `rwork` holds 5 min(m, n).
                unsafe {
                    gesvd(
                        &jobu,
                        &jobu,
                        &z.m,
                        &z.n,
                        a.as_mut_ptr(),
                        &z.m,
                        s.as_mut_ptr(),
                        u.as_mut_ptr(),
                        &z.m,
                        vt.as_mut_ptr(),
                        &ldvt,
                        work.as_mut_ptr(),
                        &lwork,
                        rwork.as_mut_ptr(),
                        &mut info,
                    )
                }
            })?;
            Some((s, u, vt, info))
        },
    )
}
