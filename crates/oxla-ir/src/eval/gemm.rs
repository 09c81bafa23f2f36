//! Dense f32/f64 matrix products on strided views, so that transposed or otherwise strided
//! operands need no copy: the `gemm` crate's AVX2/AVX-512 kernels (through `oxla-simd`'s
//! bounds-checked wrapper), threaded for large products.
//!
//! Like XLA CPU, products accumulate in the element type (f32 sums for f32), in the
//! kernel's blocked order rather than strictly left to right.

pub(crate) use oxla_simd::Strided;

/// `out = a * b` for an `m x k` matrix `a` and a `k x n` matrix `b`, with `out` an
/// `m x n` row-major slice. Returns `false` (leaving `out` unspecified) when a view does
/// not fit its slice, so the caller can fall back to its own loop.
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul_into<T: oxla_simd::GemmScalar>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    sa: Strided,
    b: &[T],
    sb: Strided,
    out: &mut [T],
) -> bool {
    // `gemm` threads products above about 48 * 48 * 256 multiply-adds over the rayon pool
    // it is called from: run those from the evaluator's pool (whose threads flush denormals
    // like the calling thread), and smaller ones on this thread, so that no second pool
    // (rayon's global one) competes for the cores.
    if m.saturating_mul(k).saturating_mul(n) >= THREADED_PRODUCT {
        super::threads::install(|| oxla_simd::matmul(m, k, n, a, sa, b, sb, out, true))
    } else {
        oxla_simd::matmul(m, k, n, a, sa, b, sb, out, false)
    }
}

/// Multiply-adds from which a product may be threaded: `gemm`'s default threshold for
/// complex f64, its lowest.
const THREADED_PRODUCT: usize = 48 * 48 * 256 / 16;

/// The stride of a group of dimensions visited in the order `dims` inside a row-major
/// array of extents `ext` and strides `strides`, when the group can be walked as one
/// dimension with a single stride; `Some(0)` for an empty group (or one of size 1).
pub(crate) fn group_stride(dims: &[usize], ext: &[usize], strides: &[usize]) -> Option<usize> {
    let live: Vec<usize> = dims.iter().copied().filter(|&d| ext[d] != 1).collect();
    for pair in live.windows(2) {
        if strides[pair[0]] != strides[pair[1]] * ext[pair[1]] {
            return None;
        }
    }
    Some(live.last().map_or(0, |&d| strides[d]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_strides() {
        let ext = [2, 3, 4];
        let st = [12, 4, 1];
        assert_eq!(group_stride(&[1, 2], &ext, &st), Some(1));
        assert_eq!(group_stride(&[0, 1], &ext, &st), Some(4));
        assert_eq!(group_stride(&[2, 1], &ext, &st), None);
        assert_eq!(group_stride(&[], &ext, &st), Some(0));
    }
}
