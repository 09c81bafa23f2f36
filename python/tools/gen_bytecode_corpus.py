"""Writes a corpus of StableHLO portable artifacts plus jaxlib's own view of each.

Every catalogue entry is a small jitted JAX function. It is lowered to StableHLO, its
source locations are trimmed to file base names, and it is serialized as a portable artifact
(VHLO in MLIR bytecode) at several target versions. Next to each `NAME.vX.Y.Z.mlirbc` goes
`NAME.vX.Y.Z.expected.json`: the functions (name, visibility, argument and result types)
and the op counts of the module as jaxlib itself deserializes the artifact.

Usage: python gen_bytecode_corpus.py OUT_DIR [--targets 0.9.0,1.0.0,1.17.0]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax
from jax._src.interpreters import mlir as jax_mlir
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

DEFAULT_TARGETS = ["0.9.0", "1.0.0", "1.17.0"]

f32 = jnp.float32


def spec(shape, dtype=f32):
    return jax.ShapeDtypeStruct(shape, dtype)


def _while(x):
    return lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))[1]


def _cond(p, x):
    return lax.cond(p, lambda v: v + 1.0, lambda v: v - 1.0, x)


def _switch(i, x):
    return lax.switch(i, [lambda v: v, lambda v: v * 2.0, lambda v: jnp.sin(v)], x)


def _scatter(x, idx, upd):
    return x.at[idx].add(upd)


def _conv(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", rhs_dilation=(1, 1))


def _reduce_window(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def _rng(key):
    return jax.random.uniform(jax.random.key_data(jax.random.wrap_key_data(key)), (4,))


def _rng_bits(key):
    return lax.rng_bit_generator(key, (2, 3), dtype=jnp.uint32)


def _constants():
    return (
        jnp.array([True, False, True, True, False, True, False, False, True], jnp.bool_),
        jnp.array([1, -2, 3], jnp.int8),
        jnp.array([1.5, -2.25], jnp.float16),
        jnp.array([1.5, -2.25], jnp.bfloat16),
        jnp.array([1 + 2j, 3 - 4j], jnp.complex64),
        jnp.array([7, 8], jnp.uint32),
        jnp.asarray(np.full((3, 3), True)),
        jnp.asarray(np.full((5,), 2.5, np.float32)),
    )


def _large_constant(x):
    table = jnp.asarray(np.arange(64 * 64, dtype=np.float32).reshape(64, 64) / 7.0)
    return x @ table


CATALOGUE = {
    "elementwise": (lambda x, y: jnp.tanh(x) * jnp.exp(y) - jnp.abs(x) / (y + 1.0) + x ** 2,
                    [spec((3, 4)), spec((3, 4))]),
    "integer_ops": (lambda a, b: ((a & b) | (a ^ 3)) << 1 >> 1, [spec((5,), jnp.int32), spec((5,), jnp.int32)]),
    "compare_select": (lambda x, y: jnp.where(x > y, x, y), [spec((4,)), spec((4,))]),
    "dot_general": (lambda a, b: jnp.einsum("bij,bjk->bik", a, b), [spec((2, 3, 4)), spec((2, 4, 5))]),
    "convolution": (_conv, [spec((1, 3, 8, 8)), spec((4, 3, 3, 3))]),
    "reduce": (lambda x: (jnp.sum(x, axis=1), jnp.max(x), jnp.argmax(x, axis=0)), [spec((4, 6))]),
    "reduce_window": (_reduce_window, [spec((1, 8, 8, 3))]),
    "gather": (lambda x, i: x[i], [spec((10, 3)), spec((4,), jnp.int32)]),
    "scatter": (_scatter, [spec((10,)), spec((3,), jnp.int32), spec((3,))]),
    "sort": (lambda x: jnp.sort(x, axis=-1), [spec((3, 7))]),
    "while_loop": (_while, [spec((3,))]),
    "cond": (_cond, [spec((), jnp.bool_), spec((2,))]),
    "switch": (_switch, [spec((), jnp.int32), spec((2,))]),
    "iota_concat_pad": (lambda x: jnp.pad(jnp.concatenate([x, jnp.arange(4, dtype=f32)]), (1, 2)), [spec((4,))]),
    "dynamic_slices": (lambda x, i: lax.dynamic_update_slice(x, lax.dynamic_slice(x, (i, 0), (2, 2)) * 2.0, (0, i)),
                       [spec((5, 5)), spec((), jnp.int32)]),
    "rng_bit_generator": (_rng_bits, [spec((4,), jnp.uint32)]),
    "fft": (lambda x: jnp.fft.rfft(x), [spec((16,))]),
    "transpose_reshape_broadcast": (lambda x: jnp.broadcast_to(x.T.reshape(6, 1), (6, 4)), [spec((2, 3))]),
    "constants": (_constants, []),
    "large_constant": (_large_constant, [spec((2, 64))]),
    "cholesky": (lambda x: jnp.linalg.cholesky(x @ x.T + 4.0 * jnp.eye(3)), [spec((3, 3))]),
    "calls": (lambda x: jax.jit(lambda y: jnp.sin(y) * 2.0)(x) + 1.0, [spec((3,))]),
}

# Targets each entry is serialized at; the large constant only once to keep the corpus small.
ENTRY_TARGETS = {"large_constant": ["1.17.0"]}


def _trim_locations(text: str) -> str:
    """Replaces file paths in `loc(...)` by their base names, so no machine path is kept."""
    return re.sub(r'loc\("([^"]*/)([^"/]+)"', r'loc("\2"', text)


def _lower(fn, args) -> str:
    lowered = jax.jit(fn).lower(*args)
    module = lowered.compiler_ir("stablehlo")
    return _trim_locations(module.operation.get_asm(enable_debug_info=True))


def _type_str(t) -> str:
    return str(t)


def _expected(artifact: bytes) -> dict:
    with jax_mlir.make_ir_context() as ctx:
        module = stablehlo.deserialize_portable_artifact(ctx, artifact)
        functions = []
        counts = collections.Counter()

        def walk(op):
            for region in op.regions:
                for block in region.blocks:
                    for inner in block.operations:
                        counts[inner.operation.name] += 1
                        walk(inner.operation)

        for op in module.body.operations:
            op = op.operation
            if op.name != "func.func":
                continue
            fty = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            visibility = "public"
            if "sym_visibility" in op.attributes:
                visibility = ir.StringAttr(op.attributes["sym_visibility"]).value
            functions.append({
                "name": ir.StringAttr(op.attributes["sym_name"]).value,
                "visibility": visibility,
                "inputs": [_type_str(t) for t in fty.inputs],
                "results": [_type_str(t) for t in fty.results],
            })
        walk(module.operation)
        return {"functions": functions, "op_counts": dict(sorted(counts.items()))}


def generate(out_dir: str, targets: list[str]) -> list[str]:
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name, (fn, args) in CATALOGUE.items():
        text = _lower(fn, args)
        for target in ENTRY_TARGETS.get(name, targets):
            with jax_mlir.make_ir_context():
                module = ir.Module.parse(text)
                try:
                    artifact = stablehlo.serialize_portable_artifact(
                        module, target, allow_other_dialects=True
                    )
                except Exception as e:  # an op newer than the target version
                    print(f"skip {name} at {target}: {e}", file=sys.stderr)
                    continue
            stem = os.path.join(out_dir, f"{name}.v{target}")
            with open(stem + ".mlirbc", "wb") as f:
                f.write(artifact)
            with open(stem + ".expected.json", "w") as f:
                json.dump(_expected(artifact), f, indent=1, sort_keys=True)
                f.write("\n")
            written.append(stem + ".mlirbc")
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--targets", default=",".join(DEFAULT_TARGETS))
    options = parser.parse_args()
    written = generate(options.out_dir, options.targets.split(","))
    print(f"wrote {len(written)} artifacts to {options.out_dir}")


if __name__ == "__main__":
    main()
