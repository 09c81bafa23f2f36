"""Data movement, oxla against JAX's cpu backend: pad (negative and interior), reverse,
slices, dynamic slices and updates with clamped starts, concatenation, and the gathers and
scatters JAX writes for indexing: row lookups (`emb[idx]`, `take` with `clip` and
`fill`), `x.at[idx].add/set/mul/min/max` with repeated and out-of-bounds indices, block
updates (`a.at[i:j, k:l].set`), batched (vmapped) forms and an embedding gradient."""

import numpy as np
import pytest

from _support import require_jax

jax = require_jax()
jnp = jax.numpy
lax = jax.lax

from differential import check  # noqa: E402

DTYPES = [np.float32, jnp.bfloat16, np.int8, np.int64, np.bool_, np.complex64]


def dtype_id(dtype):
    return np.dtype(dtype).name


def rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-9, 10, shape).astype(dtype)
    values = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


# --- pad, reverse, slices ----------------------------------------------------------

PADS = {
    "edges": [(3, 3), (3, 3)],
    "uneven": [(0, 2), (5, 1)],
    "negative": [(-2, 1), (3, -4)],
    "interior": [(1, 2, 1), (-1, 0, 2)],
    "rows_only": [(2, 1), (0, 0)],
}


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("name", PADS)
def test_pad(name, dtype):
    config = [p if len(p) == 3 else (*p, 0) for p in PADS[name]]
    value = np.asarray(1, dtype)
    check(lambda a: lax.pad(a, value, config), rand((9, 13), dtype))


def test_jnp_pad_large():
    check(lambda a: jnp.pad(a, 3), rand((256, 300), np.float32))
    check(lambda a: jnp.pad(a, ((1, 2), (0, 0), (3, 0)), constant_values=-2.5),
          rand((5, 7, 11), np.float32))


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("axes", [(0,), (1,), (2,), (0, 2), None])
def test_flip(axes, dtype):
    check(lambda a: jnp.flip(a, axes), rand((4, 5, 33), dtype))


def test_reverse_long_vector():
    check(lambda x: x[::-1], rand((100003,), np.float32))


def test_strided_slices():
    a = rand((40, 37, 3), np.float32)
    check(lambda a: a[3:30:2, ::3, 1:], a)
    check(lambda a: a[5:6, :, :], a)
    check(lambda a: a[:, 36:, ::-1], a)


@pytest.mark.parametrize("dtype", [np.float32, np.int8, jnp.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("starts", [(2, 3), (-4, 1), (50, -7), (6, 40)])
def test_dynamic_slice_and_update_clamp(starts, dtype):
    a = rand((20, 30), dtype)
    u = rand((15, 8), dtype, seed=1)
    i, j = (np.int32(s) for s in starts)
    check(lambda a, i, j: lax.dynamic_slice(a, (i, j), (15, 8)), a, i, j)
    check(lambda a, u, i, j: lax.dynamic_update_slice(a, u, (i, j)), a, u, i, j)
    # The updated operand is an intermediate value (updated in place) and is read again.
    check(lambda a, u, i, j: lax.dynamic_update_slice(a * 2, u, (i, j)), a, u, i, j)


def test_dynamic_update_slice_keeps_the_argument():
    def f(a, u):
        return lax.dynamic_update_slice(a, u, (1, 2)), a + 1

    check(f, rand((6, 7), np.float32), rand((2, 3), np.float32, seed=1))


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_concatenate(axis):
    a = rand((4, 6, 5), np.float32)
    check(lambda a: jnp.concatenate([a, a * 2, a[:, :, :1].repeat(5, 2)], axis=axis), a)


# --- gather -------------------------------------------------------------------------

EMB = rand((50, 16), np.float32, seed=2)
IDX = np.array([3, 0, 49, 3, -1, -50, 7, 7, 12, 30], np.int32)
OUT_OF_BOUNDS = np.array([3, 60, -70, 49, 50, -1], np.int32)


def test_embedding_rows():
    check(lambda e, i: e[i], EMB, IDX)
    check(lambda e, i: e[i, :], EMB, IDX.reshape(2, 5))
    check(lambda e, i: e[i], rand((50, 3, 4), jnp.bfloat16), IDX)


@pytest.mark.parametrize("mode", ["clip", "fill"])
def test_take_out_of_bounds(mode):
    check(lambda e, i: jnp.take(e, i, axis=0, mode=mode), EMB, OUT_OF_BOUNDS)
    check(lambda e, i: jnp.take(e, i, axis=1, mode=mode), EMB, OUT_OF_BOUNDS % 20)


def test_gather_columns_and_points():
    check(lambda e, i: e[:, i], EMB, IDX % 16)
    check(lambda e, i, j: e[i, j], EMB, IDX, IDX % 16)
    check(lambda e, i: jnp.take_along_axis(e, i, axis=1),
          EMB, np.random.default_rng(3).integers(0, 16, (50, 4)).astype(np.int32))


def test_gather_vmapped():
    embs = rand((3, 20, 8), np.float32)
    idxs = np.array([[0, 19, 5], [2, 2, 2], [25, -3, 1]], np.int32)
    check(jax.vmap(lambda e, i: e[i]), embs, idxs)


# --- scatter ------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["add", "set", "mul", "min", "max"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64], ids=dtype_id)
def test_scatter_rows_with_repeats(op, dtype):
    base = rand((50, 16), dtype)
    upd = rand((len(IDX), 16), dtype, seed=4)
    check(lambda b, i, u: getattr(b.at[i], op)(u), base, IDX, upd)
    check(lambda b, i, u: getattr(b.at[i], op)(u[: len(i)]), base, OUT_OF_BOUNDS, upd)


def test_scatter_add_of_a_constant():
    check(lambda i: jnp.zeros((50, 16), jnp.float32).at[i].add(1.0), IDX)
    check(lambda i: jnp.zeros((50,), jnp.int32).at[i].add(1), IDX)


def test_scatter_elements_with_repeats():
    x = rand((40,), np.float32)
    i = np.array([1, 5, 1, 1, 39, 41, -2, 5], np.int32)
    u = rand((8,), np.float32, seed=5) * 1e3
    check(lambda x, i, u: x.at[i].add(u), x, i, u)
    check(lambda x, i, u: x.at[i].set(u), x, i, u)


def test_block_updates():
    a = rand((64, 96), np.float32)
    check(lambda a: a.at[10:20, 5:90].set(0.0), a)
    check(lambda a: a.at[10:20, 5:90].add(1.0), a)
    check(lambda a: a.at[:, 3].set(7.0), a)
    check(lambda a: a.at[5].multiply(3.0), a)


def test_embedding_gradient():
    idx = np.array([1, 4, 1, 1, 9, 0, 4], np.int32)
    emb = rand((10, 6), np.float32)
    check(jax.grad(lambda e, i: (e[i] * jnp.arange(6.0)).sum()), emb, idx)


def test_scatter_vmapped():
    xs = rand((3, 10, 4), np.float32)
    idxs = np.array([[0, 9, 0], [2, 2, 2], [11, -3, 1]], np.int32)
    us = rand((3, 3, 4), np.float32, seed=6)
    check(jax.vmap(lambda x, i, u: x.at[i].add(u)), xs, idxs, us)
