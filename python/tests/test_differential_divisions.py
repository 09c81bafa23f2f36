"""Divisions round as on JAX's cpu backend, bit for bit.

XLA's cpu compiler turns `x / c` (a constant) into `x * (1/c)`, `x / broadcast(y)` into
`x * broadcast(1/y)` and `x / sqrt(y)` into `x * rsqrt(y)`; oxla rewrites the same
divisions the same way (flag `xla_divisions`, on by default), so these results are
compared with no tolerance at all. With the flag off every division rounds once, and
most of these results then differ from `cpu` in the last place somewhere.

Divisions by a root become products with XLA's `rsqrt`, which on the cpu backend is a
vector approximation (it agrees with `1 / sqrt(y)` on about 70% of f32 arguments, with the
correctly rounded value on about 80%); oxla's `rsqrt` rounds `1 / sqrt(y)` twice, so those
cases are compared within the default tolerance.
"""

import numpy as np
import pytest

from _support import require_jax

jax = require_jax()
jnp = jax.numpy

from differential import check  # noqa: E402

FLOATS = [np.float32, np.float64, np.float16, jnp.bfloat16]

CASES = {
    "by_scalar": lambda x, y: x / 3.0,
    "by_fraction": lambda x, y: x / 0.7,
    "by_negative": lambda x, y: x / -11.0,
    "by_vector_constant": lambda x, y: x / jnp.arange(1, 34, dtype=x.dtype),
    "by_row_values": lambda x, y: x / y[:, None],
    "by_column_values": lambda x, y: x / y[:33][None, :],
    "by_inverse_root": lambda x, y: x / jax.lax.rsqrt(jnp.abs(x) + 1),
}

BY_ROOTS = {
    "by_root": lambda x, y: x / jnp.sqrt(jnp.abs(x) + 1),
    "by_row_roots": lambda x, y: x / jnp.sqrt(y)[:, None],
}


def dtype_id(dtype):
    return np.dtype(dtype).name


def operands(dtype):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((45, 33)) * 50).astype(dtype)
    y = (np.abs(rng.standard_normal(45)) * 7 + 0.25).astype(dtype)
    return x, y


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
@pytest.mark.parametrize("name", sorted(CASES))
def test_division_bits_match_cpu(name, dtype):
    check(CASES[name], *operands(dtype), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
@pytest.mark.parametrize("name", sorted(BY_ROOTS))
def test_division_by_roots(name, dtype):
    check(BY_ROOTS[name], *operands(dtype))


def test_flag_off_rounds_each_division_once():
    x = operands(np.float32)[0]
    oxla = jax.devices("oxla")[0]
    cpu = np.asarray(jax.jit(lambda v: v / 3.0)(jax.device_put(x, jax.devices("cpu")[0])))
    lowered = jax.jit(lambda v: v / 3.0).lower(jax.device_put(x, oxla))
    matched = np.asarray(lowered.compile()(jax.device_put(x, oxla)))
    plain = np.asarray(
        lowered.compile(compiler_options={"oxla_xla_divisions": False})(jax.device_put(x, oxla))
    )
    np.testing.assert_array_equal(matched, cpu)
    np.testing.assert_array_equal(plain, x / np.float32(3.0))
    assert np.any(plain != cpu)
