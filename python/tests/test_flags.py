"""oxla's flags from JAX: per-compile ``compiler_options``, ``OXLA_FLAGS``,
``OXLA_ARTIFACT_DIR`` (read at every compile), traces and ``OXLA_LOG``."""

import json

import pytest

from _support import require_jax, run_python, run_python_ok

jax = require_jax()
jnp = jax.numpy


def _compile_dirs(root, prefix):
    return sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith(prefix))


def test_compiler_options_dump_dir_and_opt_level(tmp_path, oxla_device):
    def f(x):
        # `jnp.where` lowers to a call of a private function, which opt_level 1 inlines.
        return jnp.where(x > 1.0, jnp.sin(x), x) * 2.0

    x = jax.device_put(jnp.arange(4, dtype=jnp.float32), oxla_device)
    compiled = (
        jax.jit(f)
        .lower(x)
        .compile(compiler_options={"oxla_dump_dir": str(tmp_path), "opt_level": 1})
    )
    r = jnp.arange(4.0)
    assert jnp.allclose(compiled(x), jnp.where(r > 1.0, jnp.sin(r), r) * 2.0)
    (dump,) = _compile_dirs(tmp_path, "jit_f-")
    names = sorted(p.name for p in dump.iterdir())
    assert names == [
        "input.mlirbc",
        "ir.010-read.mlir",
        "ir.020-inline.mlir",
        "options.txt",
        "plan.mlir",
        "timings.json",
    ]
    assert (dump / "input.mlirbc").read_bytes().startswith(b"ML\xefR")
    read = (dump / "ir.010-read.mlir").read_text()
    assert "stablehlo.sine" in read and "call @_where" in read
    assert "call @_where" not in (dump / "ir.020-inline.mlir").read_text()
    assert "call @_where" not in (dump / "plan.mlir").read_text()
    options = (dump / "options.txt").read_text()
    assert "opt_level: 1" in options
    timings = json.loads((dump / "timings.json").read_text())
    assert timings["module"] == "jit_f"
    assert [p["name"] for p in timings["phases"]] == [
        "read", "verify", "lower", "check", "inline", "fold", "dead", "divisions"
    ]


def test_compiler_options_verify_each_pass(tmp_path, oxla_device):
    x = jax.device_put(jnp.ones(3), oxla_device)
    jax.jit(lambda v: v + 1).lower(x).compile(
        compiler_options={"dump_dir": str(tmp_path), "oxla_verify_each_pass": True}
    )
    (dump,) = _compile_dirs(tmp_path, "jit__lambda")
    timings = json.loads((dump / "timings.json").read_text())
    assert "verify-plan" in [p["name"] for p in timings["phases"]]


@pytest.mark.parametrize(
    "options",
    [{"oxla_bogus": 1}, {"bogus": True}, {"opt_level": 9}, {"num_threads": 2}],
)
def test_bad_compiler_options_list_the_valid_flags(options, oxla_device):
    x = jax.device_put(jnp.ones(3), oxla_device)
    with pytest.raises(Exception, match="INVALID_ARGUMENT") as info:
        jax.jit(lambda v: v * 3).lower(x).compile(compiler_options=options)
    assert "dump_dir" in str(info.value)
    (name,) = options
    if name in ("oxla_bogus", "bogus"):
        # XLA's wording for an unknown key, which JAX code matches on.
        assert f"No such compile option: '{name}'" in str(info.value)


def test_xla_compile_options_are_ignored(oxla_device):
    # Programs written for the cpu backend may pass XLA's own options; they tune passes
    # oxla does not have, so they compile and run as without them.
    x = jax.device_put(jnp.arange(3.0), oxla_device)
    compiled = jax.jit(lambda v: v * 3).lower(x).compile(
        compiler_options={"xla_cpu_enable_fast_math": True, "xla_dump_max_hlo_modules": 2}
    )
    assert compiled(x).tolist() == [0.0, 3.0, 6.0]
    # A value the option cannot take is still an error, in XLA's words.
    with pytest.raises(Exception, match="is not a valid bool value"):
        jax.jit(lambda v: v * 3).lower(x).compile(
            compiler_options={"xla_embed_ir_in_executable": "invalid_value"}
        )


def test_artifact_dir_is_read_at_every_compile(tmp_path, monkeypatch, oxla_device):
    x = jax.device_put(jnp.ones(3), oxla_device)
    first, second = tmp_path / "first", tmp_path / "second"
    monkeypatch.setenv("OXLA_ARTIFACT_DIR", str(first))
    jax.jit(lambda v: v * 5).lower(x).compile()
    monkeypatch.setenv("OXLA_ARTIFACT_DIR", str(second))

    def broken(v):
        target = jax.ffi.ffi_call("oxla_no_such_target", jax.ShapeDtypeStruct(v.shape, v.dtype))
        return target(v)

    with pytest.raises(Exception, match="UNIMPLEMENTED") as info:
        jax.jit(broken).lower(x).compile()
    assert len(_compile_dirs(first, "jit__lambda")) == 1
    (repro,) = second.glob("jit_broken-*.oxrepro")
    assert str(repro) in str(info.value)
    assert repro.read_bytes().startswith(b"OXLA-REPRO 1\n")
    (dump,) = _compile_dirs(second, "jit_broken-")
    assert "oxla_no_such_target" in (dump / "error.txt").read_text()


TRACE_CHILD = """
import json
import jax
import jax.extend
import numpy as np
x = jax.device_put(np.arange(6, dtype=np.float32), jax.devices("oxla")[0])
y = jax.jit(lambda v: v * 2 + 1)(x)
print(json.dumps(np.asarray(y).tolist()))
del x, y
jax.extend.backend.clear_backends()
"""


def test_oxla_flags_trace_and_threads(tmp_path):
    trace = tmp_path / "trace.json"
    result = run_python_ok(
        TRACE_CHILD,
        env={
            "JAX_PLATFORMS": "oxla",
            "OXLA_FLAGS": f"--num_threads=3 --trace_path={trace}",
            "OXLA_LOG": None,
        },
    )
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [1, 3, 5, 7, 9, 11]
    assert "oxla client created" not in result.stderr
    events = json.loads(trace.read_text())["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    for event in complete:
        assert {"name", "ts", "dur", "pid", "tid"} <= set(event)
    cats = {e["cat"] for e in complete}
    assert cats == {"compile", "execute", "transfer"}
    names = [e["name"] for e in complete]
    assert {"read", "verify", "check"} <= set(names)
    assert any(n.startswith("execute jit__lambda") for n in names)
    assert any(n.startswith("host_to_device") for n in names)
    assert any(n.startswith("device_to_host") for n in names)
    workers = {
        e["args"]["name"]
        for e in events
        if e["ph"] == "M" and e["name"] == "thread_name" and e["args"]["name"].startswith("oxla-worker")
    }
    assert workers and workers <= {"oxla-worker-0", "oxla-worker-1", "oxla-worker-2"}


def test_bad_oxla_flags_fail_client_creation():
    result = run_python(
        """
import jax
jax.devices("oxla")
""",
        env={"JAX_PLATFORMS": "oxla", "OXLA_FLAGS": "--opt_level=2 --dumpdir=x"},
    )
    assert result.returncode != 0
    assert "dumpdir" in result.stderr
    assert "crash_reproducer_dir" in result.stderr


def test_oxla_log_enables_logging():
    result = run_python_ok(
        """
import jax, jax.numpy as jnp
jax.jit(lambda v: v + 1)(jnp.ones(2)).block_until_ready()
""",
        env={"JAX_PLATFORMS": "oxla", "OXLA_LOG": "oxla_client=debug", "OXLA_FLAGS": None},
    )
    assert "oxla client created" in result.stderr
    assert "compile phase" in result.stderr
