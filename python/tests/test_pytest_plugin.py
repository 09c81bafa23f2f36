"""The ``oxla.pytest_plugin`` artifact folders, driven through pytester in
subprocesses: passing tests leave nothing, failures leave failure.txt (and
oxla's reproducers), a crashed xdist worker leaves a CRASHED marker."""

import os
import pathlib

import pytest

import oxla.pytest_plugin
from oxla.pytest_plugin import CRASHED, FAILURE, RUNNING, sanitize_nodeid

pytest_plugins = ["pytester"]

PACKAGE_ROOT = pathlib.Path(oxla.pytest_plugin.__file__).resolve().parents[1]


@pytest.fixture
def run(pytester, monkeypatch):
    """Runs pytest in a subprocess with the plugin and an artifact dir."""
    paths = [str(PACKAGE_ROOT), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    monkeypatch.delenv("OXLA_ARTIFACT_DIR", raising=False)
    monkeypatch.delenv("OXLA_FLAGS", raising=False)
    artifacts = pytester.path / "artifacts"

    def go(*args):
        result = pytester.runpytest_subprocess(
            "-p", "oxla.pytest_plugin", "--oxla-artifact-dir", str(artifacts), *args
        )
        return result, artifacts

    return go


def test_sanitize_nodeid():
    assert sanitize_nodeid("tests/test_a.py::test_b[x-1]") == "tests_test_a.py__test_b_x-1_"
    long = sanitize_nodeid("t.py::" + "x" * 400)
    assert len(long) < 170 and long != sanitize_nodeid("t.py::" + "x" * 401)


def test_pass_removes_folder_and_failure_writes_failure_txt(pytester, run):
    pytester.makepyfile(
        test_sample="""
        import os

        def test_passes():
            folder = os.environ["OXLA_ARTIFACT_DIR"]
            assert folder.endswith("test_sample.py__test_passes")
            assert os.path.isfile(os.path.join(folder, "RUNNING"))
            open(os.path.join(folder, "scratch.txt"), "w").write("x")

        def test_fails():
            print("captured-output-line")
            assert 1 == 2
        """
    )
    result, artifacts = run()
    result.assert_outcomes(passed=1, failed=1)
    assert not (artifacts / "test_sample.py__test_passes").exists()
    failed = artifacts / "test_sample.py__test_fails"
    text = (failed / FAILURE).read_text()
    assert "assert 1 == 2" in text
    assert "captured-output-line" in text
    assert not (failed / RUNNING).exists()

    result, artifacts = run("--oxla-keep-passing")
    result.assert_outcomes(passed=1, failed=1)
    assert (artifacts / "test_sample.py__test_passes" / "scratch.txt").exists()


def test_oxla_compiles_write_into_the_test_folder(pytester, run):
    pytest.importorskip("jax")
    pytester.makepyfile(
        test_jax="""
        import jax, jax.numpy as jnp

        def test_broken_compile():
            def broken(v):
                return jax.ffi.ffi_call("oxla_no_such_target", jax.ShapeDtypeStruct(v.shape, v.dtype))(v)
            jax.jit(broken)(jnp.ones(3, device=jax.devices("oxla")[0]))
        """
    )
    result, artifacts = run()
    result.assert_outcomes(failed=1)
    folder = artifacts / "test_jax.py__test_broken_compile"
    (repro,) = folder.glob("jit_broken-*.oxrepro")
    assert repro.read_bytes().startswith(b"OXLA-REPRO 1\n")
    assert str(repro) in (folder / FAILURE).read_text()
    assert list(folder.glob("jit_broken-*/input.mlirbc"))


def test_crashed_worker_is_marked_and_the_run_continues(pytester, run):
    pytest.importorskip("xdist")
    pytester.makepyfile(
        test_crash="""
        import os

        def test_a_crashes():
            os._exit(1)

        def test_b_after():
            assert True
        """
    )
    result, artifacts = run("-n", "1", "--max-worker-restart", "2")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 1 and outcomes.get("passed") == 1, outcomes
    crashed = artifacts / "test_crash.py__test_a_crashes"
    assert (crashed / CRASHED).exists()
    assert not (crashed / RUNNING).exists()
    assert "crashed" in (crashed / FAILURE).read_text()
    assert not (artifacts / "test_crash.py__test_b_after").exists()
