"""Denormals: XLA's cpu backend flushes them in float arithmetic (operands read as zero,
results written as zero) and keeps them in bit moves; oxla must give the same bits.

The operations are chosen so that XLA's simplifier leaves them alone: it folds `x * 1.0`
to `x` (keeping a denormal), turns division by a constant into a product with its
reciprocal and contracts products and sums into fused multiply-adds.
"""

import numpy as np
import pytest

from _support import require_jax

jax = require_jax()
jnp = jax.numpy

from differential import check  # noqa: E402


def _values(dtype):
    info = np.finfo(dtype)
    tiny = info.smallest_subnormal
    normal = info.tiny
    return np.array([tiny, -tiny, normal / 3, -normal / 7, normal, -normal, normal * 4,
                     1.0, -2.5, 0.0, -0.0], dtype)


OPS = {
    "double": lambda x: x * 2.0,
    "into_denormals": lambda x: x * np.asarray(1e-30, x.dtype) * np.asarray(1e-10, x.dtype),
    "sum_pairs": lambda x: x + x[::-1],
    "difference": lambda x: x - x[::-1],
    "quotient": lambda x: x / x[::-1],
    "sqrt": lambda x: jnp.sqrt(jnp.abs(x) * 2.0),
    "positive": lambda x: (x > 0).astype(x.dtype),
    "equal_zero": lambda x: (x * 2.0 == 0).astype(x.dtype),
    # exp(-100) is a denormal f32, exp(-740) a denormal f64.
    "exp_tail": lambda x: jnp.exp(x * 0.0 - (100.0 if x.dtype == np.float32 else 740.0)),
    "row_sum": lambda x: jnp.sum(x * 2.0, keepdims=True),
    # `maximum` and `minimum` read denormals as signed zeros (relu of one is +0); over a
    # large array they run in fused tiles, in a reduction they fold.
    "relu": lambda x: jnp.maximum(x, 0.0),
    "min_zero": lambda x: jnp.minimum(x, 0.0),
    "max_pairs": lambda x: jnp.maximum(x, x[::-1]),
    "min_pairs": lambda x: jnp.minimum(x, x[::-1]),
    "relu_tiles": lambda x: jnp.maximum(jnp.tile(x, 4096), 0.0)[:: 4096 - 1],
    "row_max": lambda x: jnp.max(x[:5], keepdims=True),
    "row_min": lambda x: jnp.min(x[:5], keepdims=True),
    # `clamp` keeps them.
    "clip": lambda x: jnp.clip(x, 0.0, 1.0),
    # No float arithmetic, but XLA reads a denormal operand as its signed zero.
    "floor": jnp.floor,
    "ceil": jnp.ceil,
    "round": jnp.round,
    "sign": jnp.sign,
    # Bit moves keep denormals.
    "select": lambda x: jnp.where(x > -1e30, x, 0.0),
    "negate": lambda x: -x,
    "reverse": lambda x: x[::-1],
}


def _bits(x):
    x = np.asarray(x)
    return x.view(np.uint32 if x.dtype == np.float32 else np.uint64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(OPS))
def test_denormals_flush_like_cpu(name, dtype):
    x = _values(dtype)
    cpu = jax.devices("cpu")[0]
    with jax.enable_x64(dtype == np.float64):
        want = np.asarray(jax.jit(OPS[name])(jax.device_put(x, cpu)))
        got = check(OPS[name], x)
    np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=f"{name}: {got} vs {want}")


CONVERSIONS = {
    # Bit moves and roundings on bits on XLA: an f32 denormal survives them.
    "to_bfloat16": lambda x: x.astype(jnp.bfloat16),
    "to_complex64": lambda x: x.astype(jnp.complex64),
    "bfloat16_round_trip": lambda x: x.astype(jnp.bfloat16).astype(jnp.float32),
    # Widening to f64 flushes, as on XLA.
    "to_float64": lambda x: x.astype(jnp.float64),
}


def _raw(x):
    x = np.asarray(x)
    if x.dtype == np.complex64:
        x = x.view(np.float32)
    return x.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


@pytest.mark.parametrize("name", sorted(CONVERSIONS))
def test_conversions_of_denormals_match_cpu(name):
    x = _values(np.float32)
    cpu = jax.devices("cpu")[0]
    with jax.enable_x64(name == "to_float64"):
        want = np.asarray(jax.jit(CONVERSIONS[name])(jax.device_put(x, cpu)))
        got = check(CONVERSIONS[name], x)
    np.testing.assert_array_equal(_raw(got), _raw(want), err_msg=f"{name}: {got} vs {want}")
