//! Dense f32/f64 matrix products on the `gemm` crate's kernels (AVX2/AVX-512 micro-kernels
//! picked at run time, large products threaded), behind a safe API over strided slices.

/// A strided matrix inside a slice: element `(i, j)` is at `offset + i * row + j * col`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strided {
    pub offset: usize,
    pub row: usize,
    pub col: usize,
}

/// The element types [`matmul`] handles.
pub trait GemmScalar: Copy + Send + Sync + std::ops::Add<Output = Self> + 'static {
    const ZERO: Self;
    const ONE: Self;
}

impl GemmScalar for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
}

impl GemmScalar for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
}

/// Whether the `rows x cols` matrix `s` lies inside a slice of `len` elements, with strides
/// that fit `isize`.
fn fits(len: usize, s: Strided, rows: usize, cols: usize) -> bool {
    let last = (rows - 1)
        .checked_mul(s.row)
        .and_then(|r| (cols - 1).checked_mul(s.col).and_then(|c| r.checked_add(c)))
        .and_then(|rc| rc.checked_add(s.offset));
    let strides_fit = isize::try_from(s.row).is_ok() && isize::try_from(s.col).is_ok();
    strides_fit && last.is_some_and(|last| last < len)
}

/// `out = a * b` for an `m x k` matrix `a` and a `k x n` matrix `b`, with `out` an `m x n`
/// row-major slice. Returns `false` (leaving `out` untouched) when `out` has the wrong
/// length or a view does not fit its slice.
///
/// Sums run in the kernel's blocked order, in the element type, as XLA's do. With
/// `threaded`, large products split over the threads of the rayon pool this is called from;
/// without, the product runs on the calling thread and never touches a rayon pool.
#[allow(clippy::too_many_arguments)]
pub fn matmul<T: GemmScalar>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    sa: Strided,
    b: &[T],
    sb: Strided,
    out: &mut [T],
    threaded: bool,
) -> bool {
    product(m, k, n, a, sa, b, sb, out, threaded, false)
}

/// `out += a * b`, as [`matmul`] otherwise (`out` keeps its values when a view does not
/// fit): for sums split into several products along `k`.
#[allow(clippy::too_many_arguments)]
pub fn matmul_add<T: GemmScalar>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    sa: Strided,
    b: &[T],
    sb: Strided,
    out: &mut [T],
    threaded: bool,
) -> bool {
    product(m, k, n, a, sa, b, sb, out, threaded, true)
}

/// [`matmul`] (`accumulate` false) or [`matmul_add`].
#[allow(clippy::too_many_arguments)]
fn product<T: GemmScalar>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    sa: Strided,
    b: &[T],
    sb: Strided,
    out: &mut [T],
    threaded: bool,
    accumulate: bool,
) -> bool {
    if m.checked_mul(n) != Some(out.len()) {
        return false;
    }
    if m == 0 || n == 0 {
        return true;
    }
    if k == 0 {
        if !accumulate {
            out.fill(T::ZERO);
        }
        return true;
    }
    if !fits(a.len(), sa, m, k) || !fits(b.len(), sb, k, n) || isize::try_from(n).is_err() {
        return false;
    }
    // SAFETY: `fits` checked that every element the kernel reads, `a[sa.offset + i * sa.row +
    // p * sa.col]` for i < m, p < k and likewise for `b`, lies inside its slice, and that the
    // strides fit `isize`; `out` is exactly m x n row-major (row stride n, column stride 1),
    // and being a `&mut` it cannot overlap `a` or `b`. With `read_dst == false` the kernel
    // only writes `out`; with `true` it also reads it (initialized, being a `&mut [T]`).
    // `T` is f32 or f64, the types `gemm` dispatches on.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out.as_mut_ptr(),
            1,
            n as isize,
            accumulate,
            a.as_ptr().add(sa.offset),
            sa.col as isize,
            sa.row as isize,
            b.as_ptr().add(sb.offset),
            sb.col as isize,
            sb.row as isize,
            if accumulate { T::ONE } else { T::ZERO },
            T::ONE,
            false,
            false,
            false,
            if threaded {
                gemm::Parallelism::Rayon(0)
            } else {
                gemm::Parallelism::None
            },
        );
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, in f64.
    fn reference(
        m: usize,
        k: usize,
        n: usize,
        a: &[f32],
        sa: Strided,
        b: &[f32],
        sb: Strided,
    ) -> Vec<f64> {
        let mut out = vec![0.0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                for p in 0..k {
                    let x = f64::from(a[sa.offset + i * sa.row + p * sa.col]);
                    let y = f64::from(b[sb.offset + p * sb.row + j * sb.col]);
                    out[i * n + j] += x * y;
                }
            }
        }
        out
    }

    #[test]
    fn products_of_strided_views_match_the_definition() {
        for &(m, k, n) in &[
            (1, 1, 1),
            (3, 5, 2),
            (17, 33, 9),
            (64, 128, 65),
            (130, 7, 200),
        ] {
            // a stored transposed (column-major) with an offset; b row-major.
            let a: Vec<f32> = (0..3 + m * k)
                .map(|i| ((i * 7) % 13) as f32 - 6.0)
                .collect();
            let b: Vec<f32> = (0..k * n).map(|i| ((i * 5) % 11) as f32 * 0.5).collect();
            let sa = Strided {
                offset: 3,
                row: 1,
                col: m,
            };
            let sb = Strided {
                offset: 0,
                row: n,
                col: 1,
            };
            let mut out = vec![f32::NAN; m * n];
            assert!(matmul(m, k, n, &a, sa, &b, sb, &mut out, true));
            let want = reference(m, k, n, &a, sa, &b, sb);
            for (got, want) in out.iter().zip(&want) {
                // Small integers and halves: every partial sum is exact in f32.
                assert_eq!(f64::from(*got), *want, "{m}x{k}x{n}");
            }
        }
    }

    #[test]
    fn views_past_the_end_and_wrong_outputs_are_refused() {
        let a = [1.0f64; 3];
        let mut out = [0.0f64; 4];
        let s = Strided {
            offset: 0,
            row: 2,
            col: 1,
        };
        assert!(!matmul(2, 2, 2, &a, s, &a, s, &mut out, true));
        let a = [1.0f64; 4];
        let mut short = [0.0f64; 3];
        assert!(!matmul(2, 2, 2, &a, s, &a, s, &mut short, true));
        let huge = Strided {
            offset: usize::MAX,
            row: 1,
            col: 1,
        };
        assert!(!matmul(2, 2, 2, &a, huge, &a, s, &mut out, true));
    }

    #[test]
    fn accumulated_products_add_to_what_the_output_held() {
        // Two halves of a product along `k`, the second added to the first, and an empty
        // contraction that leaves the output as it was.
        let (m, k, n) = (19, 40, 23);
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 3) % 17) as f32 - 8.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 7) % 9) as f32 * 0.25).collect();
        let whole = |offset| Strided {
            offset,
            row: k,
            col: 1,
        };
        let rows = |offset| Strided {
            offset,
            row: n,
            col: 1,
        };
        let half = k / 2;
        let mut out = vec![f32::NAN; m * n];
        assert!(matmul(
            m,
            half,
            n,
            &a,
            whole(0),
            &b,
            rows(0),
            &mut out,
            false
        ));
        for threaded in [false, true] {
            let mut sum = out.clone();
            assert!(matmul_add(
                m,
                k - half,
                n,
                &a,
                whole(half),
                &b,
                rows(half * n),
                &mut sum,
                threaded
            ));
            let want = reference(m, k, n, &a, whole(0), &b, rows(0));
            for (got, want) in sum.iter().zip(&want) {
                assert_eq!(f64::from(*got), *want, "threaded {threaded}");
            }
            let before = sum.clone();
            assert!(matmul_add(
                m,
                0,
                n,
                &a,
                whole(0),
                &b,
                rows(0),
                &mut sum,
                threaded
            ));
            assert_eq!(sum, before);
        }
    }

    #[test]
    fn empty_contraction_gives_zeros() {
        let mut out = [7.0f32; 6];
        let s = Strided {
            offset: 0,
            row: 0,
            col: 0,
        };
        assert!(matmul(2, 0, 3, &[], s, &[], s, &mut out, false));
        assert_eq!(out, [0.0; 6]);
    }
}
