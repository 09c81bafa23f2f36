"""A first differential catalogue: oxla against JAX's cpu backend.

Each case jits a small function and compares results with `differential.check`
over several shapes (0-d, empty, odd sizes) and dtypes.
"""

import numpy as np
import pytest

from _support import require_jax

jax = require_jax()
jnp = jax.numpy
lax = jax.lax

from differential import check  # noqa: E402

SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 3, 4)]
FLOATS = [np.float32, np.float16, jnp.bfloat16, np.float64]
INTS = [np.int32, np.int8, np.uint8, np.int64, np.uint32]


def dtype_id(dtype):
    return np.dtype(dtype).name


def rand(shape, dtype, kind="normal", seed=0):
    """Random host data of `dtype`: kind is normal, positive, nonzero or unit
    (inside (-1, 1)); integers are small so that products do not overflow."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        low = 0 if (kind == "positive" or np.issubdtype(dtype, np.unsignedinteger)) else -9
        values = rng.integers(low, 10, shape)
        if kind in ("positive", "nonzero"):
            values = np.where(values == 0, 1, values)
        return values.astype(dtype)
    if kind == "positive":
        values = rng.uniform(0.1, 4.0, shape)
    elif kind == "unit":
        values = rng.uniform(-0.95, 0.95, shape)
    else:
        values = rng.standard_normal(shape) * 2
        if kind == "nonzero":
            values = np.where(np.abs(values) < 0.1, 0.5, values)
    if np.issubdtype(dtype, np.complexfloating):
        values = values + 1j * rng.standard_normal(shape)
    return np.asarray(values).astype(dtype)


# --- elementwise ----------------------------------------------------------------

UNARY_FLOAT = {
    "neg": (jnp.negative, "normal"),
    "abs": (jnp.abs, "normal"),
    "exp": (jnp.exp, "normal"),
    "log": (jnp.log, "positive"),
    "sqrt": (jnp.sqrt, "positive"),
    "rsqrt": (lax.rsqrt, "positive"),
    "tanh": (jnp.tanh, "normal"),
    "sin": (jnp.sin, "normal"),
    "cos": (jnp.cos, "normal"),
    "sigmoid": (jax.nn.sigmoid, "normal"),
    "floor": (jnp.floor, "normal"),
    "ceil": (jnp.ceil, "normal"),
    "round": (jnp.round, "normal"),
    "sign": (jnp.sign, "normal"),
    "expm1": (jnp.expm1, "normal"),
    "log1p": (jnp.log1p, "positive"),
    "square": (jnp.square, "normal"),
    "reciprocal": (jnp.reciprocal, "nonzero"),
    "relu": (jax.nn.relu, "normal"),
    "gelu": (jax.nn.gelu, "normal"),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
@pytest.mark.parametrize("name", sorted(UNARY_FLOAT))
def test_unary_float(name, dtype):
    fn, kind = UNARY_FLOAT[name]
    for shape in SHAPES:
        check(fn, rand(shape, dtype, kind))


ROUNDINGS = {
    "sign": jnp.sign,
    "floor": jnp.floor,
    "ceil": jnp.ceil,
    "round_half_even": jnp.round,
    "round_half_away": lambda x: lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
@pytest.mark.parametrize("name", sorted(ROUNDINGS))
def test_rounding_on_long_vectors(name, dtype):
    """Rounding (and `sign`) over two thousand values (the vector loops and their tail):
    ties, signed zeros, denormals, huge values, infinities and NaN, with the same signs of
    zero."""
    rng = np.random.default_rng(1)
    ties = np.round(rng.standard_normal(1000) * 8) / 2
    spread = rng.standard_normal(1000) * 100
    edges = [0.0, -0.0, 1e-40, -1e-40, 1e30, -1e30, np.inf, -np.inf, np.nan,
             0.49999997, -0.49999997, 2.5, -2.5, 1.5, -1.5]
    x = np.concatenate([ties, spread, edges]).astype(dtype)
    fn = ROUNDINGS[name]
    got = np.asarray(check(fn, x, atol=0, rtol=0)).astype(np.float64)
    with jax.enable_x64(np.dtype(dtype) == np.float64):
        want = np.asarray(jax.jit(fn)(jax.device_put(x, jax.devices("cpu")[0])))
    want = want.astype(np.float64)
    numbers = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


LONG_BINARY = {
    "add": jnp.add,
    "multiply": jnp.multiply,
    "divide": jnp.divide,
    "maximum": jnp.maximum,
}


@pytest.mark.parametrize("dtype", [np.float16, jnp.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("name", sorted(LONG_BINARY))
def test_narrow_float_arithmetic_on_long_vectors(name, dtype):
    """Half-precision arithmetic over two thousand values, a scalar operand, and `exp`:
    widened to f32, computed and rounded back, as XLA does, with the same bits."""
    rng = np.random.default_rng(2)
    a = (rng.standard_normal(2003) * 30).astype(dtype)
    b = (rng.standard_normal(2003) * 3).astype(dtype)
    a[:4] = [0.0, -0.0, np.inf, np.nan]
    b[:4] = [-0.0, 1.0, -np.inf, 2.0]
    fn = LONG_BINARY[name]
    check(fn, a, b, atol=0, rtol=0)
    # XLA turns a division by a constant into a multiplication by its rounded reciprocal,
    # which can differ in the last place: that case keeps the default tolerance.
    exact = {} if name == "divide" else {"atol": 0, "rtol": 0}
    check(lambda x: fn(x, jnp.asarray(0.75, dtype)), a, **exact)
    check(lambda x: jnp.exp(fn(x, x) * 0.01), a)


UNARY_INT = {
    "neg": jnp.negative,
    "abs": jnp.abs,
    "sign": jnp.sign,
    "square": jnp.square,
    "invert": jnp.invert,
}


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.int64], ids=dtype_id)
@pytest.mark.parametrize("name", sorted(UNARY_INT))
def test_unary_int(name, dtype):
    for shape in SHAPES:
        check(UNARY_INT[name], rand(shape, dtype))


BINARY_FLOAT = {
    "add": (jnp.add, "normal"),
    "subtract": (jnp.subtract, "normal"),
    "multiply": (jnp.multiply, "normal"),
    "divide": (jnp.divide, "nonzero"),
    "maximum": (jnp.maximum, "normal"),
    "minimum": (jnp.minimum, "normal"),
    "power": (jnp.power, "positive"),
    "atan2": (jnp.arctan2, "normal"),
    "remainder": (jnp.remainder, "nonzero"),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
@pytest.mark.parametrize("name", sorted(BINARY_FLOAT))
def test_binary_float(name, dtype):
    fn, kind = BINARY_FLOAT[name]
    for shape in SHAPES:
        check(fn, rand(shape, dtype, kind, seed=1), rand(shape, dtype, kind, seed=2))


BINARY_INT = {
    "add": jnp.add,
    "subtract": jnp.subtract,
    "multiply": jnp.multiply,
    "floor_divide": jnp.floor_divide,
    "remainder": jnp.remainder,
    "maximum": jnp.maximum,
    "minimum": jnp.minimum,
    "bitwise_and": jnp.bitwise_and,
    "bitwise_or": jnp.bitwise_or,
    "bitwise_xor": jnp.bitwise_xor,
}


@pytest.mark.parametrize("dtype", INTS, ids=dtype_id)
@pytest.mark.parametrize("name", sorted(BINARY_INT))
def test_binary_int(name, dtype):
    kind = "nonzero" if name in ("floor_divide", "remainder") else "normal"
    for shape in SHAPES:
        check(BINARY_INT[name], rand(shape, dtype, seed=1), rand(shape, dtype, kind, seed=2))


@pytest.mark.parametrize("dtype", [np.int32, np.uint8], ids=dtype_id)
def test_shifts(dtype):
    x = rand((4, 5), dtype, "positive", seed=3)
    amount = (np.arange(20).reshape(4, 5) % 8).astype(dtype)
    check(jnp.left_shift, x, amount)
    check(jnp.right_shift, x, amount)


COMPARISONS = {
    "less": jnp.less,
    "less_equal": jnp.less_equal,
    "equal": jnp.equal,
    "not_equal": jnp.not_equal,
    "greater": jnp.greater,
    "greater_equal": jnp.greater_equal,
}


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.float16], ids=dtype_id)
@pytest.mark.parametrize("name", sorted(COMPARISONS))
def test_comparison(name, dtype):
    for shape in SHAPES:
        x = rand(shape, dtype, seed=1)
        y = np.where(rand(shape, np.bool_, seed=3), x, rand(shape, dtype, seed=2)).astype(dtype)
        check(COMPARISONS[name], x, y)


def test_comparison_with_nan():
    x = np.array([np.nan, 1.0, np.nan, -0.0, np.inf], np.float32)
    y = np.array([np.nan, np.nan, 2.0, 0.0, np.inf], np.float32)
    for fn in COMPARISONS.values():
        check(fn, x, y)
    check(jnp.maximum, x, y)
    check(jnp.minimum, x, y)
    check(jnp.isnan, x)
    check(jnp.isfinite, x)


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor", "logical_not"])
def test_logical(name):
    fn = getattr(jnp, name)
    for shape in SHAPES:
        args = [rand(shape, np.bool_, seed=1), rand(shape, np.bool_, seed=2)]
        check(fn, *args[: 1 if name == "logical_not" else 2])


CASTS = [
    (np.float32, np.int32), (np.int32, np.float32), (np.float32, np.float16),
    (np.float32, jnp.bfloat16), (jnp.bfloat16, np.float32), (np.bool_, np.int32),
    (np.int32, np.bool_), (np.float32, np.bool_), (np.int32, np.int8), (np.uint8, np.int32),
    (np.float64, np.float32), (np.int64, np.float64), (np.float32, np.uint8),
]


@pytest.mark.parametrize("source,target", CASTS,
                         ids=[f"{dtype_id(s)}-{dtype_id(t)}" for s, t in CASTS])
def test_convert(source, target):
    kind = "positive" if target == np.uint8 else "normal"
    for shape in SHAPES:
        check(lambda x: x.astype(target), rand(shape, source, kind) * 3)


def test_convert_rounding_and_saturation():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 1e10, -1e10, 3.99], np.float32)
    check(lambda v: v.astype(np.int32), x)
    check(lambda v: v.astype(jnp.bfloat16), x)
    check(lambda v: v.astype(np.float16), x)


def test_bool_views_keep_their_bytes():
    # NumPy views of uint8 data as bool hold bytes other than 0 and 1; XLA moves a
    # boolean's byte to uint8 as it is (how JAX views it back), and converts it to wider
    # integers as 0 or 1.
    x = np.frombuffer(bytes([96, 0, 1, 255]), dtype=np.bool_)
    check(lambda v: v.view(jnp.int8), x)
    check(lambda v: v.view(jnp.uint8), x)
    check(lambda v: v.astype(np.int32), x)


# --- broadcasting --------------------------------------------------------------

BROADCAST_SHAPES = [((3, 1), (1, 4)), ((), (3, 4)), ((5,), (2, 5)), ((2, 1, 3), (4, 1)),
                    ((0, 1), (1, 3)), ((1,), (0,))]


@pytest.mark.parametrize("lhs,rhs", BROADCAST_SHAPES, ids=str)
def test_broadcasting_binary(lhs, rhs):
    check(jnp.add, rand(lhs, np.float32, seed=1), rand(rhs, np.float32, seed=2))
    check(jnp.multiply, rand(lhs, np.int32, seed=1), rand(rhs, np.int32, seed=2))


def test_broadcast_to_and_scalars():
    x = rand((3,), np.float32)
    check(lambda v: jnp.broadcast_to(v, (2, 4, 3)), x)
    check(lambda v: v * 2.5 + 1, x)
    check(lambda v: jnp.expand_dims(v, 0) + jnp.expand_dims(v, 1), x)


# --- reductions -----------------------------------------------------------------

REDUCTIONS = {
    "sum": jnp.sum,
    "prod": jnp.prod,
    "max": jnp.max,
    "min": jnp.min,
    "mean": jnp.mean,
    "argmax": jnp.argmax,
    "argmin": jnp.argmin,
}
REDUCTION_SHAPES = [(7,), (2, 3, 4), (33, 17)]


def reduction_axes(name, shape):
    if name.startswith("arg"):
        return [None] + list(range(len(shape)))
    axes = [None, 0, -1]
    if len(shape) == 3:
        axes.append((0, 2))
    return axes


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16, np.float64], ids=dtype_id)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction(name, dtype):
    fn = REDUCTIONS[name]
    kind = "unit" if name == "prod" else "normal"
    for shape in REDUCTION_SHAPES:
        x = rand(shape, dtype, kind)
        for axis in reduction_axes(name, shape):
            check(lambda v, axis=axis: fn(v, axis=axis), x)


def test_reductions_of_empty_arrays():
    empty = np.zeros((0, 3), np.float32)
    check(lambda v: jnp.sum(v, axis=0), empty)
    check(lambda v: jnp.sum(v, axis=1), empty)
    check(jnp.prod, empty)
    check(lambda v: jnp.max(v, axis=0, initial=-np.inf), empty)
    check(lambda v: jnp.min(v, axis=1, initial=0.0), empty)


def test_reductions_with_keepdims_and_bool():
    x = rand((4, 6), np.float32)
    check(lambda v: jnp.sum(v, axis=1, keepdims=True), x)
    check(lambda v: jnp.max(v, axis=0, keepdims=True), x)
    b = rand((4, 6), np.bool_)
    check(lambda v: jnp.any(v, axis=0), b)
    check(lambda v: jnp.all(v, axis=1), b)
    check(jnp.count_nonzero, b)


def test_argmax_ties_and_nan():
    x = np.array([[1.0, 3.0, 3.0, -1.0], [np.nan, 0.0, np.nan, 5.0]], np.float32)
    check(lambda v: jnp.argmax(v, axis=1), x)
    check(lambda v: jnp.argmin(v, axis=1), x)


@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=dtype_id)
def test_cumulative(dtype):
    for shape in [(7,), (3, 5), (0, 4)]:
        x = rand(shape, dtype, "unit")
        for axis in range(len(shape)):
            check(lambda v, axis=axis: jnp.cumsum(v, axis=axis), x)
            check(lambda v, axis=axis: lax.cummax(v, axis=axis), x)
        check(lambda v: jnp.cumprod(v, axis=0), x)


# --- linear algebra ---------------------------------------------------------------

MATMUL_SHAPES = [((3, 4), (4, 5)), ((4,), (4,)), ((4,), (4, 3)), ((3, 4), (4,)),
                 ((2, 3, 4), (2, 4, 5)), ((0, 4), (4, 3)), ((3, 0), (0, 2)), ((17, 33), (33, 9))]


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16, jnp.bfloat16, np.float64],
                         ids=dtype_id)
@pytest.mark.parametrize("lhs,rhs", MATMUL_SHAPES, ids=str)
def test_matmul(lhs, rhs, dtype):
    check(jnp.matmul, rand(lhs, dtype, "unit", seed=1), rand(rhs, dtype, "unit", seed=2))


def test_einsum_and_dot_general():
    a = rand((2, 3, 4), np.float32, seed=1)
    b = rand((2, 4, 5), np.float32, seed=2)
    check(lambda x, y: jnp.einsum("bij,bjk->bik", x, y), a, b)
    check(lambda x, y: jnp.einsum("bij,bjk->kib", x, y), a, b)
    check(lambda x: jnp.einsum("bij->j", x), a)
    check(lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))), a, b)
    check(jnp.outer, rand((3,), np.float32), rand((4,), np.float32))


def test_matmul_mixed_precision():
    a = rand((3, 8), jnp.bfloat16, "unit", seed=1)
    b = rand((8, 2), jnp.bfloat16, "unit", seed=2)
    check(lambda x, y: jnp.matmul(x, y, preferred_element_type=np.float32), a, b)


# --- neural-network building blocks -----------------------------------------------

@pytest.mark.parametrize("shape", [(10,), (4, 10), (2, 3, 7), (1, 1)], ids=str)
def test_softmax(shape):
    x = rand(shape, np.float32) * 3
    check(lambda v: jax.nn.softmax(v, axis=-1), x)
    check(lambda v: jax.nn.log_softmax(v, axis=-1), x)
    check(lambda v: jax.nn.logsumexp(v, axis=0), x)


def test_is_finite_in_fused_chains_and_row_groups():
    # Large enough for fused tile code and for row tiling; rows with infinities, NaNs, all
    # -inf and a +inf maximum exercise `is_finite` on the rows' maxima in logsumexp.
    x = rand((512, 300), np.float32) * 4
    x[3, 7] = np.inf
    x[5, :] = -np.inf
    x[9, 11] = np.nan
    x[17, ::7] = -np.inf
    x[21, 2] = np.inf
    x[21, 3] = -np.inf
    check(lambda v: jnp.where(jnp.isfinite(v), v * 2 + 1, 0.0), x)
    check(lambda v: jnp.isfinite(v * 3) & (v > 0), x)
    check(lambda v: jax.nn.logsumexp(v, axis=1), x)
    check(lambda v: jax.nn.logsumexp(v, axis=1, b=2.0), x)
    check(lambda v: jnp.sum(jnp.where(jnp.isfinite(v), jnp.exp(v - 4), 0.0), axis=1), x)


def test_softmax_cross_entropy_and_grad():
    logits = rand((8, 5), np.float32)
    labels = np.arange(8, dtype=np.int32) % 5

    def loss(w, l):
        log_probs = jax.nn.log_softmax(w, axis=-1)
        return -jnp.mean(jnp.take_along_axis(log_probs, l[:, None], axis=1))

    check(loss, logits, labels)
    check(jax.grad(loss), logits, labels)
    check(jax.value_and_grad(loss), logits, labels)


def test_one_hot_and_layer_norm():
    labels = np.array([0, 3, 1, 4], np.int32)
    check(lambda l: jax.nn.one_hot(l, 5), labels)
    x = rand((4, 6), np.float32)
    check(lambda v: (v - v.mean(-1, keepdims=True)) / jnp.sqrt(v.var(-1, keepdims=True) + 1e-5), x)


# --- selection ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_], ids=dtype_id)
def test_where(dtype):
    for shape in SHAPES:
        condition = rand(shape, np.bool_, seed=3)
        check(jnp.where, condition, rand(shape, dtype, seed=1), rand(shape, dtype, seed=2))
    x = rand((3, 4), np.float32)
    check(lambda v: jnp.where(v > 0, v, 0.5 * v), x)
    check(lambda v: jnp.where(v > 0, v, np.float32(-1)), x)


def test_where_with_a_constant_mask():
    # The mask is a constant of the program: MLIR stores an i1 constant packed eight to a
    # byte, and a single byte of up to eight elements is a splat only when it is 0x00 or 0xFF.
    rng = np.random.default_rng(7)
    for n in range(1, 18):
        for mask in (rng.integers(0, 2, n).astype(bool), np.arange(n) % 3 == 1, np.ones(n, bool)):
            mask = mask.copy()
            check(lambda v, mask=mask: jnp.where(mask, v, -v), rand((n,), np.float32))
    mask = np.array([[False, True, True], [True, False, False]])
    check(lambda v: jnp.where(mask, v, 0), rand((2, 3), np.int32))


def test_scatter_at_constant_negative_indices():
    # JAX wraps negative indices with a select on a constant mask of the negative ones.
    x = rand((3, 4, 5), np.float32)
    y = np.float32(1.7)
    for indices in ([0, -1], [-3, 1], [-1, -2, 0]):
        idx = np.array(indices)
        check(lambda v, u, idx=idx: v.at[idx].divide(u, unique_indices=True), x, y)
        check(lambda v, u, idx=idx: v.at[idx].add(u), x, y)
        check(lambda v, idx=idx: v[idx], x)


def test_clip():
    x = rand((5, 6), np.float32) * 3
    check(lambda v: jnp.clip(v, -1.0, 2.0), x)
    check(lambda v: lax.clamp(np.float32(-0.5), v, np.float32(0.5)), x)
    check(lambda v: jnp.clip(v, -3, 4), rand((9,), np.int32))


# --- shapes and data movement -------------------------------------------------------

def test_reshape_and_transpose():
    x = rand((2, 3, 4), np.float32)
    check(lambda v: v.reshape(6, 4), x)
    check(lambda v: v.reshape(-1), x)
    check(lambda v: v.reshape(4, 1, 6), x)
    check(lambda v: v.T, x)
    check(lambda v: jnp.transpose(v, (1, 0, 2)), x)
    check(lambda v: jnp.moveaxis(v, 0, -1), x)
    check(lambda v: jnp.squeeze(v.reshape(1, 24, 1)), x)
    check(lambda v: v.reshape(0, 5), np.zeros((5, 0), np.float32))
    check(lambda v: jnp.transpose(v), rand((3, 5), np.int8))


def test_concatenate_and_stack():
    a = rand((2, 3), np.float32, seed=1)
    b = rand((4, 3), np.float32, seed=2)
    check(lambda x, y: jnp.concatenate([x, y], axis=0), a, b)
    check(lambda x, y: jnp.concatenate([x.T, y.T, x.T], axis=1), a, b)
    check(lambda x: jnp.stack([x, x * 2], axis=1), a)
    check(lambda x, y: jnp.concatenate([x, y]), np.zeros((0,), np.int32), rand((3,), np.int32))


def test_slicing():
    x = rand((6, 7), np.float32)
    check(lambda v: v[1:4, 2:], x)
    check(lambda v: v[::2, 1::3], x)
    check(lambda v: v[::-1], x)
    check(lambda v: v[:, ::-2], x)
    check(lambda v: v[3], x)
    check(lambda v: v[-1, -2], x)
    check(lambda v: v[2:2], x)
    check(lambda v: v[None, :, None, 1], x)


def test_dynamic_slicing_and_update():
    x = rand((6, 7), np.float32)
    index = np.int32(2)
    check(lambda v, i: lax.dynamic_slice(v, (i, i + 1), (3, 2)), x, index)
    check(lambda v, i: lax.dynamic_slice(v, (i, i), (3, 4)), x, np.int32(5))  # clamped
    check(lambda v, i: lax.dynamic_update_slice(v, jnp.ones((2, 2), v.dtype), (i, i)), x, index)
    check(lambda v, i: v[i], x, index)
    check(lambda v, i: v.at[i].set(0.0), x, index)


def test_gather_and_scatter():
    x = rand((6, 4), np.float32)
    indices = np.array([5, 0, 2, 2], np.int32)
    check(lambda v, i: v[i], x, indices)
    check(lambda v, i: jnp.take(v, i, axis=1), x, np.array([3, 1], np.int32))
    check(lambda v, i: v.at[i].add(1.0), x, indices)
    check(lambda v, i: v.at[i, 1].max(10.0), x, indices)
    check(lambda v, i: jnp.take_along_axis(v, i[:, None] % 4, axis=1), x,
          np.array([1, 0, 3, 2, 1, 0], np.int32))


def test_pad_iota_and_flip():
    x = rand((3, 4), np.float32)
    check(lambda v: jnp.pad(v, ((1, 2), (0, 3))), x)
    check(lambda v: jnp.pad(v, 1, constant_values=7.0), x)
    check(lambda v: lax.pad(v, np.float32(0), ((1, -1, 1), (0, 0, 2))), x)
    check(lambda v: jnp.arange(12, dtype=np.int32).reshape(3, 4) + v.astype(np.int32), x)
    check(lambda v: jnp.flip(v, axis=(0, 1)), x)
    check(lambda v: jnp.tile(v, (2, 1)), x)
    check(lambda v: jnp.repeat(v, 2, axis=0), x)


def test_sort_and_top_k():
    x = rand((4, 9), np.float32)
    check(lambda v: jnp.sort(v, axis=-1), x)
    check(lambda v: jnp.argsort(v, axis=0), x)
    check(lambda v: lax.top_k(v, 3), x)


# --- control flow ---------------------------------------------------------------------

def test_fori_loop():
    check(lambda n: lax.fori_loop(0, n, lambda i, acc: acc + i, np.int32(0)), np.int32(10))
    check(lambda v: lax.fori_loop(0, 5, lambda i, acc: acc * 1.5 + i, v),
          rand((3,), np.float32))
    check(lambda v: lax.fori_loop(0, 0, lambda i, acc: acc + 1, v), rand((2,), np.float32))


def test_while_loop():
    def collatz_steps(n):
        def body(state):
            value, steps = state
            value = jnp.where(value % 2 == 0, value // 2, 3 * value + 1)
            return value, steps + 1

        return lax.while_loop(lambda state: state[0] != 1, body, (n, np.int32(0)))[1]

    check(collatz_steps, np.int32(27))
    check(lambda v: lax.while_loop(lambda x: jnp.sum(x) < 100.0, lambda x: x * 2.0, v),
          np.array([1.0, 2.0, 0.5], np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint32],
                         ids=dtype_id)
def test_loops_of_scalar_work(dtype):
    # Loops whose every step works on single elements (oxla runs them as generated code):
    # a running update reading the element before, writes past the end (dropped), values
    # that trade places, a loop whose condition reads a float.
    three = np.asarray(3, dtype)
    v = rand((37,), dtype)

    def running(v):
        return lax.fori_loop(1, v.shape[0], lambda i, v: v.at[i].set(v[i - 1] * three + v[i]), v)

    def strided(v):
        return lax.fori_loop(0, 12, lambda i, v: v.at[i * 5].set(v[i] - three), v)

    def trading(a, b):
        return lax.fori_loop(0, 9, lambda i, c: (c[1], c[0] + c[1] * three), (a, b))

    check(running, v)
    check(strided, v)
    check(trading, v[0], v[1])
    if np.issubdtype(dtype, np.floating):
        def newton(a):
            def body(state):
                x, k = state
                return (x + a / x) * np.asarray(0.5, dtype), k + 1

            def cond(state):
                x, k = state
                return (jnp.abs(x * x - a) > np.asarray(1e-5, dtype) * a) & (k < 60)

            return lax.while_loop(cond, body, (a, np.int32(0)))

        check(newton, np.asarray(7.25, dtype))
        check(newton, np.asarray(np.nan, dtype))


def test_pivots_to_permutation():
    rng = np.random.default_rng(5)
    for n in (1, 8, 65):
        pivots = np.array([rng.integers(i, n) for i in range(n)], np.int32)
        check(lambda p, n=n: lax.linalg.lu_pivots_to_permutation(p, n), pivots)
        check(lambda p, n=n: lax.linalg.lu_pivots_to_permutation(p, n + 3), pivots)


def test_cond_and_switch():
    def f(p, x):
        return lax.cond(p, lambda v: v * 2.0, lambda v: v - 1.0, x)

    x = rand((4,), np.float32)
    check(f, np.bool_(True), x)
    check(f, np.bool_(False), x)
    branches = [lambda v: v + 1, lambda v: v * v, lambda v: -v]
    for index in range(3):
        check(lambda i, v: lax.switch(i, branches, v), np.int32(index), x)


def test_scan():
    def cumulative(xs):
        return lax.scan(lambda carry, x: (carry + x, carry * x), np.float32(0), xs)

    check(cumulative, rand((6,), np.float32))
    check(lambda xs: lax.scan(lambda c, x: (c @ x, c.sum()), jnp.eye(3, dtype=xs.dtype), xs),
          rand((4, 3, 3), np.float32, "unit"))


def test_vmap_and_grad():
    def f(w, x):
        return jnp.tanh(x @ w).sum()

    w = rand((4, 3), np.float32, "unit", seed=1)
    xs = rand((5, 4), np.float32, seed=2)
    check(jax.vmap(f, in_axes=(None, 0)), w, xs)
    check(jax.grad(f), w, xs)
    check(jax.jacfwd(lambda v: jnp.sin(v) * v), rand((3,), np.float32))


@pytest.mark.parametrize("shape", [(2048, 160), (4096, 64), (640, 1000), (70, 4000)])
def test_large_column_folds(shape):
    """Folds over the leading axis of matrices large enough to be split over the threads
    (by blocks of rows, or by columns when there are few rows): sums, products of values
    near 1, max and min (with a column of negative zeros), integer sums and xors."""
    rng = np.random.default_rng(sum(shape))
    m = rng.standard_normal(shape).astype(np.float32)
    m[:, 5] = -0.0
    near_one = (1.0 + rng.standard_normal(shape) * 1e-3).astype(np.float32)
    ints = rng.integers(-1000, 1000, shape).astype(np.int32)
    # Sums of a few thousand values of size 1 that cancel: the summation orders differ.
    check(lambda a: jnp.sum(a, axis=0), m, atol=2e-4)
    check(lambda a: jnp.mean(a, axis=0), m, atol=1e-6)
    check(lambda a: jnp.prod(a, axis=0), near_one)
    check(lambda a: (jnp.max(a, axis=0), jnp.min(a, axis=0)), m)
    check(lambda a: (jnp.sum(a, axis=0), jnp.max(a, axis=0), jnp.min(a, axis=0)), ints)
