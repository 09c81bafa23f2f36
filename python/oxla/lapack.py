"""Lends the plugin the LAPACK routines JAX's cpu backend calls (SciPy's).

Where LAPACK leaves a choice open, its answer is decided by the rounding of
every step, BLAS kernels included: the order of the eigenvalues along a Schur
form's diagonal and of ``geev``'s eigenvalues, and the signs (phases) of the
columns of ``Z``, of eigenvectors and of singular vectors. JAX's cpu backend and
SciPy both run the LAPACK that SciPy ships (``scipy.linalg.cython_lapack``), so
oxla returns their answer by running that same routine: before the first
program with a Schur, symmetric/Hermitian or general eigen- or singular value
decomposition is lowered for oxla (the moment JAX's cpu backend loads its
LAPACK too), :func:`lend` hands the plugin the addresses of SciPy's ``?gees``,
``?syevd``/``?heevd``, ``?geev``, ``?gesdd`` and ``?gesvd`` through its C entry
point ``oxla_lend_lapack_routine``. Without SciPy, with ``OXLA_SCIPY_LAPACK=0``,
or outside Python (the Rust runtime, the C ABI), oxla's own routines run and
give valid decompositions that may differ from LAPACK's in that order and those
signs.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading

logger = logging.getLogger(__name__)

#: Set to 0 to keep oxla's own routines even where SciPy's LAPACK is available.
ENV_SCIPY_LAPACK = "OXLA_SCIPY_LAPACK"

#: The routines the plugin borrows.
ROUTINES = tuple(
    letter + name
    for name in ("gees", "geev", "gesdd", "gesvd")
    for letter in "sdcz"
) + ("ssyevd", "dsyevd", "cheevd", "zheevd")

_lock = threading.Lock()
_state = {"library_path": None, "library": None, "lent": None}


def set_library_path(path) -> None:
    """Names the plugin library routines are lent to (the one JAX loaded)."""
    _state["library_path"] = str(path)


def _entry_point():
    if _state["library"] is None:
        path = _state["library_path"]
        if path is None:
            from ._library import library_path

            path = library_path()
        # The same file as the one JAX loaded, so the dynamic loader hands back that
        # library and the routines reach the plugin's evaluator.
        _state["library"] = ctypes.CDLL(path)
    fn = _state["library"].oxla_lend_lapack_routine
    fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    fn.restype = ctypes.c_int32
    return fn


def _capsule_address(capsule) -> int:
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.argtypes = [ctypes.py_object]
    get_name.restype = ctypes.c_char_p
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    get_pointer.restype = ctypes.c_void_p
    return get_pointer(capsule, get_name(capsule))


def lend() -> list[str]:
    """Lends SciPy's LAPACK routines to the plugin (once); returns the names lent.

    Never raises: without SciPy, or when disabled through ``OXLA_SCIPY_LAPACK=0``,
    nothing is lent and oxla's own routines run.
    """
    with _lock:
        if _state["lent"] is not None:
            return list(_state["lent"])
        lent = []
        if os.environ.get(ENV_SCIPY_LAPACK, "1").strip().lower() not in ("0", "false", "no"):
            try:
                from scipy.linalg import cython_lapack

                capi = cython_lapack.__pyx_capi__
                entry = _entry_point()
                for name in ROUTINES:
                    if name in capi and entry(name.encode(), _capsule_address(capi[name])) == 0:
                        lent.append(name)
            except Exception as err:  # SciPy missing or unusual: oxla's own routines run
                logger.debug("SciPy's LAPACK not lent to oxla: %s", err)
        _state["lent"] = lent
        return list(lent)


def withdraw() -> None:
    """Takes every lent routine back: oxla's own routines run from now on, until
    :func:`lend` is called again."""
    with _lock:
        if _state["lent"]:
            entry = _entry_point()
            for name in _state["lent"]:
                entry(name.encode(), None)
        _state["lent"] = None


def lent() -> list[str]:
    """The names of the routines lent now."""
    return list(_state["lent"] or [])
