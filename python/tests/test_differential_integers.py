"""Integer elementwise work and `jax.random` on oxla against JAX's cpu backend.

Random bits, integers and permutations must match bit for bit (the threefry hash is
integer arithmetic); uniform and normal samples within the float tolerances (the
transcendental functions behind normal and categorical are approximations on both
sides). Integer arithmetic covers shifts past the bit width, division and remainder by
zero and of the smallest integer by -1, and the reductions JAX's `sum`/`max`/... lower to.
"""

import numpy as np
import pytest

from _support import require_jax

jax = require_jax()
jnp = jax.numpy
lax = jax.lax

from differential import check  # noqa: E402

# Odd sizes that leave tile tails; `test_large_samples` covers values split over threads.
SHAPES = [(7,), (3, 333)]


def raw_key(impl, seed=0):
    """A key's data as a plain array, so both backends receive the same host value."""
    return np.asarray(jax.random.key_data(jax.random.key(seed, impl=impl)))


# threefry (the default) through raw and typed keys, and rbg.
KEYS = [
    pytest.param("threefry2x32", False, id="threefry-raw"),
    pytest.param("threefry2x32", True, id="threefry-typed"),
    pytest.param("rbg", True, id="rbg"),
]


def keyed(impl, typed, sample):
    """`sample(key)` on the key whose data is the argument."""
    if typed:
        return lambda data: sample(jax.random.wrap_key_data(data, impl=impl))
    return sample


@pytest.mark.parametrize("impl,typed", KEYS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_random_bits_match_exactly(impl, typed, shape):
    check(keyed(impl, typed, lambda k: jax.random.bits(k, shape)), raw_key(impl, 3))


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32])
def test_random_bits_of_narrow_types(dtype):
    check(lambda k: jax.random.bits(k, (1000,), dtype), raw_key("threefry2x32", 1))


@pytest.mark.parametrize("impl,typed", KEYS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_random_uniform(impl, typed, shape):
    check(keyed(impl, typed, lambda k: jax.random.uniform(k, shape)), raw_key(impl, 5))


@pytest.mark.parametrize("impl,typed", KEYS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_random_normal(impl, typed, shape):
    check(keyed(impl, typed, lambda k: jax.random.normal(k, shape)), raw_key(impl, 7))


def test_large_samples():
    n = 1 << 17
    check(lambda k: (jax.random.bits(k, (n,)), jax.random.uniform(k, (n,)),
                     jax.random.normal(k, (n,))), raw_key("threefry2x32", 37))


def test_random_normal_bfloat16_and_split_keys():
    def sample(k):
        k1, k2 = jax.random.split(k)
        return (jax.random.normal(k1, (500,), jnp.bfloat16),
                jax.random.uniform(k2, (4, 9), minval=-3.0, maxval=2.0))
    check(sample, raw_key("threefry2x32", 11))


@pytest.mark.parametrize("impl,typed", KEYS)
@pytest.mark.parametrize("low,high", [(0, 100), (-7, 3), (-(2**31), 2**31 - 1)])
def test_random_randint_matches_exactly(impl, typed, low, high):
    check(keyed(impl, typed, lambda k: jax.random.randint(k, (1 << 14,), low, high)),
          raw_key(impl, 13))


def test_random_randint_narrow_dtype():
    check(lambda k: jax.random.randint(k, (999,), -100, 100, jnp.int8),
          raw_key("threefry2x32", 17))


@pytest.mark.parametrize("impl,typed", KEYS)
def test_random_bernoulli_matches_exactly(impl, typed):
    check(keyed(impl, typed, lambda k: jax.random.bernoulli(k, 0.3, (3, 1000))),
          raw_key(impl, 19))


def test_random_categorical():
    logits = np.random.default_rng(0).standard_normal((16, 12)).astype(np.float32)
    check(lambda k, l: jax.random.categorical(k, l, axis=-1), raw_key("threefry2x32", 23),
          logits)


@pytest.mark.parametrize("impl,typed", KEYS)
def test_random_permutation_matches_exactly(impl, typed):
    check(keyed(impl, typed, lambda k: jax.random.permutation(k, 1000)), raw_key(impl, 29))
    x = np.arange(24 * 5, dtype=np.int32).reshape(24, 5)
    check(lambda k, a: jax.random.permutation(k, a, axis=0), raw_key("threefry2x32", 31), x)


# --- integer arithmetic ---------------------------------------------------------------


def edge_ints(dtype, n=4096, seed=0):
    """Values of `dtype` full of edges: 0, ±1, the extremes, shift amounts around the
    width, small values and random bit patterns."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    edges = np.array([0, 1, 2, 7, 31, 32, 33, 64, info.max, info.min, info.max - 1],
                     dtype=np.int64)
    if info.min < 0:
        edges = np.concatenate([edges, [-1, -7, info.min + 1]])
    bits = rng.integers(info.min, info.max, n, dtype=np.int64, endpoint=True)
    small = rng.integers(max(info.min, -100), 100, n)
    picks = rng.integers(0, 3, n)
    values = np.where(picks == 0, rng.choice(edges, n), np.where(picks == 1, bits, small))
    return values.astype(dtype)


INT_TYPES = [np.int32, np.uint32]


@pytest.mark.parametrize("dtype", INT_TYPES, ids=lambda d: np.dtype(d).name)
def test_integer_chains_with_wide_shifts(dtype):
    a, b = edge_ints(dtype, seed=1), edge_ints(dtype, seed=2)

    def chain(x, y):
        s = lax.shift_left(x, y) ^ lax.shift_right_logical(x, y)
        t = lax.shift_right_arithmetic(x ^ s, y) + x * y - (s | y)
        return t, jnp.where(x > y, t & x, ~y), (t >> 3) * dtype(2654435761 & 0x7FFFFFFF)
    check(chain, a, b)


@pytest.mark.parametrize("dtype", INT_TYPES, ids=lambda d: np.dtype(d).name)
def test_division_by_zero_and_of_the_minimum(dtype):
    a, b = edge_ints(dtype, seed=3), edge_ints(dtype, seed=4)
    b[:50] = 0
    if np.iinfo(dtype).min < 0:
        a[50:100] = np.iinfo(dtype).min
        b[50:100] = -1
    check(lambda x, y: (lax.div(x, y), lax.rem(x, y)), a, b)
    nonzero = np.where(b == 0, 1, b).astype(dtype)
    check(lambda x, y: (x // y, x % y), a, nonzero)
    check(lambda x: (x // 7, x % 7, x // -3 if np.iinfo(dtype).min < 0 else x // 3), a)


@pytest.mark.parametrize("dtype", INT_TYPES, ids=lambda d: np.dtype(d).name)
def test_floor_division_and_modulo_by_constants_over_long_arrays(dtype):
    # Long enough for generated code, where a known divisor becomes a product with its
    # reciprocal: dividends at and around multiples of each divisor, and the edges.
    info = np.iinfo(dtype)
    divisors = [1, 2, 3, 7, 10, 1000003, 65536, int(info.max)]
    if info.min < 0:
        divisors += [-1, -7, -1000, int(info.min)]
    for c in divisors:
        base = edge_ints(dtype, n=1 << 15, seed=abs(c) % 1000).astype(np.int64)
        near = (base // c) * c + np.resize(np.array([-1, 0, 1]), base.size)
        a = np.clip(near, info.min, info.max).astype(dtype)
        check(lambda x, c=c: (x // dtype(c), x % dtype(c), lax.div(x, dtype(c))), a)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8, np.int64],
                         ids=lambda d: np.dtype(d).name)
def test_division_of_other_widths(dtype):
    a, b = edge_ints(dtype, 999, seed=5), edge_ints(dtype, 999, seed=6)
    b[:9] = 0
    check(lambda x, y: (lax.div(x, y), lax.rem(x, y)), a, b)


def test_mixed_integer_and_float_chains():
    a = edge_ints(np.int32, seed=7)
    u = edge_ints(np.uint32, seed=8)
    f = np.random.default_rng(9).standard_normal(4096).astype(np.float32) * 1e5

    def mixed(x, y, z):
        as_float = x.astype(jnp.float32) * 0.5 + y.astype(jnp.float32)
        back = (z * 3.0).astype(jnp.int32) + x
        unsigned = (z * 7.0).astype(jnp.uint32) ^ y
        bits = lax.bitcast_convert_type((y >> 9) | jnp.uint32(0x3F800000), jnp.float32) - 1.0
        return as_float, back, unsigned, bits, jnp.abs(x) + jnp.sign(x), (x > 0).astype(jnp.int32)
    check(mixed, a, u, f)


def test_u32_hash_of_a_float_cast():
    a = np.random.default_rng(10).integers(-1000, 1000, 1 << 16).astype(np.int32)
    check(lambda x: (x.astype(jnp.uint32) ^ (x.astype(jnp.uint32) >> 3))
          * jnp.uint32(2654435761), a)


@pytest.mark.parametrize("n", [5, 4096])
def test_one_hot(n):
    idx = np.random.default_rng(11).integers(-2, 1002, n).astype(np.int32)
    check(lambda i: jax.nn.one_hot(i, 1000), idx)
    check(lambda i: jax.nn.one_hot(i, 7, dtype=jnp.int32), idx % 9)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.int8],
                         ids=lambda d: np.dtype(d).name)
def test_integer_reductions(dtype):
    x = edge_ints(dtype, 1 << 15, seed=12).reshape(64, 512)
    check(lambda a: (a.sum(), a.max(), a.min(), a.sum(axis=0), a.max(axis=1),
                     jnp.bitwise_and.reduce(a, axis=1), jnp.bitwise_or.reduce(a, axis=0),
                     jnp.prod(a[:3], axis=0)), x)


@pytest.mark.parametrize("algorithm", ["RNG_DEFAULT", "RNG_PHILOX", "RNG_THREE_FRY"])
@pytest.mark.parametrize("shape,dtype", [((9,), jnp.uint32), ((4, 6), jnp.uint8)], ids=str)
def test_rng_bit_generator_states_with_high_bits(algorithm, shape, dtype):
    """Keys and counters use all 32 bits of every word (rbg keys after a split do)."""
    alg = getattr(lax.RandomAlgorithm, algorithm)
    states = np.array([[1797259609, 2579123966, 1797259609, 2579123966],
                       [0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF],
                       [0x80000000, 0, 0xFFFFFFFE, 0x80000001]], np.uint32)
    for state in states:
        check(lambda k: lax.rng_bit_generator(k, shape, dtype, alg), state)
