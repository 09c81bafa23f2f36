"""StableHLO text printed by oxla is accepted by jaxlib's MLIR parser as the same program.

Each case lowers a jitted function to StableHLO text for the cpu platform, runs it through
`oxla inspect` (parse + print), and checks that jaxlib parses the printed text into a module
that prints identically to the original, and that `oxla inspect --json` counts the same ops
as a walk over jaxlib's module.
"""

import collections
import json
import os
import subprocess

import pytest

jax = pytest.importorskip("jax", reason="jax is not installed")
jnp = pytest.importorskip("jax.numpy")
np = pytest.importorskip("numpy")

from jax import lax  # noqa: E402
from jax._src.interpreters import mlir as jax_mlir  # noqa: E402
from jaxlib.mlir import ir  # noqa: E402



def _mlp(params, x):
    for w, b in params:
        x = jnp.tanh(x @ w + b)
    return jnp.sum(x)


def _cases():
    f32 = jnp.ones((2, 3), jnp.float32)
    sq = jnp.eye(3, dtype=jnp.float32)
    i32 = jnp.arange(6, dtype=jnp.int32).reshape(2, 3)
    params = [(jnp.ones((3, 4)), jnp.zeros(4)), (jnp.ones((4, 2)), jnp.zeros(2))]
    return {
        "add_mul": (lambda a, b: a + b * 2.0, (f32, f32)),
        "matmul": (lambda a, b: a @ b.T, (f32, f32)),
        "batched_dot": (lambda a, b: jnp.einsum("bij,bjk->bik", a, b), (jnp.ones((2, 3, 4)), jnp.ones((2, 4, 5)))),
        "sum": (lambda a: jnp.sum(a, axis=1), (f32,)),
        "max": (lambda a: jnp.max(a), (f32,)),
        "argmax": (lambda a: jnp.argmax(a, axis=1), (f32,)),
        "where": (lambda a: jnp.where(a > 0, a, -a), (f32,)),
        "fori": (lambda a: lax.fori_loop(0, 5, lambda i, c: c * 2 + i, a), (f32,)),
        "cond": (lambda p, a: lax.cond(p, lambda: a + 1, lambda: a - 1), (True, f32)),
        "switch": (lambda i, a: lax.switch(i, [jnp.sin, jnp.cos, jnp.tanh], a), (1, f32)),
        "scan": (lambda a: lax.scan(lambda c, y: (c + y, c * y), jnp.zeros(3), a), (f32,)),
        "sort": (lambda a: jnp.sort(a, axis=0), (f32,)),
        "argsort": (lambda a: jnp.argsort(a[0]), (f32,)),
        "constant": (lambda a: a + jnp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), (f32,)),
        "big_constant": (lambda a: a + np.arange(400, dtype=np.float32).reshape(20, 20), (jnp.ones((20, 20)),)),
        "special_floats": (lambda a: a + jnp.array([np.nan, np.inf, -np.inf]), (jnp.ones(3),)),
        "conv": (lambda a, k: lax.conv_general_dilated(a, k, (1, 1), "SAME"), (jnp.ones((1, 3, 8, 8)), jnp.ones((4, 3, 3, 3)))),
        "conv_nhwc_strided": (
            lambda a, k: lax.conv_general_dilated(a, k, (2, 2), "VALID", rhs_dilation=(2, 1), dimension_numbers=("NHWC", "HWIO", "NHWC")),
            (jnp.ones((1, 9, 9, 2)), jnp.ones((3, 3, 2, 4))),
        ),
        "gather": (lambda a, i: a[i], (f32, jnp.array([0, 1]))),
        "scatter_add": (lambda a, i: a.at[i].add(1.0), (f32, jnp.array([0, 1]))),
        "slice_pad_concat": (lambda a: jnp.concatenate([a[:, 1:3], jnp.pad(a, ((0, 0), (1, 0)))[:, :2]], 0), (f32,)),
        "dynamic_slice": (lambda a, i: lax.dynamic_slice(a, (i, 0), (1, 3)), (f32, 1)),
        "dynamic_update_slice": (lambda a, i: lax.dynamic_update_slice(a, jnp.ones((1, 3)), (i, 0)), (f32, 1)),
        "cumsum": (lambda a: jnp.cumsum(a, axis=1), (f32,)),
        "maxpool": (lambda a: lax.reduce_window(a, -jnp.inf, lax.max, (1, 2), (1, 1), "VALID"), (f32,)),
        "maxpool_grad": (jax.grad(lambda a: jnp.sum(lax.reduce_window(a, -jnp.inf, lax.max, (2, 2), (1, 1), "VALID"))), (jnp.ones((4, 4)),)),
        "random": (lambda k: jax.random.normal(k, (3,)), (jax.random.PRNGKey(0),)),
        "erf_lgamma": (lambda a: jax.scipy.special.erf(a) + lax.lgamma(a), (f32,)),
        "complex": (lambda a: a * (1 + 2j), (jnp.ones(2, jnp.complex64),)),
        "bool": (lambda a: a & jnp.array([True, False]), (jnp.ones(2, bool),)),
        "integer_ops": (lambda a: (a // 3 + a % 2) << 1, (i32,)),
        "unsigned": (lambda a: a >> 2, (jnp.ones(3, jnp.uint8),)),
        "bf16": (lambda a: a.astype(jnp.bfloat16) * 2, (f32,)),
        "f16": (lambda a: a.astype(jnp.float16) / 3, (f32,)),
        "fft": (lambda a: jnp.fft.fft(a), (jnp.ones(4, jnp.complex64),)),
        "top_k": (lambda a: lax.top_k(a, 2), (f32,)),
        "cholesky": (lambda a: jnp.linalg.cholesky(a), (sq,)),
        "triangular_solve": (lambda a, b: lax.linalg.triangular_solve(a, b, left_side=True, lower=True), (sq, jnp.ones((3, 2)))),
        "mlp_grad": (jax.grad(_mlp), (params, f32)),
        "softmax": (lambda a: jax.nn.softmax(a, axis=-1), (f32,)),
        "clip": (lambda a: jnp.clip(a, 0, 1), (f32,)),
        "iota_reshape": (lambda a: a + jnp.arange(6.0).reshape(2, 3), (f32,)),
        "optimization_barrier": (lambda a: lax.optimization_barrier((a, a + 1)), (f32,)),
        "vmap": (jax.vmap(lambda m, v: m @ v), (jnp.ones((3, 4, 5)), jnp.ones((3, 5)))),
    }


CASES = _cases()


def _lower(fn, args, debug_info):
    lowered = jax.jit(fn).trace(*args).lower(lowering_platforms=("cpu",))
    return lowered.as_text(debug_info=debug_info)


def _op_counts(module):
    """Op names in a jaxlib module, nested regions included, func.func and module excluded."""
    counts = collections.Counter()

    def visit(op):
        name = op.name
        if name not in ("builtin.module", "func.func"):
            counts[name] += 1
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    visit(inner.operation)

    visit(module.operation)
    return dict(counts)


def _canonical(text):
    """jaxlib's own printing of `text` (visibility spelled out or not, it is the same)."""
    with jax_mlir.make_ir_context():
        module = ir.Module.parse(text)
        return str(module).replace("func.func public ", "func.func "), _op_counts(module)


@pytest.mark.parametrize("debug_info", [False, True], ids=["plain", "debug_info"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_printed_text_is_accepted_by_jaxlib(name, debug_info, oxla_binary, tmp_path):
    fn, args = CASES[name]
    original = _lower(fn, args, debug_info)
    source = tmp_path / f"{name}.mlir"
    source.write_text(original)

    printed = subprocess.run(
        [str(oxla_binary), "inspect", "--locations", str(source)],
        capture_output=True, text=True, check=False,
    )
    assert printed.returncode == 0, printed.stderr
    expected_text, expected_counts = _canonical(original)
    actual_text, _ = _canonical(printed.stdout)
    assert actual_text == expected_text

    summary = subprocess.run(
        [str(oxla_binary), "inspect", "--json", str(source)],
        capture_output=True, text=True, check=False,
    )
    assert summary.returncode == 0, summary.stderr
    data = json.loads(summary.stdout)
    assert data["op_counts"] == expected_counts
    assert data["constants"] == expected_counts.get("stablehlo.constant", 0)
    assert [f["name"] for f in data["functions"]][0] == "main"


def test_printed_text_parses_again_identically(oxla_binary, tmp_path):
    fn, args = CASES["mlp_grad"]
    source = tmp_path / "first.mlir"
    source.write_text(_lower(fn, args, True))
    first = subprocess.run([str(oxla_binary), "inspect", str(source)], capture_output=True, text=True, check=True).stdout
    again = tmp_path / "second.mlir"
    again.write_text(first)
    second = subprocess.run([str(oxla_binary), "inspect", str(again)], capture_output=True, text=True, check=True).stdout
    assert first == second
