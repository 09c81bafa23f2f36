"""Differential testing against JAX's own cpu backend.

`check(fn, *args)` jits `fn`, runs it on the ``cpu`` backend and on ``oxla``
with the same host inputs, and compares the results: the tree structure, every
leaf's shape and dtype exactly, integer and boolean values exactly, and
floating-point values within tolerances that depend on the dtype (NaNs must
match NaNs, infinities must match exactly).
"""

import contextlib

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["check", "default_tolerance"]

# (rtol, atol) per floating-point dtype. XLA's cpu backend uses its own
# approximations of transcendental functions and its own summation order, so a
# few ulps of difference are expected.
_TOLERANCES = {
    np.dtype(np.float16): (2e-3, 2e-3),
    np.dtype(jnp.bfloat16): (1.6e-2, 1.6e-2),
    np.dtype(np.float32): (2e-5, 1e-6),
    np.dtype(np.float64): (1e-12, 1e-14),
    np.dtype(np.complex64): (2e-5, 1e-6),
    np.dtype(np.complex128): (1e-12, 1e-14),
}
_FLOAT8_TOLERANCE = (0.25, 0.25)


def default_tolerance(dtype):
    """Returns the default (rtol, atol) for comparing values of `dtype`."""
    dtype = np.dtype(dtype)
    if dtype in _TOLERANCES:
        return _TOLERANCES[dtype]
    if dtype.itemsize == 1:
        return _FLOAT8_TOLERANCE
    raise TypeError(f"no default tolerance for dtype {dtype}")


def _is_exact(dtype):
    dtype = np.dtype(dtype)
    return dtype == np.bool_ or np.issubdtype(dtype, np.integer)


_WIDE_DTYPES = {np.dtype(t) for t in (np.int64, np.uint64, np.float64, np.complex128)}


def _needs_x64(args):
    return any(np.asarray(leaf).dtype in _WIDE_DTYPES for leaf in jax.tree.leaves(args))


def _run(fn, args, device):
    placed = jax.device_put(args, device)
    with jax.default_device(device):
        result = jax.jit(fn)(*placed)
    result = jax.block_until_ready(result)
    for leaf in jax.tree.leaves(result):
        if isinstance(leaf, jax.Array) and leaf.devices() != {device}:
            raise AssertionError(f"a result of {getattr(fn, '__name__', fn)} lives on "
                                 f"{leaf.devices()}, expected {device}")
    return jax.device_get(result)


def _compare_leaf(path, got, want, atol, rtol):
    got = np.asarray(got)
    want = np.asarray(want)
    where = jax.tree_util.keystr(path) or "result"
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype} on oxla, {want.dtype} on cpu"
    assert got.shape == want.shape, f"{where}: shape {got.shape} on oxla, {want.shape} on cpu"
    if _is_exact(want.dtype):
        np.testing.assert_array_equal(got, want, err_msg=f"{where} ({want.dtype})")
        return
    default_rtol, default_atol = default_tolerance(want.dtype)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    # Compare in a wide type: ml_dtypes' narrow floats do not support every
    # NumPy comparison.
    wide = np.complex128 if np.issubdtype(want.dtype, np.complexfloating) else np.float64
    got_wide = got.astype(wide)
    want_wide = want.astype(wide)
    np.testing.assert_array_equal(np.isnan(got_wide), np.isnan(want_wide),
                                  err_msg=f"{where}: NaNs differ ({want.dtype})")
    np.testing.assert_array_equal(np.isinf(got_wide), np.isinf(want_wide),
                                  err_msg=f"{where}: infinities differ ({want.dtype})")
    infinite = np.isinf(want_wide)
    np.testing.assert_array_equal(got_wide[infinite], want_wide[infinite],
                                  err_msg=f"{where}: infinities differ ({want.dtype})")
    finite = np.isfinite(want_wide)
    np.testing.assert_allclose(got_wide[finite], want_wide[finite], rtol=rtol, atol=atol,
                               err_msg=f"{where} ({want.dtype})")


def check(fn, *args, atol=None, rtol=None):
    """Runs `jax.jit(fn)(*args)` on cpu and on oxla and asserts the results agree.

    `args` are host values (NumPy arrays, scalars, or pytrees of them); 64-bit
    inputs switch on ``jax_enable_x64`` for the call. `atol` / `rtol` override the
    dtype-aware defaults for floating-point results. Returns the oxla result.
    """
    cpu_device = jax.devices("cpu")[0]
    oxla_device = jax.devices("oxla")[0]
    x64 = jax.enable_x64(True) if _needs_x64(args) else contextlib.nullcontext()
    with x64:
        want = _run(fn, args, cpu_device)
        got = _run(fn, args, oxla_device)
    got_paths, got_tree = jax.tree_util.tree_flatten_with_path(got)
    want_paths, want_tree = jax.tree_util.tree_flatten_with_path(want)
    assert got_tree == want_tree, f"result structure {got_tree} on oxla, {want_tree} on cpu"
    for (path, got_leaf), (_, want_leaf) in zip(got_paths, want_paths):
        _compare_leaf(path, got_leaf, want_leaf, atol, rtol)
    return got
