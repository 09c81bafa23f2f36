"""`jnp.fft` on oxla against JAX's cpu backend.

Every `jnp.fft` entry point lowers to StableHLO's `fft` (FFT, IFFT, RFFT, IRFFT over the
trailing one to three axes), with transposes around it for other axes and pads or slices
for an explicit length. Both backends compute complex64 transforms in f32 with different
algorithms, so results agree within a tolerance that grows with the transform's size, not
bit for bit. Shapes cover powers of two, products of small primes, large primes, length
one and batches; float64 runs with x64 enabled.
"""

import math

import numpy as np
import pytest

from _support import require_jax

jax = require_jax()
jnp = jax.numpy

from differential import check  # noqa: E402

REAL = [np.float32, np.float64]


def complex_of(dtype):
    return np.complex64 if np.dtype(dtype) == np.float32 else np.complex128


def signal(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.issubdtype(np.dtype(dtype), np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def tolerance(dtype, size):
    """(atol, rtol) for transforms of `size` points of unit-variance data."""
    eps = 1e-6 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-14
    growth = math.sqrt(max(size, 1)) * max(math.log2(max(size, 2)), 1.0)
    return 4 * eps * growth, 4 * eps


def dtype_id(dtype):
    return np.dtype(dtype).name


ONE_AXIS = [(8,), (1,), (7,), (12,), (97,), (1000,), (1024,), (3, 64), (5, 30), (2, 3, 17)]


@pytest.mark.parametrize("dtype", REAL, ids=dtype_id)
@pytest.mark.parametrize("shape", ONE_AXIS, ids=str)
@pytest.mark.parametrize("name", ["fft", "ifft"])
def test_complex_transforms_along_the_last_axis(name, shape, dtype):
    x = signal(shape, complex_of(dtype))
    atol, rtol = tolerance(dtype, shape[-1])
    check(getattr(jnp.fft, name), x, atol=atol, rtol=rtol)


@pytest.mark.parametrize("dtype", REAL, ids=dtype_id)
@pytest.mark.parametrize("shape", ONE_AXIS, ids=str)
def test_real_transforms_along_the_last_axis(shape, dtype):
    x = signal(shape, dtype)
    atol, rtol = tolerance(dtype, shape[-1])
    spectrum = check(jnp.fft.rfft, x, atol=atol, rtol=rtol)
    check(lambda s: jnp.fft.irfft(s, n=shape[-1]), np.asarray(spectrum), atol=atol, rtol=rtol)


MULTI_AXIS = [((4, 4), None), ((6, 10), None), ((3, 16, 12), None), ((2, 5, 7, 9), (1, 2, 3)),
              ((64, 96), None), ((2, 128, 130), (1, 2)), ((8, 6, 5), (0, 2))]


@pytest.mark.parametrize("dtype", REAL, ids=dtype_id)
@pytest.mark.parametrize("shape,axes", MULTI_AXIS, ids=str)
@pytest.mark.parametrize("name", ["fftn", "ifftn"])
def test_complex_transforms_over_several_axes(name, shape, axes, dtype):
    x = signal(shape, complex_of(dtype), seed=1)
    size = math.prod(shape[a] for a in (axes or range(len(shape))[-3:]))
    atol, rtol = tolerance(dtype, size)
    fn = getattr(jnp.fft, name)
    check(lambda v: fn(v, axes=axes), x, atol=atol, rtol=rtol)


@pytest.mark.parametrize("dtype", REAL, ids=dtype_id)
@pytest.mark.parametrize("shape,axes", MULTI_AXIS, ids=str)
def test_real_transforms_over_several_axes(shape, axes, dtype):
    x = signal(shape, dtype, seed=2)
    axes = axes or tuple(range(len(shape)))[-3:]
    size = math.prod(shape[a] for a in axes)
    atol, rtol = tolerance(dtype, size)
    spectrum = check(lambda v: jnp.fft.rfftn(v, axes=axes), x, atol=atol, rtol=rtol)
    lengths = [shape[a] for a in axes]
    check(lambda s: jnp.fft.irfftn(s, s=lengths, axes=axes), np.asarray(spectrum),
          atol=atol, rtol=rtol)


@pytest.mark.parametrize("dtype", REAL, ids=dtype_id)
def test_lengths_norms_and_shifts(dtype):
    x = signal((5, 24), dtype, seed=3)
    z = signal((5, 24), complex_of(dtype), seed=4)
    atol, rtol = tolerance(dtype, 64)
    check(lambda v: jnp.fft.fft(v, n=32), z, atol=atol, rtol=rtol)
    check(lambda v: jnp.fft.fft(v, n=11), z, atol=atol, rtol=rtol)
    check(lambda v: jnp.fft.rfft(v, n=40, norm="ortho"), x, atol=atol, rtol=rtol)
    check(lambda v: jnp.fft.ifft(v, norm="forward", axis=0), z, atol=atol * 24, rtol=rtol)
    check(lambda v: jnp.fft.irfft(v, n=15, norm="ortho"), z, atol=atol, rtol=rtol)
    check(lambda v: jnp.fft.hfft(v, n=20), z, atol=atol * 4, rtol=rtol)
    check(lambda v: jnp.fft.fftshift(jnp.fft.fft2(v)), z, atol=atol * 4, rtol=rtol)


@pytest.mark.parametrize("dtype", REAL, ids=dtype_id)
def test_spectra_that_are_not_hermitian(dtype):
    # irfft ignores the imaginary parts of the zero and (even lengths) Nyquist entries.
    z = signal((3, 9), complex_of(dtype), seed=5)
    atol, rtol = tolerance(dtype, 16)
    check(lambda v: jnp.fft.irfft(v, n=16), z, atol=atol, rtol=rtol)
    check(lambda v: jnp.fft.irfft(v, n=17), z, atol=atol, rtol=rtol)


def test_gradient_through_a_transform():
    x = signal((4, 32), np.float32, seed=6)
    atol, rtol = tolerance(np.float32, 32)

    def power(v):
        return jnp.sum(jnp.abs(jnp.fft.rfft(v)) ** 2)

    check(jax.grad(power), x, atol=atol * 32, rtol=rtol)


def test_empty_batches():
    check(jnp.fft.fft, np.zeros((0, 8), np.complex64))
    check(jnp.fft.rfft, np.zeros((0, 8), np.float32))
