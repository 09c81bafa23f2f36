"""Convolutions and matrix products, oxla against JAX's cpu backend: dimension numbers,
strides, padding (negative included), lhs/rhs dilation, feature and batch groups, empty
operands, dtypes, and gradients (which produce the transposed and dilated forms)."""

import numpy as np
import pytest

from _support import require_jax

jax = require_jax()
jnp = jax.numpy
lax = jax.lax

from differential import check  # noqa: E402


def data(shape, dtype, seed):
    values = np.random.default_rng(seed).standard_normal(shape)
    if np.issubdtype(np.dtype(dtype), np.integer):
        values = np.round(values * 3)
    return values.astype(dtype)


# (lhs NCHW, rhs OIHW, strides, padding, lhs_dilation, rhs_dilation, feature_groups,
#  batch_groups)
CASES = [
    ((1, 3, 8, 8), (4, 3, 3, 3), (1, 1), "SAME", None, None, 1, 1),
    ((2, 3, 9, 7), (5, 3, 3, 2), (2, 1), "VALID", None, None, 1, 1),
    ((2, 4, 8, 8), (6, 2, 3, 3), (1, 2), [(1, 2), (0, 1)], None, None, 2, 1),
    ((1, 4, 7, 7), (4, 1, 3, 3), (1, 1), "SAME", None, None, 4, 1),  # depthwise
    ((4, 2, 6, 6), (6, 2, 3, 3), (1, 1), "VALID", None, None, 1, 2),
    ((1, 2, 6, 6), (3, 2, 3, 3), (1, 1), [(2, 2), (1, 1)], (2, 2), None, 1, 1),
    ((1, 2, 9, 9), (3, 2, 3, 3), (1, 1), "VALID", None, (2, 3), 1, 1),
    ((1, 2, 6, 6), (3, 2, 2, 2), (3, 3), [(-1, 0), (0, -1)], None, None, 1, 1),
    ((1, 1, 1, 1), (1, 1, 1, 1), (1, 1), "VALID", None, None, 1, 1),
    ((1, 3, 4, 4), (2, 3, 5, 5), (1, 1), [(4, 4), (4, 4)], None, None, 1, 1),
    ((0, 3, 5, 5), (2, 3, 3, 3), (1, 1), "SAME", None, None, 1, 1),  # empty batch
    ((1, 0, 5, 5), (2, 0, 3, 3), (1, 1), "SAME", None, None, 1, 1),  # no input features
    ((1, 3, 5, 5), (0, 3, 3, 3), (1, 1), "SAME", None, None, 1, 1),  # no output features
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32], ids=lambda d: np.dtype(d).name)
def test_conv_nchw(case, dtype):
    lhs_shape, rhs_shape, strides, padding, lhs_dil, rhs_dil, fgc, bgc = CASES[case]

    def fn(x, w):
        return lax.conv_general_dilated(
            x, w, strides, padding, lhs_dilation=lhs_dil, rhs_dilation=rhs_dil,
            feature_group_count=fgc, batch_group_count=bgc,
        )

    check(fn, data(lhs_shape, dtype, 0), data(rhs_shape, dtype, 1))


@pytest.mark.parametrize("case", [0, 1, 2, 5, 6])
def test_conv_nhwc_and_gradients(case):
    lhs_shape, rhs_shape, strides, padding, lhs_dil, rhs_dil, fgc, bgc = CASES[case]
    x = np.transpose(data(lhs_shape, np.float32, 2), (0, 2, 3, 1))  # NHWC
    w = np.transpose(data(rhs_shape, np.float32, 3), (2, 3, 1, 0))  # HWIO

    def fn(x, w):
        return lax.conv_general_dilated(
            x, w, strides, padding, lhs_dilation=lhs_dil, rhs_dilation=rhs_dil,
            feature_group_count=fgc, batch_group_count=bgc,
            dimension_numbers=("NHWC", "HWIO", "NHWC"),
        )

    check(fn, x, w)
    # Weight gradients sum over every output position; the order of that f32 sum differs
    # between backends, so values near cancellation differ by a few ulps of the terms.
    check(jax.grad(lambda x, w: jnp.sum(jnp.tanh(fn(x, w))), argnums=(0, 1)), x, w, atol=1e-5)


@pytest.mark.parametrize("channels,features,stride", [(1, 20, 1), (2, 8, 2), (4, 33, 1)])
def test_kernel_gradient_of_few_input_channels(channels, features, stride):
    # The kernel gradient of a layer over images of one to four channels: the forward
    # channels are the gradient convolution's batch, summed as outer products in registers.
    x = data((6, 17, 15, channels), np.float32, 24)
    w = data((3, 3, channels, features), np.float32, 25)
    dy_shape = jax.eval_shape(
        lambda x, w: lax.conv_general_dilated(x, w, (stride, stride), "SAME",
                                              dimension_numbers=("NHWC", "HWIO", "NHWC")),
        x, w).shape
    dy = data(dy_shape, np.float32, 26)

    def kernel_grad(x, dy):
        conv = lambda v: lax.conv_general_dilated(x, v, (stride, stride), "SAME",
                                                  dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jax.vjp(conv, w)[1](dy)[0]

    check(kernel_grad, x, dy, atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, jnp.bfloat16], ids=["float32", "bfloat16"])
def test_cnn_training_step_gradients(dtype):
    # A small NHWC network's weight and input gradients at sizes where the kernel
    # gradients split over threads and sum their windows in several chunks: an RGB first
    # layer (a batch of 3 in the gradient's convolution), a strided layer (its input
    # gradient dilates, its kernel gradient has a dilated window) and a 1x1 layer.
    x = data((8, 32, 32, 3), np.float32, 4)
    ws = [
        data((3, 3, 3, 16), np.float32, 5) * 0.3,
        data((3, 3, 16, 32), np.float32, 6) * 0.1,
        data((1, 1, 32, 8), np.float32, 7) * 0.2,
    ]
    dn = ("NHWC", "HWIO", "NHWC")

    def loss(ws, x):
        h = x.astype(dtype)
        for w, stride in zip(ws, (1, 2, 1)):
            h = lax.conv_general_dilated(h, w.astype(dtype), (stride, stride), "SAME",
                                         dimension_numbers=dn)
            h = jax.nn.relu(h)
        return jnp.mean(h.astype(jnp.float32) ** 2)

    tol = 2e-2 if dtype == jnp.bfloat16 else 1e-5
    check(jax.grad(loss, argnums=(0, 1)), ws, x, atol=tol, rtol=tol)


@pytest.mark.parametrize("stride,multiplier", [(1, 1), (2, 1), (1, 2)])
@pytest.mark.parametrize("dtype", [np.float32, jnp.bfloat16], ids=["float32", "bfloat16"])
def test_depthwise_conv_and_gradients(stride, multiplier, dtype):
    # A depthwise (MobileNet-style) NHWC convolution, one channel per group, and its
    # gradients: the input gradient is another depthwise convolution (with lhs dilation
    # for a strided one), the kernel gradient a convolution with batch_group_count equal
    # to the channels. 70 channels fill a block of 64 vector lanes and six single lanes;
    # a channel multiplier of 2 gives each group two output features.
    channels = 70
    x = data((4, 18, 18, channels), np.float32, 8)
    w = data((3, 3, 1, channels * multiplier), np.float32, 9) * 0.3

    def fn(x, w):
        return lax.conv_general_dilated(
            x.astype(dtype), w.astype(dtype), (stride, stride), "SAME",
            dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=channels,
        ).astype(np.float32)

    tol = 2e-2 if dtype == jnp.bfloat16 else 1e-5
    check(fn, x, w, atol=tol, rtol=tol)
    # The gradients for a given cotangent, exact in bfloat16, so both backends convolve
    # the same values (cpu keeps a bfloat16 chain's intermediates in f32). A kernel
    # gradient sums 1296 products of magnitude up to ~10 in f32, in a different order on
    # each backend: a few 1e-5 apart.
    g = data(jax.eval_shape(fn, x, w).shape, np.float32, 10).astype(dtype).astype(np.float32)
    tol = 2e-2 if dtype == jnp.bfloat16 else 2e-4
    check(lambda x, w, g: jax.vjp(fn, x, w)[1](g), x, w, g, atol=tol, rtol=tol)


@pytest.mark.parametrize("strides,padding,kernel",
                         [((2, 2), "SAME", (3, 3)), ((3, 2), "VALID", (5, 4)),
                          ((2, 2), [(2, 1), (0, 3)], (4, 4))])
def test_conv_transpose_and_strided_input_gradients(strides, padding, kernel):
    # Transposed convolutions (lhs dilation): each output position reads input elements at
    # a few of the kernel's taps, which ones depending on its phase, so the positions run
    # grouped by pattern. Large enough that the batch splits over the threads.
    x = data((8, 12, 11, 24), np.float32, 11)
    w = data(kernel + (24, 16), np.float32, 12) * 0.2
    dn = ("NHWC", "HWIO", "NHWC")
    check(lambda x, w: lax.conv_transpose(x, w, strides, padding, dimension_numbers=dn),
          x, w, atol=1e-5, rtol=1e-5)

    def forward(v, w):
        return lax.conv_general_dilated(v, w, strides, "SAME", dimension_numbers=dn)

    y = data((8, 24, 22, 16), np.float32, 13)
    g = data(jax.eval_shape(forward, y, w.transpose(0, 1, 3, 2)).shape, np.float32, 14)
    check(lambda w, g: jax.vjp(lambda v: forward(v, w), y)[1](g)[0],
          w.transpose(0, 1, 3, 2), g, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("shape", [(1, 5, 3), (2, 8, 2)])
def test_conv_1d_and_3d(shape):
    x = data(shape, np.float32, 4)
    w = data((4, shape[1], 3), np.float32, 5)
    check(lambda x, w: lax.conv_general_dilated(x, w, (1,), "SAME"), x, w)
    x3 = data((1, 2, 4, 5, 3), np.float32, 6)
    w3 = data((3, 2, 2, 3, 2), np.float32, 7)
    check(lambda x, w: lax.conv_general_dilated(x, w, (1, 2, 1), "SAME"), x3, w3)


@pytest.mark.parametrize(
    "lhs,rhs,dims",
    [
        ((4, 5), (5, 3), (((1,), (0,)), ((), ()))),
        ((5, 4), (5, 3), (((0,), (0,)), ((), ()))),  # transposed lhs
        ((4, 5), (3, 5), (((1,), (1,)), ((), ()))),  # transposed rhs
        ((2, 4, 5), (2, 5, 3), (((2,), (1,)), ((0,), (0,)))),  # batched
        ((3, 2, 4, 5), (2, 5, 3, 6), (((3,), (1,)), ((1,), (0,)))),  # batch in the middle
        ((0, 5), (5, 3), (((1,), (0,)), ((), ()))),
        ((4, 0), (0, 3), (((1,), (0,)), ((), ()))),  # empty contraction: zeros
        ((7,), (7,), (((0,), (0,)), ((), ()))),  # vector dot
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, jnp.bfloat16],
                         ids=lambda d: np.dtype(d).name)
def test_dot_general(lhs, rhs, dims, dtype):
    check(lambda a, b: lax.dot_general(a, b, dims), data(lhs, dtype, 8), data(rhs, dtype, 9))


@pytest.mark.parametrize("m,k,n", [(32, 1024, 256), (1, 300, 500), (8, 64, 96)])
def test_matmul_of_few_rows_with_a_transposed_weight(m, k, n):
    # `x @ w.T` with few rows and a large row-major `w` (an RNN's gradient through its
    # recurrent weight) runs as the transposed product `(w @ x.T).T`.
    x = data((m, k), np.float32, 14)
    w = data((n, k), np.float32, 15)
    check(lambda x, w: x @ w.T, x, w, atol=1e-4 * np.sqrt(k), rtol=1e-5)


def test_lstm_gradient_through_scan():
    # A recurrent cell's gradient through `lax.scan`: per step, products of the output
    # gradient with the transposed recurrent weight, accumulated weight gradients.
    wx = data((16, 256), np.float32, 16) * 0.2
    wh = data((64, 256), np.float32, 17) * 0.1
    xs = data((12, 8, 16), np.float32, 18)

    def loss(wx, wh, xs):
        def cell(carry, x):
            h, c = carry
            i, f, o, g = jnp.split(x @ wx + h @ wh, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h
        zeros = jnp.zeros((xs.shape[1], wh.shape[0]))
        _, hs = lax.scan(cell, (zeros, zeros), xs)
        return jnp.sum(hs ** 2)

    check(jax.grad(loss, argnums=(0, 1, 2)), wx, wh, xs, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("k", [8, 32, 300])
def test_products_added_to_a_value(k):
    # `x + dot` runs as one product summing into `x`: a weight-gradient accumulator carried
    # through a loop (`acc + (dz.T @ h).T`, the buffer reused each step), a residual
    # connection whose input stays live, and a sum with the product first.
    dz = data((5, k, 96), np.float32, 19)
    h = data((5, k, 40), np.float32, 20)
    acc = data((40, 96), np.float32, 21)

    def accumulate(acc, dz, h):
        return lax.fori_loop(0, 5, lambda i, a: a + (dz[i].T @ h[i]).T, acc)

    check(accumulate, acc, dz, h, atol=1e-4 * np.sqrt(5 * k), rtol=1e-5)
    x = data((3, 16, k), np.float32, 22)
    w = data((k, k), np.float32, 23)
    check(lambda x, w: (x + x @ w, x * 2.0), x, w, atol=1e-4 * np.sqrt(k), rtol=1e-5)
    check(lambda x, w: jnp.tanh(x) @ w + x, x, w, atol=1e-4 * np.sqrt(k), rtol=1e-5)


def test_matmul_large_and_preferred_type():
    a = data((130, 257), np.float32, 10)
    b = data((257, 65), np.float32, 11)
    # K = 257 terms of size ~1: the summation order (blocked on both backends, differently)
    # moves results by up to ~sqrt(K) * |terms| * eps.
    check(jnp.matmul, a, b, atol=1e-4)
    ai = data((6, 7), np.int8, 12)
    bi = data((7, 5), np.int8, 13)
    check(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ())),
                                       preferred_element_type=jnp.int32), ai, bi)


@pytest.mark.parametrize("dtype", [np.float16, jnp.bfloat16], ids=lambda d: np.dtype(d).name)
def test_conv_with_wider_preferred_type_sums_like_widened_operands(dtype, oxla_device):
    # As on the cpu backend, narrow operands with an f32 result give exactly the sums of
    # the f32 convolution of the widened operands.
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 2, 9, 10)).astype(dtype)
    y = rng.standard_normal((3, 2, 4, 5)).astype(dtype)
    conv = lambda a, b, **kw: lax.conv(a, b, (1, 1), "SAME", **kw)  # noqa: E731
    xs, ys = jax.device_put((x, y), oxla_device)
    mixed = jax.jit(lambda a, b: conv(a, b, preferred_element_type=jnp.float32))(xs, ys)
    widened = jax.jit(lambda a, b: conv(a.astype(jnp.float32), b.astype(jnp.float32)))(xs, ys)
    np.testing.assert_array_equal(np.asarray(mixed), np.asarray(widened))
    check(lambda a, b: conv(a, b, preferred_element_type=jnp.float32), x, y)
