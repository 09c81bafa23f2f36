"""oxla: a StableHLO compiler and runtime, packaged as a PJRT plugin for JAX.

Importing this package never imports JAX. With JAX installed, the plugin is
found through the ``jax_plugins`` entry point, so an unmodified program runs on
oxla once ``JAX_PLATFORMS=oxla`` is set.

Public API:

* :func:`library_path` -- the PJRT plugin library this package uses.
* :func:`initialize` -- registers the plugin with JAX by hand (JAX normally does
  this itself through the entry point).
* :func:`devices` -- ``jax.devices("oxla")``.
* :class:`Program` -- JAX code with state, exported to a ``.oxla`` artifact
  that runs without Python (``oxla.program``).

The functions that need JAX raise :class:`ImportError` naming the missing
package when JAX is not installed.
"""

from ._library import ENV_LIBRARY_PATH, LibraryNotFoundError, library_path

__version__ = "0.1.0"

#: The PJRT platform name JAX knows this backend by.
PLATFORM = "oxla"

__all__ = [
    "ENV_LIBRARY_PATH",
    "LibraryNotFoundError",
    "PLATFORM",
    "Program",
    "__version__",
    "devices",
    "initialize",
    "library_path",
]


def _require_jax(feature):
    """Imports jax, or raises an ImportError that says how to get it."""
    try:
        import jax  # noqa: F401
    except ImportError as err:
        raise ImportError(
            f"oxla.{feature}() needs JAX, which is not installed. "
            "Install it with `pip install 'oxla[jax]'` "
            "(or `pip install jax jaxlib`)."
        ) from err
    return jax


def initialize():
    """Registers the oxla PJRT plugin with JAX.

    JAX calls this itself (through the ``jax_plugins`` entry point) the first
    time it looks for backends, so programs rarely need it. Calling it again is
    harmless.
    """
    _require_jax("initialize")
    from . import jax_plugin

    jax_plugin.initialize()


def devices():
    """Returns the oxla devices, i.e. ``jax.devices("oxla")``."""
    jax = _require_jax("devices")
    return jax.devices(PLATFORM)


def __getattr__(name):
    # `Program` needs JAX; import it only when asked for, so `import oxla` stays
    # JAX-free.
    if name in ("Program", "CompiledArtifact"):
        _require_jax("Program")
        from . import program

        return getattr(program, name)
    raise AttributeError(f"module 'oxla' has no attribute {name!r}")
