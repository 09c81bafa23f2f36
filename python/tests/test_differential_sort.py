"""Sorting and selection on oxla against JAX's cpu backend.

`jnp.sort`, `jnp.argsort`, `lax.sort` with several keys, `lax.top_k`,
`lax.approx_max_k` and `approx_min_k`, `argmax` and `argmin` on data full of ties, NaNs of both signs, signed zeros and
infinities. Sorts only move elements, so results are compared bit for bit.
"""

import numpy as np
import pytest

from _support import require_jax

jax = require_jax()
jnp = jax.numpy
lax = jax.lax

from differential import check  # noqa: E402

FLOATS = [np.float32, np.float16, jnp.bfloat16, np.float64]
INTS = [np.int32, np.int8, np.uint8, np.int64, np.bool_]


def dtype_id(dtype):
    return np.dtype(dtype).name


def tricky(shape, dtype, seed=0):
    """Random values with many ties; floats also hold NaNs of both signs, signed
    zeros and infinities."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        low = 0 if np.issubdtype(dtype, np.unsignedinteger) else -5
        return rng.integers(low, 6, shape).astype(dtype)
    pool = np.array([0.0, -0.0, 1.5, -1.5, 2.0, -3.0, np.inf, -np.inf, np.nan, -np.nan, 0.25],
                    dtype=np.float64)
    values = pool[rng.integers(0, len(pool), shape)]
    if np.issubdtype(dtype, np.complexfloating):
        parts = values
        values = np.empty(shape, np.complex128)
        values.real = parts
        values.imag = pool[rng.integers(0, len(pool), shape)]
    return np.asarray(values).astype(dtype)


def distinct(shape, dtype, seed=0):
    """Values that are all different (also as bits), so any sort orders them one way."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    return (rng.permutation(n) - n // 2).reshape(shape).astype(dtype)


def same_bits(got, want):
    """Asserts equal bit patterns leaf by leaf (NaN payloads and zero signs included)."""
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind == "c":
            g, w = g.view(w.real.dtype), w.view(w.real.dtype)
        # Floats (bfloat16 is of kind "V") as unsigned integers of their size.
        unsigned = w.dtype if w.dtype.kind in "iub" else np.dtype(f"u{w.dtype.itemsize}")
        np.testing.assert_array_equal(g.view(unsigned), w.view(unsigned))


def check_bits(fn, *args):
    """`check`, then the same bits as the cpu backend."""
    got = check(fn, *args)
    x64 = any(np.asarray(a).dtype.itemsize == 8 for a in args)
    with jax.enable_x64(x64):
        cpu = jax.devices("cpu")[0]
        want = jax.jit(fn)(*jax.device_put(args, cpu))
    same_bits(got, want)


@pytest.mark.parametrize("dtype", FLOATS + INTS + [np.complex64], ids=dtype_id)
def test_sort_along_each_axis(dtype):
    x = tricky((5, 37, 4), dtype)
    for axis in (0, 1, 2):
        check_bits(lambda a, axis=axis: jnp.sort(a, axis=axis), x)


@pytest.mark.parametrize("dtype", [np.float32, jnp.bfloat16, np.int32, np.bool_], ids=dtype_id)
@pytest.mark.parametrize("descending", [False, True])
def test_argsort_keeps_ties_in_order(dtype, descending):
    x = tricky((6, 45), dtype, seed=1)
    for axis in (0, 1):
        check_bits(lambda a, axis=axis: jnp.argsort(a, axis=axis, descending=descending), x)
        check_bits(lambda a, axis=axis: jnp.sort(a, axis=axis, descending=descending), x)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16], ids=dtype_id)
def test_unstable_sorts_of_distinct_values(dtype):
    # The cpu backend's unstable sort orders equal keys its own way; distinct keys have
    # one order.
    x = distinct((4, 300), dtype)
    check_bits(lambda a: jnp.sort(a, stable=False), x)
    check_bits(lambda a: jnp.argsort(a, axis=0, stable=False), x)


def test_sort_of_a_long_row():
    x = tricky((20000,), np.float32, seed=2)
    check_bits(jnp.sort, x)
    check_bits(jnp.argsort, x)
    check_bits(lambda a: jnp.argsort(a > 0), x)


def test_sorts_of_empty_and_single_rows():
    for shape in [(0,), (1,), (3, 1), (0, 4)]:
        x = tricky(shape, np.float32)
        check_bits(jnp.sort, x)
        check_bits(jnp.argsort, x)


@pytest.mark.parametrize("num_keys", [1, 2, 3])
def test_lax_sort_with_several_keys(num_keys):
    a = tricky((3, 60), np.float32, seed=3)
    b = tricky((3, 60), np.int32, seed=4)
    c = tricky((3, 60), jnp.bfloat16, seed=5)
    d = np.arange(180, dtype=np.int32).reshape(3, 60)
    check_bits(lambda *ops: lax.sort(ops, dimension=1, num_keys=num_keys), a, b, c, d)
    check_bits(lambda *ops: lax.sort(ops, dimension=0, num_keys=num_keys), a, b, c, d)


@pytest.mark.parametrize("dtype", [np.float32, jnp.bfloat16, np.float16, np.int32], ids=dtype_id)
def test_top_k(dtype):
    x = tricky((7, 50), dtype, seed=6)
    for k in (1, 5, 50):
        check_bits(lambda a, k=k: lax.top_k(a, k), x)
    check_bits(lambda a: lax.top_k(a, 1), tricky((4, 1), dtype))


def check_top_k(fn, x, axis):
    """`fn` returns (values, positions) along `axis`: the values equal cpu's (`-0 == 0`), and
    the positions (which may break ties differently: cpu's order among equal values depends
    on its sort) are distinct and hold those values, bit for bit."""
    with jax.enable_x64(np.dtype(x.dtype).itemsize == 8):
        values, positions = jax.device_get(jax.jit(fn)(jax.device_put(x, jax.devices("oxla")[0])))
        want_values, want_positions = jax.jit(fn)(jax.device_put(x, jax.devices("cpu")[0]))
    np.testing.assert_array_equal(np.asarray(values, np.float64),
                                  np.asarray(want_values, np.float64))
    positions = np.asarray(positions)
    assert positions.shape == np.asarray(want_positions).shape
    same_bits(np.take_along_axis(x, positions, axis=axis), values)
    ordered = np.sort(positions, axis=axis)
    assert (np.diff(ordered, axis=axis) > 0).all(), "positions repeat"


@pytest.mark.parametrize("dtype", [np.float32, jnp.bfloat16, np.float16, np.float64],
                         ids=dtype_id)
def test_approx_max_k_and_min_k(dtype):
    # The comparator is a plain `>` or `<`, no order for NaN: ties, zeros of both signs and
    # infinities only. Both backends compute the exact top k.
    x = tricky((6, 40), dtype, seed=8)
    x = np.where(np.isnan(x.astype(np.float32)), np.asarray(0.5, dtype), x).astype(dtype)
    for k in (1, 4, 40):
        check_top_k(lambda a, k=k: lax.approx_max_k(a, k), x, 1)
        check_top_k(lambda a, k=k: lax.approx_min_k(a, k), x, 1)
    check_top_k(lambda a: lax.approx_max_k(a, 3, reduction_dimension=0), x, 0)
    check_top_k(lambda a: lax.approx_min_k(a, 2, reduction_dimension=0, aggregate_to_topk=False),
                x, 0)
    check_top_k(lambda a: lax.approx_max_k(a, 5, recall_target=0.5), distinct((3, 300), dtype),
                1)
    # Distinct values (all exact in bfloat16) have one top k: the positions match too.
    check_bits(jax.vmap(lambda a: lax.approx_min_k(a, 2)), distinct((2, 3, 40), dtype))
    if dtype == np.float32:
        check(jax.grad(lambda a: lax.approx_max_k(a, 3)[0].sum()), distinct((4, 40), dtype))


@pytest.mark.parametrize("dtype", FLOATS + [np.int32, np.bool_], ids=dtype_id)
def test_argmax_and_argmin(dtype):
    x = tricky((9, 33), dtype, seed=7)
    for fn in (jnp.argmax, jnp.argmin):
        check_bits(lambda a, fn=fn: fn(a), x)
        check_bits(lambda a, fn=fn: fn(a, axis=1), x)
    y = tricky((2, 5, 7), dtype, seed=8)
    check_bits(lambda a: jnp.argmax(a, axis=1, keepdims=True), y)
    check_bits(lambda a: jnp.argmin(a, axis=0), y)


def test_unique_searchsorted_and_median():
    x = tricky((200,), np.float32, seed=9)
    check_bits(lambda a: jnp.unique(a, size=12, fill_value=0.0), x)
    s = np.sort(tricky((64,), np.float32, seed=10)[:40])
    s = s[~np.isnan(s)]
    q = tricky((30,), np.float32, seed=11)
    check_bits(lambda a, v: jnp.searchsorted(a, v, method="sort"), s, q)
    m = distinct((5, 40), np.float32)
    check(lambda a: jnp.median(a, axis=1), m)
