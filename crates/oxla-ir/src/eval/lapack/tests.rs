//! The LAPACK targets against their definitions, and the fast paths against the general
//! path.

use super::super::testing::*;
use super::*;
use crate::Type;

/// Deterministic pseudo-random values in [-1, 1).
fn noise(len: usize, seed: u64) -> Vec<f64> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

fn c128s(shape: &[i64], v: &[C]) -> Literal {
    encode(
        &Array::C128(v.to_vec()),
        TensorType::new(shape.to_vec(), ElementType::C128),
    )
    .unwrap()
}

fn to_c(lit: &Literal) -> Vec<C> {
    match convert_array(&decode(lit), ElementType::C128) {
        Array::C128(v) => v,
        _ => unreachable!(),
    }
}

fn config(entries: &[(&str, char)]) -> Attribute {
    Attribute::Dictionary(
        entries
            .iter()
            .map(|&(k, c)| {
                (
                    k.to_string(),
                    Attribute::Integer {
                        value: i128::from(c as u32),
                        ty: Some(ElementType::U8),
                    },
                )
            })
            .collect(),
    )
}

/// Runs one custom call with `args` and results of `results`.
fn call(
    target: &str,
    args: &[Literal],
    results: &[Type],
    cfg: &[(&str, char)],
) -> Result<Vec<Literal>, IrError> {
    let attrs = vec![("mhlo.backend_config", config(cfg))];
    run_custom_call(target, attrs, args, results)
}

/// Row-major product of `a` (m x k) and `b` (k x n).
fn matmul(a: &[C], b: &[C], m: usize, k: usize, n: usize) -> Vec<C> {
    let mut out = vec![ZERO; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
        }
    }
    out
}

fn adjoint(a: &[C], m: usize, n: usize) -> Vec<C> {
    (0..n * m).map(|q| a[(q % m) * n + q / m].conj()).collect()
}

fn assert_close(x: &[C], y: &[C], tol: f64) {
    assert_eq!(x.len(), y.len());
    for (i, (a, b)) in x.iter().zip(y).enumerate() {
        assert!((a - b).norm() <= tol, "element {i}: {a} vs {b}");
    }
}

fn identity(n: usize) -> Vec<C> {
    (0..n * n)
        .map(|q| if q / n == q % n { ONE } else { ZERO })
        .collect()
}

fn random(m: usize, n: usize, complex: bool, seed: u64) -> Vec<C> {
    let re = noise(m * n, seed);
    let im = noise(m * n, seed + 1000);
    (0..m * n)
        .map(|i| C::new(re[i], if complex { im[i] } else { 0.0 }))
        .collect()
}

/// A Hermitian positive definite matrix `b b^H + n I`.
fn spd(n: usize, complex: bool, seed: u64) -> Vec<C> {
    let b = random(n, n, complex, seed);
    let mut a = matmul(&b, &adjoint(&b, n, n), n, n, n);
    for d in 0..n {
        a[d * n + d] += n as f64;
    }
    a
}

#[test]
fn targets_parse() {
    assert_eq!(
        parse_target("lapack_zheevd_ffi"),
        Some((ElementType::C128, Routine::Syevd))
    );
    assert_eq!(
        parse_target("lapack_sorgqr_ffi"),
        Some((ElementType::F32, Routine::Orgqr))
    );
    assert_eq!(parse_target("lapack_zorgqr_ffi"), None);
    assert_eq!(
        parse_target("lapack_ztrsm_ffi"),
        Some((ElementType::C128, Routine::Trsm))
    );
    assert_eq!(parse_target("lapack_sgbsv_ffi"), None);
    assert_eq!(parse_target("Qr"), None);
    assert_eq!(
        opaque_int("{mode = 86 : ui8, uplo = 76 : ui8}", "uplo"),
        Some(76)
    );
    assert_eq!(opaque_int("{mode = 86 : ui8}", "uplo"), None);
}

#[test]
fn potrf_reconstructs_and_keeps_the_other_triangle() {
    for (complex, lower) in [(false, true), (false, false), (true, true), (true, false)] {
        let n = 5;
        let a = spd(n, complex, 7);
        let r = call(
            "lapack_zpotrf_ffi",
            &[c128s(&[1, 5, 5], &a)],
            &[t(&[1, 5, 5], ElementType::C128), t(&[1], ElementType::S32)],
            &[("uplo", if lower { 'L' } else { 'U' })],
        )
        .unwrap();
        assert_eq!(to_i32(&r[1]), vec![0]);
        let out = to_c(&r[0]);
        let mut f = out.clone();
        for i in 0..n {
            for j in 0..n {
                let outside = if lower { j > i } else { j < i };
                if outside {
                    assert_eq!(out[i * n + j], a[i * n + j]);
                    f[i * n + j] = ZERO;
                }
            }
        }
        let prod = if lower {
            matmul(&f, &adjoint(&f, n, n), n, n, n)
        } else {
            matmul(&adjoint(&f, n, n), &f, n, n, n)
        };
        assert_close(&prod, &a, 1e-12);
    }
}

#[test]
fn potrf_reports_the_failing_minor() {
    let a = f64s(&[2, 2, 2], &[4.0, 2.0, 2.0, 5.0, 1.0, 2.0, 2.0, 1.0]);
    let r = call(
        "lapack_dpotrf_ffi",
        &[a],
        &[t(&[2, 2, 2], ElementType::F64), t(&[2], ElementType::S32)],
        &[("uplo", 'L')],
    )
    .unwrap();
    assert_eq!(to_i32(&r[1]), vec![0, 2]);
    assert_eq!(&to_f64(&r[0])[..4], &[2.0, 2.0, 1.0, 2.0]);
}

#[test]
fn getrf_gives_p_l_u() {
    for (m, n, complex) in [(4, 4, false), (5, 3, true), (3, 5, false)] {
        let a = random(m, n, complex, 11);
        let k = m.min(n);
        let r = call(
            "lapack_zgetrf_ffi",
            &[c128s(&[m as i64, n as i64], &a)],
            &[
                t(&[m as i64, n as i64], ElementType::C128),
                t(&[k as i64], ElementType::S32),
                t(&[], ElementType::S32),
            ],
            &[],
        )
        .unwrap();
        assert_eq!(to_i32(&r[2]), vec![0]);
        let lu = to_c(&r[0]);
        let piv = to_i32(&r[1]);
        let mut l = vec![ZERO; m * k];
        let mut u = vec![ZERO; k * n];
        for i in 0..m {
            for j in 0..n {
                let x = lu[i * n + j];
                if j < i && j < k {
                    l[i * k + j] = x;
                } else if i < k && j >= i {
                    u[i * n + j] = x;
                }
                if i == j {
                    l[i * k + j] = ONE;
                }
            }
        }
        // Apply the row interchanges to a: P a = L U.
        let mut pa = a.clone();
        for (j, &p) in piv.iter().enumerate() {
            let p = (p - 1) as usize;
            assert!(p >= j && p < m);
            for c in 0..n {
                pa.swap(j * n + c, p * n + c);
            }
        }
        assert_close(&matmul(&l, &u, m, k, n), &pa, 1e-12);
        // Partial pivoting by |re| + |im| bounds the multipliers by 1 (real) or sqrt 2.
        let bound = if complex { 2f64.sqrt() } else { 1.0 };
        assert!(l.iter().all(|&x| x.norm() <= bound + 1e-15));
    }
}

#[test]
fn getrf_flags_a_singular_matrix() {
    let a = f32s(&[2, 2], &[0.0, 1.0, 0.0, 2.0]);
    let r = call(
        "lapack_sgetrf_ffi",
        &[a],
        &[
            t(&[2, 2], ElementType::F32),
            t(&[2], ElementType::S32),
            t(&[], ElementType::S32),
        ],
        &[],
    )
    .unwrap();
    assert_eq!(to_i32(&r[2]), vec![1]);
    assert_eq!(to_i32(&r[1]), vec![1, 2]);
}

#[test]
fn geqrf_and_orgqr_give_q_r() {
    for (m, n, complex) in [(4, 4, false), (6, 3, true), (3, 5, true), (5, 2, false)] {
        let a = random(m, n, complex, 23);
        let k = m.min(n);
        let shape = [2, m as i64, n as i64];
        let mut batch = a.clone();
        batch.extend(a.iter().map(|x| x * 2.0));
        let r = call(
            "lapack_zgeqrf_ffi",
            &[c128s(&shape, &batch)],
            &[
                t(&shape, ElementType::C128),
                t(&[2, k as i64], ElementType::C128),
            ],
            &[],
        )
        .unwrap();
        let packed = to_c(&r[0]);
        let taus = to_c(&r[1]);
        // orgqr needs m >= n: expand the first k columns of the reflectors into Q.
        let mut first = vec![ZERO; 2 * m * k];
        for b in 0..2 {
            for i in 0..m {
                for j in 0..k {
                    first[(b * m + i) * k + j] = packed[(b * m + i) * n + j];
                }
            }
        }
        let q = call(
            "lapack_zungqr_ffi",
            &[c128s(&[2, m as i64, k as i64], &first), r[1].clone()],
            &[t(&[2, m as i64, k as i64], ElementType::C128)],
            &[],
        )
        .unwrap();
        let q = to_c(&q[0]);
        for b in 0..2 {
            let qb = &q[b * m * k..(b + 1) * m * k];
            let mut rb = vec![ZERO; k * n];
            for i in 0..k {
                for j in i..n {
                    rb[i * n + j] = packed[b * m * n + i * n + j];
                }
            }
            let scale = (b + 1) as f64;
            let want: Vec<C> = a.iter().map(|x| x * scale).collect();
            assert_close(&matmul(qb, &rb, m, k, n), &want, 1e-12);
            assert_close(
                &matmul(&adjoint(qb, m, k), qb, k, m, k),
                &identity(k),
                1e-12,
            );
            // LAPACK's convention: tau is 0 or has 1 <= Re(tau) <= 2.
            for tau in &taus[b * k..(b + 1) * k] {
                assert!(*tau == ZERO || (1.0..=2.0).contains(&tau.re), "{tau}");
                if !complex {
                    assert_eq!(tau.im, 0.0);
                }
            }
        }
    }
}

#[test]
fn syevd_gives_ascending_eigenpairs() {
    for (target, complex, lower) in [
        ("lapack_dsyevd_ffi", false, true),
        ("lapack_zheevd_ffi", true, false),
    ] {
        let n = 6;
        let b = random(n, n, complex, 31);
        let a: Vec<C> = (0..n * n)
            .map(|q| b[q] + b[(q % n) * n + q / n].conj())
            .collect();
        let et = if complex {
            ElementType::C128
        } else {
            ElementType::F64
        };
        let input = encode(
            &convert_array(&Array::C128(a.clone()), et),
            TensorType::new(vec![n as i64, n as i64], et),
        )
        .unwrap();
        let r = call(
            target,
            &[input],
            &[
                t(&[6, 6], et),
                t(&[6], ElementType::F64),
                t(&[], ElementType::S32),
            ],
            &[("mode", 'V'), ("uplo", if lower { 'L' } else { 'U' })],
        )
        .unwrap();
        let v = to_c(&r[0]);
        let w = to_f64(&r[1]);
        assert_eq!(to_i32(&r[2]), vec![0]);
        assert!(w.windows(2).all(|p| p[0] <= p[1]), "{w:?}");
        let av = matmul(&a, &v, n, n, n);
        let vw: Vec<C> = (0..n * n).map(|q| v[q] * w[q % n]).collect();
        assert_close(&av, &vw, 1e-12);
        assert_close(
            &matmul(&adjoint(&v, n, n), &v, n, n, n),
            &identity(n),
            1e-12,
        );
    }
}

#[test]
fn gesdd_reconstructs_in_every_mode() {
    for (m, n, complex) in [(5, 3, false), (3, 5, true), (4, 4, true)] {
        let a = random(m, n, complex, 41);
        let k = m.min(n);
        let (mi, ni, ki) = (m as i64, n as i64, k as i64);
        let run = |mode: char, uc: i64, vr: i64| {
            call(
                "lapack_zgesdd_ffi",
                &[c128s(&[mi, ni], &a)],
                &[
                    t(&[mi, ni], ElementType::C128),
                    t(&[ki], ElementType::F64),
                    t(&[mi, uc], ElementType::C128),
                    t(&[vr, ni], ElementType::C128),
                    t(&[], ElementType::S32),
                ],
                &[("mode", mode)],
            )
            .unwrap()
        };
        let full = run('A', mi, ni);
        let s = to_f64(&full[1]);
        assert!(s.windows(2).all(|p| p[0] >= p[1]) && s[k - 1] > 0.0);
        let u = to_c(&full[2]);
        let vt = to_c(&full[3]);
        assert_close(
            &matmul(&adjoint(&u, m, m), &u, m, m, m),
            &identity(m),
            1e-12,
        );
        assert_close(
            &matmul(&vt, &adjoint(&vt, n, n), n, n, n),
            &identity(n),
            1e-12,
        );
        let mut sigma = vec![ZERO; m * n];
        for d in 0..k {
            sigma[d * n + d] = C::new(s[d], 0.0);
        }
        let usv = matmul(&matmul(&u, &sigma, m, m, n), &vt, m, n, n);
        assert_close(&usv, &a, 1e-12);
        let thin = run('S', ki, ki);
        let (u, vt) = (to_c(&thin[2]), to_c(&thin[3]));
        let us: Vec<C> = (0..m * k).map(|q| u[q] * s[q % k]).collect();
        assert_close(&matmul(&us, &vt, m, k, n), &a, 1e-12);
        let none = run('N', mi, ni);
        assert_eq!(to_f64(&none[1]), s);
    }
}

#[test]
fn svd_of_a_rank_deficient_matrix_has_orthonormal_u() {
    // Rank one: every row is a multiple of [1, 2, 2].
    let a = f64s(&[3, 3], &[1.0, 2.0, 2.0, 2.0, 4.0, 4.0, -1.0, -2.0, -2.0]);
    let r = call(
        "lapack_dgesdd_ffi",
        &[a],
        &[
            t(&[3, 3], ElementType::F64),
            t(&[3], ElementType::F64),
            t(&[3, 3], ElementType::F64),
            t(&[3, 3], ElementType::F64),
            t(&[], ElementType::S32),
        ],
        &[("mode", 'A')],
    )
    .unwrap();
    let s = to_f64(&r[1]);
    assert!((s[0] - 54f64.sqrt()).abs() < 1e-12 && s[1] < 1e-12 && s[2] < 1e-12);
    let u = to_c(&r[2]);
    assert_close(
        &matmul(&adjoint(&u, 3, 3), &u, 3, 3, 3),
        &identity(3),
        1e-12,
    );
}

#[test]
fn gehrd_gives_a_unitary_similarity_to_hessenberg_form() {
    for (n, complex) in [(5, false), (4, true), (1, false)] {
        let a = random(n, n, complex, 51);
        let ni = n as i64;
        let r = call(
            "lapack_zgehrd_ffi",
            &[c128s(&[1, ni, ni], &a)],
            &[
                t(&[1, ni, ni], ElementType::C128),
                t(&[1, ni - 1], ElementType::C128),
                t(&[1], ElementType::S32),
            ],
            &[],
        )
        .unwrap();
        let packed = to_c(&r[0]);
        let taus = to_c(&r[1]);
        // Q = H_1 ... H_{n-1}, built by applying each reflector to the identity.
        let mut q = identity(n);
        for (j, &tau) in taus.iter().enumerate().rev() {
            let mut v = vec![ZERO; n];
            v[j + 1] = ONE;
            for i in j + 2..n {
                v[i] = packed[i * n + j];
            }
            let vvh: Vec<C> = (0..n * n)
                .map(|k| tau * v[k / n] * v[k % n].conj())
                .collect();
            let h: Vec<C> = identity(n).iter().zip(&vvh).map(|(i, x)| i - x).collect();
            q = matmul(&h, &q, n, n, n);
        }
        let mut hess = packed.clone();
        for j in 0..n {
            for i in j + 2..n {
                hess[i * n + j] = ZERO;
            }
        }
        let qhqh = matmul(&matmul(&q, &hess, n, n, n), &adjoint(&q, n, n), n, n, n);
        assert_close(&qhqh, &a, 1e-12);
        assert_close(
            &matmul(&adjoint(&q, n, n), &q, n, n, n),
            &identity(n),
            1e-12,
        );
    }
}

fn geev_run(target: &str, a: Literal, n: i64, real: bool) -> Vec<Literal> {
    let (et, ct) = match a.ty.element_type {
        ElementType::F64 => (ElementType::F64, ElementType::C128),
        ElementType::F32 => (ElementType::F32, ElementType::C64),
        other => (other, other),
    };
    let mut results = vec![t(&[n], et)];
    if real {
        results.push(t(&[n], et));
    }
    results.extend([t(&[n, n], ct), t(&[n, n], ct), t(&[], ElementType::S32)]);
    call(
        target,
        &[a],
        &results,
        &[("compute_left", 'V'), ("compute_right", 'V')],
    )
    .unwrap()
}

#[test]
fn geev_gives_left_and_right_eigenvectors() {
    for (n, complex) in [(6, false), (5, true), (1, true)] {
        let a = random(n, n, complex, 61);
        let ni = n as i64;
        let (r, w) = if complex {
            let r = geev_run("lapack_zgeev_ffi", c128s(&[ni, ni], &a), ni, false);
            let w = to_c(&r[0]);
            (r[1..].to_vec(), w)
        } else {
            let re: Vec<f64> = a.iter().map(|x| x.re).collect();
            let r = geev_run("lapack_dgeev_ffi", f64s(&[ni, ni], &re), ni, true);
            let (wr, wi) = (to_f64(&r[0]), to_f64(&r[1]));
            let w: Vec<C> = wr.iter().zip(&wi).map(|(&x, &y)| C::new(x, y)).collect();
            // Complex eigenvalues of a real matrix come in conjugate pairs.
            let mut im: Vec<f64> = wi.clone();
            im.sort_by(f64::total_cmp);
            let mut neg: Vec<f64> = wi.iter().map(|x| -x).collect();
            neg.sort_by(f64::total_cmp);
            assert_close(
                &im.iter().map(|&x| C::new(x, 0.0)).collect::<Vec<_>>(),
                &neg.iter().map(|&x| C::new(x, 0.0)).collect::<Vec<_>>(),
                1e-12,
            );
            (r[2..].to_vec(), w)
        };
        let (vl, vr) = (to_c(&r[0]), to_c(&r[1]));
        assert_eq!(to_i32(&r[2]), vec![0]);
        let av = matmul(&a, &vr, n, n, n);
        let vw: Vec<C> = (0..n * n).map(|q| vr[q] * w[q % n]).collect();
        assert_close(&av, &vw, 1e-10);
        // vl^H a = diag(w) vl^H.
        let vla = matmul(&adjoint(&vl, n, n), &a, n, n, n);
        let wvl: Vec<C> = (0..n * n)
            .map(|q| adjoint(&vl, n, n)[q] * w[q / n])
            .collect();
        assert_close(&vla, &wvl, 1e-10);
        for v in [&vl, &vr] {
            for col in 0..n {
                let norm: f64 = (0..n).map(|r| v[r * n + col].norm_sqr()).sum();
                assert!((norm - 1.0).abs() < 1e-12);
            }
        }
    }
}

/// `geev` of every element type through the `faer` paths: batches, sizes past 75 rows
/// (multishift QR), the definition `A v = w v`, `u^H A = w u^H` for every pair, unit
/// norms, largest components real, and real matrices' conjugate pairs.
#[test]
fn geev_of_every_type_satisfies_the_definition() {
    for (target, et, ct) in [
        ("lapack_dgeev_ffi", ElementType::F64, ElementType::C128),
        ("lapack_sgeev_ffi", ElementType::F32, ElementType::C64),
        ("lapack_zgeev_ffi", ElementType::C128, ElementType::C128),
        ("lapack_cgeev_ffi", ElementType::C64, ElementType::C64),
    ] {
        let real = !et.is_complex();
        let eps = if matches!(et, ElementType::F64 | ElementType::C128) {
            f64::EPSILON
        } else {
            f64::from(f32::EPSILON)
        };
        for (n, batch) in [(1usize, 1usize), (4, 3), (30, 1), (90, 2)] {
            let values = random(batch * n, n, !real, 7 + n as u64);
            let (b, ni) = (batch as i64, n as i64);
            let mut results = vec![t(&[b, ni], et)];
            if real {
                results.push(t(&[b, ni], et));
            }
            results.extend([
                t(&[b, ni, ni], ct),
                t(&[b, ni, ni], ct),
                t(&[b], ElementType::S32),
            ]);
            let r = call(
                target,
                &[real_input(&[b, ni, ni], &values, et)],
                &results,
                &[("compute_left", 'V'), ("compute_right", 'V')],
            )
            .unwrap();
            let w: Vec<C> = if real {
                let (wr, wi) = (to_c(&r[0]), to_c(&r[1]));
                wr.iter()
                    .zip(&wi)
                    .map(|(x, y)| C::new(x.re, y.re))
                    .collect()
            } else {
                to_c(&r[0])
            };
            let k = r.len();
            let (vls, vrs) = (to_c(&r[k - 3]), to_c(&r[k - 2]));
            assert_eq!(to_i32(&r[k - 1]), vec![0; batch]);
            for m in 0..batch {
                // The matrix as the routine saw it (rounded to `et`).
                let a = to_c(&real_input(
                    &[ni, ni],
                    &values[m * n * n..(m + 1) * n * n],
                    et,
                ));
                let w = &w[m * n..(m + 1) * n];
                let (vl, vr) = (
                    &vls[m * n * n..(m + 1) * n * n],
                    &vrs[m * n * n..(m + 1) * n * n],
                );
                let norm = a.iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt();
                let tol = 20.0 * n as f64 * eps * norm.max(1.0);
                assert_close(
                    &matmul(&a, vr, n, n, n),
                    &(0..n * n).map(|q| vr[q] * w[q % n]).collect::<Vec<_>>(),
                    tol,
                );
                let vlh = adjoint(vl, n, n);
                let wvl: Vec<C> = (0..n * n).map(|q| vlh[q] * w[q / n]).collect();
                assert_close(&matmul(&vlh, &a, n, n, n), &wvl, tol);
                for v in [vl, vr] {
                    for col in 0..n {
                        let column: Vec<C> = (0..n).map(|i| v[i * n + col]).collect();
                        let norm2: f64 = column.iter().map(|z| z.norm_sqr()).sum();
                        assert!(
                            (norm2 - 1.0).abs() < 100.0 * eps,
                            "{target} n={n}: norm {norm2}"
                        );
                        let big =
                            column
                                .iter()
                                .fold(ZERO, |b, z| if z.norm() > b.norm() { *z } else { b });
                        assert!(
                            big.im.abs() <= 10.0 * eps * big.norm(),
                            "{target}: largest {big}"
                        );
                    }
                }
                if real {
                    let mut im: Vec<f64> = w.iter().map(|z| z.im).collect();
                    let mut neg: Vec<f64> = im.iter().map(|x| -x).collect();
                    im.sort_by(f64::total_cmp);
                    neg.sort_by(f64::total_cmp);
                    assert_eq!(im, neg, "{target}: eigenvalues not in conjugate pairs");
                }
            }
        }
    }
}

#[test]
fn geev_of_real_matrices_keeps_real_eigenvalues_real() {
    // A rotation by 90 degrees: eigenvalues +-i.
    let r = geev_run(
        "lapack_dgeev_ffi",
        f64s(&[2, 2], &[0.0, -1.0, 1.0, 0.0]),
        2,
        true,
    );
    let mut wi = to_f64(&r[1]);
    wi.sort_by(f64::total_cmp);
    assert_close(
        &[C::new(wi[0], 0.0), C::new(wi[1], 0.0)],
        &[C::new(-1.0, 0.0), C::new(1.0, 0.0)],
        1e-14,
    );
    assert!(to_f64(&r[0]).iter().all(|x| x.abs() < 1e-14));
    // An upper triangular matrix: eigenvalues 1, 2, 3 exactly real.
    let a = f32s(&[3, 3], &[1.0, 5.0, -2.0, 0.0, 2.0, 7.0, 0.0, 0.0, 3.0]);
    let r = geev_run("lapack_sgeev_ffi", a, 3, true);
    let mut wr = to_f32(&r[0]);
    wr.sort_by(f32::total_cmp);
    assert_eq!(wr, vec![1.0, 2.0, 3.0]);
    assert_eq!(to_f32(&r[1]), vec![0.0; 3]);
    let vr = to_c(&r[3]);
    assert!(vr.iter().all(|z| z.im == 0.0));
}

#[test]
fn gees_gives_the_complex_schur_form() {
    let n = 5;
    let a = random(n, n, true, 71);
    let r = call(
        "lapack_zgees_ffi",
        &[c128s(&[1, 5, 5], &a)],
        &[
            t(&[1, 5, 5], ElementType::C128),
            t(&[1, 5, 5], ElementType::C128),
            t(&[1, 5], ElementType::C128),
            t(&[1], ElementType::S32),
            t(&[1], ElementType::S32),
        ],
        &[("mode", 'V'), ("sort", 'N')],
    )
    .unwrap();
    let (tm, z, w) = (to_c(&r[0]), to_c(&r[1]), to_c(&r[2]));
    assert_eq!(to_i32(&r[4]), vec![0]);
    for i in 0..n {
        assert_eq!(w[i], tm[i * n + i]);
        for j in 0..i {
            assert_eq!(tm[i * n + j], ZERO);
        }
    }
    let ztz = matmul(&matmul(&z, &tm, n, n, n), &adjoint(&z, n, n), n, n, n);
    assert_close(&ztz, &a, 1e-12);
    assert_close(
        &matmul(&adjoint(&z, n, n), &z, n, n, n),
        &identity(n),
        1e-12,
    );
}

/// `Q = H_1 ... H_r` from reflectors stored below row `offset + j` of column `j`.
fn reflectors_to_q(packed: &[C], taus: &[C], n: usize, offset: usize) -> Vec<C> {
    let mut q = identity(n);
    for (j, &tau) in taus.iter().enumerate().rev() {
        let mut v = vec![ZERO; n];
        v[j + offset] = ONE;
        for i in j + offset + 1..n {
            v[i] = packed[i * n + j];
        }
        let h: Vec<C> = (0..n * n)
            .map(|k| identity(n)[k] - tau * v[k / n] * v[k % n].conj())
            .collect();
        q = matmul(&h, &q, n, n, n);
    }
    q
}

#[test]
fn geqp3_pivots_by_column_norm() {
    for (m, n, complex, fixed) in [
        (4, 4, false, vec![0, 0, 0, 0]),
        (5, 3, true, vec![0, 0, 0]),
        (4, 4, false, vec![0, 0, 1, 0]),
    ] {
        let a = random(m, n, complex, 81);
        let (mi, ni) = (m as i64, n as i64);
        let r = call(
            "lapack_zgeqp3_ffi",
            &[c128s(&[mi, ni], &a), i32s(&[ni], &fixed)],
            &[
                t(&[mi, ni], ElementType::C128),
                t(&[ni], ElementType::S32),
                t(&[n.min(m) as i64], ElementType::C128),
            ],
            &[],
        )
        .unwrap();
        let (packed, jpvt, taus) = (to_c(&r[0]), to_i32(&r[1]), to_c(&r[2]));
        let mut sorted = jpvt.clone();
        sorted.sort();
        assert_eq!(sorted, (1..=n as i32).collect::<Vec<_>>());
        if fixed[2] != 0 {
            assert_eq!(jpvt[0], 3);
        }
        // Square-pad the reflectors to build the full Q (m x m).
        let mut padded = vec![ZERO; m * m];
        for i in 0..m {
            for j in 0..n.min(m) {
                padded[i * m + j] = packed[i * n + j];
            }
        }
        let q = reflectors_to_q(&padded, &taus, m, 0);
        let mut rm = vec![ZERO; m * n];
        for i in 0..m {
            for j in i..n {
                rm[i * n + j] = packed[i * n + j];
            }
        }
        let permuted: Vec<C> = (0..m * n)
            .map(|q| a[(q / n) * n + (jpvt[q % n] - 1) as usize])
            .collect();
        assert_close(&matmul(&q, &rm, m, m, n), &permuted, 1e-12);
        // Without fixed columns, |R| decreases along the diagonal.
        if fixed.iter().all(|&f| f == 0) {
            let diag: Vec<f64> = (0..n.min(m)).map(|i| rm[i * n + i].norm()).collect();
            assert!(diag.windows(2).all(|p| p[0] >= p[1] - 1e-12), "{diag:?}");
        }
    }
}

#[test]
fn sytrd_gives_a_tridiagonal_similarity() {
    for complex in [false, true] {
        let n = 5;
        let b = random(n, n, complex, 91);
        let a: Vec<C> = (0..n * n)
            .map(|q| b[q] + b[(q % n) * n + q / n].conj())
            .collect();
        let r = call(
            "lapack_zhetrd_ffi",
            &[c128s(&[5, 5], &a)],
            &[
                t(&[5, 5], ElementType::C128),
                t(&[5], ElementType::F64),
                t(&[4], ElementType::F64),
                t(&[4], ElementType::C128),
                t(&[], ElementType::S32),
            ],
            &[("uplo", 'L')],
        )
        .unwrap();
        let (packed, d, e, taus) = (to_c(&r[0]), to_f64(&r[1]), to_f64(&r[2]), to_c(&r[3]));
        for i in 0..n {
            for j in i + 1..n {
                assert_eq!(packed[i * n + j], a[i * n + j]);
            }
        }
        let q = reflectors_to_q(&packed, &taus, n, 1);
        let mut tri = vec![ZERO; n * n];
        for i in 0..n {
            tri[i * n + i] = C::new(d[i], 0.0);
            if i + 1 < n {
                tri[(i + 1) * n + i] = C::new(e[i], 0.0);
                tri[i * n + i + 1] = C::new(e[i], 0.0);
            }
        }
        let qtq = matmul(&matmul(&q, &tri, n, n, n), &adjoint(&q, n, n), n, n, n);
        assert_close(&qtq, &a, 1e-12);
    }
}

#[test]
fn gees_gives_the_real_schur_form() {
    let mut pairs = 0;
    for (n, seed) in [(6, 101), (7, 102), (3, 103), (1, 104)] {
        let a: Vec<f64> = noise(n * n, seed);
        let ni = n as i64;
        let r = call(
            "lapack_dgees_ffi",
            &[f64s(&[ni, ni], &a)],
            &[
                t(&[ni, ni], ElementType::F64),
                t(&[ni, ni], ElementType::F64),
                t(&[ni], ElementType::F64),
                t(&[ni], ElementType::F64),
                t(&[], ElementType::S32),
                t(&[], ElementType::S32),
            ],
            &[("mode", 'V'), ("sort", 'N')],
        )
        .unwrap();
        assert_eq!(to_i32(&r[5]), vec![0]);
        let (tm, z, wr, wi) = (to_f64(&r[0]), to_f64(&r[1]), to_f64(&r[2]), to_f64(&r[3]));
        for i in 0..n {
            for j in 0..i.saturating_sub(1) {
                assert_eq!(tm[i * n + j], 0.0);
            }
        }
        let mut i = 0;
        while i < n {
            if i + 1 < n && tm[(i + 1) * n + i] != 0.0 {
                // A standardized 2x2 block holding a conjugate pair.
                assert_eq!(tm[i * n + i], tm[(i + 1) * n + i + 1]);
                assert!(tm[i * n + i + 1] * tm[(i + 1) * n + i] < 0.0);
                assert!(i + 2 >= n || tm[(i + 2) * n + i + 1] == 0.0);
                assert!(wi[i] > 0.0 && wi[i + 1] == -wi[i] && wr[i] == wr[i + 1]);
                pairs += 1;
                i += 2;
            } else {
                assert_eq!((wr[i], wi[i]), (tm[i * n + i], 0.0));
                i += 1;
            }
        }
        let lift = |v: &[f64]| v.iter().map(|&x| C::new(x, 0.0)).collect::<Vec<_>>();
        let (tc, zc) = (lift(&tm), lift(&z));
        let ztz = matmul(&matmul(&zc, &tc, n, n, n), &adjoint(&zc, n, n), n, n, n);
        assert_close(&ztz, &lift(&a), 1e-12);
        assert_close(
            &matmul(&adjoint(&zc, n, n), &zc, n, n, n),
            &identity(n),
            1e-12,
        );
    }
    assert!(pairs > 0, "the cases should include complex pairs");
}

#[test]
fn bad_calls_are_errors() {
    let a = f32s(&[2, 3], &[0.0; 6]);
    // Not square.
    let err = call(
        "lapack_spotrf_ffi",
        std::slice::from_ref(&a),
        &[t(&[2, 3], ElementType::F32), t(&[], ElementType::S32)],
        &[],
    );
    assert!(err.is_err());
    // Wrong element type for the target.
    let err = call(
        "lapack_dgetrf_ffi",
        std::slice::from_ref(&a),
        &[
            t(&[2, 3], ElementType::F64),
            t(&[2], ElementType::S32),
            t(&[], ElementType::S32),
        ],
        &[],
    );
    assert!(err.is_err());
    // Wrong result shape.
    let err = call(
        "lapack_sgetrf_ffi",
        std::slice::from_ref(&a),
        &[
            t(&[2, 3], ElementType::F32),
            t(&[3], ElementType::S32),
            t(&[], ElementType::S32),
        ],
        &[],
    );
    assert!(err.is_err());
    // A bad mode character.
    let err = call(
        "lapack_sgesdd_ffi",
        std::slice::from_ref(&a),
        &[
            t(&[2, 3], ElementType::F32),
            t(&[2], ElementType::F32),
            t(&[2, 2], ElementType::F32),
            t(&[3, 3], ElementType::F32),
            t(&[], ElementType::S32),
        ],
        &[("mode", 'X')],
    );
    assert!(err.is_err());
    // An unknown target.
    let err = call(
        "lapack_sgbsv_ffi",
        &[a],
        &[t(&[2, 3], ElementType::F32)],
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("lapack_sgbsv_ffi"), "{err}");
}

#[test]
fn trsm_solves_every_side_triangle_transpose_and_diagonal() {
    let n = 3;
    let a: Vec<f64> = vec![2.0, -1.0, 0.5, 3.0, 4.0, 1.5, -2.0, 0.25, 5.0];
    let rhs: Vec<f64> = vec![1.0, -2.0, 0.5, 3.0, 4.0, -1.0];
    for side in ['L', 'R'] {
        for uplo in ['L', 'U'] {
            for trans in ['N', 'T', 'C'] {
                for diag in ['N', 'U'] {
                    let b_shape: &[i64] = if side == 'L' { &[3, 2] } else { &[2, 3] };
                    let x = call(
                        "lapack_dtrsm_ffi",
                        &[f64s(&[3, 3], &a), f64s(b_shape, &rhs)],
                        &[t(b_shape, ElementType::F64)],
                        &[
                            ("side", side),
                            ("uplo", uplo),
                            ("trans_x", trans),
                            ("diag", diag),
                        ],
                    )
                    .unwrap();
                    let x: Vec<C> = to_f64(&x[0]).iter().map(|&v| C::new(v, 0.0)).collect();
                    // op(a): the triangle, ones on the diagonal for 'U', transposed.
                    let mut m = vec![ZERO; n * n];
                    for i in 0..n {
                        for j in 0..n {
                            let inside = if uplo == 'L' { j <= i } else { j >= i };
                            let v = match (i == j, inside) {
                                (true, _) if diag == 'U' => 1.0,
                                (_, true) => a[i * n + j],
                                _ => 0.0,
                            };
                            let (r, c) = if trans == 'N' { (i, j) } else { (j, i) };
                            m[r * n + c] = C::new(v, 0.0);
                        }
                    }
                    let product = if side == 'L' {
                        matmul(&m, &x, n, n, 2)
                    } else {
                        matmul(&x, &m, 2, n, n)
                    };
                    let want: Vec<C> = rhs.iter().map(|&v| C::new(v, 0.0)).collect();
                    assert_close(&product, &want, 1e-12);
                }
            }
        }
    }
    // b must fit a's side.
    assert!(call(
        "lapack_dtrsm_ffi",
        &[f64s(&[3, 3], &a), f64s(&[2, 3], &rhs)],
        &[t(&[2, 3], ElementType::F64)],
        &[("side", 'L')],
    )
    .is_err());
}

/// `values` (real parts only) as a literal of the real type `et` or as complex<f64>.
fn real_input(shape: &[i64], values: &[C], et: ElementType) -> Literal {
    encode(
        &convert_array(&Array::C128(values.to_vec()), et),
        TensorType::new(shape.to_vec(), et),
    )
    .unwrap()
}

#[test]
fn real_fast_paths_agree_with_the_general_path() {
    // The same real matrices through the `d`/`s` targets (faer's kernels, in their
    // own precision) and the `z` targets (the general complex<f64> path); sizes past
    // faer's block sizes, rectangular shapes, batches.
    let reals = |lit: &Literal| -> Vec<f64> { to_c(lit).iter().map(|z| z.re).collect() };
    #[derive(Clone, Copy)]
    enum Kind {
        Matrix,
        Real,
        Int,
    }
    for (et, letter, tol) in [(ElementType::F64, 'd', 1e-9), (ElementType::F32, 's', 2e-3)] {
        for &(batch, m, n) in &[
            (1, 1, 1),
            (2, 5, 5),
            (1, 70, 70),
            (1, 9, 4),
            (2, 4, 9),
            (1, 130, 64),
        ] {
            let shape = [batch as i64, m as i64, n as i64];
            let k = m.min(n);
            let a: Vec<C> = (0..batch)
                .flat_map(|b| random(m, n, false, 50 + b as u64))
                .collect();
            let run_on = |input: &[C],
                          name: &str,
                          results: &[(Vec<i64>, Kind)],
                          cfg: &[(&str, char)],
                          z: bool| {
                let (target, in_et) = if z {
                    (format!("lapack_z{name}_ffi"), ElementType::C128)
                } else {
                    (format!("lapack_{letter}{name}_ffi"), et)
                };
                let types: Vec<Type> = results
                    .iter()
                    .map(|(s, e)| {
                        t(
                            s,
                            match e {
                                Kind::Matrix => in_et,
                                Kind::Real => real_of(in_et),
                                Kind::Int => ElementType::S32,
                            },
                        )
                    })
                    .collect();
                call(&target, &[real_input(&shape, input, in_et)], &types, cfg).unwrap()
            };
            // LU: the same pivots, the same factors.
            let lu_types = [
                (shape.to_vec(), Kind::Matrix),
                (vec![batch as i64, k as i64], Kind::Int),
                (vec![batch as i64], Kind::Int),
            ];
            let (fast, general) = (
                run_on(&a, "getrf", &lu_types, &[], false),
                run_on(&a, "getrf", &lu_types, &[], true),
            );
            assert_eq!(
                to_i32(&fast[1]),
                to_i32(&general[1]),
                "{letter} getrf {m}x{n} pivots"
            );
            assert_eq!(to_i32(&fast[2]), vec![0; batch]);
            assert_close(&to_c(&fast[0]), &to_c(&general[0]), tol * m as f64);
            // QR: the same reflectors and scalars (the matrix as it is, and with a zero
            // column, whose reflector is the identity: scalar 0); then orgqr of them.
            let qr_types = [
                (shape.to_vec(), Kind::Matrix),
                (vec![batch as i64, k as i64], Kind::Matrix),
            ];
            let mut zero_col = a.clone();
            for r in 0..batch * m {
                zero_col[r * n] = ZERO;
            }
            for input in [&a, &zero_col] {
                let fast = run_on(input, "geqrf", &qr_types, &[], false);
                let general = run_on(input, "geqrf", &qr_types, &[], true);
                assert_close(&to_c(&fast[0]), &to_c(&general[0]), tol * m as f64);
                assert_close(&to_c(&fast[1]), &to_c(&general[1]), tol * m as f64);
                if m < n {
                    continue;
                }
                let packed = reals(&general[0]);
                let packed: Vec<C> = packed.iter().map(|&x| C::new(x, 0.0)).collect();
                let taus: Vec<C> = reals(&general[1]).iter().map(|&x| C::new(x, 0.0)).collect();
                let tau_shape = [batch as i64, k as i64];
                let q = |target: String, in_et: ElementType| {
                    let operands = [
                        real_input(&shape, &packed, in_et),
                        real_input(&tau_shape, &taus, in_et),
                    ];
                    call(&target, &operands, &[t(&shape, in_et)], &[]).unwrap()
                };
                let fast_q = q(format!("lapack_{letter}orgqr_ffi"), et);
                let general_q = q("lapack_zungqr_ffi".to_string(), ElementType::C128);
                assert_close(&to_c(&fast_q[0]), &to_c(&general_q[0]), tol * m as f64);
            }
            // orgqr of any scalars, as `householder_product` takes them: the last row's
            // reflector (nothing below the diagonal) scales by `1 - tau` too.
            if m >= n {
                let taus = random(batch, k, false, 90);
                let tau_shape = [batch as i64, k as i64];
                let q = |target: String, in_et: ElementType| {
                    let operands = [
                        real_input(&shape, &a, in_et),
                        real_input(&tau_shape, &taus, in_et),
                    ];
                    call(&target, &operands, &[t(&shape, in_et)], &[]).unwrap()
                };
                let fast_q = q(format!("lapack_{letter}orgqr_ffi"), et);
                let general_q = q("lapack_zungqr_ffi".to_string(), ElementType::C128);
                // Reflectors with arbitrary scalars are not orthogonal: the product
                // grows, and is compared relative to its size.
                let want = to_c(&general_q[0]);
                let scale = want.iter().map(|z| z.norm()).fold(1.0, f64::max);
                assert_close(&to_c(&fast_q[0]), &want, tol * m as f64 * scale);
            }
            // SVD: the same singular values; U S V^T gives a back.
            let sv_types = |uc: usize, vr: usize| {
                [
                    (shape.to_vec(), Kind::Matrix),
                    (vec![batch as i64, k as i64], Kind::Real),
                    (vec![batch as i64, m as i64, uc as i64], Kind::Matrix),
                    (vec![batch as i64, vr as i64, n as i64], Kind::Matrix),
                    (vec![batch as i64], Kind::Int),
                ]
            };
            for (mode, uc, vr) in [('A', m, n), ('S', k, k), ('N', m, n)] {
                let fast = run_on(&a, "gesdd", &sv_types(uc, vr), &[("mode", mode)], false);
                let general = run_on(&a, "gesdd", &sv_types(uc, vr), &[("mode", mode)], true);
                let s = reals(&fast[1]);
                let want = reals(&general[1]);
                for (x, y) in s.iter().zip(&want) {
                    assert!(
                        (x - y).abs() <= tol * m as f64,
                        "{letter} gesdd {mode}: {x} vs {y}"
                    );
                }
                if mode == 'N' {
                    continue;
                }
                let (u, vt) = (to_c(&fast[2]), to_c(&fast[3]));
                for b in 0..batch {
                    let us: Vec<C> = (0..m * k)
                        .map(|q| u[b * m * uc + (q / k) * uc + q % k] * s[b * k + q % k])
                        .collect();
                    let vtk = &vt[b * vr * n..(b * vr + k) * n];
                    assert_close(
                        &matmul(&us, vtk, m, k, n),
                        &a[b * m * n..(b + 1) * m * n],
                        tol * m as f64,
                    );
                }
            }
            if m != n {
                continue;
            }
            // Symmetric and positive definite matrices from a.
            let sym: Vec<C> = (0..batch)
                .flat_map(|b| {
                    let x = &a[b * n * n..(b + 1) * n * n];
                    let mut p = matmul(x, &adjoint(x, n, n), n, n, n);
                    for d in 0..n {
                        p[d * n + d] += n as f64;
                    }
                    p
                })
                .collect();
            let scale = tol * (n * n) as f64;
            for uplo in ['L', 'U'] {
                let types = [
                    (shape.to_vec(), Kind::Matrix),
                    (vec![batch as i64], Kind::Int),
                ];
                // The triangle potrf does not read holds other values (of another positive
                // definite matrix, so that reading them would not fail but differ).
                let one_sided: Vec<C> = sym
                    .iter()
                    .enumerate()
                    .map(|(q, &x)| {
                        let (i, j) = ((q % (n * n)) / n, q % n);
                        let unread = if uplo == 'L' { j > i } else { j < i };
                        if unread {
                            x * 0.5
                        } else {
                            x
                        }
                    })
                    .collect();
                let fast = run_on(&one_sided, "potrf", &types, &[("uplo", uplo)], false);
                let general = run_on(&one_sided, "potrf", &types, &[("uplo", uplo)], true);
                assert_eq!(to_i32(&fast[1]), vec![0; batch]);
                assert_close(&to_c(&fast[0]), &to_c(&general[0]), scale);
                let types = [
                    (shape.to_vec(), Kind::Matrix),
                    (vec![batch as i64, n as i64], Kind::Real),
                    (vec![batch as i64], Kind::Int),
                ];
                let fast = run_on(
                    &one_sided,
                    "syevd",
                    &types,
                    &[("uplo", uplo), ("mode", 'V')],
                    false,
                );
                let general = run_on(
                    &one_sided,
                    "heevd",
                    &types,
                    &[("uplo", uplo), ("mode", 'V')],
                    true,
                );
                let (w, want) = (reals(&fast[1]), reals(&general[1]));
                for (x, y) in w.iter().zip(&want) {
                    assert!((x - y).abs() <= scale, "{letter} syevd: {x} vs {y}");
                }
                let v = to_c(&fast[0]);
                for b in 0..batch {
                    let vb = &v[b * n * n..(b + 1) * n * n];
                    let av = matmul(&sym[b * n * n..(b + 1) * n * n], vb, n, n, n);
                    let vw: Vec<C> = (0..n * n).map(|q| vb[q] * w[b * n + q % n]).collect();
                    assert_close(&av, &vw, scale);
                }
            }
            // Triangular solves against the general path's, the other triangle holding
            // values the solve must not read.
            let rhs: Vec<C> = (0..batch)
                .flat_map(|b| random(n, 3, false, 90 + b as u64))
                .collect();
            let tri: Vec<C> = a
                .iter()
                .enumerate()
                .map(|(q, &x)| {
                    if (q % (n * n)) / n == q % n {
                        x + 4.0
                    } else {
                        x
                    }
                })
                .collect();
            for side in ['L', 'R'] {
                for uplo in ['L', 'U'] {
                    for trans in ['N', 'T'] {
                        for diag in ['N', 'U'] {
                            let b_shape = if side == 'L' {
                                [batch as i64, n as i64, 3]
                            } else {
                                [batch as i64, 3, n as i64]
                            };
                            let cfg = [
                                ("side", side),
                                ("uplo", uplo),
                                ("trans_x", trans),
                                ("diag", diag),
                            ];
                            let solve = |z: bool| {
                                let (target, in_et) = if z {
                                    ("lapack_ztrsm_ffi".to_string(), ElementType::C128)
                                } else {
                                    (format!("lapack_{letter}trsm_ffi"), et)
                                };
                                to_c(
                                    &call(
                                        &target,
                                        &[
                                            real_input(&shape, &tri, in_et),
                                            real_input(&b_shape, &rhs, in_et),
                                        ],
                                        &[t(&b_shape, in_et)],
                                        &cfg,
                                    )
                                    .unwrap()[0],
                                )
                            };
                            assert_close(&solve(false), &solve(true), tol * n as f64);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn the_shift_is_the_eigenvalue_nearer_the_corner_and_breaks_ties_as_lapack() {
    let r = |x: f64| C::new(x, 0.0);
    // A standardized real block [[1, b], [c, 1]] with b c = -4: eigenvalues 1 +- 2i,
    // equally near; LAPACK's rounding of u^2 takes 1 - 2i whichever sign b has.
    for (b, c) in [(2.0, -2.0), (-8.0, 0.5)] {
        let mu = wilkinson_shift(r(1.0), r(b), r(c), r(1.0));
        assert!((mu - C::new(1.0, -2.0)).norm() < 1e-12, "{b} {c}: {mu}");
    }
    // Eigenvalues (1 +- sqrt 33) / 2 of [[2, 2], [3, -1]]: the one nearer -1.
    let mu = wilkinson_shift(r(2.0), r(2.0), r(3.0), r(-1.0));
    assert!((mu - r((1.0 - 33f64.sqrt()) / 2.0)).norm() < 1e-12, "{mu}");
    // A zero off-diagonal product leaves the corner itself.
    assert_eq!(wilkinson_shift(r(5.0), r(0.0), r(3.0), r(-1.0)), r(-1.0));
}

/// The input kinds that take each path of `gees`: plain, triangular (balancing isolates
/// every eigenvalue), partly isolated (balancing leaves a block between), entries near
/// underflow (scaled first) and exact complex pairs.
fn schur_inputs(n: usize, complex: bool, tiny: f64, seed: u64) -> Vec<(&'static str, Vec<C>)> {
    let a = random(n, n, complex, seed);
    let mut triangular = a.clone();
    let mut isolated = a.clone();
    for i in 0..n {
        for j in 0..n {
            if i > j {
                triangular[i * n + j] = ZERO;
                if j == 0 || i == n - 1 {
                    isolated[i * n + j] = ZERO;
                }
            }
        }
    }
    let tiny = a.iter().map(|x| x * tiny).collect();
    let mut pairs = vec![ZERO; n * n];
    for i in (0..n.saturating_sub(1)).step_by(2) {
        pairs[i * n + i] = C::new(1.0 + i as f64, 0.0);
        pairs[(i + 1) * n + i + 1] = C::new(1.0 + i as f64, 0.0);
        pairs[i * n + i + 1] = C::new(2.0, 0.0);
        pairs[(i + 1) * n + i] = C::new(-2.0, 0.0);
    }
    if n % 2 == 1 {
        pairs[n * n - 1] = C::new(3.0, 0.0);
    }
    // A rotation by a Householder reflector keeps the eigenvalues.
    let v = random(n, 1, false, seed + 7);
    let vv: f64 = v.iter().map(|x| x.norm_sqr()).sum();
    let h: Vec<C> = (0..n * n)
        .map(|q| {
            let (i, j) = (q / n, q % n);
            let d = if i == j { ONE } else { ZERO };
            d - v[i] * v[j] * (2.0 / vv)
        })
        .collect();
    let rotated = matmul(&matmul(&h, &pairs, n, n, n), &h, n, n, n);
    vec![
        ("random", a),
        ("triangular", triangular),
        ("isolated", isolated),
        ("tiny", tiny),
        ("pairs", rotated),
    ]
}

#[test]
fn gees_gives_a_schur_form_for_every_type_size_and_kind() {
    for (et, target) in [
        (ElementType::F32, "lapack_sgees_ffi"),
        (ElementType::F64, "lapack_dgees_ffi"),
        (ElementType::C64, "lapack_cgees_ffi"),
        (ElementType::C128, "lapack_zgees_ffi"),
    ] {
        let complex = et.is_complex();
        let eps = if matches!(et, ElementType::F32 | ElementType::C64) {
            f32::EPSILON as f64
        } else {
            f64::EPSILON
        };
        for n in [1usize, 2, 3, 5, 12, 76, 90] {
            let tiny = if eps > 1e-10 { 1e-30 } else { 1e-150 };
            for (kind, a) in schur_inputs(n, complex, tiny, 300 + n as u64) {
                let ni = n as i64;
                let mut results = vec![t(&[ni, ni], et), t(&[ni, ni], et)];
                results.extend((0..if complex { 1 } else { 2 }).map(|_| t(&[ni], et)));
                results.extend([t(&[], ElementType::S32), t(&[], ElementType::S32)]);
                let r = call(
                    target,
                    &[real_input(&[ni, ni], &a, et)],
                    &results,
                    &[("mode", 'V'), ("sort", 'N')],
                )
                .unwrap();
                let what = format!("{target} n={n} {kind}");
                assert_eq!(to_i32(r.last().unwrap()), vec![0], "{what}");
                let (tm, z) = (to_c(&r[0]), to_c(&r[1]));
                let w: Vec<C> = if complex {
                    to_c(&r[2])
                } else {
                    let (wr, wi) = (to_c(&r[2]), to_c(&r[3]));
                    wr.iter()
                        .zip(&wi)
                        .map(|(a, b)| C::new(a.re, b.re))
                        .collect()
                };
                // Triangular (quasi-triangular with standardized blocks for real input),
                // the eigenvalues on the diagonal.
                let mut i = 0;
                while i < n {
                    for j in 0..i.saturating_sub(1) {
                        assert_eq!(tm[i * n + j], ZERO, "{what}: below the subdiagonal");
                    }
                    if i + 1 < n && tm[(i + 1) * n + i] != ZERO {
                        assert!(!complex, "{what}: a complex form is triangular");
                        let (p, q) = (tm[i * n + i], tm[(i + 1) * n + i + 1]);
                        assert_eq!(p, q, "{what}: block {i}");
                        assert!(tm[i * n + i + 1].re * tm[(i + 1) * n + i].re < 0.0);
                        assert!(w[i].im > 0.0 && w[i + 1] == w[i].conj(), "{what}");
                        assert!((w[i].re - p.re).abs() <= 4.0 * eps * p.re.abs(), "{what}");
                        i += 2;
                    } else {
                        assert_eq!(w[i], tm[i * n + i], "{what}: eigenvalue {i}");
                        i += 1;
                    }
                }
                let norm = a.iter().map(|x| x.norm()).fold(0.0, f64::max).max(1e-300);
                let ztz = matmul(&matmul(&z, &tm, n, n, n), &adjoint(&z, n, n), n, n, n);
                let scaled = |v: &[C]| v.iter().map(|x| x / norm).collect::<Vec<_>>();
                let tol = 50.0 * n as f64 * eps;
                assert_close(&scaled(&ztz), &scaled(&a), tol);
                assert_close(&matmul(&adjoint(&z, n, n), &z, n, n, n), &identity(n), tol);
            }
        }
    }
}

/// A lent `gees` runs in place of oxla's own, in LAPACK's column-major conventions. The
/// routines lent here are oxla's own `gees` behind those conventions, so any other test
/// running meanwhile gets the same answers, and each counts its calls.
#[test]
fn gees_runs_a_lent_routine_in_lapacks_conventions() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    static REAL_CALLS: AtomicUsize = AtomicUsize::new(0);
    static COMPLEX_CALLS: AtomicUsize = AtomicUsize::new(0);
    let n = 6;
    let ni = n as i64;
    let real: Vec<f64> = noise(2 * n * n, 91);
    let complex = [random(n, n, true, 92), random(n, n, true, 93)].concat();
    let real_call = |mode: char| {
        call(
            "lapack_dgees_ffi",
            &[f64s(&[2, ni, ni], &real)],
            &[
                t(&[2, ni, ni], ElementType::F64),
                t(&[2, ni, ni], ElementType::F64),
                t(&[2, ni], ElementType::F64),
                t(&[2, ni], ElementType::F64),
                t(&[2], ElementType::S32),
                t(&[2], ElementType::S32),
            ],
            &[("mode", mode), ("sort", 'N')],
        )
        .unwrap()
    };
    let complex_call = || {
        call(
            "lapack_zgees_ffi",
            &[c128s(&[2, ni, ni], &complex)],
            &[
                t(&[2, ni, ni], ElementType::C128),
                t(&[2, ni, ni], ElementType::C128),
                t(&[2, ni], ElementType::C128),
                t(&[2], ElementType::S32),
                t(&[2], ElementType::S32),
            ],
            &[("mode", 'V'), ("sort", 'N')],
        )
        .unwrap()
    };
    let own = (real_call('V'), real_call('N'), complex_call());

    lend_lapack(|table| {
        table.dgees = Some(Arc::new(|a: &mut [f64], n: usize, want_z: bool| {
            REAL_CALLS.fetch_add(1, Ordering::SeqCst);
            let s = schur::real_gees(&lent::transposed(a, n, n), n, want_z);
            a.copy_from_slice(&lent::transposed(&s.t, n, n));
            let z = if want_z {
                lent::transposed(&s.z, n, n)
            } else {
                Vec::new()
            };
            Some((s.wr, s.wi, z, s.info))
        }));
        table.zgees = Some(Arc::new(|a: &mut [C], n: usize, want_z: bool| {
            COMPLEX_CALLS.fetch_add(1, Ordering::SeqCst);
            let s = schur::complex_gees(&lent::transposed(a, n, n), n, want_z);
            a.copy_from_slice(&lent::transposed(&s.t, n, n));
            let z = if want_z {
                lent::transposed(&s.z, n, n)
            } else {
                Vec::new()
            };
            Some((s.w, z, s.info))
        }));
    });
    let lent = (real_call('V'), real_call('N'), complex_call());
    lend_lapack(|table| {
        table.dgees = None;
        table.zgees = None;
    });

    assert_eq!(REAL_CALLS.load(Ordering::SeqCst), 4);
    assert_eq!(COMPLEX_CALLS.load(Ordering::SeqCst), 2);
    assert_eq!(lent.0, own.0);
    assert_eq!(lent.1, own.1);
    assert_eq!(lent.2, own.2);
    assert!(lent_lapack().dgees.is_none() && lent_lapack().zgees.is_none());
}

/// A lent routine that cannot run (here: it refuses every matrix) leaves the call to
/// oxla's own `gees`.
#[test]
fn gees_falls_back_when_the_lent_routine_declines() {
    use std::sync::Arc;
    let n = 5;
    let a: Vec<f32> = noise(n * n, 94).iter().map(|&x| x as f32).collect();
    let run = || {
        call(
            "lapack_sgees_ffi",
            &[encode(
                &Array::F32(a.clone()),
                TensorType::new(vec![5, 5], ElementType::F32),
            )
            .unwrap()],
            &[
                t(&[5, 5], ElementType::F32),
                t(&[5, 5], ElementType::F32),
                t(&[5], ElementType::F32),
                t(&[5], ElementType::F32),
                t(&[], ElementType::S32),
                t(&[], ElementType::S32),
            ],
            &[("mode", 'V'), ("sort", 'N')],
        )
        .unwrap()
    };
    let own = run();
    lend_lapack(|table| table.sgees = Some(Arc::new(|_: &mut [f32], _, _| None)));
    let declined = run();
    lend_lapack(|table| table.sgees = None);
    assert_eq!(declined, own);
}

/// The `f64` elements of a literal.
fn f64_values(lit: &Literal) -> Vec<f64> {
    f64::read(&lit.data)
}

/// A lent `syevd` sees each matrix column-major, and what it leaves in the matrix comes
/// back row-major, with its eigenvalues and info, per batch element.
#[test]
fn lent_syevd_sees_lapacks_layout() {
    let n = 3;
    let a: Vec<f64> = (0..2 * n * n).map(|i| i as f64).collect();
    static SEEN: std::sync::Mutex<Vec<Vec<f64>>> = std::sync::Mutex::new(Vec::new());
    let fake = |m: &mut [f64], n: usize, vectors: bool, lower: bool| {
        assert!(vectors && !lower);
        SEEN.lock().unwrap().push(m.to_vec());
        let w: Vec<f64> = (0..n).map(|i| m[i * n + i]).collect();
        for (i, x) in m.iter_mut().enumerate() {
            *x = 1000.0 + i as f64;
        }
        Some((w, 7))
    };
    let (v_ty, w_ty, info_ty) = (
        TensorType::new([2, 3, 3], ElementType::F64),
        TensorType::new([2, 3], ElementType::F64),
        TensorType::new([2], ElementType::S32),
    );
    let out = lent::syevd(
        Some(&fake),
        &f64s(&[2, 3, 3], &a),
        2,
        n,
        [false, true],
        [&v_ty, &w_ty, &info_ty],
    )
    .unwrap();
    let seen = SEEN.lock().unwrap();
    for (b, m) in seen.iter().enumerate() {
        for (r, c) in (0..n).flat_map(|r| (0..n).map(move |c| (r, c))) {
            assert_eq!(m[c * n + r], a[b * n * n + r * n + c]);
        }
    }
    let v = f64_values(&out[0]);
    for (r, c) in (0..n).flat_map(|r| (0..n).map(move |c| (r, c))) {
        assert_eq!(v[r * n + c], 1000.0 + (c * n + r) as f64);
        assert_eq!(v[n * n + r * n + c], 1000.0 + (c * n + r) as f64);
    }
    assert_eq!(f64_values(&out[1]), [0.0, 4.0, 8.0, 9.0, 13.0, 17.0]);
    assert_eq!(
        &out[2].data[..],
        &[7i32, 7]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect::<Vec<_>>()[..]
    );
}

/// A matrix with a NaN or an infinity among the entries a routine reads has no symmetric
/// eigen- or singular value decomposition: NaN results and `info = -4`, while the batch's
/// other matrices are decomposed as they are alone.
#[test]
fn decompositions_of_non_finite_matrices_are_nan() {
    let f = |shape: &[i64]| t(shape, ElementType::F64);
    let eig_types = [f(&[2, 2, 2]), f(&[2, 2]), t(&[2], ElementType::S32)];
    let lower = [("mode", 'V'), ("uplo", 'L')];
    // The infinity is in the lower triangle the routine reads; the NaN is not.
    let a = f64s(
        &[2, 2, 2],
        &[1.0, 0.0, f64::INFINITY, 2.0, 3.0, f64::NAN, 1.0, 4.0],
    );
    let r = call("lapack_dsyevd_ffi", &[a], &eig_types, &lower).unwrap();
    let alone = f64s(&[2, 2], &[3.0, 0.0, 1.0, 4.0]);
    let one = [f(&[2, 2]), f(&[2]), t(&[], ElementType::S32)];
    let want = call("lapack_dsyevd_ffi", &[alone], &one, &lower).unwrap();
    assert_eq!(to_i32(&r[2]), vec![-4, 0]);
    let (v, w) = (to_f64(&r[0]), to_f64(&r[1]));
    assert!(
        v[..4].iter().chain(&w[..2]).all(|x| x.is_nan()),
        "{v:?} {w:?}"
    );
    let close = |x: &[f64], y: &[f64]| x.iter().zip(y).all(|(x, y)| (x - y).abs() < 1e-12);
    assert!(close(&v[4..], &to_f64(&want[0])), "{v:?}");
    assert!(close(&w[2..], &to_f64(&want[1])), "{w:?}");

    let svd_types = [
        f(&[2, 2, 2]),
        f(&[2, 2]),
        f(&[2, 2, 2]),
        f(&[2, 2, 2]),
        t(&[2], ElementType::S32),
    ];
    let a = f64s(&[2, 2, 2], &[1.0, 2.0, 3.0, 4.0, 1.0, f64::NAN, 0.0, 1.0]);
    let r = call("lapack_dgesdd_ffi", &[a], &svd_types, &[("mode", 'A')]).unwrap();
    let alone = f64s(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let one = [
        f(&[2, 2]),
        f(&[2]),
        f(&[2, 2]),
        f(&[2, 2]),
        t(&[], ElementType::S32),
    ];
    let want = call("lapack_dgesdd_ffi", &[alone], &one, &[("mode", 'A')]).unwrap();
    assert_eq!(to_i32(&r[4]), vec![0, -4]);
    for (k, per) in [(0, 4), (1, 2), (2, 4), (3, 4)] {
        let got = to_f64(&r[k]);
        assert!(close(&got[..per], &to_f64(&want[k])), "result {k}: {got:?}");
        assert!(got[per..].iter().all(|x| x.is_nan()), "result {k}: {got:?}");
    }
}

/// A complex entry is finite only when both of its parts are: a NaN imaginary part alone
/// makes a Hermitian matrix's decomposition NaN, in the upper triangle when that is read.
#[test]
fn a_complex_matrix_with_a_nan_imaginary_part_has_no_decomposition() {
    let c = |re: f64, im: f64| C::new(re, im);
    let a = c128s(
        &[2, 2],
        &[c(2.0, 0.0), c(1.0, f64::NAN), c(1.0, 0.0), c(3.0, 0.0)],
    );
    let types = [
        t(&[2, 2], ElementType::C128),
        t(&[2], ElementType::F64),
        t(&[], ElementType::S32),
    ];
    let upper = call(
        "lapack_zheevd_ffi",
        std::slice::from_ref(&a),
        &types,
        &[("mode", 'V'), ("uplo", 'U')],
    );
    let upper = upper.unwrap();
    assert_eq!(to_i32(&upper[2]), vec![-4]);
    assert!(to_f64(&upper[1]).iter().all(|x| x.is_nan()));
    assert!(to_c(&upper[0])
        .iter()
        .all(|x| x.re.is_nan() && x.im.is_nan()));
    let lower = call(
        "lapack_zheevd_ffi",
        &[a],
        &types,
        &[("mode", 'V'), ("uplo", 'L')],
    );
    let lower = lower.unwrap();
    assert_eq!(to_i32(&lower[2]), vec![0]);
    assert!(to_f64(&lower[1]).iter().all(|x| x.is_finite()));
}

/// A lent SVD of a wide matrix: the input column-major (lda = m), `u` (m x min(m, n)) and
/// `vt` (ldvt x n) read back column-major; without vectors `ldvt` is the placeholder's
/// rows and `u`, `vt` are zeros.
#[test]
fn lent_svd_sees_lapacks_layout() {
    let (m, n) = (2, 3);
    let a: Vec<f64> = (0..m * n).map(|i| i as f64).collect();
    let fake = |x: &mut [f64], m: usize, n: usize, mode: u8, ldvt: usize| {
        for (r, c) in (0..m).flat_map(|r| (0..n).map(move |c| (r, c))) {
            assert_eq!(x[c * m + r], (r * n + c) as f64);
        }
        assert_eq!(ldvt, if mode == b'N' { 3 } else { 2 });
        x.iter_mut().for_each(|v| *v = -*v);
        let u = (0..m * m).map(|i| 10.0 + i as f64).collect();
        let vt = (0..ldvt * n).map(|i| 100.0 + i as f64).collect();
        Some((vec![5.0, 4.0], u, vt, 0))
    };
    let ty = |shape: &[i64], et| TensorType::new(shape, et);
    let (a_ty, s_ty, info_ty) = (
        ty(&[2, 3], ElementType::F64),
        ty(&[2], ElementType::F64),
        ty(&[], ElementType::S32),
    );
    let (u_ty, vt_ty) = (ty(&[2, 2], ElementType::F64), ty(&[2, 3], ElementType::F64));
    let shape = lent::SvdShape {
        m,
        n,
        mode: 'S',
        u_cols: 2,
        vt_rows: 2,
    };
    let types = [&a_ty, &s_ty, &u_ty, &vt_ty, &info_ty];
    let out = lent::svd(Some(&fake), &f64s(&[2, 3], &a), 1, shape, types).unwrap();
    assert_eq!(f64_values(&out[0]), [-0.0, -1.0, -2.0, -3.0, -4.0, -5.0]);
    assert_eq!(f64_values(&out[1]), [5.0, 4.0]);
    assert_eq!(f64_values(&out[2]), [10.0, 12.0, 11.0, 13.0]);
    assert_eq!(
        f64_values(&out[3]),
        [100.0, 102.0, 104.0, 101.0, 103.0, 105.0]
    );

    let vt_placeholder = ty(&[3, 3], ElementType::F64);
    let none = lent::SvdShape {
        mode: 'N',
        u_cols: 0,
        vt_rows: 0,
        ..shape
    };
    let types = [&a_ty, &s_ty, &u_ty, &vt_placeholder, &info_ty];
    let out = lent::svd(Some(&fake), &f64s(&[2, 3], &a), 1, none, types).unwrap();
    assert_eq!(f64_values(&out[2]), [0.0; 4]);
    assert_eq!(f64_values(&out[3]), [0.0; 9]);
}

/// A lent real `geev`'s packed eigenvectors come back as complex columns (a pair as
/// `re ± i im`), row-major; a matrix with a non-finite entry is not decomposed (info -4,
/// as JAX's cpu kernel reports), and vectors not asked for are zeros.
#[test]
fn lent_real_geev_unpacks_eigenvector_pairs() {
    let n = 3;
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let fake = |_: &mut [f64], n: usize, left: bool, right: bool| {
        CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        assert!(!left && right);
        // Columns: (1, 2, 3) and (4, 5, 6) the pair, (7, 8, 9) a real vector.
        let vr: Vec<f64> = (1..=9).map(f64::from).collect();
        Some((
            vec![1.0, 1.0, 3.0],
            vec![2.0, -2.0, 0.0],
            vec![0.0; n * n],
            vr,
            0,
        ))
    };
    let mut a: Vec<f64> = (0..2 * n * n).map(|i| i as f64).collect();
    a[n * n + 4] = f64::INFINITY;
    let ty = |shape: &[i64], et| TensorType::new(shape, et);
    let tys = [
        ty(&[2, 3], ElementType::F64),
        ty(&[2, 3], ElementType::F64),
        ty(&[2, 3, 3], ElementType::C128),
        ty(&[2, 3, 3], ElementType::C128),
        ty(&[2], ElementType::S32),
    ];
    let refs: Vec<&TensorType> = tys.iter().collect();
    let out = lent::real_geev(
        Some(&fake),
        &f64s(&[2, 3, 3], &a),
        2,
        n,
        [false, true],
        &refs,
    )
    .unwrap();
    assert_eq!(CALLS.load(std::sync::atomic::Ordering::SeqCst), 1);
    let vr = to_c(&out[3]);
    let expect = [
        [C::new(1.0, 4.0), C::new(1.0, -4.0), C::new(7.0, 0.0)],
        [C::new(2.0, 5.0), C::new(2.0, -5.0), C::new(8.0, 0.0)],
        [C::new(3.0, 6.0), C::new(3.0, -6.0), C::new(9.0, 0.0)],
    ];
    for r in 0..n {
        assert_eq!(vr[r * n..(r + 1) * n], expect[r]);
    }
    assert!(vr[n * n..].iter().all(|z| *z == C::new(0.0, 0.0)));
    assert!(to_c(&out[2]).iter().all(|z| *z == C::new(0.0, 0.0)));
    assert_eq!(
        &out[4].data[..],
        &[0i32, -4]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect::<Vec<_>>()[..]
    );
}
