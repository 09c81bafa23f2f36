//! Op-level tests of the evaluator, built with the test builder and checked against values
//! computed independently (by hand, by identities, or with Rust's std functions).

use super::run_function;
use super::testing::*;
use crate::attrs::{ComparisonDirection as Dir, ComparisonType};
use crate::{Attribute, ElementType as E, IrError, Literal, Module, OpKind as K, Type};

fn bits_f32(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

mod elementwise {
    use super::*;

    fn bin_i32(kind: K, a: &[i32], b: &[i32]) -> Vec<i32> {
        let n = a.len() as i64;
        to_i32(
            &run_op(
                kind,
                &[i32s(&[n], a), i32s(&[n], b)],
                t(&[n], E::S32),
                vec![],
            )
            .unwrap(),
        )
    }

    fn bin_f32(kind: K, a: &[f32], b: &[f32]) -> Vec<f32> {
        let n = a.len() as i64;
        to_f32(
            &run_op(
                kind,
                &[f32s(&[n], a), f32s(&[n], b)],
                t(&[n], E::F32),
                vec![],
            )
            .unwrap(),
        )
    }

    #[test]
    fn integer_arithmetic_wraps() {
        assert_eq!(bin_i32(K::Add, &[i32::MAX, -3], &[1, 5]), vec![i32::MIN, 2]);
        assert_eq!(
            bin_i32(K::Multiply, &[65536, 7], &[65536, -6]),
            vec![0, -42]
        );
        assert_eq!(bin_i32(K::Subtract, &[i32::MIN], &[1]), vec![i32::MAX]);
    }

    #[test]
    fn integer_division_edge_cases_match_xla() {
        // x / 0 is -1 (all ones); MIN / -1 is MIN; quotients truncate toward zero.
        assert_eq!(
            bin_i32(K::Divide, &[7, -7, 5, i32::MIN, -7], &[0, 0, -2, -1, 2]),
            vec![-1, -1, -2, i32::MIN, -3]
        );
        // x % 0 is x; MIN % -1 is 0; the remainder takes the dividend's sign.
        assert_eq!(
            bin_i32(K::Remainder, &[7, -7, 5, i32::MIN, -7], &[0, 0, -2, -1, 2]),
            vec![7, -7, 1, 0, -1]
        );
        let u = run_op(
            K::Divide,
            &[
                lit_bytes(&[1], E::U32, 7u32.to_le_bytes().to_vec()),
                lit_bytes(&[1], E::U32, vec![0; 4]),
            ],
            t(&[1], E::U32),
            vec![],
        )
        .unwrap();
        assert_eq!(*u.data, u32::MAX.to_le_bytes());
    }

    #[test]
    fn shifts_past_the_bit_width() {
        assert_eq!(
            bin_i32(K::ShiftLeft, &[1, 1, 1, 1], &[31, 32, 33, -1]),
            vec![i32::MIN, 0, 0, 0]
        );
        assert_eq!(
            bin_i32(K::ShiftRightArithmetic, &[-8, -8, 8, 8], &[1, 32, 40, -1]),
            vec![-4, -1, 0, 0]
        );
        assert_eq!(
            bin_i32(K::ShiftRightLogical, &[-8, -8, 8], &[1, 32, -1]),
            vec![0x7fff_fffc, 0, 0]
        );
    }

    #[test]
    fn sub_byte_integers_use_their_own_width() {
        let s4 = |v: &[i8]| {
            lit_bytes(
                &[v.len() as i64],
                E::S4,
                v.iter().map(|&x| x as u8).collect(),
            )
        };
        let out = run_op(
            K::Add,
            &[s4(&[7, -8]), s4(&[1, -1])],
            t(&[2], E::S4),
            vec![],
        )
        .unwrap();
        assert_eq!(*out.data, vec![(-8i8) as u8, 7]);
        // Logical shift of 0b1000 by one in 4 bits is 0b0100.
        let out = run_op(
            K::ShiftRightLogical,
            &[s4(&[-8]), s4(&[1])],
            t(&[1], E::S4),
            vec![],
        )
        .unwrap();
        assert_eq!(*out.data, vec![4]);
        let out = run_op(K::PopulationCount, &[s4(&[-1, 3])], t(&[2], E::S4), vec![]).unwrap();
        assert_eq!(*out.data, vec![4, 2]);
        let out = run_op(
            K::CountLeadingZeros,
            &[s4(&[-1, 1, 0])],
            t(&[3], E::S4),
            vec![],
        )
        .unwrap();
        assert_eq!(*out.data, vec![0, 3, 4]);
    }

    #[test]
    fn integer_power() {
        assert_eq!(
            bin_i32(
                K::Power,
                &[2, 2, -2, 0, 1, -1, 3],
                &[10, -1, 3, 0, -5, -3, 40]
            ),
            vec![1024, 0, -8, 1, 1, -1, 3i32.wrapping_pow(40)]
        );
    }

    #[test]
    fn float_min_max_propagate_nan_and_order_zeros() {
        let nan = f32::NAN;
        let max = bin_f32(K::Maximum, &[nan, 1.0, 0.0, -0.0], &[1.0, nan, -0.0, 0.0]);
        assert!(max[0].is_nan() && max[1].is_nan());
        assert_eq!(bits_f32(&max[2..]), bits_f32(&[0.0, 0.0]));
        let min = bin_f32(K::Minimum, &[nan, 1.0, 0.0, -0.0], &[1.0, nan, -0.0, 0.0]);
        assert!(min[0].is_nan() && min[1].is_nan());
        assert_eq!(bits_f32(&min[2..]), bits_f32(&[-0.0, -0.0]));
    }

    #[test]
    fn float_unary_ops_match_std() {
        let x = [0.3f64, 1.7, -2.5, 4.0];
        let run =
            |kind: K| to_f64(&run_op(kind, &[f64s(&[4], &x)], t(&[4], E::F64), vec![]).unwrap());
        assert_eq!(run(K::Exponential), x.map(f64::exp));
        assert_eq!(run(K::Tanh), x.map(f64::tanh));
        assert_eq!(run(K::Floor), x.map(f64::floor));
        assert_eq!(run(K::RoundNearestAfz), vec![0.0, 2.0, -3.0, 4.0]);
        assert_eq!(run(K::RoundNearestEven), vec![0.0, 2.0, -2.0, 4.0]);
        assert_eq!(run(K::Sign), vec![1.0, 1.0, -1.0, 1.0]);
        assert_eq!(run(K::Logistic), x.map(|v| 1.0 / (1.0 + (-v).exp())));
        assert_eq!(run(K::ChloErf), x.map(libm::erf));
        let sqrt =
            to_f64(&run_op(K::Rsqrt, &[f64s(&[1], &[4.0])], t(&[1], E::F64), vec![]).unwrap());
        assert_eq!(sqrt, vec![0.5]);
    }

    #[test]
    fn f16_arithmetic_rounds_to_nearest_even() {
        let h = |v: &[f32]| {
            lit_bytes(
                &[v.len() as i64],
                E::F16,
                v.iter()
                    .flat_map(|&x| half::f16::from_f32(x).to_le_bytes())
                    .collect(),
            )
        };
        // 2048 + 1 is a tie between 2048 and 2050 in f16 (spacing 2): rounds to even, 2048.
        // 2050 + 1 ties between 2050 and 2052: rounds to 2052.
        let out = run_op(
            K::Add,
            &[h(&[2048.0, 2050.0]), h(&[1.0, 1.0])],
            t(&[2], E::F16),
            vec![],
        )
        .unwrap();
        assert_eq!(*out.data, *h(&[2048.0, 2052.0]).data);
    }

    #[test]
    fn compare_directions_and_types() {
        let a = f32s(&[3], &[1.0, f32::NAN, -0.0]);
        let b = f32s(&[3], &[2.0, f32::NAN, 0.0]);
        let run = |dir: Dir, total: bool| {
            let mut attrs = vec![("comparison_direction", Attribute::ComparisonDirection(dir))];
            if total {
                attrs.push((
                    "compare_type",
                    Attribute::ComparisonType(ComparisonType::TotalOrder),
                ));
            }
            to_pred(&run_op(K::Compare, &[a.clone(), b.clone()], t(&[3], E::Pred), attrs).unwrap())
        };
        assert_eq!(run(Dir::Lt, false), vec![true, false, false]);
        assert_eq!(run(Dir::Eq, false), vec![false, false, true]);
        assert_eq!(run(Dir::Ne, false), vec![true, true, false]);
        assert_eq!(run(Dir::Lt, true), vec![true, false, true]);
        assert_eq!(run(Dir::Eq, true), vec![false, true, false]);
        let u = run_op(
            K::Compare,
            &[
                lit_bytes(&[1], E::U8, vec![200]),
                lit_bytes(&[1], E::U8, vec![100]),
            ],
            t(&[1], E::Pred),
            vec![(
                "comparison_direction",
                Attribute::ComparisonDirection(Dir::Gt),
            )],
        )
        .unwrap();
        assert_eq!(to_pred(&u), vec![true]);
    }

    /// Compares and selects over vector lengths and their tails, with either operand
    /// broadcast, against the definition: IEEE order for floats (false with NaN except
    /// `!=`, `-0 == +0`, denormals read as zero), integer order, and selects that move bits
    /// (NaN payloads and denormals kept).
    #[test]
    fn vector_compares_and_selects_follow_the_definition() {
        let specials = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            f32::NAN,
            f32::INFINITY,
            f32::from_bits(1),
        ];
        let f = |i: usize, salt: usize| -> f32 {
            let k = (i * 7 + salt * 13) % 23;
            if k < specials.len() {
                specials[k]
            } else {
                f32::from_bits(0x7fc0_0000 | (i as u32 & 0xff)) * 0.0 + (k as f32 - 11.0)
            }
        };
        for n in [1usize, 17, 1037] {
            let a: Vec<f32> = (0..n).map(|i| f(i, 0)).collect();
            let b: Vec<f32> = (0..n).map(|i| f(i, 1)).collect();
            let ai: Vec<i32> = (0..n).map(|i| (i as i32 * 37) % 11 - 5).collect();
            let bi: Vec<i32> = (0..n).map(|i| (i as i32 * 17) % 7 - 3).collect();
            let shape = [n as i64];
            for (a_len, b_len) in [(n, n), (1, n), (n, 1)] {
                for dir in [Dir::Eq, Dir::Ne, Dir::Lt, Dir::Le, Dir::Gt, Dir::Ge] {
                    let attrs = vec![("comparison_direction", Attribute::ComparisonDirection(dir))];
                    let want = |x: Option<std::cmp::Ordering>| {
                        super::super::elementwise::ordering_matches(dir, x)
                    };
                    let pick = |len: usize, i: usize| if len == 1 { 0 } else { i };
                    let lit = |v: &[f32], len: usize| {
                        f32s(&[len as i64][..usize::from(len != 1 || n == 1)], &v[..len])
                    };
                    let got = run_op(
                        K::Compare,
                        &[lit(&a, a_len), lit(&b, b_len)],
                        t(&shape, E::Pred),
                        attrs.clone(),
                    );
                    let got = to_pred(&got.unwrap());
                    // Executions read denormals as zero (as XLA does).
                    let flush = |v: f32| if v.is_subnormal() { 0.0 } else { v };
                    for i in 0..n {
                        let (x, y) = (flush(a[pick(a_len, i)]), flush(b[pick(b_len, i)]));
                        assert_eq!(got[i], want(x.partial_cmp(&y)), "{dir:?} {x} {y} (n {n})");
                    }
                    let ilit = |v: &[i32], len: usize| {
                        i32s(&[len as i64][..usize::from(len != 1 || n == 1)], &v[..len])
                    };
                    let got = run_op(
                        K::Compare,
                        &[ilit(&ai, a_len), ilit(&bi, b_len)],
                        t(&shape, E::Pred),
                        attrs,
                    );
                    let got = to_pred(&got.unwrap());
                    for i in 0..n {
                        let (x, y) = (ai[pick(a_len, i)], bi[pick(b_len, i)]);
                        assert_eq!(got[i], want(Some(x.cmp(&y))), "{dir:?} {x} {y} (n {n})");
                    }
                }
                // Selects: a predicate of every pattern, operands whole or broadcast.
                let p: Vec<bool> = (0..n).map(|i| (i * 5) % 3 == 0).collect();
                for p_len in [n, 1] {
                    let plit = preds(
                        &[p_len as i64][..usize::from(p_len != 1 || n == 1)],
                        &p[..p_len],
                    );
                    let lit = |v: &[f32], len: usize| {
                        f32s(&[len as i64][..usize::from(len != 1 || n == 1)], &v[..len])
                    };
                    let got = run_op(
                        K::Select,
                        &[plit, lit(&a, a_len), lit(&b, b_len)],
                        t(&shape, E::F32),
                        vec![],
                    );
                    let got = to_f32(&got.unwrap());
                    assert_eq!(got.len(), n);
                    for (i, got) in got.iter().enumerate() {
                        let at = |len: usize| if len == 1 { 0 } else { i };
                        let want = if p[at(p_len)] {
                            a[at(a_len)]
                        } else {
                            b[at(b_len)]
                        };
                        assert_eq!(got.to_bits(), want.to_bits(), "select at {i} (n {n})");
                    }
                }
            }
        }
    }

    /// Half-precision unary and binary ops (whole and with a broadcast operand) give the
    /// bits of the same op on the values converted to f32, converted back.
    #[test]
    fn half_precision_ops_round_the_f32_result_once() {
        let n = 1037usize;
        let values: Vec<f32> = (0..n)
            .map(|i| match i % 11 {
                0 => f32::NAN,
                1 => -0.0,
                2 => f32::INFINITY,
                _ => (i as f32 * 0.37).sin() * 300.0,
            })
            .collect();
        let other: Vec<f32> = (0..n)
            .map(|i| (i as f32 * 0.11).cos() * 7.0 + 0.5)
            .collect();
        let convert = |x: &Literal, et: E| {
            run_op(
                K::Convert,
                std::slice::from_ref(x),
                t(&x.ty.shape, et),
                vec![],
            )
            .unwrap()
        };
        for et in [E::BF16, E::F16] {
            let a = convert(&f32s(&[n as i64], &values), et);
            let b = convert(&f32s(&[n as i64], &other), et);
            let scalar = convert(&f32s(&[], &[0.75]), et);
            for kind in [
                K::Add,
                K::Subtract,
                K::Multiply,
                K::Divide,
                K::Maximum,
                K::Minimum,
            ] {
                for (x, y) in [(&a, &b), (&a, &scalar), (&scalar, &b)] {
                    let got = run_op(
                        kind.clone(),
                        &[x.clone(), y.clone()],
                        t(&[n as i64], et),
                        vec![],
                    );
                    let wide = run_op(
                        kind.clone(),
                        &[convert(x, E::F32), convert(y, E::F32)],
                        t(&[n as i64], E::F32),
                        vec![],
                    );
                    let want = convert(&wide.unwrap(), et);
                    assert_eq!(got.unwrap().data, want.data, "{kind:?} on {et}");
                }
            }
            for kind in [K::Exponential, K::Tanh, K::Sqrt, K::Floor, K::Negate] {
                let got = run_op(
                    kind.clone(),
                    std::slice::from_ref(&b),
                    t(&[n as i64], et),
                    vec![],
                );
                let wide = run_op(
                    kind.clone(),
                    &[convert(&b, E::F32)],
                    t(&[n as i64], E::F32),
                    vec![],
                );
                let want = convert(&wide.unwrap(), et);
                assert_eq!(got.unwrap().data, want.data, "{kind:?} on {et}");
            }
        }
    }

    #[test]
    fn select_and_clamp_broadcast_scalars() {
        let out = run_op(
            K::Select,
            &[
                preds(&[], &[false]),
                i32s(&[2], &[1, 2]),
                i32s(&[2], &[3, 4]),
            ],
            t(&[2], E::S32),
            vec![],
        )
        .unwrap();
        assert_eq!(to_i32(&out), vec![3, 4]);
        let out = run_op(
            K::Select,
            &[
                preds(&[2], &[true, false]),
                i32s(&[2], &[1, 2]),
                i32s(&[2], &[3, 4]),
            ],
            t(&[2], E::S32),
            vec![],
        )
        .unwrap();
        assert_eq!(to_i32(&out), vec![1, 4]);
        let out = run_op(
            K::Clamp,
            &[
                f32s(&[], &[0.0]),
                f32s(&[3], &[-1.0, 0.5, 9.0]),
                f32s(&[3], &[1.0, 1.0, 2.0]),
            ],
            t(&[3], E::F32),
            vec![],
        )
        .unwrap();
        assert_eq!(to_f32(&out), vec![0.0, 0.5, 2.0]);
    }

    #[test]
    fn complex_ops() {
        let c = |v: &[f32]| {
            lit_bytes(
                &[(v.len() / 2) as i64],
                E::C64,
                v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            )
        };
        let out = run_op(
            K::Multiply,
            &[c(&[1.0, 2.0]), c(&[3.0, -1.0])],
            t(&[1], E::C64),
            vec![],
        )
        .unwrap();
        // (1 + 2i)(3 - i) = 5 + 5i.
        assert_eq!(*out.data, *c(&[5.0, 5.0]).data);
        let out = run_op(K::Abs, &[c(&[3.0, 4.0])], t(&[1], E::F32), vec![]).unwrap();
        assert_eq!(to_f32(&out), vec![5.0]);
        let out = run_op(K::Imag, &[c(&[3.0, 4.0])], t(&[1], E::F32), vec![]).unwrap();
        assert_eq!(to_f32(&out), vec![4.0]);
        let out = run_op(
            K::Complex,
            &[f32s(&[1], &[3.0]), f32s(&[1], &[4.0])],
            t(&[1], E::C64),
            vec![],
        )
        .unwrap();
        assert_eq!(*out.data, *c(&[3.0, 4.0]).data);
    }

    #[test]
    fn type_mismatch_is_an_error() {
        let err = run_op(
            K::Add,
            &[f32s(&[1], &[1.0]), i32s(&[1], &[1])],
            t(&[1], E::F32),
            vec![],
        )
        .unwrap_err();
        assert!(
            matches!(err, IrError::InvalidOp { ref op, .. } if op == "stablehlo.add"),
            "{err}"
        );
        let err = run_op(K::Sine, &[i32s(&[1], &[1])], t(&[1], E::S32), vec![]).unwrap_err();
        assert!(matches!(err, IrError::InvalidOp { .. }), "{err}");
    }
}

mod conversions {
    use super::*;

    #[test]
    fn convert_op_saturates_and_rounds() {
        let out = run_op(
            K::Convert,
            &[f32s(&[3], &[f32::NAN, 1e10, -2.9])],
            t(&[3], E::S32),
            vec![],
        )
        .unwrap();
        assert_eq!(to_i32(&out), vec![0, i32::MAX, -2]);
        let out = run_op(
            K::Convert,
            &[f32s(&[2], &[500.0, 3.0])],
            t(&[2], E::F8E4M3FN),
            vec![],
        )
        .unwrap();
        assert_eq!(*out.data, vec![0x7f, 0x44]);
        let out = run_op(K::Convert, &[i32s(&[2], &[3, -1])], t(&[2], E::F64), vec![]).unwrap();
        assert_eq!(to_f64(&out), vec![3.0, -1.0]);
    }

    #[test]
    fn bitcast_changes_width_and_shape() {
        let x = f32s(&[2], &[1.0, -2.0]);
        let bytes = run_op(
            K::BitcastConvert,
            std::slice::from_ref(&x),
            t(&[2, 4], E::U8),
            vec![],
        )
        .unwrap();
        assert_eq!(*bytes.data, *x.data);
        let back = run_op(K::BitcastConvert, &[bytes], t(&[2], E::F32), vec![]).unwrap();
        assert_eq!(back, x);
        let same = run_op(
            K::BitcastConvert,
            std::slice::from_ref(&x),
            t(&[2], E::S32),
            vec![],
        )
        .unwrap();
        assert_eq!(
            to_i32(&same),
            vec![1.0f32.to_bits() as i32, (-2.0f32).to_bits() as i32]
        );
        // u8 -> two u4 nibbles, low nibble first.
        let nibbles = run_op(
            K::BitcastConvert,
            &[lit_bytes(&[1], E::U8, vec![0xab])],
            t(&[1, 2], E::U4),
            vec![],
        )
        .unwrap();
        assert_eq!(*nibbles.data, vec![0xb, 0xa]);
        let err = run_op(K::BitcastConvert, &[x], t(&[2], E::S16), vec![]).unwrap_err();
        assert!(matches!(err, IrError::InvalidOp { .. }));
    }

    #[test]
    fn reduce_precision_op() {
        let out = run_op(
            K::ReducePrecision,
            &[f32s(
                &[3],
                &[1.0 + 2f32.powi(-11), 1.0 + 3.0 * 2f32.powi(-11), 70000.0],
            )],
            t(&[3], E::F32),
            vec![("exponent_bits", int(5)), ("mantissa_bits", int(10))],
        )
        .unwrap();
        // Ties round to even at 10 mantissa bits; 70000 exceeds f16's exponent range.
        assert_eq!(to_f32(&out), vec![1.0, 1.0 + 2f32.powi(-9), f32::INFINITY]);
    }
}

mod shapes {
    use super::*;

    fn seq(n: usize) -> Vec<f32> {
        (0..n).map(|i| i as f32).collect()
    }

    #[test]
    fn transpose_twice_is_identity_and_moves_elements() {
        let x = f32s(&[2, 3, 4], &seq(24));
        let perm = i64s(&[2, 0, 1]);
        let y = run_op(
            K::Transpose,
            std::slice::from_ref(&x),
            t(&[4, 2, 3], E::F32),
            vec![("permutation", perm)],
        )
        .unwrap();
        // y[k, i, j] = x[i, j, k] = 12 i + 4 j + k.
        assert_eq!(to_f32(&y)[6 + 3 + 2], 12.0 + 8.0 + 1.0);
        let z = run_op(
            K::Transpose,
            &[y],
            t(&[2, 3, 4], E::F32),
            vec![("permutation", i64s(&[1, 2, 0]))],
        )
        .unwrap();
        assert_eq!(z, x);
    }

    #[test]
    fn tiled_transposes_match_the_index_formula() {
        // Sizes that are not multiples of the tile, with and without a leading dimension;
        // the last two large enough to split their rows over the threads.
        for (shape, perm) in [
            (vec![37usize, 45], vec![1usize, 0]),
            (vec![300, 260], vec![1, 0]),
            (vec![2, 300, 257], vec![0, 2, 1]),
            (vec![3, 37, 45], vec![0, 2, 1]),
            (vec![3, 37, 45], vec![1, 2, 0]),
            (vec![70, 1, 33], vec![2, 1, 0]),
        ] {
            let n: usize = shape.iter().product();
            let x = f32s(
                &shape.iter().map(|&d| d as i64).collect::<Vec<_>>(),
                &seq(n),
            );
            let out: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
            let y = run_op(
                K::Transpose,
                std::slice::from_ref(&x),
                t(&out.iter().map(|&d| d as i64).collect::<Vec<_>>(), E::F32),
                vec![(
                    "permutation",
                    i64s(&perm.iter().map(|&p| p as i64).collect::<Vec<_>>()),
                )],
            )
            .unwrap();
            let got = to_f32(&y);
            // Output element `o` (row-major over `out`) is input element `i` with
            // `i[perm[k]] = o[k]`; `seq` makes each input element its own flat index.
            for (flat, &v) in got.iter().enumerate() {
                let mut rem = flat;
                let mut idx = vec![0usize; out.len()];
                for k in (0..out.len()).rev() {
                    idx[k] = rem % out[k];
                    rem /= out[k];
                }
                let mut src = vec![0usize; shape.len()];
                for (k, &p) in perm.iter().enumerate() {
                    src[p] = idx[k];
                }
                let want = src.iter().zip(&shape).fold(0usize, |a, (&i, &d)| a * d + i);
                assert_eq!(v, want as f32, "{shape:?} by {perm:?} at {flat}");
            }
        }
    }

    #[test]
    fn broadcast_in_dim_and_reshape() {
        let x = f32s(&[3], &[1.0, 2.0, 3.0]);
        let y = run_op(
            K::BroadcastInDim,
            std::slice::from_ref(&x),
            t(&[2, 3], E::F32),
            vec![("broadcast_dimensions", i64s(&[1]))],
        )
        .unwrap();
        assert_eq!(to_f32(&y), vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
        let y = run_op(
            K::BroadcastInDim,
            std::slice::from_ref(&x),
            t(&[3, 2], E::F32),
            vec![("broadcast_dimensions", i64s(&[0]))],
        )
        .unwrap();
        assert_eq!(to_f32(&y), vec![1.0, 1.0, 2.0, 2.0, 3.0, 3.0]);
        let err = run_op(
            K::BroadcastInDim,
            std::slice::from_ref(&x),
            t(&[2, 4], E::F32),
            vec![("broadcast_dimensions", i64s(&[1]))],
        )
        .unwrap_err();
        assert!(matches!(err, IrError::InvalidOp { .. }));
        let r = run_op(K::Reshape, &[y], t(&[6], E::F32), vec![]).unwrap();
        assert_eq!(r.ty.shape, vec![6]);
        let err = run_op(K::Reshape, &[x], t(&[2], E::F32), vec![]).unwrap_err();
        assert!(matches!(err, IrError::InvalidOp { .. }));
    }

    #[test]
    fn slice_with_strides_and_reverse() {
        let x = f32s(&[3, 4], &seq(12));
        let y = run_op(
            K::Slice,
            std::slice::from_ref(&x),
            t(&[2, 2], E::F32),
            vec![
                ("start_indices", i64s(&[1, 0])),
                ("limit_indices", i64s(&[3, 4])),
                ("strides", i64s(&[1, 2])),
            ],
        )
        .unwrap();
        assert_eq!(to_f32(&y), vec![4.0, 6.0, 8.0, 10.0]);
        let r = run_op(
            K::Reverse,
            &[x],
            t(&[3, 4], E::F32),
            vec![("dimensions", i64s(&[0, 1]))],
        )
        .unwrap();
        assert_eq!(to_f32(&r), seq(12).into_iter().rev().collect::<Vec<_>>());
    }

    #[test]
    fn dynamic_slice_and_update_clamp_their_starts() {
        let x = f32s(&[4], &seq(4));
        let y = run_op(
            K::DynamicSlice,
            &[x.clone(), i32s(&[], &[3])],
            t(&[2], E::F32),
            vec![("slice_sizes", i64s(&[2]))],
        )
        .unwrap();
        assert_eq!(to_f32(&y), vec![2.0, 3.0]);
        let y = run_op(
            K::DynamicSlice,
            &[x.clone(), i32s(&[], &[-5])],
            t(&[2], E::F32),
            vec![("slice_sizes", i64s(&[2]))],
        )
        .unwrap();
        assert_eq!(to_f32(&y), vec![0.0, 1.0]);
        let m = f32s(&[3, 3], &[0.0; 9]);
        let u = f32s(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
        let y = run_op(
            K::DynamicUpdateSlice,
            &[m, u, i64s_lit(&[], &[5]), i64s_lit(&[], &[0])],
            t(&[3, 3], E::F32),
            vec![],
        )
        .unwrap();
        assert_eq!(
            to_f32(&y),
            vec![0.0, 0.0, 0.0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0]
        );
    }

    #[test]
    fn concatenate_iota_and_pad() {
        let a = f32s(&[2, 1], &[1.0, 2.0]);
        let b = f32s(&[2, 2], &[3.0, 4.0, 5.0, 6.0]);
        let c = run_op(
            K::Concatenate,
            &[a, b],
            t(&[2, 3], E::F32),
            vec![("dimension", int(1))],
        )
        .unwrap();
        assert_eq!(to_f32(&c), vec![1.0, 3.0, 4.0, 2.0, 5.0, 6.0]);
        let (mut bld, _) = FuncBuilder::new(&[]);
        let i = bld.op(
            K::Iota,
            &[],
            t(&[2, 3], E::S32),
            vec![("iota_dimension", int(1))],
        );
        let m = bld.finish(&[i]);
        assert_eq!(
            to_i32(&run_function(&m, "main", &[]).unwrap()[0]),
            vec![0, 1, 2, 0, 1, 2]
        );
        // Every element type and dimension, large enough to split over the threads: each
        // element is its index along the dimension, converted as `convert` converts an s64.
        for (shape, dim) in [
            (vec![7i64], 0usize),
            (vec![3, 5, 4], 0),
            (vec![3, 5, 4], 1),
            (vec![3, 5, 4], 2),
            (vec![300, 1000], 1),
            (vec![70000, 3], 0),
            (vec![1, 0, 2], 2),
        ] {
            for et in [
                E::S8,
                E::U8,
                E::S16,
                E::U32,
                E::S64,
                E::F32,
                E::F64,
                E::BF16,
                E::F16,
            ] {
                let (mut bld, _) = FuncBuilder::new(&[]);
                let i = bld.op(
                    K::Iota,
                    &[],
                    t(&shape, et),
                    vec![("iota_dimension", int(dim as i64))],
                );
                let m = bld.finish(&[i]);
                let got = run_function(&m, "main", &[]).unwrap().remove(0);
                let n: usize = shape.iter().map(|&d| d as usize).product();
                let inner: usize = shape[dim + 1..].iter().map(|&d| d as usize).product();
                let len = shape[dim] as usize;
                let indices: Vec<u8> = (0..n)
                    .flat_map(|k| (((k / inner) % len) as i64).to_le_bytes())
                    .collect();
                let indices =
                    Literal::new(crate::TensorType::new(shape.clone(), E::S64), indices).unwrap();
                let want = super::super::convert::convert_literal(&indices, et).unwrap();
                assert_eq!(got, want, "iota of {shape:?} along {dim} as {et}");
            }
        }
        // Low padding 1, interior 1 gives [p, 1, p, 2, p, 3]; high padding -1 drops the 3.
        let p = run_op(
            K::Pad,
            &[f32s(&[3], &[1.0, 2.0, 3.0]), f32s(&[], &[9.0])],
            t(&[5], E::F32),
            vec![
                ("edge_padding_low", i64s(&[1])),
                ("edge_padding_high", i64s(&[-1])),
                ("interior_padding", i64s(&[1])),
            ],
        )
        .unwrap();
        assert_eq!(to_f32(&p), vec![9.0, 1.0, 9.0, 2.0, 9.0]);
        let p = run_op(
            K::Pad,
            &[f32s(&[3], &[1.0, 2.0, 3.0]), f32s(&[], &[9.0])],
            t(&[1], E::F32),
            vec![
                ("edge_padding_low", i64s(&[-2])),
                ("edge_padding_high", i64s(&[0])),
                ("interior_padding", i64s(&[0])),
            ],
        )
        .unwrap();
        assert_eq!(to_f32(&p), vec![3.0]);
    }
}

mod compute {
    use super::*;

    fn body_of(b: &mut FuncBuilder, kind: K, et: E) -> crate::Region {
        b.region(&[t(&[], et), t(&[], et)], |b, args| {
            vec![b.op(kind, &[args[0], args[1]], t(&[], et), vec![])]
        })
    }

    #[test]
    fn reduce_sum_and_max_over_each_axis() {
        let (mut b, args) = FuncBuilder::new(&[t(&[2, 3], E::F32)]);
        let zero = b.constant(&f32s(&[], &[0.0]));
        let ninf = b.constant(&f32s(&[], &[f32::NEG_INFINITY]));
        let sum_body = body_of(&mut b, K::Add, E::F32);
        let sum0 = b.op_full(
            K::Reduce,
            &[args[0], zero],
            &[t(&[3], E::F32)],
            vec![("dimensions", i64s(&[0]))],
            vec![sum_body],
        )[0];
        let max_body = body_of(&mut b, K::Maximum, E::F32);
        let max1 = b.op_full(
            K::Reduce,
            &[args[0], ninf],
            &[t(&[2], E::F32)],
            vec![("dimensions", i64s(&[1]))],
            vec![max_body],
        )[0];
        let all_body = body_of(&mut b, K::Add, E::F32);
        let all = b.op_full(
            K::Reduce,
            &[args[0], zero],
            &[t(&[], E::F32)],
            vec![("dimensions", i64s(&[0, 1]))],
            vec![all_body],
        )[0];
        let m = b.finish(&[sum0, max1, all]);
        let out = run_function(
            &m,
            "main",
            &[f32s(&[2, 3], &[1.0, 5.0, 2.0, 4.0, -1.0, 7.0])],
        )
        .unwrap();
        assert_eq!(to_f32(&out[0]), vec![5.0, 4.0, 9.0]);
        assert_eq!(to_f32(&out[1]), vec![5.0, 7.0]);
        assert_eq!(to_f32(&out[2]), vec![18.0]);
    }

    #[test]
    fn reduce_over_middle_and_long_inner_axes() {
        // [2, 3, 20]: sum over the middle axis, sum and max over the innermost (rows long
        // enough for the multi-accumulator loop); one NaN must survive the max.
        let mut v: Vec<f32> = (0..120).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
        v[45] = f32::NAN;
        let (mut b, args) = FuncBuilder::new(&[t(&[2, 3, 20], E::F32)]);
        let init = b.constant(&f32s(&[], &[0.5]));
        let ninf = b.constant(&f32s(&[], &[f32::NEG_INFINITY]));
        let reduce = |b: &mut FuncBuilder, kind, init, dim: i64, shape: &[i64]| {
            let body = body_of(b, kind, E::F32);
            b.op_full(
                K::Reduce,
                &[args[0], init],
                &[t(shape, E::F32)],
                vec![("dimensions", i64s(&[dim]))],
                vec![body],
            )[0]
        };
        let mid = reduce(&mut b, K::Add, init, 1, &[2, 20]);
        let last = reduce(&mut b, K::Add, init, 2, &[2, 3]);
        let max = reduce(&mut b, K::Maximum, ninf, 2, &[2, 3]);
        let m = b.finish(&[mid, last, max]);
        let x = f32s(&[2, 3, 20], &v);
        let out = run_function(&m, "main", &[x]).unwrap();
        let at = |i: usize, j: usize, k: usize| v[(i * 3 + j) * 20 + k];
        let mut want_mid = Vec::new();
        for i in 0..2 {
            for k in 0..20 {
                want_mid.push(0.5 + (0..3).map(|j| at(i, j, k)).sum::<f32>());
            }
        }
        let got_mid = to_f32(&out[0]);
        for (g, w) in got_mid.iter().zip(&want_mid) {
            assert!(g == w || (g.is_nan() && w.is_nan()), "{g} vs {w}");
        }
        let sums = to_f32(&out[1]);
        let maxes = to_f32(&out[2]);
        for r in 0..6 {
            let row = &v[r * 20..(r + 1) * 20];
            if r == 2 {
                assert!(sums[r].is_nan() && maxes[r].is_nan());
                continue;
            }
            assert_eq!(sums[r], 0.5 + row.iter().sum::<f32>());
            assert_eq!(
                maxes[r],
                row.iter().copied().fold(f32::NEG_INFINITY, f32::max)
            );
        }
    }

    /// argmax as JAX writes it: a two-operand reduce whose body compares and selects.
    fn argmax_module(capture_outside: bool) -> Module {
        let (mut b, args) = FuncBuilder::new(&[t(&[2, 4], E::F32)]);
        let iota = b.op(
            K::Iota,
            &[],
            t(&[2, 4], E::S32),
            vec![("iota_dimension", int(1))],
        );
        let ninf = b.constant(&f32s(&[], &[f32::NEG_INFINITY]));
        let zero = b.constant(&i32s(&[], &[0]));
        let outside_zero = b.constant(&i32s(&[], &[0]));
        let st = t(&[], E::F32);
        let it = t(&[], E::S32);
        let body = b.region(&[st.clone(), it.clone(), st.clone(), it.clone()], |b, a| {
            let (av, ai, bv, bi) = (a[0], a[1], a[2], a[3]);
            let gt = b.compare(Dir::Gt, av, bv, &[]);
            let eq = b.compare(Dir::Eq, av, bv, &[]);
            let lt_i = b.compare(Dir::Lt, ai, bi, &[]);
            let tie = b.op(K::And, &[eq, lt_i], t(&[], E::Pred), vec![]);
            let keep = b.op(K::Or, &[gt, tie], t(&[], E::Pred), vec![]);
            let v = b.op(K::Select, &[keep, av, bv], st.clone(), vec![]);
            let mut i = b.op(K::Select, &[keep, ai, bi], it.clone(), vec![]);
            if capture_outside {
                i = b.op(K::Add, &[i, outside_zero], it.clone(), vec![]);
            }
            vec![v, i]
        });
        let res = b.op_full(
            K::Reduce,
            &[args[0], iota, ninf, zero],
            &[t(&[2], E::F32), t(&[2], E::S32)],
            vec![("dimensions", i64s(&[1]))],
            vec![body],
        );
        b.finish(&res)
    }

    #[test]
    fn argmax_reduce_runs_per_lane_and_per_element() {
        let x = f32s(&[2, 4], &[1.0, 9.0, 3.0, 9.0, -1.0, -5.0, 0.5, 0.25]);
        for capture in [false, true] {
            let out =
                run_function(&argmax_module(capture), "main", std::slice::from_ref(&x)).unwrap();
            assert_eq!(to_f32(&out[0]), vec![9.0, 0.5]);
            assert_eq!(to_i32(&out[1]), vec![1, 2]);
        }
    }

    #[test]
    fn dot_general_matmul_batch_and_mixed_types() {
        let a = f32s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let w = f32s(&[3, 2], &[7.0, 8.0, 9.0, 10.0, 11.0, 12.0]);
        let mm = run_op(
            K::DotGeneral,
            &[a.clone(), w.clone()],
            t(&[2, 2], E::F32),
            vec![
                ("lhs_contracting_dimensions", i64s(&[1])),
                ("rhs_contracting_dimensions", i64s(&[0])),
            ],
        )
        .unwrap();
        assert_eq!(to_f32(&mm), vec![58.0, 64.0, 139.0, 154.0]);
        // Contracting lhs dim 0 with rhs dim 1 computes a^T w^T = (w a)^T.
        let mt = run_op(
            K::DotGeneral,
            &[a.clone(), w.clone()],
            t(&[3, 3], E::F32),
            vec![
                ("lhs_contracting_dimensions", i64s(&[0])),
                ("rhs_contracting_dimensions", i64s(&[1])),
            ],
        )
        .unwrap();
        // (a^T w^T)[i, j] = sum_k a[k, i] w[j, k]; [0, 0] = 1*7 + 4*8 = 39.
        assert_eq!(to_f32(&mt)[0], 39.0);
        let batched = run_op(
            K::DotGeneral,
            &[
                f32s(&[2, 1, 2], &[1.0, 2.0, 3.0, 4.0]),
                f32s(&[2, 2, 1], &[5.0, 6.0, 7.0, 8.0]),
            ],
            t(&[2, 1, 1], E::F32),
            vec![
                ("lhs_batching_dimensions", i64s(&[0])),
                ("rhs_batching_dimensions", i64s(&[0])),
                ("lhs_contracting_dimensions", i64s(&[2])),
                ("rhs_contracting_dimensions", i64s(&[1])),
            ],
        )
        .unwrap();
        assert_eq!(to_f32(&batched), vec![17.0, 53.0]);
        let i8s = |v: &[i8]| {
            lit_bytes(
                &[v.len() as i64],
                E::S8,
                v.iter().map(|&x| x as u8).collect(),
            )
        };
        let wide = run_op(
            K::DotGeneral,
            &[i8s(&[100, 100]), i8s(&[100, 100])],
            t(&[], E::S32),
            vec![
                ("lhs_contracting_dimensions", i64s(&[0])),
                ("rhs_contracting_dimensions", i64s(&[0])),
            ],
        )
        .unwrap();
        assert_eq!(to_i32(&wide), vec![20000]);
        let err = run_op(
            K::DotGeneral,
            &[a, f32s(&[2, 2], &[0.0; 4])],
            t(&[2, 2], E::F32),
            vec![
                ("lhs_contracting_dimensions", i64s(&[1])),
                ("rhs_contracting_dimensions", i64s(&[0])),
            ],
        )
        .unwrap_err();
        assert!(matches!(err, IrError::InvalidOp { .. }));
        let v = run_op(
            K::Dot,
            &[f32s(&[3], &[1.0, 2.0, 3.0]), w],
            t(&[2], E::F32),
            vec![],
        )
        .unwrap();
        assert_eq!(to_f32(&v), vec![58.0, 64.0]);
    }
}

mod control {
    use super::*;

    #[test]
    fn while_loop_sums_one_to_ten() {
        let it = t(&[], E::S32);
        let (mut b, _) = FuncBuilder::new(&[]);
        let zero = b.constant(&i32s(&[], &[0]));
        let ten = b.constant(&i32s(&[], &[10]));
        let one = b.constant(&i32s(&[], &[1]));
        let cond = b.region(&[it.clone(), it.clone()], |b, a| {
            vec![b.compare(Dir::Lt, a[0], ten, &[])]
        });
        let body = b.region(&[it.clone(), it.clone()], |b, a| {
            let i = b.op(K::Add, &[a[0], one], it.clone(), vec![]);
            let s = b.op(K::Add, &[a[1], i], it.clone(), vec![]);
            vec![i, s]
        });
        let res = b.op_full(
            K::While,
            &[zero, zero],
            &[it.clone(), it.clone()],
            vec![],
            vec![cond, body],
        );
        let m = b.finish(&res);
        let out = run_function(&m, "main", &[]).unwrap();
        assert_eq!(to_i32(&out[0]), vec![10]);
        assert_eq!(to_i32(&out[1]), vec![55]);
    }

    #[test]
    fn if_and_case_pick_branches() {
        let ft = t(&[], E::F32);
        let (mut b, args) = FuncBuilder::new(&[t(&[], E::Pred), t(&[], E::S32), ft.clone()]);
        let x = args[2];
        let neg = b.region(&[], |b, _| vec![b.op(K::Negate, &[x], ft.clone(), vec![])]);
        let same = b.region(&[], |_, _| vec![x]);
        let r_if = b.op_full(
            K::If,
            &[args[0]],
            std::slice::from_ref(&ft),
            vec![],
            vec![neg, same],
        )[0];
        let c0 = b.region(&[], |b, _| vec![b.constant(&f32s(&[], &[10.0]))]);
        let c1 = b.region(&[], |b, _| vec![b.constant(&f32s(&[], &[11.0]))]);
        let c2 = b.region(&[], |b, _| vec![b.constant(&f32s(&[], &[12.0]))]);
        let r_case = b.op_full(
            K::Case,
            &[args[1]],
            std::slice::from_ref(&ft),
            vec![],
            vec![c0, c1, c2],
        )[0];
        let m = b.finish(&[r_if, r_case]);
        let run = |p: bool, i: i32| {
            let out = run_function(
                &m,
                "main",
                &[preds(&[], &[p]), i32s(&[], &[i]), f32s(&[], &[3.0])],
            )
            .unwrap();
            (to_f32(&out[0])[0], to_f32(&out[1])[0])
        };
        assert_eq!(run(true, 1), (-3.0, 11.0));
        assert_eq!(run(false, 0), (3.0, 10.0));
        // Out-of-range indices select the last branch.
        assert_eq!(run(false, 7).1, 12.0);
        assert_eq!(run(false, -1).1, 12.0);
    }

    #[test]
    fn calls_and_tuples() {
        let ft = t(&[2], E::F32);
        let (mut callee, cargs) = FuncBuilder::new(&[ft.clone(), ft.clone()]);
        let s = callee.op(K::Subtract, &[cargs[0], cargs[1]], ft.clone(), vec![]);
        let mut callee = callee.finish_function(&[s]);
        callee.name = "sub".to_string();
        callee.visibility = crate::Visibility::Private;
        let (mut b, args) = FuncBuilder::new(&[ft.clone(), ft.clone()]);
        let r = b.op(
            K::Call,
            &[args[1], args[0]],
            ft.clone(),
            vec![("callee", Attribute::SymbolRef("sub".into()))],
        );
        let tup_ty = Type::Tuple(vec![ft.clone(), ft.clone()]);
        let tup = b.op(K::Tuple, &[r, args[0]], tup_ty, vec![]);
        let first = b.op(
            K::GetTupleElement,
            &[tup],
            ft.clone(),
            vec![("index", int(0))],
        );
        let mut m = b.finish(&[first]);
        m.functions.push(callee);
        let out = run_function(
            &m,
            "main",
            &[f32s(&[2], &[1.0, 2.0]), f32s(&[2], &[10.0, 20.0])],
        )
        .unwrap();
        assert_eq!(to_f32(&out[0]), vec![9.0, 18.0]);
    }

    #[test]
    fn unbounded_recursion_is_an_error() {
        let ft = t(&[], E::F32);
        let (mut b, args) = FuncBuilder::new(std::slice::from_ref(&ft));
        let r = b.op(
            K::Call,
            &[args[0]],
            ft.clone(),
            vec![("callee", Attribute::SymbolRef("main".into()))],
        );
        let m = b.finish(&[r]);
        let err = run_function(&m, "main", &[f32s(&[], &[1.0])]).unwrap_err();
        assert!(matches!(err, IrError::Eval { .. }), "{err}");
    }
}

mod errors {
    use super::*;

    #[test]
    fn unsupported_op_is_named() {
        let err = run_op(
            K::Infeed,
            &[f32s(&[1, 1], &[1.0])],
            t(&[1, 1], E::F32),
            vec![],
        )
        .unwrap_err();
        match err {
            IrError::Unsupported { op, .. } => assert_eq!(op, "stablehlo.infeed"),
            other => panic!("expected Unsupported, got {other}"),
        }
        let err = run_op(
            K::Other("foo.bar".into()),
            &[f32s(&[], &[1.0])],
            t(&[], E::F32),
            vec![],
        )
        .unwrap_err();
        assert!(matches!(err, IrError::Unsupported { ref op, .. } if op == "foo.bar"));
        assert!(!super::super::is_supported(&K::Infeed));
        assert!(super::super::is_supported(&K::DotGeneral));
    }

    #[test]
    fn bad_arguments_are_eval_errors() {
        let (mut b, args) = FuncBuilder::new(&[t(&[2], E::F32)]);
        let n = b.op(K::Negate, &[args[0]], t(&[2], E::F32), vec![]);
        let m = b.finish(&[n]);
        let err = run_function(&m, "main", &[]).unwrap_err();
        assert!(matches!(err, IrError::Eval { .. }));
        let err = run_function(&m, "main", &[f32s(&[3], &[0.0; 3])]).unwrap_err();
        assert!(matches!(err, IrError::Eval { .. }));
        let err = run_function(&m, "main", &[i32s(&[2], &[0; 2])]).unwrap_err();
        assert!(matches!(err, IrError::Eval { .. }));
        let bad = Literal {
            ty: crate::TensorType::new([2], E::F32),
            data: vec![0; 3].into(),
        };
        let err = run_function(&m, "main", &[bad]).unwrap_err();
        assert!(matches!(err, IrError::Eval { .. }));
        let err = run_function(&m, "nope", &[]).unwrap_err();
        assert!(matches!(err, IrError::Eval { .. }));
    }

    #[test]
    fn malformed_ops_are_invalid_not_panics() {
        // Missing attribute.
        let err = run_op(K::Transpose, &[f32s(&[1], &[1.0])], t(&[1], E::F32), vec![]).unwrap_err();
        assert!(matches!(err, IrError::InvalidOp { .. }));
        // Wrong operand count.
        let (mut b, args) = FuncBuilder::new(&[t(&[], E::F32)]);
        let r = b.op(K::Add, &[args[0]], t(&[], E::F32), vec![]);
        let m = b.finish(&[r]);
        let err = run_function(&m, "main", &[f32s(&[], &[1.0])]).unwrap_err();
        assert!(matches!(err, IrError::InvalidOp { .. }));
        // Slice out of range.
        let err = run_op(
            K::Slice,
            &[f32s(&[2], &[1.0, 2.0])],
            t(&[3], E::F32),
            vec![("start_indices", i64s(&[0])), ("limit_indices", i64s(&[3]))],
        )
        .unwrap_err();
        assert!(matches!(err, IrError::InvalidOp { .. }));
        // A result type too large to allocate.
        let (mut b, _) = FuncBuilder::new(&[]);
        let r = b.op(
            K::Iota,
            &[],
            t(&[1 << 40, 1 << 20], E::F32),
            vec![("iota_dimension", int(0))],
        );
        let m = b.finish(&[r]);
        let err = run_function(&m, "main", &[]).unwrap_err();
        assert!(matches!(err, IrError::Unsupported { .. }), "{err}");
        // A use of a value that was never defined.
        let (mut b, _) = FuncBuilder::new(&[]);
        let r = b.op(K::Negate, &[crate::ValueId(99)], t(&[], E::F32), vec![]);
        let m = b.finish(&[r]);
        assert!(run_function(&m, "main", &[]).is_err());
    }
}
