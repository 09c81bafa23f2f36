//! Convolution tests: plans, the direct loop and the matrix-product paths against direct
//! definitions.

use super::super::testing::*;
use crate::{Attribute, ElementType, OpKind};

/// The window layout numbers the taps in use, and merges copies that follow on in both
/// the input and the columns, within a position only.
#[test]
fn window_runs_merge_within_a_position() {
    // Kernel offsets 0, 1 and 4 are used (kernel offset 2 and 3 never), two features.
    let taps = vec![
        (0, vec![(0, 0), (2, 1)]),
        (1, vec![(4, 4)]),
        (2, vec![(10, 1), (12, 4)]),
    ];
    let w = super::Windows::new(&taps, 2, 1);
    assert_eq!(w.taps, vec![0, 1, 4]);
    assert_eq!(w.tap_of[4], 2);
    // Position 0: offsets 0 and 2 into columns 0 and 2 make one run of 4.
    assert_eq!(w.runs_of(0), Some(&[(0, 0, 4)][..]));
    // Position 1 follows on from position 0's run in both, but starts its own.
    assert_eq!(w.runs_of(1), Some(&[(4, 4, 2)][..]));
    assert_eq!(w.runs_of(2), Some(&[(10, 2, 4)][..]));
    assert_eq!(w.runs_of(3), None);
    // Features not innermost: no runs.
    assert!(super::Windows::new(&taps, 2, 7).runs_of(0).is_none());
}

/// NHWC / HWIO / NHWC 2-d convolution attributes.
fn attrs_nhwc(extra: Vec<(&'static str, Attribute)>) -> Vec<(&'static str, Attribute)> {
    let mut a = vec![
        ("input_batch_dimension", int(0)),
        ("input_feature_dimension", int(3)),
        ("input_spatial_dimensions", i64s(&[1, 2])),
        ("kernel_input_feature_dimension", int(2)),
        ("kernel_output_feature_dimension", int(3)),
        ("kernel_spatial_dimensions", i64s(&[0, 1])),
        ("output_batch_dimension", int(0)),
        ("output_feature_dimension", int(3)),
        ("output_spatial_dimensions", i64s(&[1, 2])),
    ];
    a.extend(extra);
    a
}

/// NCH / OIH / NCH 1-d convolution attributes.
fn attrs_1d(extra: Vec<(&'static str, Attribute)>) -> Vec<(&'static str, Attribute)> {
    let mut a = vec![
        ("input_batch_dimension", int(0)),
        ("input_feature_dimension", int(1)),
        ("input_spatial_dimensions", i64s(&[2])),
        ("kernel_output_feature_dimension", int(0)),
        ("kernel_input_feature_dimension", int(1)),
        ("kernel_spatial_dimensions", i64s(&[2])),
        ("output_batch_dimension", int(0)),
        ("output_feature_dimension", int(1)),
        ("output_spatial_dimensions", i64s(&[2])),
    ];
    a.extend(extra);
    a
}

#[test]
fn plain_1d_convolution_is_a_sliding_dot_product() {
    // [1, 2, 3, 4] with kernel [1, 0, -1] (valid): [1 - 3, 2 - 4] = [-2, -2].
    let x = f32s(&[1, 1, 4], &[1.0, 2.0, 3.0, 4.0]);
    let w = f32s(&[1, 1, 3], &[1.0, 0.0, -1.0]);
    let r = run_op(
        OpKind::Convolution,
        &[x, w],
        t(&[1, 1, 2], ElementType::F32),
        attrs_1d(vec![]),
    )
    .unwrap();
    assert_eq!(to_f32(&r), vec![-2.0, -2.0]);
}

#[test]
fn window_reversal_and_lhs_dilation() {
    // lhs dilation 2 turns [1, 2, 3] into [1, 0, 2, 0, 3]; padding (1, 1) gives
    // [0, 1, 0, 2, 0, 3, 0]; the reversed kernel [1, 2] becomes [2, 1], so output j is
    // 2 * p[j] + p[j + 1]: [1, 2, 2, 4, 3, 6].
    let x = f32s(&[1, 1, 3], &[1.0, 2.0, 3.0]);
    let w = f32s(&[1, 1, 2], &[1.0, 2.0]);
    let attrs = attrs_1d(vec![
        ("lhs_dilation", i64s(&[2])),
        ("padding", i64s(&[1, 1])),
        ("window_reversal", Attribute::DenseBoolArray(vec![true])),
    ]);
    let r = run_op(
        OpKind::Convolution,
        &[x, w],
        t(&[1, 1, 6], ElementType::F32),
        attrs,
    )
    .unwrap();
    assert_eq!(to_f32(&r), vec![1.0, 2.0, 2.0, 4.0, 3.0, 6.0]);
}

/// Direct definition of a 2-d grouped, strided, dilated, padded NHWC x HWIO convolution.
#[allow(clippy::too_many_arguments)]
fn naive_nhwc(
    x: &[i64],
    xs: [usize; 4],
    w: &[i64],
    ws: [usize; 4],
    groups: usize,
    stride: [usize; 2],
    pad: [i64; 2],
    rhs_dil: [usize; 2],
    out: [usize; 4],
) -> Vec<i64> {
    let [n, h, wd, c] = xs;
    let [kh, kw, ci, co] = ws;
    assert_eq!(c, ci * groups);
    let mut res = vec![0i64; out.iter().product()];
    for b in 0..n {
        for oy in 0..out[1] {
            for ox in 0..out[2] {
                for o in 0..co {
                    let g = o / (co / groups);
                    let mut s = 0;
                    for ky in 0..kh {
                        for kx in 0..kw {
                            let iy = (oy * stride[0] + ky * rhs_dil[0]) as i64 - pad[0];
                            let ix = (ox * stride[1] + kx * rhs_dil[1]) as i64 - pad[1];
                            if iy < 0 || ix < 0 || iy >= h as i64 || ix >= wd as i64 {
                                continue;
                            }
                            for i in 0..ci {
                                let xv =
                                    x[((b * h + iy as usize) * wd + ix as usize) * c + g * ci + i];
                                let wv = w[((ky * kw + kx) * ci + i) * co + o];
                                s += xv * wv;
                            }
                        }
                    }
                    res[((b * out[1] + oy) * out[2] + ox) * out[3] + o] = s;
                }
            }
        }
    }
    res
}

#[test]
fn large_nhwc_conv_split_over_threads_matches_the_direct_formula() {
    // x: 5x20x20x8, w: 3x3x8x16, stride 1, SAME padding: 2000 product rows of 72
    // (2.3M multiply-adds) split into blocks over the threads, the last one shorter.
    let xs = [5usize, 20, 20, 8];
    let ws = [3usize, 3, 8, 16];
    let xv: Vec<i64> = (0..16000).map(|i| (i * 7 % 13) as i64 - 6).collect();
    let wv: Vec<i64> = (0..1152).map(|i| (i * 5 % 9) as i64 - 4).collect();
    let out = [5usize, 20, 20, 16];
    let want = naive_nhwc(&xv, xs, &wv, ws, 1, [1, 1], [1, 1], [1, 1], out);
    let attrs = attrs_nhwc(vec![("padding", i64s(&[1, 1, 1, 1]))]);
    // Small integers: every sum is exact in f32, whatever the order.
    let as_f32 = |v: &[i64]| v.iter().map(|&x| x as f32).collect::<Vec<_>>();
    let x = f32s(&[5, 20, 20, 8], &as_f32(&xv));
    let w = f32s(&[3, 3, 8, 16], &as_f32(&wv));
    let r = run_op(
        OpKind::Convolution,
        &[x, w],
        t(&[5, 20, 20, 16], ElementType::F32),
        attrs,
    )
    .unwrap();
    assert_eq!(to_f32(&r), as_f32(&want));
}

#[test]
fn grouped_strided_dilated_conv_matches_the_direct_formula() {
    // x: 2x5x6x4 (NHWC), w: 2x3x2x6 (HWIO), 2 feature groups, stride (1, 2),
    // padding (1, 1) on H and (0, 2) on W, rhs dilation (2, 1).
    let xs = [2usize, 5, 6, 4];
    let ws = [2usize, 3, 2, 6];
    let xv: Vec<i64> = (0..240).map(|i| (i * 7 % 11) as i64 - 5).collect();
    let wv: Vec<i64> = (0..72).map(|i| (i * 5 % 7) as i64 - 3).collect();
    // H: 5 + 2 = 7, span (2-1)*2+1 = 3 -> 5. W: 6 + 2 = 8, span 3, stride 2 -> 3.
    let out = [2usize, 5, 3, 6];
    let want = naive_nhwc(&xv, xs, &wv, ws, 2, [1, 2], [1, 0], [2, 1], out);
    let attrs = attrs_nhwc(vec![
        ("window_strides", i64s(&[1, 2])),
        ("padding", i64s(&[1, 1, 0, 2])),
        ("rhs_dilation", i64s(&[2, 1])),
        ("feature_group_count", int(2)),
    ]);
    let x = i64s_lit(&[2, 5, 6, 4], &xv);
    let w = i64s_lit(&[2, 3, 2, 6], &wv);
    let out_shape: Vec<i64> = out.iter().map(|&v| v as i64).collect();
    let r = run_op(
        OpKind::Convolution,
        &[x, w],
        t(&out_shape, ElementType::S64),
        attrs.clone(),
    )
    .unwrap();
    let got: Vec<i64> = r
        .data
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, want);
    // The float path (matrix products) gives the same sums: small integers are exact.
    let as_f32 = |v: &[i64]| v.iter().map(|&x| x as f32).collect::<Vec<_>>();
    let x = f32s(&[2, 5, 6, 4], &as_f32(&xv));
    let w = f32s(&[2, 3, 2, 6], &as_f32(&wv));
    let r = run_op(
        OpKind::Convolution,
        &[x, w],
        t(&out_shape, ElementType::F32),
        attrs,
    )
    .unwrap();
    assert_eq!(to_f32(&r), as_f32(&want));
}

/// Kernel-gradient dimension numbers of an NHWC convolution (`[f, 0, 1, b] x [i, 0, 1,
/// o] -> [0, 1, b, f]`: the forward batch is the input feature, its channels the batch).
fn attrs_kernel_gradient(extra: Vec<(&'static str, Attribute)>) -> Vec<(&'static str, Attribute)> {
    let mut a = vec![
        ("input_batch_dimension", int(3)),
        ("input_feature_dimension", int(0)),
        ("input_spatial_dimensions", i64s(&[1, 2])),
        ("kernel_input_feature_dimension", int(0)),
        ("kernel_output_feature_dimension", int(3)),
        ("kernel_spatial_dimensions", i64s(&[1, 2])),
        ("output_batch_dimension", int(2)),
        ("output_feature_dimension", int(3)),
        ("output_spatial_dimensions", i64s(&[0, 1])),
    ];
    a.extend(extra);
    a
}

#[test]
fn kernel_gradients_by_position_match_the_direct_loop() {
    // The batch is innermost in the input, so the float path copies windows along it
    // one output position at a time. Each case against the integer path (the direct
    // loop): small integers keep every f32 sum exact, whatever the order.
    //   - a strided layer's gradient (rhs dilation 2): 9 positions of 576 taps of 8 x 16,
    //     five chunks of taps, split over threads;
    //   - padding wider than the window's reach: corner positions whose first chunks
    //     hold no tap at all, and taps in the padding inside a chunk;
    //   - one input feature and a batch of 3 (the first layer of an RGB network).
    type Case = ([i64; 4], [i64; 4], [i64; 4], Vec<(&'static str, Attribute)>);
    let cases: [Case; 3] = [
        (
            [8, 48, 48, 16],
            [8, 24, 24, 32],
            [3, 3, 16, 32],
            vec![
                ("rhs_dilation", i64s(&[2, 2])),
                ("padding", i64s(&[0, 1, 0, 1])),
            ],
        ),
        (
            [4, 10, 10, 6],
            [4, 10, 10, 5],
            [7, 7, 6, 5],
            vec![("padding", i64s(&[3, 3, 3, 3]))],
        ),
        (
            [1, 12, 9, 3],
            [1, 12, 9, 4],
            [3, 3, 3, 4],
            vec![("padding", i64s(&[1, 1, 1, 1]))],
        ),
    ];
    for (xs, ws, os, extra) in cases {
        float_matches_integer_loop(xs, ws, os, attrs_kernel_gradient(extra));
    }
}

/// Runs a convolution of small integers in f32 and in f64 and asserts both equal the
/// integer path (the direct loop): every float sum is exact, whatever its order.
fn float_matches_integer_loop(
    xs: [i64; 4],
    ws: [i64; 4],
    os: [i64; 4],
    attrs: Vec<(&'static str, Attribute)>,
) {
    let n = |s: &[i64; 4]| s.iter().product::<i64>() as usize;
    let xv: Vec<i64> = (0..n(&xs)).map(|i| (i * 7 % 13) as i64 - 6).collect();
    let wv: Vec<i64> = (0..n(&ws)).map(|i| (i * 5 % 9) as i64 - 4).collect();
    let exact = run_op(
        OpKind::Convolution,
        &[i64s_lit(&xs, &xv), i64s_lit(&ws, &wv)],
        t(&os, ElementType::S64),
        attrs.clone(),
    )
    .unwrap();
    let want: Vec<f64> = exact
        .data
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f64)
        .collect();
    assert!(want.iter().any(|&v| v != 0.0));
    let as_f32 = |v: &[i64]| v.iter().map(|&x| x as f32).collect::<Vec<_>>();
    let r = run_op(
        OpKind::Convolution,
        &[f32s(&xs, &as_f32(&xv)), f32s(&ws, &as_f32(&wv))],
        t(&os, ElementType::F32),
        attrs.clone(),
    )
    .unwrap();
    let want_f32: Vec<f32> = want.iter().map(|&v| v as f32).collect();
    assert_eq!(to_f32(&r), want_f32, "f32 {xs:?} x {ws:?}");
    let as_f64 = |v: &[i64]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
    let r = run_op(
        OpKind::Convolution,
        &[f64s(&xs, &as_f64(&xv)), f64s(&ws, &as_f64(&wv))],
        t(&os, ElementType::F64),
        attrs,
    )
    .unwrap();
    assert_eq!(to_f64(&r), want, "f64 {xs:?} x {ws:?}");
}

#[test]
fn depthwise_convolutions_match_the_direct_loop() {
    // One channel per group, the channels the vector lanes: 83 channels make a block of
    // 64 lanes, one of 16 and three single lanes.
    //   - stride 1, SAME padding, enough work to split the rows over the threads;
    //   - stride 2 with rhs dilation 2 and uneven padding;
    //   - the input gradient of a strided layer: lhs dilation 2, the kernel stored with
    //     its output features before its (single) input feature, as JAX writes it;
    //   - the output stored [h, w, n, c]: its rows are not in order, so they are staged.
    let groups = |c: i64| ("feature_group_count", int(c));
    let mut hwoi = attrs_nhwc(vec![
        groups(20),
        ("lhs_dilation", i64s(&[2, 2])),
        ("padding", i64s(&[1, 2, 1, 2])),
    ]);
    hwoi[3].1 = int(3);
    hwoi[4].1 = int(2);
    let mut hwnc = attrs_nhwc(vec![groups(83), ("padding", i64s(&[1, 1, 1, 1]))]);
    hwnc[6].1 = int(2);
    hwnc[8].1 = i64s(&[0, 1]);
    let cases: [([i64; 4], [i64; 4], [i64; 4], _); 4] = [
        (
            [4, 20, 20, 83],
            [3, 3, 1, 83],
            [4, 20, 20, 83],
            attrs_nhwc(vec![groups(83), ("padding", i64s(&[1, 1, 1, 1]))]),
        ),
        (
            [2, 9, 11, 20],
            [3, 3, 1, 20],
            [2, 3, 5, 20],
            attrs_nhwc(vec![
                groups(20),
                ("window_strides", i64s(&[2, 2])),
                ("rhs_dilation", i64s(&[2, 2])),
                ("padding", i64s(&[1, 0, 2, 1])),
            ]),
        ),
        ([2, 5, 6, 20], [3, 3, 20, 1], [2, 10, 12, 20], hwoi),
        ([3, 7, 5, 83], [3, 3, 1, 83], [7, 5, 3, 83], hwnc),
    ];
    for (xs, ws, os, attrs) in cases {
        float_matches_integer_loop(xs, ws, os, attrs);
    }
}

#[test]
fn depthwise_kernel_gradients_match_the_direct_loop() {
    // `batch_group_count` = channels, the forward batch summed: every output element is
    // a whole image's sum. 70 channels (a block of 64 lanes and six single lanes) over a
    // 12x12 image take two chunks of taps; 8 images of 24x24 with 64 channels take nine
    // and split their nine rows over the threads.
    let cases = [
        ([4, 12, 12, 70], [4, 12, 12, 70], [3, 3, 1, 70]),
        ([8, 24, 24, 64], [8, 24, 24, 64], [3, 3, 1, 64]),
    ];
    for (xs, ws, os) in cases {
        let attrs = attrs_kernel_gradient(vec![
            ("batch_group_count", int(xs[3])),
            ("padding", i64s(&[1, 1, 1, 1])),
        ]);
        float_matches_integer_loop(xs, ws, os, attrs);
    }
}

#[test]
fn batch_group_count_splits_batch_across_output_features() {
    // Two batches, batch_group_count 2, two output features: feature o sees batch o.
    // x = [[1, 2]], [[3, 4]] (N=2, C=1, W=2); kernel size 1 with weights [10, 100].
    let x = f32s(&[2, 1, 2], &[1.0, 2.0, 3.0, 4.0]);
    let w = f32s(&[2, 1, 1], &[10.0, 100.0]);
    let attrs = attrs_1d(vec![("batch_group_count", int(2))]);
    let r = run_op(
        OpKind::Convolution,
        &[x, w],
        t(&[1, 2, 2], ElementType::F32),
        attrs,
    )
    .unwrap();
    assert_eq!(to_f32(&r), vec![10.0, 20.0, 300.0, 400.0]);
}

#[test]
fn repeated_dimension_numbers_and_huge_padding_are_errors() {
    let x = f32s(&[1, 1, 2], &[0.0; 2]);
    let w = f32s(&[1, 1, 1], &[0.0]);
    let mut attrs = attrs_1d(vec![]);
    attrs[1].1 = int(0);
    let r = run_op(
        OpKind::Convolution,
        &[x.clone(), w.clone()],
        t(&[1, 1, 2], ElementType::F32),
        attrs,
    );
    assert!(r.is_err());
    let attrs = attrs_1d(vec![("padding", i64s(&[i64::MAX, i64::MAX]))]);
    assert!(run_op(
        OpKind::Convolution,
        &[x, w],
        t(&[1, 1, 2], ElementType::F32),
        attrs
    )
    .is_err());
}

#[test]
fn mismatched_groups_are_an_error() {
    let x = f32s(&[1, 3, 2], &[0.0; 6]);
    let w = f32s(&[2, 1, 1], &[0.0; 2]);
    let attrs = attrs_1d(vec![("feature_group_count", int(2))]);
    assert!(run_op(
        OpKind::Convolution,
        &[x, w],
        t(&[1, 2, 2], ElementType::F32),
        attrs
    )
    .is_err());
}

#[test]
fn positions_group_by_the_taps_they_use() {
    // A 1-d lhs-dilated window of three taps: even positions use the middle tap, odd ones
    // the outer two, and the last (odd) position only the first, at the input's end.
    let pair = |q: usize, r: usize| (q + r, r);
    let taps: Vec<(usize, Vec<(usize, usize)>)> = (0..8)
        .map(|q| {
            let used = match q {
                7 => vec![0],
                _ if q % 2 == 0 => vec![1],
                _ => vec![0, 2],
            };
            (q, used.into_iter().map(|r| pair(q, r)).collect())
        })
        .collect();
    let groups = super::patterns::group_positions(&taps, &[0, 1, 2], &[0, 1, 2]);
    let got: Vec<(Vec<usize>, Vec<usize>)> = groups
        .iter()
        .map(|g| (g.taps.clone(), g.positions.clone()))
        .collect();
    assert_eq!(
        got,
        vec![(vec![0, 2], vec![1, 3, 5, 7]), (vec![1], vec![0, 2, 4, 6])]
    );
    // Every position using every tap but the edges': one matrix stays cheaper.
    let full: Vec<(usize, Vec<(usize, usize)>)> = (0..8)
        .map(|q| {
            let used: Vec<usize> = (0..3).filter(|&r| q + r >= 1 && q + r <= 8).collect();
            (q, used.into_iter().map(|r| pair(q, r)).collect())
        })
        .collect();
    assert!(super::patterns::group_positions(&full, &[0, 1, 2], &[0, 1, 2]).is_empty());
}

#[test]
fn input_gradients_of_strided_convolutions_match_the_direct_loop() {
    // lhs dilation: each position's window falls on input elements at a few of the taps,
    // so the positions run in groups, one product per pattern of taps.
    //   - a stride-2 NHWC layer's input gradient (kernel [h, w, o, i], reversed), large
    //     enough to split its batch over the threads;
    //   - stride 3 with a 5x5 kernel and uneven padding;
    //   - NCHW, features not innermost in the input or the output.
    let mut grad = attrs_nhwc(vec![
        ("lhs_dilation", i64s(&[2, 2])),
        ("padding", i64s(&[1, 2, 1, 2])),
        (
            "window_reversal",
            Attribute::DenseBoolArray(vec![true, true]),
        ),
    ]);
    grad[3].1 = int(3);
    grad[4].1 = int(2);
    let nchw = vec![
        ("input_batch_dimension", int(0)),
        ("input_feature_dimension", int(1)),
        ("input_spatial_dimensions", i64s(&[2, 3])),
        ("kernel_output_feature_dimension", int(0)),
        ("kernel_input_feature_dimension", int(1)),
        ("kernel_spatial_dimensions", i64s(&[2, 3])),
        ("output_batch_dimension", int(0)),
        ("output_feature_dimension", int(1)),
        ("output_spatial_dimensions", i64s(&[2, 3])),
        ("lhs_dilation", i64s(&[2, 2])),
        ("padding", i64s(&[1, 1, 2, 1])),
    ];
    let cases: [([i64; 4], [i64; 4], [i64; 4], _); 3] = [
        ([8, 16, 16, 32], [3, 3, 16, 32], [8, 32, 32, 16], grad),
        (
            [2, 6, 7, 5],
            [5, 5, 5, 4],
            [2, 17, 17, 4],
            attrs_nhwc(vec![
                ("lhs_dilation", i64s(&[3, 3])),
                ("padding", i64s(&[2, 3, 1, 1])),
            ]),
        ),
        ([2, 4, 6, 5], [3, 4, 3, 3], [2, 3, 11, 10], nchw),
    ];
    for (xs, ws, os, attrs) in cases {
        float_matches_integer_loop(xs, ws, os, attrs);
    }
}

#[test]
fn kernel_gradients_of_few_channels_sum_outer_products() {
    // A batch of at most four values innermost in the input (the forward channels of an
    // RGB or grayscale layer) with the kernel's features contiguous: each position's block
    // of sums stays in registers. Against the direct loop, f32 and f64:
    //   - RGB, 16 features, split over the threads;
    //   - one channel and 20 features (a block of 16 lanes and four single ones);
    //   - four channels and 8 features (single lanes only), rhs dilation 2;
    //   - the output's features outermost (written element by element).
    type Case = ([i64; 4], [i64; 4], [i64; 4], Vec<(&'static str, Attribute)>);
    let pad = |p: &[i64]| ("padding", i64s(p));
    let cases: [Case; 3] = [
        (
            [8, 24, 24, 3],
            [8, 24, 24, 16],
            [3, 3, 3, 16],
            vec![pad(&[1, 1, 1, 1])],
        ),
        (
            [5, 9, 9, 1],
            [5, 9, 9, 20],
            [3, 3, 1, 20],
            vec![pad(&[1, 1, 1, 1])],
        ),
        (
            [3, 14, 14, 4],
            [3, 7, 7, 8],
            [3, 3, 4, 8],
            vec![("rhs_dilation", i64s(&[2, 2])), pad(&[0, 1, 0, 1])],
        ),
    ];
    for (xs, ws, os, extra) in cases {
        float_matches_integer_loop(xs, ws, os, attrs_kernel_gradient(extra));
    }
    let mut features_first = attrs_kernel_gradient(vec![pad(&[1, 1, 1, 1])]);
    for (name, value) in &mut features_first {
        match *name {
            "output_batch_dimension" => *value = int(3),
            "output_feature_dimension" => *value = int(0),
            "output_spatial_dimensions" => *value = i64s(&[1, 2]),
            _ => {}
        }
    }
    float_matches_integer_loop([2, 6, 7, 3], [2, 6, 7, 16], [16, 3, 3, 3], features_first);
}
