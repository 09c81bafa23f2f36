"""Host <-> device transfers: device_put / device_get round trips for every
dtype, shape and memory layout, compared bit for bit."""

import numpy as np
import pytest

from _support import require_jax

jax = require_jax()
jnp = jax.numpy
ml_dtypes = pytest.importorskip("ml_dtypes")

BASIC_DTYPES = [
    np.bool_,
    np.int8, np.int16, np.int32, np.int64,
    np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, jnp.bfloat16, np.float32, np.float64,
    np.complex64, np.complex128,
]

# The float8 types this JAX knows about.
FLOAT8_DTYPES = [
    getattr(jnp, name)
    for name in (
        "float8_e4m3fn", "float8_e5m2", "float8_e4m3b11fnuz", "float8_e4m3fnuz",
        "float8_e5m2fnuz", "float8_e4m3", "float8_e3m4", "float8_e8m0fnu",
    )
    if hasattr(jnp, name)
]

ALL_DTYPES = BASIC_DTYPES + FLOAT8_DTYPES

SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 0, 3), (2, 3, 4, 5), (1000,)]


def dtype_id(dtype):
    return np.dtype(dtype).name


def sample(shape, dtype, seed=0):
    """Values that exercise the whole range of `dtype`: extremes, signed zeros,
    infinities and NaNs where the type has them."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape, dtype=np.int64))
    if dtype == np.bool_:
        flat = rng.integers(0, 2, size).astype(np.bool_)
    elif np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        flat = rng.integers(info.min, info.max, size, dtype=dtype, endpoint=True)
        specials = np.array([info.min, info.max, 0, 1], dtype=dtype)
        flat[: min(size, 4)] = specials[: min(size, 4)]
    elif np.issubdtype(dtype, np.complexfloating):
        real = rng.standard_normal(size) * 100
        imag = rng.standard_normal(size) * 100
        flat = (real + 1j * imag).astype(dtype)
        specials = np.array([complex(np.inf, -0.0), complex(np.nan, 1), -0.0, 1e-30], dtype=dtype)
        flat[: min(size, 4)] = specials[: min(size, 4)]
    else:
        # Draw random bit patterns of the right width: every representable value
        # (including NaNs with payloads) is fair game for a transfer.
        width = dtype.itemsize
        bits = rng.integers(0, 256, size * width, dtype=np.uint8)
        flat = bits.view(dtype)[:size].copy()
        if size:
            flat[0] = np.asarray(0.5, dtype=np.float32).astype(dtype)
    return flat.reshape(shape)


def as_bits(array):
    """The raw bytes of an array (bool as uint8), for bit-exact comparisons."""
    array = np.ascontiguousarray(array)
    return array.view(np.uint8) if array.dtype.itemsize else array


def assert_same_array(actual, expected):
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(as_bits(actual), as_bits(expected))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_round_trip(dtype, shape, oxla_device, x64):
    host = sample(shape, dtype)
    placed = jax.device_put(host, oxla_device)
    assert placed.devices() == {oxla_device}
    assert placed.dtype == host.dtype
    assert placed.shape == host.shape
    assert_same_array(jax.device_get(placed), host)
    # A second read gives the same bytes (nothing consumed the buffer).
    assert_same_array(np.asarray(placed), host)


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.complex64, np.bool_], ids=dtype_id)
def test_scalar_item(dtype, oxla_device):
    host = sample((), dtype, seed=3)
    placed = jax.device_put(host, oxla_device)
    assert placed.item() == host.item() or (np.isnan(host) and np.isnan(placed.item()))


def base_array(dtype=np.float32):
    return sample((6, 8), dtype, seed=1)


NON_CONTIGUOUS = {
    "strided_rows": lambda a: a[::2],
    "strided_both": lambda a: a[1::2, ::3],
    "column": lambda a: a[:, 3],
    "transpose": lambda a: a.T,
    "fortran_order": np.asfortranarray,
    "reversed": lambda a: a[::-1, ::-1],
    "broadcast": lambda a: np.broadcast_to(a[:1], (5, 8)),
    "swapaxes_3d": lambda a: a.reshape(2, 3, 8).swapaxes(0, 2),
}


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.float64, np.complex128, np.bool_],
                         ids=dtype_id)
@pytest.mark.parametrize("layout", sorted(NON_CONTIGUOUS))
def test_non_contiguous_round_trip(layout, dtype, oxla_device, x64):
    host = NON_CONTIGUOUS[layout](base_array(dtype))
    assert not host.flags.c_contiguous
    placed = jax.device_put(host, oxla_device)
    assert_same_array(jax.device_get(placed), np.ascontiguousarray(host))


@pytest.mark.parametrize("layout", sorted(NON_CONTIGUOUS))
def test_non_contiguous_input_to_jit(layout, oxla_device, cpu_device):
    host = NON_CONTIGUOUS[layout](np.arange(48, dtype=np.float32).reshape(6, 8))
    f = jax.jit(lambda x: x * 2 + 1)
    got = f(jax.device_put(host, oxla_device))
    want = f(jax.device_put(host, cpu_device))
    assert_same_array(got, np.asarray(want))


def test_device_to_device_copy(oxla_device, cpu_device):
    host = sample((4, 5), np.float32, seed=7)
    on_oxla = jax.device_put(host, oxla_device)
    on_cpu = jax.device_put(on_oxla, cpu_device)
    back = jax.device_put(on_cpu, oxla_device)
    assert on_cpu.devices() == {cpu_device}
    assert back.devices() == {oxla_device}
    assert_same_array(back, host)


def test_device_put_tree(oxla_device):
    tree = {"a": np.arange(3, dtype=np.int32), "b": [np.float32(2.5), np.ones((2, 2), np.float16)]}
    placed = jax.device_put(tree, oxla_device)
    assert all(leaf.devices() == {oxla_device} for leaf in jax.tree.leaves(placed))
    back = jax.device_get(placed)
    for got, want in zip(jax.tree.leaves(back), jax.tree.leaves(tree)):
        assert_same_array(got, np.asarray(want))


def test_x32_mode_canonicalizes_64_bit_inputs(oxla_device):
    # Without jax_enable_x64, JAX converts 64-bit host data before the transfer.
    placed = jax.device_put(np.arange(4, dtype=np.int64), oxla_device)
    assert placed.dtype == np.int32
    np.testing.assert_array_equal(placed, np.arange(4, dtype=np.int32))
