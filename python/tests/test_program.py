"""The Program API: globals, procedures, kernels, stores; the merged StableHLO module;
the artifact, run again by `oxla run` in a process with no Python in its environment."""

import collections
import importlib.util
import json
import pathlib
import struct
import subprocess

import pytest

jax = pytest.importorskip("jax", reason="jax is not installed")
jnp = pytest.importorskip("jax.numpy")
np = pytest.importorskip("numpy")

from oxla import Program  # noqa: E402
from oxla import program as program_module  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = REPO / "crates" / "oxla-runtime" / "tests" / "data"


def _load_generator():
    spec = importlib.util.spec_from_file_location(
        "gen_program_artifacts", REPO / "python" / "tools" / "gen_program_artifacts.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


generator = _load_generator()


def run_cli(oxla_binary, *args):
    """Runs `oxla ARGS` with an environment holding no Python at all."""
    return subprocess.run(
        [str(oxla_binary), *map(str, args)],
        env={"PATH": "/nonexistent", "LANG": "C"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def read_metadata(path):
    raw = pathlib.Path(path).read_bytes()
    magic, version, flags, meta_off, meta_len, *_ = struct.unpack_from("<8sII6Q", raw)
    assert magic == b"OXLAPRG\0" and version == 1 and flags == 0
    return json.loads(raw[meta_off : meta_off + meta_len])


# ---------------------------------------------------------------------------
# The introductory example, end to end.

x = jnp.ones((3, 4), jnp.float32) * 4.0
b = jnp.ones((3, 4), jnp.float32)


class TrivialKernel(Program):
    _params = {"x": x, "b": b}
    _x = _params["x"]

    def get_params(self):
        return self._params

    def run(self, multiplier=Program.like(x)):
        result = self._linear(multiplier, self._params["x"], self._params["b"])
        self._x = result
        return result

    def set_params(self, new_params=Program.like({"x": x, "b": b})):
        self._params = new_params

    @Program.kernel
    def _linear(m, x, b):
        return m * x + b


def test_example_runs_in_process_with_state():
    m = TrivialKernel()
    result = m.run(jnp.ones_like(x))
    assert result.devices() == {jax.devices("oxla")[0]}
    np.testing.assert_array_equal(result, np.full((3, 4), 5.0, np.float32))
    params = m.get_params()
    assert set(params) == {"x", "b"}
    # The store to the alias `_x` changed `_params["x"]`.
    np.testing.assert_array_equal(params["x"], np.full((3, 4), 5.0, np.float32))
    np.testing.assert_array_equal(params["b"], np.ones((3, 4), np.float32))
    np.testing.assert_array_equal(m.run(2 * jnp.ones_like(x)), np.full((3, 4), 11.0))
    m.set_params({"x": jnp.zeros_like(x), "b": jnp.full_like(b, 3.0)})
    np.testing.assert_array_equal(m.run(jnp.ones_like(x)), np.full((3, 4), 3.0))
    # The class attributes themselves are untouched: a new instance starts afresh.
    np.testing.assert_array_equal(TrivialKernel().run(jnp.ones_like(x)), np.full((3, 4), 5.0))


def test_mlir_module_has_one_public_function_per_procedure():
    text = Program.get_mlir_module(TrivialKernel())
    for name in ("get_params", "run", "set_params"):
        assert f"func.func public @{name}(" in text
    assert "func.func private @run._linear(" in text
    assert "stablehlo.multiply" in text and "stablehlo.add" in text
    # jaxlib's own parser accepts it.
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib.mlir import ir

    with jax_mlir.make_ir_context():
        assert ir.Module.parse(text).operation.verify()


def test_artifact_runs_in_the_standalone_cli(tmp_path, oxla_binary):
    m = TrivialKernel()
    path = tmp_path / "trivial.oxla"
    Program.get_compiled_artifact(m).save(path)
    listing = run_cli(oxla_binary, "run", path)
    assert listing.returncode == 0, listing.stderr
    assert "run(multiplier: tensor<3x4xf32>) -> (out: tensor<3x4xf32>)" in listing.stdout
    # Two calls in one run: the second sees the global the first stored
    # (2 * 4 + 1 = 9, then 2 * 9 + 1 = 19), as two in-process calls do.
    out_dir = tmp_path / "out"
    result = run_cli(
        oxla_binary, "run", path, "--function", "run", "--input", "3x4xf32=2",
        "--repeat", "2", "--output-dir", out_dir,
    )
    assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(np.load(out_dir / "out.npy"), np.full((3, 4), 19.0))
    m.run(2 * jnp.ones_like(x))
    expected = m.run(2 * jnp.ones_like(x))
    np.testing.assert_array_equal(np.load(out_dir / "out.npy"), np.asarray(expected))
    # .npy inputs, printed outputs.
    np.save(tmp_path / "m.npy", np.full((3, 4), 0.5, np.float32))
    printed = run_cli(oxla_binary, "run", path, "-f", "run", "-i", tmp_path / "m.npy")
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.startswith("out: tensor<3x4xf32>\n[[3, 3, 3, 3],")


def test_artifact_saves_current_global_values(tmp_path, oxla_binary):
    m = TrivialKernel()
    m.run(jnp.ones_like(x))  # x becomes 5
    path = tmp_path / "after.oxla"
    Program.get_compiled_artifact(m).save(path)
    result = run_cli(oxla_binary, "run", path, "-f", "get_params", "--output-dir", tmp_path)
    assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out_x.npy"), np.full((3, 4), 5.0))
    np.testing.assert_array_equal(np.load(tmp_path / "out_b.npy"), np.ones((3, 4)))


# ---------------------------------------------------------------------------
# Richer state: namedtuples, counters, immutable and uninitialized globals.


def test_stateful_program_matches_the_standalone_runtime(tmp_path, oxla_binary):
    program = generator.stateful_program()
    path = tmp_path / "stateful.oxla"
    Program.get_compiled_artifact(program).save(path)
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((4, 2)).astype(np.float32)
    ys = rng.standard_normal((4, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", xs)
    np.save(tmp_path / "y.npy", ys)
    # In process: three SGD steps, checked against plain JAX on the cpu backend.
    w, bias = program._params.w, program._params.b
    with jax.default_device(jax.devices("cpu")[0]):
        w, bias = np.asarray(w), np.asarray(bias)
        for _ in range(3):
            def loss_fn(p):
                return jnp.mean((xs @ p[0] + p[1] - ys) ** 2)

            loss, (gw, gb) = jax.value_and_grad(loss_fn)((w, bias))
            w, bias = w - 0.05 * gw, bias - 0.05 * gb
    for step in range(1, 4):
        out = program.train_step(xs, ys, np.float32(0.05))
        assert int(out["steps"]) == step
    np.testing.assert_allclose(out["loss"], loss, rtol=1e-5)
    # Standalone: the same three steps from the same initial state.
    result = run_cli(
        oxla_binary, "run", path, "-f", "train_step", "-i", tmp_path / "x.npy",
        "-i", tmp_path / "y.npy", "-i", "f32=0.05", "--repeat", "3",
        "--output-dir", tmp_path / "out",
    )
    assert result.returncode == 0, result.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out" / "out_loss.npy"), out["loss"], rtol=1e-6)
    assert int(np.load(tmp_path / "out" / "out_steps.npy")) == 3
    pred = run_cli(oxla_binary, "run", path, "-f", "predict", "-i", tmp_path / "x.npy",
                   "-o", tmp_path / "pred.npy")
    assert pred.returncode == 0, pred.stderr
    # The artifact was saved before training: its prediction uses the initial weights.
    fresh = generator.stateful_program()
    np.testing.assert_allclose(np.load(tmp_path / "pred.npy"), fresh.predict(xs), rtol=1e-6)


def test_uninitialized_and_immutable_globals():
    program = generator.stateful_program()
    with pytest.raises(RuntimeError, match="_saved"):
        program.saved()
    program.save_bias()
    np.testing.assert_array_equal(program.saved(), program._params.b)

    class WritesConstant(Program):
        _k = Program.export_global(jnp.ones(2), mutable=False)

        def bump(self):
            self._k = self._k + 1

    with pytest.raises(TypeError, match="not mutable"):
        WritesConstant()


def test_bad_programs_and_calls_are_clear_errors():
    class NoSignature(Program):
        _w = jnp.ones(2)

        def f(self, y):
            return y * self._w

    with pytest.raises(TypeError, match="needs an input signature"):
        NoSignature()

    class StoresNonGlobal(Program):
        _w = jnp.ones(2)

        def f(self):
            self.other = self._w

    with pytest.raises(AttributeError, match="not a global"):
        StoresNonGlobal()

    class StoresWrongShape(Program):
        _w = jnp.ones(2)

        def f(self):
            self._w = jnp.ones(3)

    with pytest.raises(TypeError, match=r"expected float32\[2\]"):
        StoresWrongShape()

    m = TrivialKernel()
    with pytest.raises(TypeError, match=r"must be float32\[3, 4\]"):
        m.run(jnp.ones((4, 3)))
    with pytest.raises(TypeError, match="structure"):
        m.set_params({"x": x})
    with pytest.raises(TypeError):
        m.run()


def test_corrupt_artifact_is_a_clear_cli_error(tmp_path, oxla_binary):
    good = (DATA / "trivial.oxla").read_bytes()
    truncated = tmp_path / "truncated.oxla"
    truncated.write_bytes(good[: len(good) // 2])
    result = run_cli(oxla_binary, "run", truncated)
    assert result.returncode == 1
    assert "invalid artifact" in result.stderr and "truncated" in result.stderr
    garbage = tmp_path / "garbage.oxla"
    garbage.write_bytes(b"\x00" * 200)
    result = run_cli(oxla_binary, "run", garbage, "-f", "run")
    assert result.returncode == 1 and "bad magic" in result.stderr


def test_committed_test_artifacts_match_the_generator(tmp_path):
    generator.main(tmp_path)
    for name in ("trivial.oxla", "stateful.oxla"):
        fresh = read_metadata(tmp_path / name)
        committed = read_metadata(DATA / name)
        for meta in (fresh, committed):
            meta.pop("producer")
        assert fresh == committed, (
            f"{name} is stale: run python python/tools/gen_program_artifacts.py"
        )


def test_namedtuple_globals_keep_their_paths():
    program = generator.stateful_program()
    names = [slot.name for slot in program._oxla_slots]
    assert names == ["_params.w", "_params.b", "_steps", "_scale", "_saved"]
    meta = Program.get_compiled_artifact(program).metadata
    train = next(f for f in meta["functions"] if f["name"] == "train_step")
    assert [o["name"] for o in train["outputs"]] == ["out['loss']", "out['steps']"]
    assert train["globals_out"] == [0, 1, 2]
    assert collections.Counter(g["initialized"] for g in meta["globals"]) == {True: 4, False: 1}
    assert program_module.mlir_element_type(np.bool_) == "i1"
