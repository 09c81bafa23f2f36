"""jnp.linalg and jax.scipy.linalg on oxla against JAX's cpu backend.

On oxla these primitives lower through JAX's cpu rules to ``lapack_*_ffi``
custom calls (see ``oxla.lowerings``), which oxla implements natively. Where
LAPACK fixes the answer (Cholesky, LU with partial pivoting, Householder QR,
eigenvalues, singular values, solves, determinants) the results are compared
directly. Schur forms, eigenvectors and singular vectors are unique only up to
an order and a phase per vector that LAPACK's rounding decides: with SciPy's
LAPACK lent to the plugin (``oxla.lapack``, the default) they must be cpu's to
the bit; oxla's own routines (the ``own_lapack`` fixture) are checked through
reconstructions and invariants.
"""


import numpy as np
import pytest

from _support import require_jax

jax = require_jax()
jnp = jax.numpy
lax = jax.lax

SQUARE_SHAPES = [(1, 1), (3, 3), (6, 6), (2, 4, 4), (2, 3, 5, 5)]
RECT_SHAPES = [(4, 4), (6, 3), (3, 6), (2, 5, 2), (2, 2, 3)]
DTYPES = [np.float32, np.float64]


def tol(dtype):
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.issubdtype(np.dtype(dtype), np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def well_conditioned(shape, dtype, seed=0):
    """A random matrix plus n on the diagonal: far from singular."""
    n = shape[-1]
    return (rand(shape, dtype, seed) + n * np.eye(n)).astype(dtype)


def hermitian(shape, dtype, seed=0):
    x = rand(shape, dtype, seed)
    return ((x + np.conj(np.swapaxes(x, -1, -2))) / 2).astype(dtype)


def positive_definite(shape, dtype, seed=0):
    x = rand(shape, dtype, seed)
    n = shape[-1]
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)).astype(dtype)


@pytest.fixture(params=DTYPES, ids=lambda d: np.dtype(d).name)
def dtype(request):
    """Each float type; float64 runs with x64 enabled."""
    if request.param == np.float64:
        with jax.enable_x64(True):
            yield request.param
    else:
        yield request.param


def run(fn, args, device):
    """jit(fn) on `device`, results as NumPy arrays (a tuple when fn returns several)."""
    placed = jax.device_put(args, device)
    out = jax.jit(fn)(*placed)
    return jax.tree.map(np.asarray, out)


def both(fn, *args, oxla_device, cpu_device):
    got = run(fn, args, oxla_device)
    want = run(fn, args, cpu_device)
    return got, want


@pytest.fixture
def own_lapack():
    """oxla's own routines for the test instead of SciPy's lent ones (see `oxla.lapack`)."""
    import os

    from oxla import lapack

    before = os.environ.get(lapack.ENV_SCIPY_LAPACK)
    os.environ[lapack.ENV_SCIPY_LAPACK] = "0"
    lapack.withdraw()
    yield
    if before is None:
        del os.environ[lapack.ENV_SCIPY_LAPACK]
    else:
        os.environ[lapack.ENV_SCIPY_LAPACK] = before
    lapack.withdraw()
    lapack.lend()


def assert_close(got, want, dtype, scale=1.0):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    t = tol(dtype) * scale
    np.testing.assert_allclose(got, want, rtol=t, atol=t)


def test_lowerings_register_is_idempotent(oxla_device):
    # The rules can only be registered once JAX knows the platform (oxla_device ensures it).
    lowerings = pytest.importorskip("oxla.lowerings")
    names = lowerings.register()
    for prim in ("cholesky_p", "eigh_p", "svd_p", "lu_p", "geqrf_p", "householder_product_p"):
        assert prim in names
    assert lowerings.register() == names


@pytest.mark.parametrize("shape", SQUARE_SHAPES, ids=str)
def test_cholesky(shape, dtype, oxla_device, cpu_device):
    a = positive_definite(shape, dtype)
    got, want = both(jnp.linalg.cholesky, a, oxla_device=oxla_device, cpu_device=cpu_device)
    assert_close(got, want, dtype)
    for upper in (False, True):
        got, want = both(
            lambda x: jnp.linalg.cholesky(x, upper=upper),
            a,
            oxla_device=oxla_device,
            cpu_device=cpu_device,
        )
        assert_close(got, want, dtype)


def test_cholesky_of_an_indefinite_matrix_is_nan(oxla_device, cpu_device):
    a = np.array([[[4.0, 2.0], [2.0, 5.0]], [[1.0, 2.0], [2.0, 1.0]]], np.float32)
    got, want = both(jnp.linalg.cholesky, a, oxla_device=oxla_device, cpu_device=cpu_device)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got[1]).any() and not np.isnan(got[0]).any()
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)


@pytest.mark.parametrize("shape", SQUARE_SHAPES, ids=str)
def test_solve_inv_det_slogdet(shape, dtype, oxla_device, cpu_device):
    a = well_conditioned(shape, dtype)
    b = rand(shape[:-1] + (2,), dtype, seed=1)
    for fn in (jnp.linalg.solve, lambda x, y: jnp.linalg.inv(x) @ y):
        got, want = both(fn, a, b, oxla_device=oxla_device, cpu_device=cpu_device)
        assert_close(got, want, dtype)
    got, want = both(jnp.linalg.inv, a, oxla_device=oxla_device, cpu_device=cpu_device)
    assert_close(got, want, dtype)
    got, want = both(jnp.linalg.det, a, oxla_device=oxla_device, cpu_device=cpu_device)
    assert_close(got, want, dtype, scale=10)
    (sign, logdet), (want_sign, want_logdet) = both(
        jnp.linalg.slogdet, a, oxla_device=oxla_device, cpu_device=cpu_device
    )
    np.testing.assert_array_equal(sign, want_sign)
    assert_close(logdet, want_logdet, dtype, scale=10)


def test_det_of_a_singular_matrix(oxla_device, cpu_device):
    a = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
    got, want = both(jnp.linalg.det, a, oxla_device=oxla_device, cpu_device=cpu_device)
    assert got == want == 0.0
    (sign, logdet), (want_sign, want_logdet) = both(
        jnp.linalg.slogdet, a, oxla_device=oxla_device, cpu_device=cpu_device
    )
    assert sign == want_sign == 0.0 and logdet == want_logdet == -np.inf


@pytest.mark.parametrize("shape", [(3, 3), (5, 5), (4, 6), (6, 4)], ids=str)
def test_scipy_lu(shape, dtype, oxla_device, cpu_device):
    a = rand(shape, dtype)
    got, want = both(jax.scipy.linalg.lu, a, oxla_device=oxla_device, cpu_device=cpu_device)
    for g, w in zip(got, want):
        assert_close(g, w, dtype)
    p, l, u = got
    assert_close(p @ l @ u, a, dtype, scale=10)


@pytest.mark.parametrize("shape", SQUARE_SHAPES + RECT_SHAPES, ids=str)
def test_lax_lu_batched(shape, dtype, oxla_device, cpu_device):
    a = rand(shape, dtype, seed=3)
    got, want = both(jax.lax.linalg.lu, a, oxla_device=oxla_device, cpu_device=cpu_device)
    lu, pivots, perm = got
    assert_close(lu, want[0], dtype)
    np.testing.assert_array_equal(pivots, want[1])
    np.testing.assert_array_equal(perm, want[2])


def test_a_permutation_nothing_reads_is_not_computed(tmp_path, oxla_device, cpu_device):
    # `lax.linalg.lu` lowers with a loop building the row permutation from the pivots,
    # which `lu(a)[0]` (and `det`, `slogdet`) never read: oxla drops it as dead code.
    a = rand((6, 6), np.float32, seed=4)
    fn = lambda x: lax.linalg.lu(x)[0]  # noqa: E731
    x = jax.device_put(a, oxla_device)
    compiled = jax.jit(fn).lower(x).compile(compiler_options={"oxla_dump_dir": str(tmp_path)})
    (dump,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert "stablehlo.while" in (dump / "ir.010-read.mlir").read_text()
    assert "stablehlo.while" not in (dump / "plan.mlir").read_text()
    assert_close(np.asarray(compiled(x)), run(fn, (a,), cpu_device), np.float32)


@pytest.mark.parametrize("shape", RECT_SHAPES + [(2, 3, 5, 5)], ids=str)
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(shape, mode, dtype, oxla_device, cpu_device):
    a = rand(shape, dtype, seed=5)
    fn = lambda x: jnp.linalg.qr(x, mode=mode)  # noqa: E731
    got, want = both(fn, a, oxla_device=oxla_device, cpu_device=cpu_device)
    if mode == "r":
        assert_close(got, want, dtype, scale=10)
        return
    q, r = got
    # Householder QR with LAPACK's sign convention is unique for full-rank input.
    assert_close(q, want[0], dtype, scale=10)
    assert_close(r, want[1], dtype, scale=10)
    assert_close(q @ r, a, dtype, scale=10)
    eye = np.eye(q.shape[-1], dtype=dtype)
    assert_close(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(eye, q.shape[:-2] + eye.shape), dtype)


@pytest.mark.parametrize("shape", SQUARE_SHAPES, ids=str)
def test_eigh(shape, dtype, own_lapack, oxla_device, cpu_device):
    a = hermitian(shape, dtype, seed=7)
    (w, v), (want_w, want_v) = both(
        jnp.linalg.eigh, a, oxla_device=oxla_device, cpu_device=cpu_device
    )
    assert_close(w, want_w, dtype, scale=10)
    assert (np.diff(w, axis=-1) >= 0).all()
    # Eigenvectors up to sign: A v = v diag(w), V orthonormal, and matching cpu's up to sign.
    assert_close(a @ v, v * w[..., None, :], dtype, scale=10)
    eye = np.broadcast_to(np.eye(shape[-1], dtype=dtype), a.shape)
    assert_close(np.swapaxes(v, -1, -2) @ v, eye, dtype)
    overlap = np.abs(np.swapaxes(want_v, -1, -2) @ v)
    assert_close(overlap, eye, dtype, scale=100)
    got = run(lambda x: jnp.linalg.eigvalsh(x), (a,), oxla_device)
    assert_close(got, want_w, dtype, scale=10)


@pytest.mark.parametrize("implementation", ["QR", "JACOBI", "QDWH"])
def test_eigh_of_every_implementation(implementation, dtype, own_lapack, oxla_device, cpu_device):
    # cpu refuses the GPU's Jacobi and the TPU's QDWH; oxla computes each as the default.
    impl = getattr(lax.linalg.EighImplementation, implementation)
    a = hermitian((3, 6, 6), dtype, seed=13)
    v, w = run(lambda x: lax.linalg.eigh(x, implementation=impl), (a,), oxla_device)
    want_w = run(lambda x: jnp.linalg.eigvalsh(x), (a,), cpu_device)
    assert_close(w, want_w, dtype, scale=10)
    assert_close(a @ v, v * w[..., None, :], dtype, scale=10)
    if implementation != "QR":
        with pytest.raises(NotImplementedError):
            run(lambda x: lax.linalg.eigh(x, implementation=impl), (a,), cpu_device)


def test_eigh_complex(own_lapack, oxla_device, cpu_device):
    a = hermitian((2, 4, 4), np.complex64, seed=9)
    (w, v), (want_w, _) = both(jnp.linalg.eigh, a, oxla_device=oxla_device, cpu_device=cpu_device)
    assert w.dtype == np.float32
    assert_close(w, want_w, np.complex64, scale=10)
    assert_close(a @ v, v * w[..., None, :], np.complex64, scale=10)


@pytest.mark.parametrize("shape", RECT_SHAPES + [(2, 3, 5, 5)], ids=str)
@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd(shape, full_matrices, dtype, own_lapack, oxla_device, cpu_device):
    a = rand(shape, dtype, seed=11)
    fn = lambda x: jnp.linalg.svd(x, full_matrices=full_matrices)  # noqa: E731
    (u, s, vt), (want_u, want_s, want_vt) = both(
        fn, a, oxla_device=oxla_device, cpu_device=cpu_device
    )
    assert u.shape == want_u.shape and vt.shape == want_vt.shape
    assert_close(s, want_s, dtype, scale=10)
    assert (np.diff(s, axis=-1) <= 0).all()
    k = s.shape[-1]
    assert_close((u[..., :, :k] * s[..., None, :]) @ vt[..., :k, :], a, dtype, scale=10)
    for m in (u, np.swapaxes(vt, -1, -2)):
        eye = np.broadcast_to(np.eye(m.shape[-1], dtype=dtype), m.shape[:-2] + (m.shape[-1],) * 2)
        assert_close(np.swapaxes(m, -1, -2) @ m, eye, dtype)
    got = run(lambda x: jnp.linalg.svd(x, compute_uv=False), (a,), oxla_device)
    assert_close(got, want_s, dtype, scale=10)


@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (2, 3, 5)], ids=str)
@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd_by_qr_iteration(shape, full_matrices, dtype, own_lapack, oxla_device, cpu_device):
    # `SvdAlgorithm.QR` asks for LAPACK's gesvd instead of gesdd: the same factors.
    a = rand(shape, dtype, seed=12)
    algorithm = jax.lax.linalg.SvdAlgorithm.QR

    def fn(x):
        return jax.lax.linalg.svd(x, full_matrices=full_matrices, algorithm=algorithm)

    (u, s, vt), (want_u, want_s, want_vt) = both(
        fn, a, oxla_device=oxla_device, cpu_device=cpu_device
    )
    assert u.shape == want_u.shape and vt.shape == want_vt.shape
    assert_close(s, want_s, dtype, scale=10)
    k = s.shape[-1]
    assert_close((u[..., :, :k] * s[..., None, :]) @ vt[..., :k, :], a, dtype, scale=10)


def test_svd_complex(own_lapack, oxla_device, cpu_device):
    a = rand((2, 3, 5), np.complex64, seed=13)
    (u, s, vt), (_, want_s, _) = both(
        jnp.linalg.svd, a, oxla_device=oxla_device, cpu_device=cpu_device
    )
    assert_close(s, want_s, np.complex64, scale=10)
    assert_close((u[..., :, :3] * s[..., None, :]) @ vt[..., :3, :], a, np.complex64, scale=10)


def test_norms_and_pinv(dtype, oxla_device, cpu_device):
    a = rand((2, 4, 3), dtype, seed=17)
    for fn in (
        lambda x: jnp.linalg.norm(x, ord=2, axis=(-2, -1)),
        lambda x: jnp.linalg.norm(x, ord="nuc", axis=(-2, -1)),
        jnp.linalg.pinv,
        jnp.linalg.matrix_rank,
    ):
        got, want = both(fn, a, oxla_device=oxla_device, cpu_device=cpu_device)
        assert_close(got, want, dtype, scale=10)


@pytest.mark.parametrize("lower", [True, False], ids=["lower", "upper"])
def test_tridiagonal(lower, dtype, oxla_device, cpu_device):
    # sytrd/hetrd on either triangle: the packed reflectors, d, e and tau as on cpu.
    a = rand((2, 5, 5), dtype, seed=23)
    fn = lambda x: jax.lax.linalg.tridiagonal(x, lower=lower)  # noqa: E731
    got, want = both(fn, a, oxla_device=oxla_device, cpu_device=cpu_device)
    for g, w in zip(got, want):
        assert_close(g, w, dtype, scale=10)


@pytest.mark.parametrize("shape", [(100000, 2), (2, 100000)], ids=str)
def test_thin_svd_and_pinv_of_very_long_matrices(shape, own_lapack, oxla_device, cpu_device):
    # A thin decomposition only builds the first min(m, n) singular vectors: the full U of
    # a 100000 x 2 matrix would be 80 GB.
    a = rand(shape, np.float32, seed=19)
    fn = lambda x: jnp.linalg.svd(x, full_matrices=False)  # noqa: E731
    (u, s, vt), (_, want_s, _) = both(fn, a, oxla_device=oxla_device, cpu_device=cpu_device)
    assert u.shape == (shape[0], 2) and vt.shape == (2, shape[1])
    assert_close(s, want_s, np.float32, scale=10)
    assert_close((u * s) @ vt, a, np.float32, scale=10)
    got, want = both(jnp.linalg.pinv, a, oxla_device=oxla_device, cpu_device=cpu_device)
    assert_close(got, want, np.float32, scale=10)


@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (2, 5, 5)], ids=str)
def test_eig(shape, dtype, own_lapack, oxla_device, cpu_device):
    a = rand(shape, dtype, seed=19)
    (w, v), (want_w, _) = both(jnp.linalg.eig, a, oxla_device=oxla_device, cpu_device=cpu_device)
    assert w.dtype == want_w.dtype and v.dtype == want_w.dtype
    # LAPACK leaves the order of the eigenvalues unspecified: compare them sorted.
    key = lambda x: np.sort_complex(np.round(x, 4))  # noqa: E731
    assert_close(key(w), key(want_w), dtype, scale=100)
    assert_close(a @ v, v * w[..., None, :], dtype, scale=100)
    assert_close(np.linalg.norm(v, axis=-2), np.ones(w.shape, dtype), dtype)
    got = run(jnp.linalg.eigvals, (a,), oxla_device)
    assert_close(key(got), key(want_w), dtype, scale=100)


@pytest.mark.parametrize("n", [3, 8, 16, 30, 90])
def test_eig_of_larger_matrices(n, own_lapack, oxla_device, cpu_device):
    # Past 75 rows the QR iteration runs multishift sweeps with aggressive early deflation;
    # the batch puts two matrices through it.
    a = rand((2, n, n), np.float32, seed=40 + n)
    (w, v), (want_w, _) = both(jnp.linalg.eig, a, oxla_device=oxla_device, cpu_device=cpu_device)
    scale = 10 * n
    assert_close(np.sort_complex(w), np.sort_complex(want_w), np.float32, scale=scale)
    assert_close(a @ v, v * w[..., None, :], np.float32, scale=scale)
    if n <= 16:
        # Below the multishift size the double-shift QR iteration deflates the eigenvalues
        # in LAPACK's order, the order `cpu` returns.
        assert_close(w, want_w, np.float32, scale=scale)


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_eig_of_a_matrix_with_a_non_finite_entry_is_nan(value, oxla_device, cpu_device):
    a = np.eye(3, dtype=np.float32)
    a[1, 2] = value
    for x in (a[:1, :1] * value, a):
        got, want = both(jnp.linalg.eigvals, x, oxla_device=oxla_device, cpu_device=cpu_device)
        assert np.isnan(want).all()
        assert np.isnan(got).all()


def test_eig_of_a_rotation_is_imaginary(own_lapack, oxla_device):
    a = np.array([[0.0, -2.0], [2.0, 0.0]], np.float32)
    w = run(jnp.linalg.eigvals, (a,), oxla_device)
    np.testing.assert_allclose(np.sort_complex(w), [-2j, 2j], atol=1e-6)


@pytest.mark.parametrize("n", [1, 4, 6])
def test_hessenberg(n, dtype, oxla_device, cpu_device):
    a = rand((n, n), dtype, seed=23)
    fn = lambda x: jax.scipy.linalg.hessenberg(x, calc_q=True)  # noqa: E731
    (h, q), (want_h, want_q) = both(fn, a, oxla_device=oxla_device, cpu_device=cpu_device)
    # Householder reduction with LAPACK's conventions is unique.
    assert_close(h, want_h, dtype, scale=10)
    assert_close(q, want_q, dtype, scale=10)
    assert_close(q @ h @ q.T, a, dtype, scale=10)


@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 5)], ids=str)
def test_qr_with_pivoting(shape, dtype, oxla_device, cpu_device):
    a = rand(shape, dtype, seed=31)
    fn = lambda x: jax.scipy.linalg.qr(x, pivoting=True, mode="economic")  # noqa: E731
    (q, r, p), (want_q, want_r, want_p) = both(
        fn, a, oxla_device=oxla_device, cpu_device=cpu_device
    )
    np.testing.assert_array_equal(p, want_p)
    assert_close(q, want_q, dtype, scale=10)
    assert_close(r, want_r, dtype, scale=10)
    assert_close(q @ r, a[:, p], dtype, scale=10)


@pytest.mark.parametrize("shape", [(1, 1), (5, 5), (2, 4, 4)], ids=str)
def test_tridiagonal_of_hermitian(shape, dtype, oxla_device, cpu_device):
    a = hermitian(shape, dtype, seed=37)
    fn = lambda x: jax.lax.linalg.tridiagonal(x, lower=True)  # noqa: E731
    got, want = both(fn, a, oxla_device=oxla_device, cpu_device=cpu_device)
    for g, w in zip(got, want):
        assert_close(g, w, dtype, scale=10)


COMPLEX_CASES = {
    "cholesky": (jnp.linalg.cholesky, positive_definite),
    "solve": (lambda x: jnp.linalg.solve(x, x[..., :1] + 1), well_conditioned),
    "inv": (jnp.linalg.inv, well_conditioned),
    "det": (jnp.linalg.det, well_conditioned),
    "lu": (jax.lax.linalg.lu, rand),
    "qr": (jnp.linalg.qr, rand),
    "eigvalsh": (jnp.linalg.eigvalsh, hermitian),
    "svdvals": (lambda x: jnp.linalg.svd(x, compute_uv=False), rand),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_CASES))
@pytest.mark.parametrize("ctype", [np.complex64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_complex(name, ctype, oxla_device, cpu_device):
    fn, make = COMPLEX_CASES[name]
    with jax.enable_x64(ctype == np.complex128):
        a = make((2, 4, 4), ctype, seed=41)
        got, want = both(fn, a, oxla_device=oxla_device, cpu_device=cpu_device)
        for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
            assert_close(g, w, ctype, scale=10)


def test_gradients(dtype, oxla_device, cpu_device):
    a = positive_definite((4, 4), dtype, seed=43)

    def loss(x):
        w, v = jnp.linalg.eigh(x)
        sign, logdet = jnp.linalg.slogdet(x)
        s = jnp.linalg.svd(x, compute_uv=False)
        return logdet + jnp.sum(w**2) + jnp.sum(s) + jnp.sum(jnp.linalg.cholesky(x))

    got, want = both(jax.grad(loss), a, oxla_device=oxla_device, cpu_device=cpu_device)
    assert_close(got, want, dtype, scale=100)


SCHUR_TYPES = [np.float32, np.float64, np.complex64, np.complex128]


def schur_input(kind, n, dtype, seed):
    """Matrices whose Schur form takes each path of LAPACK's `gees`."""
    a = rand((n, n), dtype, seed)
    if kind == "triangular":
        # Balancing isolates every eigenvalue; no QR iteration runs.
        return np.triu(a)
    if kind == "isolated":
        # Row 0 and the last column hold the only entries of their row/column off the
        # diagonal, so balancing moves them out and iterates on the block between.
        a[1:, 0] = 0
        a[-1, :-1] = 0
        return a
    if kind == "tiny":
        # Entries far below sqrt(safmin) / eps: gees scales the matrix first.
        return (a * (1e-16 if np.finfo(dtype).bits <= 32 else 1e-160)).astype(dtype)
    if kind == "rotation":
        # Exact complex pairs (and a real eigenvalue): standardized 2x2 blocks.
        q = np.linalg.qr(rand((n, n), np.float64, seed + 1))[0]
        d = np.zeros((n, n))
        for i in range(0, n - 1, 2):
            d[i : i + 2, i : i + 2] = [[1.0 + i, 2.0], [-2.0, 1.0 + i]]
        if n % 2:
            d[-1, -1] = 3.0
        return (q @ d @ q.T).astype(dtype)
    return a


SCHUR_EXACT_CASES = [(n, "random") for n in (1, 2, 4, 15, 50, 76, 120)] + [
    (n, kind) for n in (3, 30) for kind in ("triangular", "isolated", "tiny", "rotation")
]


@pytest.mark.parametrize("n,kind", SCHUR_EXACT_CASES, ids=lambda c: str(c))
@pytest.mark.parametrize("stype", [np.float32, np.float64, np.complex64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_schur_is_lapacks(stype, n, kind, oxla_device, cpu_device):
    # A Schur form is unique only up to the order of the eigenvalues and the phases of Z's
    # columns, which LAPACK's rounding decides; oxla runs the LAPACK JAX's cpu backend
    # runs, so T and Z are cpu's to the bit, past LAPACK's multishift threshold (75 rows)
    # too.
    with jax.enable_x64(np.dtype(stype) in (np.float64, np.complex128)):
        a = schur_input(kind, n, stype, seed=7 * n + 1)
        got, want = both(
            jax.scipy.linalg.schur, a, oxla_device=oxla_device, cpu_device=cpu_device
        )
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("stype", [np.float32, np.complex128], ids=lambda d: np.dtype(d).name)
def test_batched_schur_without_vectors_is_lapacks(stype, oxla_device, cpu_device):
    with jax.enable_x64(np.dtype(stype) == np.complex128):
        a = np.stack([rand((9, 9), stype, seed) for seed in range(3)])

        def t_only(x):
            return jax.lax.linalg.schur(x, compute_schur_vectors=False)[0]

        got, want = both(t_only, a, oxla_device=oxla_device, cpu_device=cpu_device)
    np.testing.assert_array_equal(got, want)


LOWERINGS_THAT_LEND = {
    "schur": lambda x: jax.scipy.linalg.schur(x),
    "eig": lambda x: jnp.linalg.eig(x),
    "eigh": lambda x: jnp.linalg.eigh(x + x.T),
    "svd": lambda x: jnp.linalg.svd(x),
}


@pytest.mark.parametrize("name", sorted(LOWERINGS_THAT_LEND))
def test_lowering_lends_scipy_lapack(name, oxla_device, cpu_device):
    # Lowering a Schur, eigen- or singular value decomposition for oxla lends the plugin
    # SciPy's LAPACK, as JAX's cpu rule loads its LAPACK; taking the routines back makes
    # oxla's own routines run again.
    from oxla import lapack

    lapack.withdraw()
    assert lapack.lent() == []
    a = rand((20, 20), np.float32, seed=5)
    fn = LOWERINGS_THAT_LEND[name]
    fresh = lambda x: fn(x)  # noqa: E731 - a new function, lowered anew
    got, want = both(fresh, a, oxla_device=oxla_device, cpu_device=cpu_device)
    assert lapack.lent() == list(lapack.ROUTINES)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_array_equal(g, w)


LAPACK_TYPES = [np.float32, np.float64, np.complex64, np.complex128]


def assert_same_bits(got, want):
    got, want = jax.tree.leaves(got), jax.tree.leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def lapacks_answer(fn, a, oxla_device, cpu_device):
    """Asserts oxla's answer to `fn(a)` is cpu's to the bit (x64 on for 64-bit types)."""
    with jax.enable_x64(np.dtype(a.dtype) in (np.float64, np.complex128)):
        got, want = both(fn, a, oxla_device=oxla_device, cpu_device=cpu_device)
    assert_same_bits(got, want)


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (7, 7), (40, 40), (3, 6, 6)], ids=str)
@pytest.mark.parametrize("ltype", LAPACK_TYPES, ids=lambda d: np.dtype(d).name)
def test_eigh_is_lapacks(ltype, shape, oxla_device, cpu_device):
    # syevd/heevd through SciPy's LAPACK: the eigenvectors' signs are cpu's too.
    a = hermitian(shape, ltype, seed=shape[-1] + 3)
    lapacks_answer(jnp.linalg.eigh, a, oxla_device, cpu_device)
    lapacks_answer(jnp.linalg.eigvalsh, a, oxla_device, cpu_device)


SVD_MODES = {
    "full": lambda x: jnp.linalg.svd(x, full_matrices=True),
    "reduced": lambda x: jnp.linalg.svd(x, full_matrices=False),
    "values": lambda x: jnp.linalg.svd(x, compute_uv=False),
    "qr_full": lambda x: lax.linalg.svd(
        x, full_matrices=True, algorithm=lax.linalg.SvdAlgorithm.QR
    ),
    "qr_reduced": lambda x: lax.linalg.svd(
        x, full_matrices=False, algorithm=lax.linalg.SvdAlgorithm.QR
    ),
}


@pytest.mark.parametrize("shape", [(1, 1), (6, 6), (7, 4), (4, 9), (2, 5, 3), (50, 30)], ids=str)
@pytest.mark.parametrize("mode", sorted(SVD_MODES))
@pytest.mark.parametrize("ltype", LAPACK_TYPES, ids=lambda d: np.dtype(d).name)
def test_svd_is_lapacks(ltype, mode, shape, oxla_device, cpu_device):
    # gesdd (and gesvd for the QR algorithm) through SciPy's LAPACK, every job.
    a = rand(shape, ltype, seed=sum(shape))
    lapacks_answer(SVD_MODES[mode], a, oxla_device, cpu_device)


def test_thin_svd_of_a_very_long_matrix_is_lapacks(oxla_device, cpu_device):
    a = rand((100000, 2), np.float32, seed=3)
    lapacks_answer(SVD_MODES["reduced"], a, oxla_device, cpu_device)
    lapacks_answer(SVD_MODES["reduced"], a.T.copy(), oxla_device, cpu_device)


EIG_JOBS = {
    "right": jnp.linalg.eig,
    "values": jnp.linalg.eigvals,
    "left_and_right": lambda x: lax.linalg.eig(
        x, compute_left_eigenvectors=True, compute_right_eigenvectors=True
    ),
}


@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (30, 30), (90, 90), (2, 8, 8)], ids=str)
@pytest.mark.parametrize("job", sorted(EIG_JOBS))
@pytest.mark.parametrize("ltype", LAPACK_TYPES, ids=lambda d: np.dtype(d).name)
def test_eig_is_lapacks(ltype, job, shape, oxla_device, cpu_device):
    # geev through SciPy's LAPACK: the eigenvalues in cpu's order, the vectors' phases
    # cpu's; past 75 rows LAPACK's multishift QR runs.
    a = rand(shape, ltype, seed=shape[-1])
    lapacks_answer(EIG_JOBS[job], a, oxla_device, cpu_device)


@pytest.mark.parametrize("lent", [True, False], ids=["lent", "own"])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_decompositions_of_non_finite_matrices(value, lent, request, oxla_device, cpu_device):
    a = rand((6, 6), np.float32, seed=1)
    a[2, 3] = a[3, 2] = value
    if lent:
        # LAPACK's symmetric eigensolver answers with whatever its bounded iterations leave.
        lapacks_answer(jnp.linalg.eigh, a, oxla_device, cpu_device)
    else:
        request.getfixturevalue("own_lapack")
        w, v = run(jnp.linalg.eigh, (a,), oxla_device)
        assert np.isnan(w).all() and np.isnan(v).all()
    # No SVD (LAPACK's gesdd calls a NaN matrix illegal, which JAX turns into NaNs, and its
    # QR sweeps are kept away from infinities) and no eigenvalues.
    for fn in (SVD_MODES["values"], SVD_MODES["full"], SVD_MODES["qr_reduced"], jnp.linalg.eigvals):
        for x in jax.tree.leaves(run(fn, (a,), oxla_device)):
            assert np.isnan(x).all()


@pytest.mark.parametrize("stype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_own_small_real_schur_is_mostly_lapacks(stype, own_lapack, oxla_device, cpu_device):
    # oxla's own gees takes LAPACK's steps (balancing's permutation, the unblocked
    # Hessenberg reduction, the double-shift QR of lahqr, lanv2's standardized blocks) in
    # the matrix's own precision, so for small matrices the Schur form is mostly cpu's:
    # the eigenvalues in the same order and Z's columns with the same signs. Rounding
    # (LAPACK's products are its BLAS's) can still lead an iteration to another form now
    # and then, more often in float32, so most matrices, not all, must match.
    tol = 2e-3 if stype == np.float32 else 1e-9
    matched = 0
    with jax.enable_x64(stype == np.float64):
        for seed in range(16):
            a = (rand((4, 4), stype, seed) * 3).astype(stype)
            own = lambda x: jax.scipy.linalg.schur(x)  # noqa: E731 - lowered anew
            (t, z), (want_t, want_z) = both(
                own, a, oxla_device=oxla_device, cpu_device=cpu_device
            )
            same = np.allclose(t, want_t, rtol=tol, atol=tol)
            matched += same and np.allclose(z, want_z, rtol=tol, atol=tol)
    assert matched >= (12 if stype == np.float32 else 14), matched


def assert_same_eigenvalues(w, want_w, atol):
    """Each eigenvalue of `w` is near one of `want_w`, each used once."""
    remaining = list(want_w)
    for x in w:
        k = int(np.argmin([abs(x - y) for y in remaining]))
        assert abs(x - remaining[k]) <= atol, (x, remaining[k])
        remaining.pop(k)


SCHUR_CASES = [(n, "random") for n in (1, 2, 5, 15, 50, 100)] + [
    (n, kind) for n in (1, 2, 5, 50) for kind in ("triangular", "isolated", "tiny", "rotation")
]


@pytest.mark.parametrize("n,kind", SCHUR_CASES, ids=lambda c: str(c))
@pytest.mark.parametrize("stype", SCHUR_TYPES, ids=lambda d: np.dtype(d).name)
def test_own_schur_form(stype, n, kind, own_lapack, oxla_device, cpu_device):
    # oxla's own gees (where no LAPACK is lent): the Schur form is not unique (the order of
    # the eigenvalues along the diagonal, the signs or phases of Z's columns), and LAPACK's
    # rounding (OpenBLAS's kernels) decides between forms as the iteration proceeds, so
    # compare properties.
    with jax.enable_x64(np.dtype(stype) in (np.float64, np.complex128)):
        a = schur_input(kind, n, stype, seed=n)
        (t, z), (want_t, _) = both(
            jax.scipy.linalg.schur, a, oxla_device=oxla_device, cpu_device=cpu_device
        )
    assert t.dtype == want_t.dtype and z.dtype == stype
    if np.issubdtype(stype, np.complexfloating):
        assert (np.tril(t, -1) == 0).all()
    else:
        # Quasi-triangular, each 2x2 block in LAPACK's standard form.
        assert (np.tril(t, -2) == 0).all()
        sub = np.diag(t, -1)
        assert not (sub[:-1] != 0)[sub[1:] != 0].any()
        for i in np.flatnonzero(sub):
            assert t[i, i] == t[i + 1, i + 1] and t[i, i + 1] * t[i + 1, i] < 0
    scale = max(np.abs(a).max(), np.finfo(stype).tiny)
    zh = np.conj(z.T)
    assert_close(z @ t @ zh / scale, a / scale, stype, scale=20 * n)
    assert_close(zh @ z, np.eye(n, dtype=stype), stype, scale=20 * n)
    w = np.linalg.eigvals(t.astype(np.complex128)) / scale
    want_w = np.linalg.eigvals(want_t.astype(np.complex128)) / scale
    assert_same_eigenvalues(w, want_w, atol=50 * n * tol(stype))


def test_sqrtm(oxla_device, cpu_device):
    a = positive_definite((4, 4), np.float32, seed=53)
    got, want = both(jax.scipy.linalg.sqrtm, a, oxla_device=oxla_device, cpu_device=cpu_device)
    assert_close(got, want, np.complex64, scale=10)


def tridiagonal_system(shape, k, dtype, seed, pivoting):
    """Diagonals of shape `shape` and right-hand sides `shape + (k,)`; with `pivoting` the
    main diagonal is small, so every elimination step interchanges rows."""
    rng = np.random.default_rng(seed)

    def draw(s):
        x = rng.standard_normal(s)
        if np.issubdtype(np.dtype(dtype), np.complexfloating):
            x = x + 1j * rng.standard_normal(s)
        return x

    d = draw(shape) * (0.01 if pivoting else 1.0) + (0.0 if pivoting else 4.0)
    return [draw(shape).astype(dtype), d.astype(dtype), draw(shape).astype(dtype),
            draw(shape + (k,)).astype(dtype)]


@pytest.mark.parametrize("perturb", [False, True], ids=["gtsv", "perturbed"])
@pytest.mark.parametrize("pivoting", [False, True], ids=["dominant", "pivoting"])
@pytest.mark.parametrize("shape,k", [((1,), 1), ((2,), 3), ((9,), 2), ((2, 3, 6), 1)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64], ids=lambda d: np.dtype(d).name)
def test_tridiagonal_solve(shape, k, pivoting, perturb, dtype, oxla_device, cpu_device):
    args = tridiagonal_system(shape, k, dtype, seed=41, pivoting=pivoting)

    def fn(dl, d, du, b):
        return jax.lax.linalg.tridiagonal_solve(dl, d, du, b, perturb_singular=perturb)

    with jax.enable_x64(np.dtype(dtype) == np.float64):
        got, want = both(fn, *args, oxla_device=oxla_device, cpu_device=cpu_device)
    assert_close(got, want, dtype, scale=10)


@pytest.mark.parametrize("perturb", [False, True], ids=["gtsv", "perturbed"])
def test_tridiagonal_solve_of_singular_systems(perturb, oxla_device, cpu_device):
    # A zero matrix and [[1, 1], [1, 1]]: gtsv reports the zero pivot (NaN solution);
    # the perturbed solver nudges the pivots and returns the same huge finite values.
    def fn(dl, d, du, b):
        return jax.lax.linalg.tridiagonal_solve(dl, d, du, b, perturb_singular=perturb)

    zeros = np.zeros(3, np.float32)
    ones = np.ones(2, np.float32)
    for args in ([zeros, zeros, zeros, np.ones((3, 1), np.float32)],
                 [ones, ones, ones, np.array([[1.0], [2.0]], np.float32)]):
        got, want = both(fn, *args, oxla_device=oxla_device, cpu_device=cpu_device)
        if perturb:
            assert np.isfinite(want).all()
            np.testing.assert_allclose(got, want, rtol=1e-5)
        else:
            assert np.isnan(want).all()
            assert np.isnan(got).all()


@pytest.mark.parametrize("n", [2, 4, 7])
def test_rsf2csf_takes_lapacks_eigenvalue_of_each_block(n, oxla_device, cpu_device):
    # rsf2csf rotates each 2x2 block by the first eigenvalue `eigvals` returns for it; the
    # complex QR iteration's shift decides which of a conjugate pair that is, so the
    # complex Schur form matches cpu's only when the order matches LAPACK's.
    for seed in range(5):
        rng = np.random.default_rng(seed)
        t, z = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
        got, want = both(
            jax.scipy.linalg.rsf2csf, t, z, oxla_device=oxla_device, cpu_device=cpu_device
        )
        for g, w in zip(got, want):
            assert_close(g, w, np.complex64, scale=10)


def test_qr_large_enough_to_thread(oxla_device, cpu_device):
    # Past 2^25 multiply-adds the QR and the reflector product run on faer's threads.
    a = rand((400, 300), np.float32, seed=27)
    (q, r), (want_q, want_r) = both(
        jnp.linalg.qr, a, oxla_device=oxla_device, cpu_device=cpu_device
    )
    assert_close(q, want_q, np.float32, scale=300)
    assert_close(r, want_r, np.float32, scale=300)


@pytest.mark.parametrize("n", [70, 200])
def test_matrices_past_the_block_sizes(n, dtype, oxla_device, cpu_device):
    # Real matrices take blocked, threaded kernels in their own precision; these sizes
    # cover several blocks and the threaded updates.
    spd = positive_definite((n, n), dtype, seed=21)
    a = well_conditioned((n, n), dtype, seed=22)
    b = rand((n, 3), dtype, seed=23)
    scale = n
    got, want = both(jnp.linalg.cholesky, spd, oxla_device=oxla_device, cpu_device=cpu_device)
    assert_close(got, want, dtype, scale=scale)
    got, want = both(jnp.linalg.solve, a, b, oxla_device=oxla_device, cpu_device=cpu_device)
    assert_close(got, want, dtype, scale=scale)
    (sign, logdet), (want_sign, want_logdet) = both(
        jnp.linalg.slogdet, a, oxla_device=oxla_device, cpu_device=cpu_device
    )
    np.testing.assert_array_equal(sign, want_sign)
    assert_close(logdet, want_logdet, dtype, scale=scale)
    sym = hermitian((n, n), dtype, seed=24)
    (w, v), (want_w, _) = both(jnp.linalg.eigh, sym, oxla_device=oxla_device, cpu_device=cpu_device)
    assert_close(w, want_w, dtype, scale=scale)
    assert_close(sym @ v, v * w[None, :], dtype, scale=scale)
    rect = rand((n, n // 2), dtype, seed=25)
    (u, s, vt), (_, want_s, _) = both(
        lambda x: jnp.linalg.svd(x, full_matrices=False), rect,
        oxla_device=oxla_device, cpu_device=cpu_device,
    )
    assert_close(s, want_s, dtype, scale=scale)
    assert_close((u * s[None, :]) @ vt, rect, dtype, scale=scale)
    got, want = both(
        lambda x, y: jax.scipy.linalg.solve_triangular(x, y, lower=True), spd, b,
        oxla_device=oxla_device, cpu_device=cpu_device,
    )
    assert_close(got, want, dtype, scale=scale)
    # Householder QR with LAPACK's signs is unique for full rank: square, tall, and a matrix
    # with a repeated column (rank-deficient: the general path, whose R has a zero pivot).
    repeated = rect.copy()
    repeated[:, 3] = repeated[:, 1]
    for m in (a, rect, repeated):
        (q, r), (want_q, want_r) = both(
            jnp.linalg.qr, m, oxla_device=oxla_device, cpu_device=cpu_device
        )
        assert_close(q @ r, m, dtype, scale=scale)
        if m is repeated:
            continue
        assert_close(q, want_q, dtype, scale=scale)
        assert_close(r, want_r, dtype, scale=scale)
