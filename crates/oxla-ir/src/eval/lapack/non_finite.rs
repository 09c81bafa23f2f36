//! Matrices with a NaN or an infinity in the decompositions whose iterations such an entry
//! derails.
//!
//! LAPACK's own answer to them is no decomposition: `gesdd` reports the matrix as an illegal
//! argument (`info = -4`) for a NaN, and its QR sweeps over a bidiagonal form full of NaNs can
//! spin for long; oxla's own routines would return numbers that mean nothing. So such a
//! matrix is decomposed as zeros and its results are then replaced by NaNs with `info = -4`,
//! which JAX's lowering turns into NaN results, as on `cpu`.

use crate::{ElementType, Literal};
use std::borrow::Cow;

/// LAPACK's `info` for an illegal fourth argument, the matrix.
pub(super) const INFO_ILLEGAL_MATRIX: i32 = -4;

/// For each of the `batch` row-major `rows x cols` matrices of `a` (real or complex floats),
/// whether an entry the routine reads is not finite: every entry, or with `triangle =
/// Some(lower)` those of one triangle of a square matrix.
pub(super) fn matrices(
    a: &Literal,
    batch: usize,
    rows: usize,
    cols: usize,
    triangle: Option<bool>,
) -> Vec<bool> {
    let et = a.element_type();
    let (width, parts) = match et {
        ElementType::F32 => (4, 1),
        ElementType::F64 => (8, 1),
        ElementType::C64 => (4, 2),
        ElementType::C128 => (8, 2),
        _ => return vec![false; batch],
    };
    let finite = |bytes: &[u8]| match width {
        4 => f32::from_le_bytes(bytes.try_into().unwrap_or([0; 4])).is_finite(),
        _ => f64::from_le_bytes(bytes.try_into().unwrap_or([0; 8])).is_finite(),
    };
    let element = width * parts;
    let matrix = rows * cols * element;
    (0..batch)
        .map(|b| {
            let Some(bytes) = a.data.get(b * matrix..(b + 1) * matrix) else {
                return false;
            };
            (0..rows).any(|i| {
                let (lo, hi) = match triangle {
                    Some(true) => (0, (i + 1).min(cols)),
                    Some(false) => (i.min(cols), cols),
                    None => (0, cols),
                };
                let row = &bytes[(i * cols + lo) * element..(i * cols + hi) * element];
                !row.chunks_exact(width).all(finite)
            })
        })
        .collect()
}

/// `a` with the matrices flagged in `bad` set to zeros (`a` itself when none is).
pub(super) fn zeroed<'a>(a: &'a Literal, bad: &[bool]) -> Cow<'a, Literal> {
    if !bad.contains(&true) {
        return Cow::Borrowed(a);
    }
    let mut clean = a.clone();
    let matrix = clean.data.len() / bad.len().max(1);
    let data = clean.data_mut();
    for (b, _) in bad.iter().enumerate().filter(|(_, &bad)| bad) {
        data[b * matrix..(b + 1) * matrix].fill(0);
    }
    Cow::Owned(clean)
}

/// Replaces the results of the matrices flagged in `bad`: NaN in each float result of
/// `poisoned` (each holding one equal slice per matrix), [`INFO_ILLEGAL_MATRIX`] in the
/// `info` result.
pub(super) fn poison(results: &mut [Literal], bad: &[bool], poisoned: &[usize], info: usize) {
    if !bad.contains(&true) {
        return;
    }
    for &index in poisoned.iter().chain([&info]) {
        let Some(result) = results.get_mut(index) else {
            continue;
        };
        let pattern: &[u8] = match result.element_type() {
            ElementType::F32 | ElementType::C64 => &f32::NAN.to_le_bytes(),
            ElementType::F64 | ElementType::C128 => &f64::NAN.to_le_bytes(),
            ElementType::S32 if index == info => &INFO_ILLEGAL_MATRIX.to_le_bytes(),
            _ => continue,
        };
        let slice = result.data.len() / bad.len().max(1);
        let data = result.data_mut();
        for (b, _) in bad.iter().enumerate().filter(|(_, &bad)| bad) {
            for chunk in data[b * slice..(b + 1) * slice].chunks_exact_mut(pattern.len()) {
                chunk.copy_from_slice(pattern);
            }
        }
    }
}
