//! Transposing copies of 32-bit matrices: 8 x 8 blocks transposed in AVX registers.
//!
//! Copying a matrix into its transpose element by element reads (or writes) one cache line
//! per element, and with a power-of-two row length those lines fall into a few cache sets
//! that keep evicting each other. Here eight rows are read as eight contiguous 32-byte runs,
//! transposed in registers with unpacks and lane shuffles, and written as eight contiguous
//! runs; two blocks side by side go down the source together (whole 64-byte lines read)
//! unless only the output's stride is a multiple of 1 KiB. Only bits move, so any 32-bit
//! element type can go through it.

/// `dst[p * dst_stride + j] = src[j * src_stride + p]` for `p < rows` and `j < cols`: the
/// `cols x rows` matrix at the start of `src` (row stride `src_stride`) transposed into the
/// `rows x cols` matrix at the start of `dst` (row stride `dst_stride`). Returns `false`,
/// writing nothing, when a stride is shorter than its row or a slice is too short.
pub fn transpose32(
    src: &[u32],
    src_stride: usize,
    dst: &mut [u32],
    dst_stride: usize,
    rows: usize,
    cols: usize,
) -> bool {
    if rows == 0 || cols == 0 {
        return true;
    }
    let need = |stride: usize, lines: usize, len: usize| {
        (lines - 1)
            .checked_mul(stride)
            .and_then(|x| x.checked_add(len))
    };
    let fits = src_stride >= rows
        && dst_stride >= cols
        && need(src_stride, cols, rows).is_some_and(|n| n <= src.len())
        && need(dst_stride, rows, cols).is_some_and(|n| n <= dst.len());
    if !fits {
        return false;
    }
    let (rb, cb) = (rows - rows % 8, cols - cols % 8);
    #[cfg(target_arch = "x86_64")]
    if super::level() != super::Level::Baseline && rb > 0 && cb > 0 {
        // SAFETY: `level()` reported AVX2 on this CPU; the blocks read rows `j < cb <= cols`
        // of `src` at columns `p < rb <= rows` and write rows `p < rb` of `dst` at columns
        // `j < cb`, all inside the slices checked above.
        unsafe { x86::blocks(src, src_stride, dst, dst_stride, rb, cb) };
    } else {
        scalar(src, src_stride, dst, dst_stride, (0..rb, 0..cb));
    }
    #[cfg(not(target_arch = "x86_64"))]
    scalar(src, src_stride, dst, dst_stride, (0..rb, 0..cb));
    // The edges past the whole blocks.
    scalar(src, src_stride, dst, dst_stride, (rb..rows, 0..cols));
    scalar(src, src_stride, dst, dst_stride, (0..rb, cb..cols));
    true
}

/// The definition, over output rows `ps` and columns `js`.
fn scalar(
    src: &[u32],
    src_stride: usize,
    dst: &mut [u32],
    dst_stride: usize,
    (ps, js): (std::ops::Range<usize>, std::ops::Range<usize>),
) {
    for p in ps {
        for j in js.clone() {
            dst[p * dst_stride + j] = src[j * src_stride + p];
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// The 8 x 8 blocks of [`super::transpose32`] over output rows `0..rb` and columns
    /// `0..cb` (multiples of 8).
    ///
    /// # Safety
    /// The CPU has AVX2; `src` holds rows `j < cb` of `src_stride` elements up to column
    /// `rb`, and `dst` rows `p < rb` of `dst_stride` elements up to column `cb`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn blocks(
        src: &[u32],
        src_stride: usize,
        dst: &mut [u32],
        dst_stride: usize,
        rb: usize,
        cb: usize,
    ) {
        let s = src.as_ptr().cast::<f32>();
        let d = dst.as_mut_ptr().cast::<f32>();
        // Two blocks side by side per step down the source read each source row 64 bytes (a
        // whole cache line) at a time, so no line has to survive until the next stripe: with
        // a source stride that is a multiple of 1 KiB, a column of lines falls into a few
        // cache sets and their second halves were gone by then (512 x 512: 71 -> 53 us).
        // Sixteen output rows written at once conflict the same way when only the output's
        // stride is such a multiple (784 x 512: 64 -> 97 us): those keep one block per step.
        let conflicts = |stride: usize| stride.is_multiple_of(256);
        let step = if conflicts(dst_stride) && !conflicts(src_stride) {
            8
        } else {
            16
        };
        let mut p0 = 0;
        while p0 + step <= rb {
            for j0 in (0..cb).step_by(8) {
                // SAFETY: output rows `p0..p0 + step` lie below `rb`, columns `j0..j0 + 8`
                // below `cb` (the caller's contract for the blocks).
                unsafe {
                    block(s, src_stride, d, dst_stride, p0, j0);
                    if step == 16 {
                        block(s, src_stride, d, dst_stride, p0 + 8, j0);
                    }
                }
            }
            p0 += step;
        }
        if p0 < rb {
            for j0 in (0..cb).step_by(8) {
                // SAFETY: as above, for output rows `p0..p0 + 8 <= rb`.
                unsafe { block(s, src_stride, d, dst_stride, p0, j0) };
            }
        }
    }

    /// One 8 x 8 block: source rows `j0..j0 + 8` at columns `p0..p0 + 8` into output rows
    /// `p0..p0 + 8` at columns `j0..j0 + 8`, read and written as eight 32-byte runs.
    ///
    /// # Safety
    /// The CPU has AVX2, and both ranges lie inside the matrices behind `s` and `d`.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn block(
        s: *const f32,
        src_stride: usize,
        d: *mut f32,
        dst_stride: usize,
        p0: usize,
        j0: usize,
    ) {
        // SAFETY: the caller's contract; the loads and stores are unaligned.
        unsafe {
            let r: [__m256; 8] =
                std::array::from_fn(|i| _mm256_loadu_ps(s.add((j0 + i) * src_stride + p0)));
            let t0 = _mm256_unpacklo_ps(r[0], r[1]);
            let t1 = _mm256_unpackhi_ps(r[0], r[1]);
            let t2 = _mm256_unpacklo_ps(r[2], r[3]);
            let t3 = _mm256_unpackhi_ps(r[2], r[3]);
            let t4 = _mm256_unpacklo_ps(r[4], r[5]);
            let t5 = _mm256_unpackhi_ps(r[4], r[5]);
            let t6 = _mm256_unpacklo_ps(r[6], r[7]);
            let t7 = _mm256_unpackhi_ps(r[6], r[7]);
            let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
            let u1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
            let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
            let u3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
            let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
            let u5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
            let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
            let u7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
            let out = [
                _mm256_permute2f128_ps::<0x20>(u0, u4),
                _mm256_permute2f128_ps::<0x20>(u1, u5),
                _mm256_permute2f128_ps::<0x20>(u2, u6),
                _mm256_permute2f128_ps::<0x20>(u3, u7),
                _mm256_permute2f128_ps::<0x31>(u0, u4),
                _mm256_permute2f128_ps::<0x31>(u1, u5),
                _mm256_permute2f128_ps::<0x31>(u2, u6),
                _mm256_permute2f128_ps::<0x31>(u3, u7),
            ];
            for (q, v) in out.into_iter().enumerate() {
                _mm256_storeu_ps(d.add((p0 + q) * dst_stride + j0), v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transposes_every_shape_and_stride() {
        let shapes = [
            (1, 1),
            (3, 5),
            (8, 8),
            (9, 16),
            (16, 9),
            (24, 40),
            (40, 24),
            (67, 33),
        ];
        for (rows, cols) in shapes {
            // Tight, padded, and strides that are multiples of 1 KiB on either side or both
            // (which choose between one and two blocks per step).
            let strides = [
                (rows, cols),
                (rows + 1, cols + 2),
                (rows + 7, cols + 14),
                (256, cols + 1),
                (rows + 1, 256),
                (256, 512),
            ];
            for (ss, ds) in strides {
                let src: Vec<u32> = (0..cols * ss)
                    .map(|i| (i as u32).wrapping_mul(2654435761))
                    .collect();
                let mut dst = vec![0xdead_beef_u32; rows * ds];
                assert!(transpose32(&src, ss, &mut dst, ds, rows, cols));
                for p in 0..rows {
                    for j in 0..ds {
                        let want = if j < cols {
                            src[j * ss + p]
                        } else {
                            0xdead_beef
                        };
                        assert_eq!(
                            dst[p * ds + j],
                            want,
                            "{rows}x{cols} strides {ss},{ds} at {p},{j}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn short_slices_and_strides_are_refused() {
        let src = vec![0u32; 8 * 8];
        let mut dst = vec![0u32; 8 * 8];
        assert!(!transpose32(&src[..63], 8, &mut dst, 8, 8, 8));
        assert!(!transpose32(&src, 8, &mut dst[..63], 8, 8, 8));
        assert!(!transpose32(&src, 7, &mut dst, 8, 8, 8));
        assert!(!transpose32(&src, 8, &mut dst, 7, 8, 8));
        assert!(transpose32(&src, 8, &mut dst, 8, 8, 8));
    }
}
