//! Every conversion from a caller's raw pointer to a Rust reference or slice, in one place.
//!
//! Each function documents what the caller must guarantee; each checks what can be checked
//! (null pointers, overflowing lengths) and returns INVALID_ARGUMENT otherwise.

use oxla_client::{ClientError, Result};
use std::ffi::c_char;

/// A slice of `len` items at `ptr`; null is allowed only when `len` is 0.
///
/// # Safety
/// When `len > 0`, `ptr` must point to `len` initialized items that stay valid and unaliased
/// by writers for `'a`.
pub(crate) unsafe fn slice<'a, T>(ptr: *const T, len: usize, what: &str) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(ClientError::InvalidArgument(format!(
            "{what} is null but its length is {len}"
        )));
    }
    if len
        .checked_mul(std::mem::size_of::<T>())
        .is_none_or(|n| n > isize::MAX as usize)
    {
        return Err(ClientError::InvalidArgument(format!(
            "{what} has an impossible length {len}"
        )));
    }
    // SAFETY: non-null, size checked, validity guaranteed by the caller.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// A mutable byte slice of `len` bytes at `ptr`.
///
/// # Safety
/// When `len > 0`, `ptr` must point to `len` writable bytes that nothing else accesses for `'a`.
pub(crate) unsafe fn bytes_mut<'a>(ptr: *mut u8, len: usize, what: &str) -> Result<&'a mut [u8]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if ptr.is_null() {
        return Err(ClientError::InvalidArgument(format!(
            "{what} is null but its length is {len}"
        )));
    }
    if len > isize::MAX as usize {
        return Err(ClientError::InvalidArgument(format!(
            "{what} has an impossible length {len}"
        )));
    }
    // SAFETY: non-null, bounded length, exclusivity guaranteed by the caller.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
}

/// A UTF-8 string of `len` bytes at `ptr`.
///
/// # Safety
/// As for [`slice`].
pub(crate) unsafe fn str<'a>(ptr: *const c_char, len: usize, what: &str) -> Result<&'a str> {
    // SAFETY: forwarded from this function's contract.
    let bytes = unsafe { slice(ptr.cast::<u8>(), len, what) }?;
    std::str::from_utf8(bytes)
        .map_err(|e| ClientError::InvalidArgument(format!("{what} is not UTF-8: {e}")))
}

/// The object behind a handle pointer: `ptr` cast to the handle type `H`.
///
/// # Safety
/// `ptr` must be null or a pointer this plugin handed out for an `H` that is still alive
/// for `'a`.
pub(crate) unsafe fn handle<'a, H, P>(ptr: *const P, what: &str) -> Result<&'a H> {
    // SAFETY: forwarded from this function's contract.
    unsafe { ptr.cast::<H>().as_ref() }
        .ok_or_else(|| ClientError::InvalidArgument(format!("{what} is null")))
}

/// The byte range a strided host array occupies, as a slice, plus element zero's offset in it.
///
/// # Safety
/// `data` must point to element zero of an array laid out by `dims` and `byte_strides` (which
/// [`oxla_client::layout::strided_extent`] measures) and valid for reads for `'a`.
pub(crate) unsafe fn strided_host<'a>(
    data: *const u8,
    dims: &[i64],
    byte_strides: &[i64],
    elem_size: usize,
) -> Result<(&'a [u8], usize)> {
    let (low, len) = oxla_client::layout::strided_extent(dims, byte_strides, elem_size)?;
    if len == 0 {
        return Ok((&[], 0));
    }
    if data.is_null() {
        return Err(ClientError::InvalidArgument(
            "host data pointer is null".to_string(),
        ));
    }
    // SAFETY: the caller guarantees the described array lies in valid memory, and `low` is
    // the lowest offset any of its elements has, so the start is inside that memory.
    let start = unsafe { data.offset(low as isize) };
    // SAFETY: `len` bytes from `start` are exactly the array's extent.
    let bytes = unsafe { slice(start, len, "host data") }?;
    Ok((bytes, low.unsigned_abs() as usize))
}

/// A raw pointer that may move to a worker thread.
pub(crate) struct SendPtr<T>(pub(crate) *mut T);

// SAFETY: the pointee is caller memory that PJRT's contract keeps alive and untouched until the
// transfer's event fires; only the one job holding the pointer accesses it.
unsafe impl<T> Send for SendPtr<T> {}
