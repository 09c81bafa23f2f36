"""Lowering rules for the linear-algebra primitives that JAX lowers per platform.

For a platform other than ``cpu``, JAX lowers each primitive with its generic
rule. Several linear-algebra primitives (``eigh``, ``svd``, ``lu``, ``schur``,
``eig``, ...) have no generic rule at all, and a few others (``geqrf``,
``householder_product``) have one that emits TPU-only custom calls, and
``tridiagonal_solve``'s generic rule neither pivots nor supports
``perturb_singular=True``. For those,
:func:`register` installs for the ``oxla`` platform the very rules JAX uses for
``cpu``: programs then carry the ``lapack_*_ffi`` custom calls, with JAX's cpu
pre- and post-processing around them, and oxla implements those targets
natively. ``eigh`` takes every ``implementation`` (JAX's cpu rule refuses the
GPU and TPU ones) and computes it the cpu way.

Everything here is best effort: a primitive or rule missing from the installed
JAX version is skipped, never an error.
"""

import functools
import logging

logger = logging.getLogger(__name__)

PLATFORM = "oxla"

#: Primitive attribute names in ``jax._src.lax.linalg``, each with the name of
#: the function JAX registers for ``cpu`` and whether that function takes a
#: ``target_name_prefix`` argument (used only when the cpu rule cannot be read
#: back from JAX's lowering registry).
_PRIMITIVES = (
    ("cholesky_p", "_cholesky_cpu_lowering", False),
    ("eig_p", "_eig_cpu_lowering", False),
    ("eigh_p", "_eigh_cpu_gpu_lowering", True),
    ("hessenberg_p", "_hessenberg_cpu_lowering", False),
    ("householder_product_p", "_householder_product_cpu_gpu_lowering", True),
    ("lu_p", "_lu_cpu_gpu_lowering", True),
    ("geqrf_p", "_geqrf_cpu_gpu_lowering", True),
    ("geqp3_p", "_geqp3_cpu_gpu_lowering", True),
    ("schur_p", "_schur_cpu_lowering", False),
    ("svd_p", "_svd_cpu_gpu_lowering", True),
    ("tridiagonal_p", "_tridiagonal_cpu_gpu_lowering", True),
    # The generic rule has no pivoting and refuses `perturb_singular=True`.
    ("tridiagonal_solve_p", "_tridiagonal_solve_cpu_lowering", False),
)

#: The rules installed by :func:`register`, by primitive name.
_registered = {}


def _any_eigh_implementation(rule):
    """``rule`` (the cpu rule of ``eigh_p``) for every ``implementation``.

    The cpu rule refuses ``EighImplementation.JACOBI`` (a GPU solver) and ``QDWH``
    (TPU); on oxla the implementation only chooses how the same decomposition is
    computed, so every one runs as the default, LAPACK's ``syevd``.
    """

    rule = _lending_lapack(rule)

    @functools.wraps(rule)
    def any_implementation(ctx, operand, **params):
        params["algorithm"] = None
        return rule(ctx, operand, **params)

    return any_implementation


def _lending_lapack(rule):
    """``rule`` (the cpu rule of ``schur_p``, ``eig_p``, ``eigh_p`` or ``svd_p``),
    first lending the plugin SciPy's LAPACK routines (see :mod:`oxla.lapack`), as
    JAX's cpu rule loads its LAPACK."""

    @functools.wraps(rule)
    def lending(ctx, operand, **params):
        from . import lapack

        lapack.lend()
        return rule(ctx, operand, **params)

    return lending


#: Adjustments of the cpu rules, by primitive name.
_ADAPTED = {
    "eig_p": _lending_lapack,
    "eigh_p": _any_eigh_implementation,
    "schur_p": _lending_lapack,
    "svd_p": _lending_lapack,
}


def _cpu_rule(mlir, linalg, prim, fallback_name, takes_prefix):
    """The rule JAX uses to lower ``prim`` for ``cpu``, or ``None``."""
    table = getattr(mlir, "_platform_specific_lowerings", None)
    try:
        entry = table["cpu"].get(prim) if table is not None else None
    except (KeyError, TypeError, AttributeError):
        entry = None
    rule = getattr(entry, "rule", None)
    if rule is not None:
        return rule
    fn = getattr(linalg, fallback_name, None)
    if fn is None:
        return None
    return functools.partial(fn, target_name_prefix="cpu") if takes_prefix else fn


def register():
    """Registers the cpu lowering rules of the linalg primitives for ``oxla``.

    Idempotent; returns the names of the primitives that have an oxla rule.
    Must run after the oxla platform is known to JAX (after registering the
    plugin), since JAX only accepts rules for known platforms.
    """
    try:
        from jax._src.interpreters import mlir
        from jax._src.lax import linalg
    except ImportError:
        return sorted(_registered)
    for prim_name, fallback_name, takes_prefix in _PRIMITIVES:
        if prim_name in _registered:
            continue
        prim = getattr(linalg, prim_name, None)
        if prim is None:
            continue
        rule = _cpu_rule(mlir, linalg, prim, fallback_name, takes_prefix)
        if rule is None:
            continue
        if prim_name in _ADAPTED:
            rule = _ADAPTED[prim_name](rule)
        try:
            mlir.register_lowering(prim, rule, platform=PLATFORM)
        except Exception as err:  # an older or newer JAX with other rules
            logger.debug("no oxla lowering for %s: %s", prim_name, err)
            continue
        _registered[prim_name] = rule
    return sorted(_registered)
