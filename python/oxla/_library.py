"""Locates the PJRT plugin library (``liboxla_pjrt``) bundled with the package."""

import os
import pathlib
import sys

#: Environment variable that overrides the bundled library, e.g. with a
#: development build from ``cargo build -p oxla-pjrt``.
ENV_LIBRARY_PATH = "OXLA_LIBRARY_PATH"

_LIBRARY_STEM = "liboxla_pjrt"


class LibraryNotFoundError(FileNotFoundError):
    """The PJRT plugin library could not be found."""


def _library_suffixes():
    if sys.platform == "darwin":
        return (".so", ".dylib")
    if sys.platform == "win32":
        return (".pyd", ".dll")
    return (".so",)


def library_path():
    """Returns the absolute path of the PJRT plugin library, as a string.

    ``$OXLA_LIBRARY_PATH`` wins when it is set; otherwise the library installed
    inside this package is used. Raises :class:`LibraryNotFoundError` when
    neither exists.
    """
    override = os.environ.get(ENV_LIBRARY_PATH)
    if override:
        candidate = pathlib.Path(override).expanduser()
        if not candidate.is_file():
            raise LibraryNotFoundError(
                f"{ENV_LIBRARY_PATH}={override!r} does not name an existing file; "
                "point it at a built liboxla_pjrt.so (`cargo build -p oxla-pjrt` "
                "writes one to target/debug/) or unset it to use the bundled library"
            )
        return str(candidate.resolve())

    package_dir = pathlib.Path(__file__).resolve().parent
    # The build copies the library in under a name that may carry the
    # interpreter's extension suffix (liboxla_pjrt.cpython-311-...so).
    found = sorted(
        path
        for path in package_dir.iterdir()
        if path.name.startswith(_LIBRARY_STEM)
        and path.name.endswith(_library_suffixes())
        and path.is_file()
    )
    if not found:
        raise LibraryNotFoundError(
            f"the oxla PJRT plugin library ({_LIBRARY_STEM}.so) is not in {package_dir}. "
            "This happens when the package is imported from a source tree instead "
            "of an installed copy: run `pip install .` at the repository root, or "
            f"set {ENV_LIBRARY_PATH} to a library built by `cargo build -p oxla-pjrt`"
        )
    return str(found[0])
