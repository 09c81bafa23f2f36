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
