"""The error function family against JAX's cpu backend, on long vectors.

`erf` on f32 runs as a vector loop of f32 polynomials in oxla, `erf_inv` of f64 ones; XLA's cpu
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


# What `oxla-ir`'s fastmath tests measure against libm over 2^24 arguments, here through
# the plugin on vectors long enough for the generated code of fused kernels.
ULP_BOUNDS = {
    "tanh": (jnp.tanh, np.tanh, 1.0),
    "logistic": (jax.nn.sigmoid, lambda x: 1.0 / (1.0 + np.exp(-x)), 2.5),
    "erf": (lax.erf, None, 1.5),
}


@pytest.mark.parametrize("name", sorted(ULP_BOUNDS))
def test_f32_tanh_logistic_erf_within_their_ulp_bounds(name):
    """The f32 functions oxla computes in f32 lanes stay within their stated distance of
    the true value (an f64 evaluation), alone and fused with a product by a vector of ones
    (generated code), on arguments dense around each branch point. Results below the
    smallest normal f32 are left out: oxla, like XLA's cpu backend, flushes denormals."""
    import math

    fn, reference, bound = ULP_BOUNDS[name]
    if reference is None:
        reference = np.vectorize(math.erf)
    rng = np.random.default_rng(11)
    x = np.concatenate([
        np.linspace(-12.0, 12.0, 60001),
        rng.standard_normal(20000) * 3.0,
        np.linspace(0.8, 0.9, 5001),
        np.linspace(0.95, 1.05, 5001),
        np.linspace(-90.0, -80.0, 2001),
    ]).astype(np.float32)
    want = reference(x.astype(np.float64))
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    normal = np.abs(want) >= np.finfo(np.float32).tiny
    dev = jax.devices("oxla")[0]
    ones = jax.device_put(np.ones_like(x), dev)
    for f in (lambda v, _: fn(v), lambda v, s: fn(v) * s):
        got = np.asarray(jax.jit(f)(jax.device_put(x, dev), ones)).astype(np.float64)
        err = np.where(normal, np.abs(got - want) / ulp, 0.0)
        assert err.max() <= bound, (name, float(x[err.argmax()]), float(err.max()))
