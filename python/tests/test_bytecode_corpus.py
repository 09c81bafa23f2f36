"""Regenerates the bytecode corpus with the installed jax/jaxlib and checks that oxla reads
every artifact the way jaxlib does (via the Rust test `bytecode_corpus`)."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("jax")

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python" / "tools"))

import gen_bytecode_corpus  # noqa: E402


def test_regenerated_corpus_reads_like_jaxlib(tmp_path):
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not installed")
    written = gen_bytecode_corpus.generate(str(tmp_path), gen_bytecode_corpus.DEFAULT_TARGETS)
    assert len(written) >= 10
    env = dict(os.environ, OXLA_BYTECODE_CORPUS=str(tmp_path))
    result = subprocess.run(
        ["cargo", "test", "-p", "oxla-frontend", "--test", "bytecode_corpus"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
