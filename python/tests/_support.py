"""Helpers shared by the test modules (fixtures live in conftest.py)."""

import os
import subprocess
import sys
import textwrap

import pytest

NO_JAX_REASON = (
    "jax is not installed: run scripts/setup.sh, or "
    "pip install 'jax==0.10.2' 'jaxlib==0.10.2'"
)


def require_jax():
    """Returns the jax module, or skips the calling test module with a clear reason."""
    return pytest.importorskip("jax", reason=NO_JAX_REASON)


def run_python(code, env=None, timeout=300):
    """Runs `code` in a fresh interpreter and returns the CompletedProcess.

    The child gets this process's environment updated with `env` (a value of
    None removes that variable); stdout and stderr are captured as text.
    """
    child_env = dict(os.environ)
    for name, value in (env or {}).items():
        if value is None:
            child_env.pop(name, None)
        else:
            child_env[name] = value
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=child_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_python_ok(code, env=None, timeout=300):
    """Like run_python, but fails the test (showing the child's output) when the
    child exits non-zero."""
    result = run_python(code, env=env, timeout=timeout)
    if result.returncode != 0:
        pytest.fail(
            f"subprocess exited with {result.returncode}\n"
            f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
        )
    return result
