"""The installed `oxla` package: library lookup, entry point, life without JAX."""

import ctypes
import importlib.metadata
import json
import os

import pytest

import oxla
from _support import run_python, run_python_ok

# Makes `import jax` (and jaxlib) fail in a child process, as if JAX were not
# installed.
HIDE_JAX = """
import sys

class _HideJax:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("jax", "jaxlib"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _HideJax())
"""


def test_library_path_is_a_pjrt_plugin():
    path = oxla.library_path()
    assert os.path.isabs(path)
    assert os.path.isfile(path)
    library = ctypes.CDLL(path)
    # GetPjrtApi is the one symbol a PJRT plugin must export.
    assert library.GetPjrtApi is not None


def test_library_path_override(tmp_path, monkeypatch):
    fake = tmp_path / "liboxla_pjrt.so"
    fake.write_bytes(b"")
    monkeypatch.setenv(oxla.ENV_LIBRARY_PATH, str(fake))
    assert oxla.library_path() == str(fake.resolve())


def test_library_path_override_missing_file(tmp_path, monkeypatch):
    monkeypatch.setenv(oxla.ENV_LIBRARY_PATH, str(tmp_path / "missing.so"))
    with pytest.raises(oxla.LibraryNotFoundError, match="OXLA_LIBRARY_PATH"):
        oxla.library_path()


def test_jax_plugins_entry_point_is_declared():
    entry_points = importlib.metadata.entry_points(group="jax_plugins")
    by_name = {entry_point.name: entry_point.value for entry_point in entry_points}
    assert by_name.get("oxla") == "oxla.jax_plugin"


def test_import_without_jax():
    result = run_python_ok(
        HIDE_JAX
        + """
import json, sys
import oxla
report = {"library": oxla.library_path(), "jax_loaded": "jax" in sys.modules}
for name in ("devices", "initialize"):
    try:
        getattr(oxla, name)()
    except ImportError as err:
        report[name] = str(err)
    else:
        report[name] = None
print(json.dumps(report))
"""
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert os.path.isfile(report["library"])
    assert report["jax_loaded"] is False
    for name in ("devices", "initialize"):
        message = report[name]
        assert message is not None, f"oxla.{name}() did not raise without jax"
        assert "JAX" in message and "not installed" in message
        assert "pip install" in message


def test_the_blocker_really_hides_jax():
    # Guards test_import_without_jax: the child must not be able to import jax.
    result = run_python(HIDE_JAX + "import jax\n")
    assert result.returncode != 0
    assert "No module named 'jax'" in result.stderr
