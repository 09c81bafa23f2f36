"""Complex functions at the values where textbook formulas fail: division by zero,
tiny and infinite divisors, tangents of large imaginary parts, expm1 of small
arguments, magnitudes with a NaN part, hyperbolic functions of reals that overflow.
Checked against JAX's cpu backend."""

import numpy as np
import pytest

from _support import require_jax

jax = require_jax()
jnp = jax.numpy

from differential import check  # noqa: E402

INF, NAN = np.inf, np.nan
COMPLEX = [np.complex64, np.complex128]


def ids(dtype):
    return np.dtype(dtype).name


@pytest.mark.parametrize("dtype", COMPLEX, ids=ids)
def test_division(dtype):
    num = np.array([1, 1, 1 + 2j, 1, 1e30 + 1e30j, 3 + 4j, complex(INF, 1), 2j], dtype)
    den = np.array([0, 1.2e-38j, complex(-0.0, 0), complex(INF, INF), 1e30 - 1e30j, 4 + 3j,
                    2 + 1j, complex(1e-20, 3e-20)], dtype)
    check(lambda a, b: a / b, num, den)
    check(lambda b: 1 / b, den)


@pytest.mark.parametrize("dtype", COMPLEX, ids=ids)
@pytest.mark.parametrize("name", ["tan", "tanh"])
def test_tangents(name, dtype):
    z = np.array([0.3 + 30j, 0.3 - 400j, complex(INF, 88), complex(0, NAN), complex(2, INF),
                  7.7e30 + 1e-15j, 8.8e7 + 2j, 1e-30 + 0.5j, 0.5 + 0j, complex(NAN, 0)], dtype)
    if name == "tanh":
        # tanh(iz) = i tan(z): the same edges, turned a quarter.
        z = np.array([complex(-w.imag, w.real) for w in z], dtype)
    check(getattr(jnp, name), z)


@pytest.mark.parametrize("dtype", COMPLEX, ids=ids)
def test_expm1_and_log1p_of_small_arguments(dtype):
    z = np.array([1e-15j, 4.5e-8j, 4.5e-8 + 1e-15j, 1e-20 + 0j, 8.8e7 + 0j, 3.4e38 + 0j,
                  0.5 + 0.5j, -0.5 + 1e-10j], dtype)
    check(jnp.expm1, z)
    check(jnp.log1p, z[np.abs(z) < 1e10])


@pytest.mark.parametrize("dtype", COMPLEX, ids=ids)
def test_magnitude_and_hyperbolic_edges(dtype):
    z = np.array([complex(INF, NAN), complex(NAN, -INF), 3 + 4j, 8.8e7 + 0j, -8.8e7 + 0j,
                  complex(-INF, INF), 0.5 + 0.25j, 2 - 1j], dtype)
    check(jnp.abs, z)
    check(jnp.sinh, z)
    check(jnp.cosh, z)
