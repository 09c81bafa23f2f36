"""Windowed reductions against JAX's cpu backend: pools, cumulative ops and pool
gradients.

oxla folds each window in the order XLA's cpu backend does, and runs cumulative ops as
the same tree XLA rewrites them to, so most compare exactly (tolerance 0); the
exceptions are noted where they occur.
"""

import numpy as np
import pytest

from _support import require_jax

jax = require_jax()
jnp = jax.numpy
lax = jax.lax

from differential import check  # noqa: E402

EXACT = dict(rtol=0, atol=0)


def _has_avx512f():
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512f" in f.read()
    except OSError:
        return False


# cpu's order of a window sum follows the vector width it compiles for: with AVX-512 it
# adds each window in row-major order, as oxla does; without it, some VALID
# windows are summed in another order and a quarter to a third of the sums differ in the
# last bit. Window sums are compared exactly only where cpu's order is oxla's.
WINDOW_SUMS_EXACT = EXACT if _has_avx512f() else {}


def rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rng.integers(-50, 50, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def with_edges(x):
    """`x` with NaN, -0.0, +0.0 and infinities in its first elements."""
    x = x.copy()
    flat = x.reshape(-1)
    edges = [np.nan, -0.0, 0.0, np.inf, -np.inf, -0.0]
    flat[: len(edges)] = np.array(edges[: flat.size], dtype=x.dtype)
    return x


def max_pool(window, strides, padding):
    return lambda a: lax.reduce_window(a, -jnp.inf, lax.max, window, strides, padding)


def avg_pool(window, strides, padding):
    size = int(np.prod(window))
    return lambda a: lax.reduce_window(a, 0.0, lax.add, window, strides, padding) / size


# (layout, window, strides): NHWC pools leave the channels alone, NCHW pools window the
# two trailing dimensions.
POOLS = [
    ("nhwc", (1, 3, 3, 1), (1, 2, 2, 1)),
    ("nhwc", (1, 2, 2, 1), (1, 2, 2, 1)),
    ("nhwc", (1, 3, 3, 1), (1, 1, 1, 1)),
    ("nchw", (1, 1, 3, 3), (1, 1, 2, 2)),
    ("nchw", (1, 1, 2, 2), (1, 1, 1, 1)),
]
SHAPES = {"nhwc": (2, 17, 15, 8), "nchw": (2, 8, 17, 15)}


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("layout,window,strides", POOLS)
@pytest.mark.parametrize("dtype", [np.float32, jnp.bfloat16])
def test_max_pool(layout, window, strides, padding, dtype):
    x = with_edges(rand(SHAPES[layout], dtype))
    check(max_pool(window, strides, padding), x, **EXACT)


def sum_pool(window, strides, padding):
    return lambda a: lax.reduce_window(a, 0.0, lax.add, window, strides, padding)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("layout,window,strides", POOLS)
def test_avg_pool(layout, window, strides, padding):
    x = rand(SHAPES[layout], np.float32)
    # oxla sums each window in row-major order, as cpu does for these pools except where
    # both windowed dimensions are padded and the window is 2 wide (SAME pads 2x2 windows
    # here on one side only): cpu then adds a window's columns before its rows, and a
    # fifth to a quarter of the sums differ in the last bit.
    exact = not (padding == "SAME" and 2 in window)
    check(sum_pool(window, strides, padding), x, **(WINDOW_SUMS_EXACT if exact else {}))
    # cpu divides by a constant that is not a power of two in its own way (1 ulp apart on
    # some elements), so the averages compare within the default tolerance.
    check(avg_pool(window, strides, padding), x)


def test_pools_of_other_types():
    x = rand((2, 9, 9, 4), np.int32)
    check(lambda a: lax.reduce_window(a, 0, lax.add, (1, 3, 3, 1), (1, 2, 2, 1), "SAME"), x)
    check(lambda a: lax.reduce_window(a, np.int32(-2**31), lax.max, (1, 2, 2, 1),
                                      (1, 1, 1, 1), "VALID"), x)
    h = rand((2, 9, 9, 4), np.float16)
    check(max_pool((1, 3, 3, 1), (1, 2, 2, 1), "SAME"), h, **EXACT)
    # cpu's f16 window sums follow no one order of per-step rounded adds: compared within
    # the f16 tolerance.
    check(lambda a: lax.reduce_window(a, np.float16(0), lax.add, (1, 2, 2, 1), (1, 2, 2, 1),
                                      "VALID"), h)


def test_dilated_windows():
    x = rand((3, 20, 11), np.float32)
    check(lambda a: lax.reduce_window(a, -jnp.inf, lax.max, (1, 3, 2), (1, 2, 1),
                                      [(0, 0), (2, 1), (1, 1)],
                                      base_dilation=(1, 2, 1), window_dilation=(1, 2, 3)),
          x, **EXACT)
    check(lambda a: lax.reduce_window(a, 0.0, lax.add, (1, 3, 2), (1, 1, 2), "VALID",
                                      window_dilation=(1, 3, 1)), x, **EXACT)


CUMULATIVE = {
    "cumsum": lax.cumsum,
    "cumprod": lax.cumprod,
    "cummax": lax.cummax,
    "cummin": lax.cummin,
}


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("name", sorted(CUMULATIVE))
def test_cumulative_along_each_axis(name, axis, reverse):
    # Lengths on both sides of the rewrite's base length (16) and of its multiples.
    x = rand((5, 40, 17), np.float32)
    if name == "cumprod":
        x = 1 + x / 64
    op = CUMULATIVE[name]
    check(lambda a: op(a, axis=axis, reverse=reverse), with_edges(x), **EXACT)


@pytest.mark.parametrize("n,dtype", [
    (7, np.float32), (16, np.float32), (17, np.float32), (4097, np.float32),
    (1 << 20, np.float32), (4097, np.float16), (1 << 20, jnp.bfloat16), (4097, np.int32),
], ids=lambda v: getattr(v, "__name__", str(v)))
def test_long_cumsum(n, dtype):
    x = rand((n,), dtype)
    check(jnp.cumsum, x, **EXACT)
    check(lambda a: lax.cumsum(a, reverse=True), x, **EXACT)


def test_cumsum_of_a_matrix():
    x = rand((1024, 1024), np.float32)
    check(lambda a: jnp.cumsum(a, axis=1), x, **EXACT)
    check(lambda a: jnp.cumsum(a, axis=0), x, **EXACT)


@pytest.mark.parametrize("n", [7, 16])
def test_short_cumlogsumexp(n):
    # Up to 16 the scan runs as windows on both backends; the body's log and exp are
    # each backend's own, so a few ulps apart.
    check(lax.cumlogsumexp, rand((3, n), np.float32), atol=1e-6, rtol=1e-6)


POOL_GRADS = [
    ("max", (1, 3, 3, 1), (1, 2, 2, 1), "SAME"),
    ("max", (1, 2, 2, 1), (1, 2, 2, 1), "VALID"),
    ("max", (1, 1, 3, 3), (1, 1, 2, 2), "SAME"),
    ("sum", (1, 2, 2, 1), (1, 2, 2, 1), "VALID"),
    ("sum", (1, 3, 3, 1), (1, 2, 2, 1), "SAME"),
]


@pytest.mark.parametrize("kind,window,strides,padding", POOL_GRADS)
def test_pool_gradients(kind, window, strides, padding):
    pool = (max_pool if kind == "max" else sum_pool)(window, strides, padding)
    x = rand((2, 12, 13, 6), np.float32)
    # Ties inside windows: the first maximum in window order takes the gradient.
    x[:, ::3, ::2, :] = 1.0
    check(jax.grad(lambda a: jnp.sum(pool(a) ** 2)), x,
          **(EXACT if kind == "max" else WINDOW_SUMS_EXACT))
