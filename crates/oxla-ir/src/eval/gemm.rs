//! Dense f32/f64 matrix products on strided views, so that transposed or otherwise strided
//! operands need no copy: the `gemm` crate's AVX2/AVX-512 kernels (through `oxla-simd`'s
//! bounds-checked wrapper), threaded for large products.
//!
//! Like XLA CPU, products accumulate in the element type (f32 sums for f32), in the
//! kernel's blocked order rather than strictly left to right.

pub(crate) use oxla_simd::Strided;

/// `out = a * b` for an `m x k` matrix `a` and a `k x n` matrix `b`, with `out` an
/// `m x n` row-major slice. Returns `false` (leaving `out` unspecified) when a view does
/// not fit its slice, so the caller can fall back to its own loop. With `parallel` false
/// the product stays on the calling thread (its caller splits the work itself).
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul_into<T: oxla_simd::GemmScalar + bytemuck::Pod>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    sa: Strided,
    b: &[T],
    sb: Strided,
    out: &mut [T],
    parallel: bool,
) -> bool {
    product_into(m, k, n, a, sa, b, sb, out, parallel, false)
}

/// `out += a * b`, as [`matmul_into`] otherwise: a product added to a value whose buffer
/// it can write (`x + dot(a, b)`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul_add_into<T: oxla_simd::GemmScalar + bytemuck::Pod>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    sa: Strided,
    b: &[T],
    sb: Strided,
    out: &mut [T],
    parallel: bool,
) -> bool {
    product_into(m, k, n, a, sa, b, sb, out, parallel, true)
}

/// [`matmul_into`] (`accumulate` false) or [`matmul_add_into`].
#[allow(clippy::too_many_arguments)]
fn product_into<T: oxla_simd::GemmScalar + bytemuck::Pod>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    sa: Strided,
    b: &[T],
    sb: Strided,
    out: &mut [T],
    parallel: bool,
    accumulate: bool,
) -> bool {
    // `gemm` packs a right-hand side that is contiguous down its columns (the `b` of
    // `a . B^T`, where `B` is stored row-major) about three times slower than one contiguous
    // along its rows: a product large enough to notice reads a row-major copy instead.
    //
    // With few rows in `a` (an RNN's gradient through its recurrent weights: `dz . W^T`
    // for a batch of 32 and a weight of 256 x 1024; an MLP's `dz . W^T` for a batch of 128
    // and a weight of 512 x 512), copying `B` costs more than the product's own work over
    // it; the transposed product `out^T = B . a^T` reads `B` as it is stored and copies only
    // `a` and the result, which wins while those two copies are at most half of `B` (128 x
    // 512 x 512: 345-382 us with the copy of `B`, 242-289 us so; 256 x 1024 x 1024: 2.1-2.3
    // ms against 1.7-1.9 ms; at equal sizes, 256 x 512 x 512, the copy of `B` is faster).
    if sb.row == 1
        && sb.col > 1
        && sa.col == 1
        && k >= TRANSPOSED_MIN
        && n >= TRANSPOSED_MIN
        && (k * m + m * n) * 2 <= k * n
    {
        let done = transposed_product(m, k, n, a, sa, b, sb, out, parallel, accumulate);
        if let Some(done) = done {
            return done;
        }
    }
    if sb.row == 1
        && sb.col > 1
        && m >= TRANSPOSED_MIN
        && k >= TRANSPOSED_MIN
        && n >= TRANSPOSED_MIN
    {
        if let Some(bytes) = row_major_copy(k, n, b, sb, parallel) {
            let rows: &[T] = bytemuck::cast_slice(&bytes);
            let sb = Strided {
                offset: 0,
                row: n,
                col: 1,
            };
            let done = product_into(m, k, n, a, sa, rows, sb, out, parallel, accumulate);
            super::pool::give(bytes);
            return done;
        }
    }
    // `gemm` threads products above about 48 * 48 * 256 multiply-adds over the rayon pool
    // it is called from: run those from the evaluator's pool (whose threads flush denormals
    // like the calling thread), and smaller ones on this thread, so that no second pool
    // (rayon's global one) competes for the cores.
    let product = if accumulate {
        oxla_simd::matmul_add
    } else {
        oxla_simd::matmul
    };
    if parallel && m.saturating_mul(k).saturating_mul(n) >= THREADED_PRODUCT {
        super::threads::install(|| product(m, k, n, a, sa, b, sb, out, true))
    } else {
        product(m, k, n, a, sa, b, sb, out, false)
    }
}

/// `out = a * b` as `out^T = b^T * a^T` for a row-major `a` (`sa.col == 1`) and a `b`
/// contiguous down its columns (`sb.row == 1`), so that `b^T` is read row-major as it is
/// stored: `a^T` is copied row-major, and the `n x m` result transposed into `out` (added to
/// it when `accumulate`). `None` when a copy cannot be made (the caller then takes another
/// path).
#[allow(clippy::too_many_arguments)]
fn transposed_product<T: oxla_simd::GemmScalar + bytemuck::Pod>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    sa: Strided,
    b: &[T],
    sb: Strided,
    out: &mut [T],
    parallel: bool,
    accumulate: bool,
) -> Option<bool> {
    // `a^T` as a `k x m` view is contiguous down its columns: element (p, i) is at
    // `i * sa.row + p`.
    let a_view = Strided {
        offset: sa.offset,
        row: 1,
        col: sa.row,
    };
    let at = row_major_copy(k, m, a, a_view, parallel)?;
    let mut result = super::pool::take_for_overwrite(n * m * std::mem::size_of::<T>());
    let done = (|| {
        let at_rows: &[T] = bytemuck::try_cast_slice(&at).ok()?;
        let ct: &mut [T] = bytemuck::try_cast_slice_mut(&mut result).ok()?;
        let bt = Strided {
            offset: sb.offset,
            row: sb.col,
            col: 1,
        };
        let sat = Strided {
            offset: 0,
            row: m,
            col: 1,
        };
        if !matmul_into(n, k, m, b, bt, at_rows, sat, ct, parallel) {
            return Some(false);
        }
        // `out` (m x n) read from the `n x m` result: element (i, j) at `j * m + i`.
        if !accumulate {
            let dst = out.get_mut(..m * n)?;
            return Some(super::shape::transpose_copy(ct, m, dst, m, n, false));
        }
        let view = Strided {
            offset: 0,
            row: 1,
            col: m,
        };
        let rows = row_major_copy(m, n, ct, view, false)?;
        let copied = match (
            bytemuck::try_cast_slice::<u8, T>(&rows),
            out.get_mut(..m * n),
        ) {
            (Ok(r), Some(dst)) => {
                for (d, &r) in dst.iter_mut().zip(r) {
                    *d = *d + r;
                }
                true
            }
            _ => false,
        };
        super::pool::give(rows);
        Some(copied)
    })();
    super::pool::give(at);
    super::pool::give(result);
    done
}

/// Products whose right-hand side is contiguous down its columns are computed on a
/// row-major copy of it when every dimension is at least this long.
const TRANSPOSED_MIN: usize = 16;

/// The `k x n` view `b` (`sb.row == 1`: each column contiguous) as a row-major matrix
/// ([`super::shape::transpose_copy`]: 32-bit elements in vector-register blocks, split over
/// the threads when `parallel` and large; 64-bit ones in the `transpose` op's square
/// tiles). The copy's bytes come from (and go back to) the evaluator's buffer cache.
/// `None` when the view does not fit `b` or the buffer is not aligned for `T`.
fn row_major_copy<T: bytemuck::Pod>(
    k: usize,
    n: usize,
    b: &[T],
    sb: Strided,
    parallel: bool,
) -> Option<Vec<u8>> {
    let b = b.get(sb.offset..)?;
    let mut bytes = super::pool::take_for_overwrite(k * n * std::mem::size_of::<T>());
    let out: &mut [T] = bytemuck::try_cast_slice_mut(&mut bytes).ok()?;
    super::shape::transpose_copy(b, sb.col, out, k, n, parallel).then_some(bytes)
}

/// Multiply-adds from which a product may be threaded: `gemm`'s default threshold for
/// complex f64, its lowest.
pub(crate) const THREADED_PRODUCT: usize = 48 * 48 * 256 / 16;

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

    /// `a . B^T` with `B` stored row-major (a right-hand side contiguous down its columns,
    /// which takes the row-major copy) gives the bits of the same product on an explicitly
    /// transposed `B`, and the sums of the definition.
    fn check_transposed<T: oxla_simd::GemmScalar + bytemuck::Pod + Into<f64>>(
        from: impl Fn(f64) -> T,
    ) {
        for (m, k, n) in [
            (16, 16, 16),
            (20, 33, 17),
            (64, 40, 24),
            (3, 40, 40),
            (24, 300, 260),
        ] {
            let a: Vec<T> = (0..m * k)
                .map(|i| from(((i * 7) % 13) as f64 - 6.0))
                .collect();
            // B is n x k, row-major; the product reads it as the k x n matrix B^T.
            let big_b: Vec<T> = (0..n * k)
                .map(|i| from(((i * 5) % 11) as f64 * 0.5))
                .collect();
            let sa = Strided {
                offset: 0,
                row: k,
                col: 1,
            };
            let sb = Strided {
                offset: 0,
                row: 1,
                col: k,
            };
            let mut got = vec![T::ZERO; m * n];
            assert!(matmul_into(m, k, n, &a, sa, &big_b, sb, &mut got, true));
            let b_t: Vec<T> = (0..k * n).map(|i| big_b[(i % n) * k + i / n]).collect();
            let mut want = vec![T::ZERO; m * n];
            let st = Strided {
                offset: 0,
                row: n,
                col: 1,
            };
            assert!(matmul_into(m, k, n, &a, sa, &b_t, st, &mut want, true));
            assert!(got
                .iter()
                .zip(&want)
                .all(|(g, w)| bytemuck::bytes_of(g) == bytemuck::bytes_of(w)));
            for i in 0..m {
                for j in 0..n {
                    let exact: f64 = (0..k)
                        .map(|p| a[i * k + p].into() * big_b[j * k + p].into())
                        .sum();
                    let g: f64 = got[i * n + j].into();
                    assert!(
                        (g - exact).abs() <= 1e-3 * exact.abs().max(1.0),
                        "{m}x{k}x{n} at {i},{j}"
                    );
                }
            }
        }
    }

    /// A product with few rows and a right-hand side contiguous down its columns runs
    /// transposed (`out^T = B . a^T`): offsets and a row stride wider than the row, against
    /// the definition (small integers, so every sum is exact).
    #[test]
    fn short_products_with_a_column_contiguous_right_side_run_transposed() {
        for (m, k, n) in [(8, 200, 300), (1, 64, 64), (32, 1024, 256)] {
            let (row, a_off, b_off) = (k + 5, 3, 7);
            let a: Vec<f32> = (0..a_off + m * row)
                .map(|i| ((i * 7) % 13) as f32 - 6.0)
                .collect();
            let big_b: Vec<f32> = (0..b_off + n * k)
                .map(|i| ((i * 5) % 11) as f32 - 5.0)
                .collect();
            let sa = Strided {
                offset: a_off,
                row,
                col: 1,
            };
            let sb = Strided {
                offset: b_off,
                row: 1,
                col: k,
            };
            let mut got = vec![f32::NAN; m * n];
            assert!(matmul_into(m, k, n, &a, sa, &big_b, sb, &mut got, true));
            for i in 0..m {
                for j in 0..n {
                    let exact: f32 = (0..k)
                        .map(|p| a[a_off + i * row + p] * big_b[b_off + j * k + p])
                        .sum();
                    assert_eq!(got[i * n + j], exact, "{m}x{k}x{n} at {i},{j}");
                }
            }
        }
    }

    #[test]
    fn products_with_a_column_contiguous_right_side() {
        check_transposed::<f32>(|v| v as f32);
        check_transposed::<f64>(|v| v);
    }
}
