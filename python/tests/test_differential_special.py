"""The error function family against JAX's cpu backend, on long vectors.

`erf` and `erf_inv` on f32 run as vector loops of f64 polynomials in oxla; XLA's cpu
backend evaluates its own f32 approximations, so results agree within a few ulps, not bit
for bit. The vectors are long enough to cover the loops' bodies and tails, and hold the
edges: signed zeros, denormals, the branch points, values next to +-1 for the inverse,
infinities and NaN.
"""

import numpy as np
import pytest

from _support import require_jax

jax = require_jax()
jnp = jax.numpy
lax = jax.lax

from differential import check  # noqa: E402

FLOATS = [np.float32, np.float64, np.float16, jnp.bfloat16]


def dtype_id(dtype):
    return np.dtype(dtype).name


def erf_arguments(dtype):
    rng = np.random.default_rng(7)
    info = jnp.finfo(dtype)
    edges = [0.0, -0.0, 1.0, -1.0, 0.5, 3.9, 4.0, 4.1, 10.0, -10.0, np.inf, -np.inf, np.nan,
             float(info.smallest_subnormal), float(info.tiny), float(np.nextafter(
                 np.float32(1.0), np.float32(0.0)))]
    spread = rng.standard_normal(2003) * 2.0
    return np.concatenate([np.asarray(edges), spread]).astype(dtype)


def erf_inv_arguments(dtype):
    rng = np.random.default_rng(8)
    one_below = float(np.nextafter(np.asarray(1.0, dtype), np.asarray(0.0, dtype)))
    edges = [0.0, -0.0, 0.5, -0.5, 0.84, 0.85, one_below, -one_below, 1.0, -1.0, 1.5, np.nan,
             float(jnp.finfo(dtype).smallest_subnormal)]
    spread = rng.uniform(-1.0, 1.0, 2003)
    tails = 1.0 - 10.0 ** rng.uniform(-7, -1, 200)
    return np.concatenate([np.asarray(edges), spread, tails, -tails]).astype(dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_erf_and_erfc(dtype):
    x = erf_arguments(dtype)
    check(lax.erf, x)
    check(lax.erfc, x)


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_erf_inv(dtype):
    y = erf_inv_arguments(dtype)
    # Next to +-1 the inverse is steep: XLA's f32 approximation is off by a few ulps of
    # its argument there, which moves the result by more than the default tolerance.
    tail = np.abs(y.astype(np.float64)) > 0.999
    check(lax.erf_inv, y[~tail])
    check(lax.erf_inv, y[tail], rtol=1e-3)


def test_exact_gelu_and_normal_samples():
    x = erf_arguments(np.float32)
    check(lambda v: jax.nn.gelu(v, approximate=False), x)
    key = np.asarray(jax.random.key_data(jax.random.key(3)))
    check(lambda k: jax.random.normal(k, (4097,)), key)
    check(lambda k: jax.random.truncated_normal(k, -2.0, 2.0, (1000,)), key)


def test_erf_on_oxla_is_within_an_ulp_of_the_rounded_value():
    """jaxlib hands `erf` over as a `chlo.erf` composite; oxla evaluates it in f32 to within
    1.5 ulp of the true value (so at most one ulp from the correctly rounded one, and equal
    to it almost everywhere); XLA's own rational approximation is up to 5 ulp off here."""
    import math

    x = np.linspace(-4.5, 4.5, 20011).astype(np.float32)
    got = np.asarray(jax.jit(lax.erf)(jax.device_put(x, jax.devices("oxla")[0])))
    want = np.array([math.erf(float(v)) for v in x]).astype(np.float32)
    ulps = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
    assert ulps.max() <= 1
    assert np.mean(ulps == 0) > 0.95
