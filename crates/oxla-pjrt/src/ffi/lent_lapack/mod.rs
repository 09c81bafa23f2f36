//! `oxla_lend_lapack_routine`: the C entry point through which the Python package lends
//! the evaluator LAPACK routines of its process (SciPy's, the ones JAX's cpu backend
//! calls), so that results LAPACK alone determines (a Schur form, the order of general
//! eigenvalues, the signs of eigen- and singular vectors) are that LAPACK's (see
//! `oxla_ir::eval::lend_lapack`).
//!
//! A lent routine is called with the argument list of SciPy's `cython_lapack`: every
//! argument by pointer, `int` integers, no hidden string lengths; and with the workspace
//! sizes JAX's cpu kernels give it, since a routine's blocking (and so its rounding)
//! follows the workspace it gets.

mod eigen;
mod gees;
mod svd;

use num_complex::Complex;
use oxla_ir::eval::lend_lapack;
use std::ffi::{c_char, c_int, c_void, CStr};

/// Lends `routine` as the LAPACK routine named by the NUL-terminated `name` (`?gees`,
/// `?syevd`/`?heevd`, `?gesdd`, `?gesvd`, `?geev` with a type letter `s`, `d`, `c` or
/// `z`), or takes the lent one back when `routine` is null. Returns 0 on success, 1 for a
/// name oxla does not borrow, 2 for a null or non-UTF-8 name.
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
        let on = address != 0;
        // SAFETY: in every arm, the caller promised that a non-null routine lent under this
        // name has the signature of SciPy's routine of that name.
        unsafe {
            match name {
                "sgees" => lend_lapack(|t| t.sgees = on.then(|| gees::real::<f32>(address))),
                "dgees" => lend_lapack(|t| t.dgees = on.then(|| gees::real::<f64>(address))),
                "cgees" => lend_lapack(|t| t.cgees = on.then(|| gees::complex::<f32>(address))),
                "zgees" => lend_lapack(|t| t.zgees = on.then(|| gees::complex::<f64>(address))),
                "ssyevd" => lend_lapack(|t| t.ssyevd = on.then(|| eigen::syevd::<f32>(address))),
                "dsyevd" => lend_lapack(|t| t.dsyevd = on.then(|| eigen::syevd::<f64>(address))),
                "cheevd" => lend_lapack(|t| t.cheevd = on.then(|| eigen::heevd::<f32>(address))),
                "zheevd" => lend_lapack(|t| t.zheevd = on.then(|| eigen::heevd::<f64>(address))),
                "sgeev" => lend_lapack(|t| t.sgeev = on.then(|| eigen::real_geev::<f32>(address))),
                "dgeev" => lend_lapack(|t| t.dgeev = on.then(|| eigen::real_geev::<f64>(address))),
                "cgeev" => {
                    lend_lapack(|t| t.cgeev = on.then(|| eigen::complex_geev::<f32>(address)))
                }
                "zgeev" => {
                    lend_lapack(|t| t.zgeev = on.then(|| eigen::complex_geev::<f64>(address)))
                }
                "sgesdd" => lend_lapack(|t| t.sgesdd = on.then(|| svd::real_gesdd::<f32>(address))),
                "dgesdd" => lend_lapack(|t| t.dgesdd = on.then(|| svd::real_gesdd::<f64>(address))),
                "cgesdd" => {
                    lend_lapack(|t| t.cgesdd = on.then(|| svd::complex_gesdd::<f32>(address)))
                }
                "zgesdd" => {
                    lend_lapack(|t| t.zgesdd = on.then(|| svd::complex_gesdd::<f64>(address)))
                }
                "sgesvd" => lend_lapack(|t| t.sgesvd = on.then(|| svd::real_gesvd::<f32>(address))),
                "dgesvd" => lend_lapack(|t| t.dgesvd = on.then(|| svd::real_gesvd::<f64>(address))),
                "cgesvd" => {
                    lend_lapack(|t| t.cgesvd = on.then(|| svd::complex_gesvd::<f32>(address)))
                }
                "zgesvd" => {
                    lend_lapack(|t| t.zgesvd = on.then(|| svd::complex_gesvd::<f64>(address)))
                }
                _ => return 1,
            }
        }
        0
    })
    .unwrap_or(2)
}

/// A dimension as LAPACK's integer, when it is positive and fits.
fn order(n: usize) -> Option<c_int> {
    c_int::try_from(n).ok().filter(|&n| n > 0)
}

/// A workspace size as LAPACK's integer, when it fits.
fn size(n: usize) -> Option<c_int> {
    c_int::try_from(n).ok()
}

/// The workspace size a routine's query asked for (`work[0]`), at least `least`.
fn workspace(asked: f64, least: usize) -> Option<c_int> {
    let n = asked.max(least as f64).ceil();
    (n.is_finite() && n <= c_int::MAX as f64).then_some(n as c_int)
}

/// An element of a LAPACK `work` array.
trait Work: Copy + Default {
    /// The workspace size a query left in this element (the real part for complex ones).
    fn asked(self) -> f64;
}

impl Work for f32 {
    fn asked(self) -> f64 {
        self.into()
    }
}

impl Work for f64 {
    fn asked(self) -> f64 {
        self
    }
}

impl<T: Real> Work for Complex<T> {
    fn asked(self) -> f64 {
        self.re.into()
    }
}

/// LAPACK's workspace protocol: `call(work, lwork, is_query)` runs once as a query
/// (`lwork = -1`, a one-element `work`), then with the workspace the query asked for, at
/// least `least` elements. `None`, before the second call, when that size does not fit
/// LAPACK's integer.
fn query_then_call<W: Work>(
    least: usize,
    mut call: impl FnMut(&mut [W], c_int, bool),
) -> Option<()> {
    let mut query = [W::default()];
    call(&mut query, -1, true);
    let lwork = workspace(query[0].asked(), least)?;
    let mut work = vec![W::default(); lwork as usize];
    call(&mut work, lwork, false);
    Some(())
}

/// A LAPACK job character.
fn job(c: u8) -> c_char {
    c as c_char
}

/// A real type LAPACK works in.
trait Real: oxla_ir::eval::LapackReal + Into<f64> + Work {}
impl Real for f32 {}
impl Real for f64 {}
