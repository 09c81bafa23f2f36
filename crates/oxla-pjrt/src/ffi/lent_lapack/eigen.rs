//! `?syevd`/`?heevd` (symmetric and Hermitian eigenproblems) and `?geev` (general ones).

use super::{job, order, query_then_call, size, Real};
use num_complex::Complex;
use oxla_ir::eval::{ComplexGeev, LapackElement, RealGeev, Syevd};
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

/// `?syevd`: `(jobz, uplo, n, a, lda, w, work, lwork, iwork, liwork, info)`.
type SyevdFn<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_int,
    *mut T,
    *const c_int,
    *mut T,
    *mut T,
    *const c_int,
    *mut c_int,
    *const c_int,
    *mut c_int,
);

/// `?heevd`: `(jobz, uplo, n, a, lda, w, work, lwork, rwork, lrwork, iwork, liwork, info)`.
type HeevdFn<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_int,
    *mut Complex<T>,
    *const c_int,
    *mut T,
    *mut Complex<T>,
    *const c_int,
    *mut T,
    *const c_int,
    *mut c_int,
    *const c_int,
    *mut c_int,
);

/// Real `?geev`: `(jobvl, jobvr, n, a, lda, wr, wi, vl, ldvl, vr, ldvr, work, lwork, info)`.
type RealGeevFn<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_int,
    *mut T,
    *const c_int,
    *mut T,
    *mut T,
    *mut T,
    *const c_int,
    *mut T,
    *const c_int,
    *mut T,
    *const c_int,
    *mut c_int,
);

/// Complex `?geev`: `(jobvl, jobvr, n, a, lda, w, vl, ldvl, vr, ldvr, work, lwork, rwork,
/// info)`.
type ComplexGeevFn<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_int,
    *mut Complex<T>,
    *const c_int,
    *mut Complex<T>,
    *mut Complex<T>,
    *const c_int,
    *mut Complex<T>,
    *const c_int,
    *mut Complex<T>,
    *const c_int,
    *mut T,
    *mut c_int,
);

/// The job and triangle characters of an eigenproblem.
fn eigen_jobs(vectors: bool, lower: bool) -> (c_char, c_char) {
    (
        job(if vectors { b'V' } else { b'N' }),
        job(if lower { b'L' } else { b'U' }),
    )
}

/// The lent `?syevd` at `address` as the evaluator calls it, with the workspaces of JAX's
/// cpu kernel (`1 + 6n + 2n^2` and `3 + 5n` with vectors, `2n + 1` and 1 without).
///
/// # Safety
/// `address` must be a `?syevd` of element type `T`, as `oxla_lend_lapack_routine` asks.
pub(super) unsafe fn syevd<T: Real>(address: usize) -> Arc<Syevd<T>> {
    // SAFETY: the caller promised a routine of this signature at `address`.
    let syevd: SyevdFn<T> =
        unsafe { std::mem::transmute::<*const c_void, SyevdFn<T>>(address as *const c_void) };
    Arc::new(move |a: &mut [T], n: usize, vectors: bool, lower: bool| {
        let ni = order(n)?;
        if a.len() != n * n {
            return None;
        }
        let (jobz, uplo) = eigen_jobs(vectors, lower);
        let (lwork, liwork) = if vectors {
            (1 + 6 * n + 2 * n * n, 3 + 5 * n)
        } else {
            (2 * n + 1, 1)
        };
        let (lwork_i, liwork_i) = (size(lwork)?, size(liwork)?);
        let mut w = vec![T::default(); n];
        let mut work = vec![T::default(); lwork];
        let mut iwork = vec![0 as c_int; liwork];
        let mut info: c_int = 0;
        // SAFETY: `a` holds n*n elements (lda = n), `w` n, `work` lwork, `iwork` liwork.
        unsafe {
            syevd(
                &jobz,
                &uplo,
                &ni,
                a.as_mut_ptr(),
                &ni,
                w.as_mut_ptr(),
                work.as_mut_ptr(),
                &lwork_i,
                iwork.as_mut_ptr(),
                &liwork_i,
                &mut info,
            )
        };
        Some((w, info))
    })
}

/// The lent `?heevd` at `address` as the evaluator calls it, with the workspaces of JAX's
/// cpu kernel (`2n + n^2`, `1 + 5n + 2n^2` and `3 + 5n` with vectors; `n + 1`, `n` and 1
/// without).
///
/// # Safety
/// `address` must be a `?heevd` of element type `Complex<T>`, as
/// `oxla_lend_lapack_routine` asks.
pub(super) unsafe fn heevd<T: Real>(address: usize) -> Arc<Syevd<Complex<T>>>
where
    Complex<T>: LapackElement<Real = T>,
{
    // SAFETY: the caller promised a routine of this signature at `address`.
    let heevd: HeevdFn<T> =
        unsafe { std::mem::transmute::<*const c_void, HeevdFn<T>>(address as *const c_void) };
    Arc::new(
        move |a: &mut [Complex<T>], n: usize, vectors: bool, lower: bool| {
            let ni = order(n)?;
            if a.len() != n * n {
                return None;
            }
            let (jobz, uplo) = eigen_jobs(vectors, lower);
            let (lwork, lrwork, liwork) = if vectors {
                (2 * n + n * n, 1 + 5 * n + 2 * n * n, 3 + 5 * n)
            } else {
                (n + 1, n.max(1), 1)
            };
            let (lwork_i, lrwork_i, liwork_i) = (size(lwork)?, size(lrwork)?, size(liwork)?);
            let mut w = vec![T::default(); n];
            let mut work = vec![Complex::<T>::default(); lwork];
            let mut rwork = vec![T::default(); lrwork];
            let mut iwork = vec![0 as c_int; liwork];
            let mut info: c_int = 0;
            // SAFETY: `a` holds n*n elements (lda = n), `w` n, `work` lwork, `rwork` lrwork,
            // `iwork` liwork.
            unsafe {
                heevd(
                    &jobz,
                    &uplo,
                    &ni,
                    a.as_mut_ptr(),
                    &ni,
                    w.as_mut_ptr(),
                    work.as_mut_ptr(),
                    &lwork_i,
                    rwork.as_mut_ptr(),
                    &lrwork_i,
                    iwork.as_mut_ptr(),
                    &liwork_i,
                    &mut info,
                )
            };
            Some((w, info))
        },
    )
}

/// The job characters of `geev`.
fn geev_jobs(left: bool, right: bool) -> (c_char, c_char) {
    let of = |v: bool| job(if v { b'V' } else { b'N' });
    (of(left), of(right))
}

/// The lent real `?geev` at `address` as the evaluator calls it: the workspace its query
/// asks for, eigenvector buffers of `n x n` (lda = ldvl = ldvr = n), as JAX's cpu kernel.
///
/// # Safety
/// `address` must be a real `?geev` of element type `T`, as `oxla_lend_lapack_routine`
/// asks.
pub(super) unsafe fn real_geev<T: Real>(address: usize) -> Arc<RealGeev<T>> {
    // SAFETY: the caller promised a routine of this signature at `address`.
    let geev: RealGeevFn<T> =
        unsafe { std::mem::transmute::<*const c_void, RealGeevFn<T>>(address as *const c_void) };
    Arc::new(move |a: &mut [T], n: usize, left: bool, right: bool| {
        let ni = order(n)?;
        if a.len() != n * n {
            return None;
        }
        let (jobvl, jobvr) = geev_jobs(left, right);
        let (mut wr, mut wi) = (vec![T::default(); n], vec![T::default(); n]);
        let (mut vl, mut vr) = (vec![T::default(); n * n], vec![T::default(); n * n]);
        let mut info: c_int = 0;
        query_then_call(1, |work: &mut [T], lwork: c_int, _query: bool| {
            // SAFETY: `a`, `vl` and `vr` hold n*n elements (lda = ldvl = ldvr = n), `wr`
            // and `wi` n each, `work` lwork elements or one for the query (lwork = -1).
            unsafe {
                geev(
                    &jobvl,
                    &jobvr,
                    &ni,
                    a.as_mut_ptr(),
                    &ni,
                    wr.as_mut_ptr(),
                    wi.as_mut_ptr(),
                    vl.as_mut_ptr(),
                    &ni,
                    vr.as_mut_ptr(),
                    &ni,
                    work.as_mut_ptr(),
                    &lwork,
                    &mut info,
                )
            }
        })?;
        Some((wr, wi, vl, vr, info))
    })
}

/// The lent complex `?geev` at `address` as the evaluator calls it, as [`real_geev`], with
/// `rwork` of `2n`.
///
/// # Safety
/// `address` must be a complex `?geev` of element type `Complex<T>`, as
/// `oxla_lend_lapack_routine` asks.
pub(super) unsafe fn complex_geev<T: Real>(address: usize) -> Arc<ComplexGeev<T>> {
    // SAFETY: the caller promised a routine of this signature at `address`.
    let geev: ComplexGeevFn<T> =
        unsafe { std::mem::transmute::<*const c_void, ComplexGeevFn<T>>(address as *const c_void) };
    Arc::new(
        move |a: &mut [Complex<T>], n: usize, left: bool, right: bool| {
            let ni = order(n)?;
            if a.len() != n * n {
                return None;
            }
            let (jobvl, jobvr) = geev_jobs(left, right);
            let zero = Complex::<T>::default();
            let mut w = vec![zero; n];
            let (mut vl, mut vr) = (vec![zero; n * n], vec![zero; n * n]);
            let mut rwork = vec![T::default(); 2 * n];
            let mut info: c_int = 0;
            query_then_call(1, |work: &mut [Complex<T>], lwork: c_int, _query: bool| {
                // SAFETY: `a`, `vl` and `vr` hold n*n elements (lda = ldvl = ldvr = n), `w` n,
                // `rwork` 2n, `work` lwork elements or one for the query (lwork = -1).
                unsafe {
                    geev(
                        &jobvl,
                        &jobvr,
                        &ni,
                        a.as_mut_ptr(),
                        &ni,
                        w.as_mut_ptr(),
                        vl.as_mut_ptr(),
                        &ni,
                        vr.as_mut_ptr(),
                        &ni,
                        work.as_mut_ptr(),
                        &lwork,
                        rwork.as_mut_ptr(),
                        &mut info,
                    )
                }
            })?;
            Some((w, vl, vr, info))
        },
    )
}
