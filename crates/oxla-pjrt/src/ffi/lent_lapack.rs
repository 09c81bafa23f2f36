//! `oxla_lend_lapack_routine`: the C entry point through which the Python package lends
//! the evaluator LAPACK routines of its process (SciPy's, the ones JAX's cpu backend
//! calls), so that results LAPACK alone determines, such as a Schur form, are that
//! LAPACK's (see `oxla_ir::eval::lend_lapack`).
//!
//! A lent routine is called with the argument list of SciPy's `cython_lapack`: every
//! argument by pointer, `int` integers, no hidden string lengths.

use num_complex::Complex;
use oxla_ir::eval::{lend_lapack, ComplexGees, RealGees};
use std::ffi::{c_char, c_int, c_void, CStr};
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

/// Lends `routine` as the LAPACK routine named by the NUL-terminated `name` (`sgees`,
/// `dgees`, `cgees`, `zgees`), or takes the lent one back when `routine` is null.
/// Returns 0 on success, 1 for a name oxla does not borrow, 2 for a null or non-UTF-8 name.
///
/// # Safety
/// `name` must be null or a NUL-terminated string. A non-null `routine` must be the named
/// LAPACK routine with the argument list of SciPy's `cython_lapack`, callable from any
/// thread for the life of the process.
#[no_mangle]
pub unsafe extern "C" fn oxla_lend_lapack_routine(
    name: *const c_char,
    routine: *const c_void,
) -> i32 {
    if name.is_null() {
        return 2;
    }
    // SAFETY: the caller promised a NUL-terminated string.
    let Ok(name) = unsafe { CStr::from_ptr(name) }.to_str() else {
        return 2;
    };
    let address = routine as usize;
    std::panic::catch_unwind(move || {
        let lent = address != 0;
        match name {
            "sgees" => lend_lapack(|t| t.sgees = lent.then(|| real_gees::<f32>(address))),
            "dgees" => lend_lapack(|t| t.dgees = lent.then(|| real_gees::<f64>(address))),
            "cgees" => lend_lapack(|t| t.cgees = lent.then(|| complex_gees::<f32>(address))),
            "zgees" => lend_lapack(|t| t.zgees = lent.then(|| complex_gees::<f64>(address))),
            _ => return 1,
        }
        0
    })
    .unwrap_or(2)
}

/// The order as LAPACK's integer.
fn order(n: usize) -> Option<c_int> {
    c_int::try_from(n).ok().filter(|&n| n > 0)
}

/// The workspace size a routine's query asked for (`work[0]`), at least `least`.
fn workspace(asked: f64, least: usize) -> Option<c_int> {
    let n = asked.max(least as f64).ceil();
    (n.is_finite() && n <= c_int::MAX as f64).then_some(n as c_int)
}

/// A real type LAPACK works in.
trait Real: Copy + Default + Into<f64> + Send + Sync + 'static {}
impl Real for f32 {}
impl Real for f64 {}

/// The lent real `gees` at `address` as the evaluator calls it.
fn real_gees<T: Real>(address: usize) -> Arc<RealGees<T>> {
    // SAFETY: `oxla_lend_lapack_routine`'s caller promised that a non-null routine lent
    // under this type's name has this signature.
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
        let mut query = [T::default()];
        let mut call = |work: &mut [T], lwork: c_int, info: &mut c_int| {
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
                    info,
                )
            }
        };
        call(&mut query, -1, &mut info);
        let lwork = workspace(query[0].into(), 3 * n)?;
        let mut work = vec![T::default(); lwork as usize];
        call(&mut work, lwork, &mut info);
        let z = if want_z { vs } else { Vec::new() };
        Some((wr, wi, z, info))
    })
}

/// The lent complex `gees` at `address` as the evaluator calls it.
fn complex_gees<T: Real>(address: usize) -> Arc<ComplexGees<T>> {
    // SAFETY: `oxla_lend_lapack_routine`'s caller promised that a non-null routine lent
    // under this type's name has this signature.
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
        let mut query = [zero];
        let mut call = |work: &mut [Complex<T>], lwork: c_int, info: &mut c_int| {
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
                    info,
                )
            }
        };
        call(&mut query, -1, &mut info);
        let lwork = workspace(query[0].re.into(), 2 * n)?;
        let mut work = vec![zero; lwork as usize];
        call(&mut work, lwork, &mut info);
        let z = if want_z { vs } else { Vec::new() };
        Some((w, z, info))
    })
}
