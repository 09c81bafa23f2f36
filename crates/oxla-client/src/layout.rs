//! Host layouts: conversions between caller-described strided host memory and oxla's dense
//! row-major layout.
//!
//! Callers describe memory by a base offset into a byte slice plus per-dimension byte strides
//! (which may be negative). Every function here checks that each element it touches lies
//! inside the slice, so a wrong description gives an error, never an out-of-bounds access.

use crate::error::{ClientError, Result};

/// Byte strides of the dense row-major layout of `dims` with `elem_size`-byte elements.
pub fn dense_byte_strides(dims: &[i64], elem_size: usize) -> Vec<i64> {
    let mut strides = vec![0i64; dims.len()];
    let mut stride = elem_size as i64;
    for (dim_idx, &extent) in dims.iter().enumerate().rev() {
        strides[dim_idx] = stride;
        stride = stride.saturating_mul(extent.max(1));
    }
    strides
}

/// Byte strides of a dense layout whose dimension order is `minor_to_major`
/// (the first entry is the fastest-varying dimension).
pub fn minor_to_major_byte_strides(
    dims: &[i64],
    minor_to_major: &[i64],
    elem_size: usize,
) -> Result<Vec<i64>> {
    if minor_to_major.len() != dims.len() {
        return Err(ClientError::InvalidArgument(format!(
            "minor_to_major {minor_to_major:?} does not match rank {}",
            dims.len()
        )));
    }
    let mut seen = vec![false; dims.len()];
    let mut strides = vec![0i64; dims.len()];
    let mut stride = elem_size as i64;
    for &dim in minor_to_major {
        let dim_idx = usize::try_from(dim)
            .ok()
            .filter(|&d| d < dims.len() && !seen[d])
            .ok_or_else(|| {
                ClientError::InvalidArgument(format!(
                    "minor_to_major {minor_to_major:?} is not a permutation of 0..{}",
                    dims.len()
                ))
            })?;
        seen[dim_idx] = true;
        strides[dim_idx] = stride;
        stride = stride.saturating_mul(dims[dim_idx].max(1));
    }
    Ok(strides)
}

/// The byte range a strided array occupies: `(lowest offset relative to element zero, length)`.
/// Empty arrays occupy nothing.
pub fn strided_extent(
    dims: &[i64],
    byte_strides: &[i64],
    elem_size: usize,
) -> Result<(i64, usize)> {
    check_description(dims, byte_strides)?;
    if dims.contains(&0) {
        return Ok((0, 0));
    }
    let mut low: i128 = 0;
    let mut high: i128 = 0;
    for (&extent, &stride) in dims.iter().zip(byte_strides) {
        let span = i128::from(extent - 1) * i128::from(stride);
        if span < 0 {
            low += span;
        } else {
            high += span;
        }
    }
    let len = high - low + elem_size as i128;
    let low = i64::try_from(low).map_err(|_| too_large(dims))?;
    let len = usize::try_from(len).map_err(|_| too_large(dims))?;
    Ok((low, len))
}

fn too_large(dims: &[i64]) -> ClientError {
    ClientError::InvalidArgument(format!("array of shape {dims:?} is too large"))
}

fn check_description(dims: &[i64], byte_strides: &[i64]) -> Result<()> {
    if dims.len() != byte_strides.len() {
        return Err(ClientError::InvalidArgument(format!(
            "{} byte strides given for rank {}",
            byte_strides.len(),
            dims.len()
        )));
    }
    if let Some(bad) = dims.iter().find(|&&d| d < 0) {
        return Err(ClientError::InvalidArgument(format!(
            "negative dimension {bad} in {dims:?}"
        )));
    }
    Ok(())
}

/// Visits every element's byte offset (relative to element zero), in row-major order.
fn for_each_offset(dims: &[i64], byte_strides: &[i64], mut visit: impl FnMut(i64)) {
    if dims.contains(&0) {
        return;
    }
    let rank = dims.len();
    let mut index = vec![0i64; rank];
    let mut offset = 0i64;
    loop {
        visit(offset);
        let mut dim_idx = rank;
        loop {
            if dim_idx == 0 {
                return;
            }
            dim_idx -= 1;
            index[dim_idx] += 1;
            offset += byte_strides[dim_idx];
            if index[dim_idx] < dims[dim_idx] {
                break;
            }
            offset -= byte_strides[dim_idx] * dims[dim_idx];
            index[dim_idx] = 0;
        }
    }
}

fn element_range(
    base: usize,
    offset: i64,
    elem_size: usize,
    len: usize,
) -> Result<std::ops::Range<usize>> {
    let start = i128::try_from(base).unwrap_or(i128::MAX) + i128::from(offset);
    let end = start + elem_size as i128;
    if start < 0 || end > len as i128 {
        return Err(ClientError::InvalidArgument(format!(
            "strided element at offset {offset} from byte {base} lies outside the {len}-byte host buffer"
        )));
    }
    Ok(start as usize..end as usize)
}

/// Copies a strided array out of `src` into a dense row-major vector.
/// Element zero sits at `src[base..]`.
pub fn gather_strided(
    src: &[u8],
    base: usize,
    dims: &[i64],
    byte_strides: &[i64],
    elem_size: usize,
) -> Result<Vec<u8>> {
    check_description(dims, byte_strides)?;
    let num_elements = dims
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(d).ok()?))
        .ok_or_else(|| too_large(dims))?;
    let total = num_elements
        .checked_mul(elem_size)
        .ok_or_else(|| too_large(dims))?;
    if byte_strides == dense_byte_strides(dims, elem_size).as_slice() {
        let range = element_range(base, 0, total, src.len()).or_else(|e| {
            if total == 0 {
                Ok(0..0)
            } else {
                Err(e)
            }
        })?;
        return Ok(src[range].to_vec());
    }
    let mut out = Vec::with_capacity(total);
    let mut failure = None;
    for_each_offset(dims, byte_strides, |offset| {
        if failure.is_some() {
            return;
        }
        match element_range(base, offset, elem_size, src.len()) {
            Ok(range) => out.extend_from_slice(&src[range]),
            Err(e) => failure = Some(e),
        }
    });
    match failure {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Copies dense row-major `src` into a strided array in `dst` whose element zero sits at
/// `dst[base..]`.
pub fn scatter_strided(
    src: &[u8],
    dst: &mut [u8],
    base: usize,
    dims: &[i64],
    byte_strides: &[i64],
    elem_size: usize,
) -> Result<()> {
    check_description(dims, byte_strides)?;
    let (low, len) = strided_extent(dims, byte_strides, elem_size)?;
    if len > 0 {
        element_range(base, low, len, dst.len())?;
    }
    if byte_strides == dense_byte_strides(dims, elem_size).as_slice() {
        dst.get_mut(base..base + src.len())
            .ok_or_else(|| {
                ClientError::InvalidArgument("host buffer too small for the array".to_string())
            })?
            .copy_from_slice(src);
        return Ok(());
    }
    let mut chunks = src.chunks_exact(elem_size);
    let mut failure = None;
    for_each_offset(dims, byte_strides, |offset| {
        if failure.is_some() {
            return;
        }
        let Some(chunk) = chunks.next() else {
            failure = Some(ClientError::InvalidArgument(
                "source holds fewer elements than the shape".to_string(),
            ));
            return;
        };
        match element_range(base, offset, elem_size, dst.len()) {
            Ok(range) => dst[range].copy_from_slice(chunk),
            Err(e) => failure = Some(e),
        }
    });
    failure.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_and_permuted_strides() {
        assert_eq!(dense_byte_strides(&[2, 3, 4], 4), vec![48, 16, 4]);
        assert_eq!(dense_byte_strides(&[], 4), Vec::<i64>::new());
        assert_eq!(
            minor_to_major_byte_strides(&[2, 3], &[0, 1], 4).unwrap(),
            vec![4, 8]
        );
        assert!(minor_to_major_byte_strides(&[2, 3], &[0, 0], 4).is_err());
    }

    #[test]
    fn gather_transposed_and_negative_strides() {
        // A 2x3 u8 array stored column-major: element (i, j) at i + 2 * j.
        let src: Vec<u8> = vec![0, 10, 1, 11, 2, 12];
        let dense = gather_strided(&src, 0, &[2, 3], &[1, 2], 1).unwrap();
        assert_eq!(dense, vec![0, 1, 2, 10, 11, 12]);
        // Reversed vector: element zero is the last byte.
        let rev = gather_strided(&[1, 2, 3], 2, &[3], &[-1], 1).unwrap();
        assert_eq!(rev, vec![3, 2, 1]);
        assert_eq!(strided_extent(&[3], &[-1], 1).unwrap(), (-2, 3));
        // Out of bounds is an error.
        assert!(gather_strided(&[1, 2], 0, &[3], &[1], 1).is_err());
        assert!(gather_strided(&[1, 2], 0, &[2], &[1, 1], 1).is_err());
    }

    #[test]
    fn scatter_round_trips_gather() {
        let dense: Vec<u8> = (0..24).collect();
        let strides = minor_to_major_byte_strides(&[2, 3, 4], &[1, 0, 2], 1).unwrap();
        let mut host = vec![0u8; 24];
        scatter_strided(&dense, &mut host, 0, &[2, 3, 4], &strides, 1).unwrap();
        assert_ne!(host, dense);
        assert_eq!(
            gather_strided(&host, 0, &[2, 3, 4], &strides, 1).unwrap(),
            dense
        );
        let mut small = vec![0u8; 4];
        assert!(scatter_strided(&dense, &mut small, 0, &[2, 3, 4], &strides, 1).is_err());
    }

    #[test]
    fn empty_arrays() {
        assert_eq!(strided_extent(&[0, 5], &[20, 4], 4).unwrap(), (0, 0));
        assert!(gather_strided(&[], 0, &[0, 5], &[20, 4], 4)
            .unwrap()
            .is_empty());
    }
}
