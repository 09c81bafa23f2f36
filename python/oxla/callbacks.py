"""Host callbacks on oxla: ``jax.debug.print``, ``jax.debug.callback``,
``jax.pure_callback`` and ``jax.experimental.io_callback``.

JAX lowers host callbacks only for the platforms it knows (cpu, cuda, rocm,
tpu): it hands the Python callable to the backend through XLA-internal C++
objects that a PJRT plugin cannot reach. For platform ``oxla`` this module
lowers them itself, to ``stablehlo.custom_call @oxla_python_callback`` whose
``backend_config`` is the callable's index in a registry kept here, and installs
(through the plugin's C entry point ``oxla_set_python_callback_handler``) the
function the evaluator calls when it reaches such an op: it rebuilds the
operands as NumPy arrays, calls the Python function under the GIL, checks the
results against the declared shapes and dtypes, and copies them into oxla's
result buffers. An exception in the callback fails that execution with the
exception's text.

Callbacks run on oxla's worker thread, in program order within one execution.
Registered callables stay alive for the life of the process (a compiled
program may run them at any time).
"""

from __future__ import annotations

import ctypes
import logging
import threading
import traceback

import numpy as np

logger = logging.getLogger("oxla")

#: The custom-call target the evaluator hands to the installed handler.
CALL_TARGET = "oxla_python_callback"

_HANDLER_TYPE = ctypes.CFUNCTYPE(
    ctypes.c_int32,
    ctypes.c_uint64,  # index
    ctypes.c_uint64,  # num_args
    ctypes.POINTER(ctypes.c_void_p),  # args
    ctypes.c_uint64,  # num_results
    ctypes.POINTER(ctypes.c_void_p),  # results
    ctypes.c_void_p,  # error buffer
    ctypes.c_uint64,  # error capacity
)


class _Entry:
    __slots__ = ("callback", "arg_avals", "result_avals")

    def __init__(self, callback, arg_avals, result_avals):
        self.callback = callback
        self.arg_avals = [(tuple(a.shape), np.dtype(a.dtype)) for a in arg_avals]
        self.result_avals = [(tuple(a.shape), np.dtype(a.dtype)) for a in result_avals]


_registry: list[_Entry] = []
_registry_lock = threading.Lock()
_installed = {"handler": None, "library": None, "patched": False}


def _register(callback, arg_avals, result_avals) -> int:
    with _registry_lock:
        _registry.append(_Entry(callback, arg_avals, result_avals))
        return len(_registry) - 1


def _nbytes(shape, dtype):
    return int(np.prod(shape, dtype=np.int64)) * dtype.itemsize


def _canonicalize(value):
    """``value`` with JAX's canonical dtype (64-bit types narrowed without x64)."""
    try:
        from jax._src import dtypes
    except ImportError:
        return value
    return dtypes.canonicalize_value(value)


def _run(index, num_args, args, num_results, results):
    entry = _registry[index]
    if num_args != len(entry.arg_avals) or num_results != len(entry.result_avals):
        raise RuntimeError(
            f"callback {index}: called with {num_args} operands and {num_results} "
            f"results, registered with {len(entry.arg_avals)} and "
            f"{len(entry.result_avals)}"
        )
    operands = []
    for i, (shape, dtype) in enumerate(entry.arg_avals):
        size = _nbytes(shape, dtype)
        raw = ctypes.string_at(args[i], size) if size else b""
        operands.append(np.frombuffer(raw, dtype=dtype).reshape(shape).copy())
    outs = entry.callback(*operands)
    outs = [] if outs is None else list(outs)
    if len(outs) != len(entry.result_avals):
        raise RuntimeError(
            "Mismatched number of outputs from callback. "
            f"Expected: {len(entry.result_avals)}, Actual: {len(outs)}"
        )
    for i, (out, (shape, dtype)) in enumerate(zip(outs, entry.result_avals)):
        # Python literals and 64-bit arrays take JAX's canonical dtype (32-bit without
        # x64), as JAX's own callback wrapper converts them.
        out = _canonicalize(np.asarray(out))
        if out.shape != shape:
            raise RuntimeError(
                f"Incorrect output shape for return value #{i}: "
                f"Expected: {shape}, Actual: {out.shape}"
            )
        if out.dtype != dtype:
            raise RuntimeError(
                f"Incorrect output dtype for return value #{i}: "
                f"Expected: {dtype}, Actual: {out.dtype}"
            )
        data = np.ascontiguousarray(out).astype(dtype.newbyteorder("<"), copy=False)
        if data.nbytes:
            ctypes.memmove(results[i], data.ctypes.data, data.nbytes)


def _handler(index, num_args, args, num_results, results, error, capacity):
    try:
        _run(index, num_args, args, num_results, results)
        return 0
    except BaseException as err:  # noqa: BLE001 -- reported to the execution
        message = "".join(traceback.format_exception_only(type(err), err)).strip()
        encoded = message.encode("utf-8", "replace")[: max(int(capacity) - 1, 0)]
        if error and capacity:
            ctypes.memmove(error, encoded + b"\0", len(encoded) + 1)
        return 1


def _lower_callback(ctx, callback, token, operands, operand_avals, result_avals, *,
                    has_side_effect, sharding=None, **_unused):
    """``emit_python_callback`` for platform oxla: one custom call, carrying the
    sharding JAX gives it (a maximal one, naming the device that runs it, outside
    ``shard_map``)."""
    from jax._src.interpreters import mlir

    index = _register(callback, operand_avals, result_avals)
    result_types = [mlir.aval_to_ir_type(ctx.module_context, aval) for aval in result_avals]
    op = mlir.custom_call(
        CALL_TARGET,
        result_types=result_types,
        operands=list(operands),
        backend_config=str(index),
        has_side_effect=bool(has_side_effect) or not result_avals,
    )
    if sharding is not None:
        mlir.set_sharding(ctx.module_context, op, sharding)
    # Execution is sequential within a program, so side effects already happen
    # in program order; the token passes through unchanged.
    return list(op.results), token, None


def _patch_lowering():
    from jax._src import callback as jax_callback

    original = jax_callback.emit_python_callback
    if getattr(original, "_oxla_wrapped", False):
        return

    def emit_python_callback(ctx, callback, token, operands, operand_avals,
                             result_avals, **kwargs):
        platforms = tuple(ctx.module_context.platforms)
        if platforms == ("oxla",):
            return _lower_callback(ctx, callback, token, operands, operand_avals,
                                   result_avals, **kwargs)
        return original(ctx, callback, token, operands, operand_avals,
                        result_avals, **kwargs)

    emit_python_callback._oxla_wrapped = True
    emit_python_callback.__wrapped__ = original
    jax_callback.emit_python_callback = emit_python_callback


def _register_debug_rules():
    """JAX registers the lowerings of debug callbacks and of ``checkify.check``
    (which raises its error from a host callback) per platform (cpu, gpu, tpu);
    the cpu rules serve oxla once ``emit_python_callback`` knows it."""
    import importlib

    from jax._src.interpreters import mlir

    for module, prim, rule in [
        ("jax._src.debugging", "debug_callback_p", "debug_callback_lowering"),
        ("jax._src.debugging", "debug_print_p", "debug_print_lowering_rule"),
        ("jax._src.checkify", "check_p", "check_lowering_rule"),
    ]:
        try:
            source = importlib.import_module(module)
        except ImportError:
            continue
        if hasattr(source, prim) and hasattr(source, rule):
            mlir.register_lowering(
                getattr(source, prim), getattr(source, rule), platform="oxla"
            )


def install(library_path) -> None:
    """Installs the handler in the plugin library at ``library_path`` and the
    lowering for platform oxla (idempotent)."""
    if _installed["handler"] is None:
        library = ctypes.CDLL(str(library_path))
        setter = library.oxla_set_python_callback_handler
        setter.argtypes = [_HANDLER_TYPE]
        setter.restype = None
        handler = _HANDLER_TYPE(_handler)
        setter(handler)
        # Both must outlive every program that may call back.
        _installed["handler"] = handler
        _installed["library"] = library
    if not _installed["patched"]:
        _patch_lowering()
        _register_debug_rules()
        _installed["patched"] = True
