//! `?gees`: Schur forms.

use super::{order, query_then_call, Real};
use num_complex::Complex;
use oxla_ir::eval::{ComplexGees, RealGees};
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

/// `?gees` of a real type: `(jobvs, sort, select, n, a, lda, sdim, wr, wi, vs, ldvs, work,
/// lwork, bwork, info)`.
type RealGeesFn<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_void,
    *const c_int,
    *mut T,
    *const c_int,
    *mut c_int,
    *mut T,
    *mut T,
    *mut T,
    *const c_int,
    *mut T,
    *const c_int,
    *mut c_int,
    *mut c_int,
);

/// `?gees` of a complex type: `(jobvs, sort, select, n, a, lda, sdim, w, vs, ldvs, work,
/// lwork, rwork, bwork, info)`.
type ComplexGeesFn<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_void,
    *const c_int,
    *mut Complex<T>,
    *const c_int,
    *mut c_int,
    *mut Complex<T>,
    *mut Complex<T>,
    *const c_int,
    *mut Complex<T>,
    *const c_int,
    *mut T,
    *mut c_int,
    *mut c_int,
);

/// The lent real `gees` at `address` as the evaluator calls it.
///
/// # Safety
/// `address` must be a real `?gees` of element type `T`, as `oxla_lend_lapack_routine` asks.
pub(super) unsafe fn real<T: Real>(address: usize) -> Arc<RealGees<T>> {
    // SAFETY: the caller promised a routine of this signature at `address`.
    let gees: RealGeesFn<T> =
        unsafe { std::mem::transmute::<*const c_void, RealGeesFn<T>>(address as *const c_void) };
    Arc::new(move |a: &mut [T], n: usize, want_z: bool| {
        let ni = order(n)?;
        if a.len() != n * n {
            return None;
        }
        let jobvs = (if want_z { b'V' } else { b'N' }) as c_char;
        let sort = b'N' as c_char;
        let (mut wr, mut wi) = (vec![T::default(); n], vec![T::default(); n]);
        let mut vs = vec![T::default(); if want_z { n * n } else { 1 }];
        let ldvs: c_int = if want_z { ni } else { 1 };
        let mut bwork = vec![0 as c_int; n];
        let (mut sdim, mut info) = (0 as c_int, 0 as c_int);
        query_then_call(3 * n, |work: &mut [T], lwork: c_int, _query: bool| {
            // SAFETY: every pointer is valid for what LAPACK reads and writes: `a` holds
            // n*n elements (lda = n), `wr`, `wi` and `bwork` n each, `vs` n*n when vectors
            // are asked for (ldvs = n) and is not referenced otherwise (ldvs = 1), `work`
            // lwork elements or one for the query (lwork = -1); `select` is not
            // referenced with sort = 'N'.
            unsafe {
                gees(
                    &jobvs,
                    &sort,
                    std::ptr::null(),
                    &ni,
                    a.as_mut_ptr(),
                    &ni,
                    &mut sdim,
                    wr.as_mut_ptr(),
                    wi.as_mut_ptr(),
                    vs.as_mut_ptr(),
                    &ldvs,
                    work.as_mut_ptr(),
                    &lwork,
                    bwork.as_mut_ptr(),
                    &mut info,
                )
            }
        })?;
        let z = if want_z { vs } else { Vec::new() };
        Some((wr, wi, z, info))
    })
}

/// The lent complex `gees` at `address` as the evaluator calls it.
///
/// # Safety
/// `address` must be a complex `?gees` of element type `Complex<T>`, as
/// `oxla_lend_lapack_routine` asks.
pub(super) unsafe fn complex<T: Real>(address: usize) -> Arc<ComplexGees<T>> {
    // SAFETY: the caller promised a routine of this signature at `address`.
    let gees: ComplexGeesFn<T> =
        unsafe { std::mem::transmute::<*const c_void, ComplexGeesFn<T>>(address as *const c_void) };
    Arc::new(move |a: &mut [Complex<T>], n: usize, want_z: bool| {
        let ni = order(n)?;
        if a.len() != n * n {
            return None;
        }
        let jobvs = (if want_z { b'V' } else { b'N' }) as c_char;
        let sort = b'N' as c_char;
        let zero = Complex::new(T::default(), T::default());
        let mut w = vec![zero; n];
        let mut vs = vec![zero; if want_z { n * n } else { 1 }];
        let ldvs: c_int = if want_z { ni } else { 1 };
        let mut rwork = vec![T::default(); n];
        let mut bwork = vec![0 as c_int; n];
        let (mut sdim, mut info) = (0 as c_int, 0 as c_int);
        query_then_call(
            2 * n,
            |work: &mut [Complex<T>], lwork: c_int, _query: bool| {
                // SAFETY: every pointer is valid for what LAPACK reads and writes: `a` holds
                // n*n elements (lda = n), `w`, `rwork` and `bwork` n each, `vs` n*n when
                // vectors are asked for (ldvs = n) and is not referenced otherwise (ldvs = 1),
                // `work` lwork elements or one for the query (lwork = -1); `select` is not
                // referenced with sort = 'N'.
                unsafe {
                    gees(
                        &jobvs,
                        &sort,
                        std::ptr::null(),
                        &ni,
                        a.as_mut_ptr(),
                        &ni,
                        &mut sdim,
                        w.as_mut_ptr(),
                        vs.as_mut_ptr(),
                        &ldvs,
                        work.as_mut_ptr(),
                        &lwork,
                        rwork.as_mut_ptr(),
                        bwork.as_mut_ptr(),
                        &mut info,
                    )
                }
            },
        )?;
        let z = if want_z { vs } else { Vec::new() };
        Some((w, z, info))
    })
}
