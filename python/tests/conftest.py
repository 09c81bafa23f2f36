"""Shared pytest setup for the Python tests.

JAX reads ``JAX_PLATFORMS`` once, when it first initializes its backends, so it
is set here, before any test module imports jax: oxla is the default backend
and JAX's own ``cpu`` backend stays available as the reference.
"""

import os
import pathlib
import shutil
import subprocess

import pytest

os.environ["JAX_PLATFORMS"] = "oxla,cpu"

from _support import require_jax  # noqa: E402


@pytest.fixture(scope="session")
def oxla_device():
    """The first oxla device."""
    jax = require_jax()
    return jax.devices("oxla")[0]


@pytest.fixture(scope="session")
def cpu_device():
    """The first device of JAX's own cpu backend (the reference)."""
    jax = require_jax()
    return jax.devices("cpu")[0]


@pytest.fixture
def x64():
    """Enables 64-bit types (float64, int64, complex128) for one test."""
    jax = require_jax()
    with jax.enable_x64(True):
        yield


REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def oxla_binary():
    """The `oxla` command-line binary (target/debug/oxla), brought up to date by cargo
    when cargo is available."""
    binary = REPO / "target" / "debug" / "oxla"
    cargo = shutil.which("cargo")
    if cargo is not None:
        subprocess.run([cargo, "build", "-q", "-p", "oxla-cli"], cwd=REPO, check=True)
    elif not binary.exists():
        pytest.skip("target/debug/oxla is missing and cargo is not available")
    return binary
