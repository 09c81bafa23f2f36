"""The ``jax_plugins`` entry point: registers the oxla PJRT plugin with JAX.

JAX imports this module while it discovers backends and calls
:func:`initialize`. Registration only loads the shared library; the client
(and its devices) is created when JAX first asks for the ``oxla`` backend.
"""

import logging
import os

from ._library import library_path

logger = logging.getLogger(__name__)

PLATFORM = "oxla"

#: Backend priority. JAX's own ``cpu`` backend has priority 0; staying below it
#: means installing oxla never changes which backend an existing program uses.
#: ``JAX_PLATFORMS=oxla`` (or ``oxla,cpu``) makes oxla the default.
PRIORITY = -100


def initialize():
    """Registers the plugin (idempotent). Called by JAX through the entry point."""
    from jax._src import xla_bridge

    if PLATFORM in getattr(xla_bridge, "_backend_factories", {}):
        return
    path = library_path()
    logger.debug("registering the oxla PJRT plugin from %s", path)
    xla_bridge.register_plugin(PLATFORM, priority=PRIORITY, library_path=path)
    _enable_buffer_donation()
    _enable_persistent_compilation_cache()
    _keep_host_cpu_backend()
    try:
        from . import lapack

        lapack.set_library_path(path)
    except Exception as err:  # never block loading
        logger.debug("oxla LAPACK lending unavailable: %s", err)
    try:
        from . import lowerings

        lowerings.register()
    except Exception as err:  # lowering rules are optional; never block loading
        logger.debug("oxla linalg lowerings not registered: %s", err)
    try:
        from . import callbacks

        callbacks.install(path)
    except Exception as err:  # callbacks are optional; never block loading
        logger.warning("oxla host callbacks are unavailable: %s", err)


#: Set to 0 to keep ``JAX_PLATFORMS=oxla`` from also starting JAX's cpu backend.
ENV_HOST_CPU = "OXLA_HOST_CPU"


def _keep_host_cpu_backend():
    """With ``JAX_PLATFORMS=oxla`` alone, also starts JAX's cpu backend (after
    oxla, so oxla stays the default).

    JAX runs every host callback (``jax.debug.print``, ``pure_callback``,
    ``io_callback``) by first placing its operands on a cpu device, and fails
    when the cpu backend is not running. JAX reads the platform list after
    initializing plugins, so extending it here takes effect.
    """
    if os.environ.get(ENV_HOST_CPU, "1").strip().lower() in ("0", "false", "no"):
        return
    try:
        import jax

        platforms = jax.config.jax_platforms
        if platforms and [p.strip() for p in platforms.split(",")] == [PLATFORM]:
            jax.config.update("jax_platforms", f"{PLATFORM},cpu")
    except Exception as err:  # never block loading the plugin
        logger.debug("could not add the cpu backend for host callbacks: %s", err)


def _enable_buffer_donation():
    """Tells JAX's lowering that oxla executables honour donated arguments.

    JAX only emits donation (input/output aliasing) for the platforms on a
    list; for any other it warns and keeps the donated arrays alive.
    """
    try:
        from jax._src.interpreters import mlir
    except ImportError:
        return
    platforms = getattr(mlir, "_platforms_with_donation", None)
    if isinstance(platforms, list) and PLATFORM not in platforms:
        platforms.append(PLATFORM)


class _ReportsAsCpu:
    """A view of a backend that names its platform ``cpu``; everything else is
    forwarded."""

    platform = "cpu"

    def __init__(self, backend):
        self._backend = backend

    def __getattr__(self, name):
        return getattr(self._backend, name)


def _enable_persistent_compilation_cache():
    """Lets JAX's persistent compilation cache store oxla executables.

    JAX only uses that cache for platforms on a fixed list (tpu, gpu, cpu,
    neuron), although the mechanism is generic: it serializes executables
    through PJRT. The check is wrapped so that oxla backends pass it the way a
    ``cpu`` backend does; every other backend keeps JAX's answer. If a JAX
    version has no such check, nothing is changed.
    """
    try:
        from jax._src import compilation_cache
    except ImportError:
        return
    original = getattr(compilation_cache, "is_cache_used", None)
    if original is None or getattr(original, "_oxla_wrapper", False):
        return

    def is_cache_used(backend):
        if getattr(backend, "platform", None) == PLATFORM:
            return original(_ReportsAsCpu(backend))
        return original(backend)

    is_cache_used._oxla_wrapper = True
    is_cache_used.__doc__ = original.__doc__
    compilation_cache.is_cache_used = is_cache_used
