"""Per-call cost of a Program procedure: in-process through JAX on oxla versus the
standalone runtime (`oxla run --repeat N --time`), on the same machine in one run.

    python bench/program_call.py [--calls N] [--oxla PATH]

Workloads: the trivial example (3x4 multiply-add, i.e. nearly pure call overhead) and one
SGD step of a small MLP held in globals. The binary defaults to target/release/oxla
(`cargo build --release -p oxla-cli`). Times are medians per call; the standalone number
covers Module::call (inputs copied in, globals swapped, outputs copied out), not process
start or loading.
"""

import argparse
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np

from oxla import Program

REPO = pathlib.Path(__file__).resolve().parents[1]


def trivial():
    x = jnp.ones((3, 4), jnp.float32) * 4.0
    b = jnp.ones((3, 4), jnp.float32)

    class TrivialKernel(Program):
        _params = {"x": x, "b": b}

        def run(self, multiplier=Program.like(x)):
            result = multiplier * self._params["x"] + self._params["b"]
            self._params = {"x": result, "b": self._params["b"]}
            return result

    return TrivialKernel(), "run", [np.ones((3, 4), np.float32)]


def mlp_step():
    key = jax.random.PRNGKey(0)
    k1, k2 = jax.random.split(key)
    params = {
        "w1": jax.random.normal(k1, (64, 128), jnp.float32) * 0.1,
        "b1": jnp.zeros((128,), jnp.float32),
        "w2": jax.random.normal(k2, (128, 10), jnp.float32) * 0.1,
        "b2": jnp.zeros((10,), jnp.float32),
    }
    xs = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)
    ys = np.random.default_rng(1).standard_normal((32, 10)).astype(np.float32)

    class Mlp(Program):
        _params = params

        def step(self, x=Program.like(xs), y=Program.like(ys)):
            def loss_fn(p):
                h = jnp.tanh(x @ p["w1"] + p["b1"])
                return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)

            loss, grads = jax.value_and_grad(loss_fn)(self._params)
            self._params = jax.tree_util.tree_map(
                lambda p, g: p - 0.01 * g, self._params, grads
            )
            return loss

    return Mlp(), "step", [xs, ys]


def in_process_ms(program, name, inputs, calls):
    fn = getattr(program, name)
    jax.block_until_ready(fn(*inputs))
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        jax.block_until_ready(fn(*inputs))
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def standalone_ms(binary, program, name, inputs, calls, tmp):
    path = tmp / f"{name}.oxla"
    Program.get_compiled_artifact(program).save(path)
    args = [str(binary), "run", str(path), "-f", name, "--repeat", str(calls + 1), "--time",
            "--output-dir", str(tmp / "out")]
    for idx, value in enumerate(inputs):
        np.save(tmp / f"in{idx}.npy", value)
        args += ["-i", str(tmp / f"in{idx}.npy")]
    result = subprocess.run(args, capture_output=True, text=True, check=True)
    match = re.search(r"median ([0-9.]+) ms", result.stderr)
    return float(match.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--oxla", type=pathlib.Path, default=REPO / "target/release/oxla")
    args = parser.parse_args()
    if not args.oxla.exists():
        sys.exit(f"{args.oxla} is missing: cargo build --release -p oxla-cli")
    print(f"{'workload':<12} {'in-process (ms)':>16} {'standalone (ms)':>16} {'ratio':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for label, make in [("trivial", trivial), ("mlp_step", mlp_step)]:
            program, name, inputs = make()
            ours = in_process_ms(program, name, inputs, args.calls)
            program, name, inputs = make()
            alone = standalone_ms(args.oxla, program, name, inputs, args.calls, pathlib.Path(tmp))
            print(f"{label:<12} {ours:>16.3f} {alone:>16.3f} {alone / ours:>7.2f}")


if __name__ == "__main__":
    main()
