"""Writes the program artifacts the Rust and C runtime tests load.

    python python/tools/gen_program_artifacts.py crates/oxla-runtime/tests/data

* ``trivial.oxla``: the Program API's introductory example (a kernel, a tree of
  globals with an alias into it, stores), saved before any call, so its globals
  hold their initial values (x = 4, b = 1).
* ``stateful.oxla``: namedtuple globals, an integer step counter, an immutable
  global, a global without an initial value, several outputs as a dict, and
  procedures with no inputs or no outputs.

The expected values in the Rust and C tests follow from these definitions (and
are checked against the in-process Python calls by python/tests/test_program.py).
"""

import collections
import pathlib
import sys

import jax.numpy as jnp

from oxla import Program


def trivial_program():
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

    return TrivialKernel()


Params = collections.namedtuple("Params", ["w", "b"])


def stateful_program():
    w = jnp.arange(6, dtype=jnp.float32).reshape(2, 3) / 10.0
    b = jnp.array([0.5, -0.5, 0.25], jnp.float32)
    scale = jnp.float32(2.0)

    class Stateful(Program):
        _params = Params(w, b)
        _steps = jnp.int32(0)
        _scale = Program.export_global(scale, mutable=False)
        _saved = Program.export_global(jnp.zeros((3,), jnp.float32), initialize=False)

        def predict(self, x=Program.like(jnp.zeros((4, 2), jnp.float32))):
            return self._scale * (x @ self._params.w + self._params.b)

        def train_step(
            self,
            x=Program.like(jnp.zeros((4, 2), jnp.float32)),
            y=Program.like(jnp.zeros((4, 3), jnp.float32)),
            lr=Program.like(jnp.float32(0)),
        ):
            def loss_fn(params):
                pred = x @ params.w + params.b
                return jnp.mean((pred - y) ** 2)

            loss, grads = jax_value_and_grad(loss_fn)(self._params)
            self._params = Params(
                self._params.w - lr * grads.w, self._params.b - lr * grads.b
            )
            self._steps = self._steps + 1
            return {"loss": loss, "steps": self._steps}

        def save_bias(self):
            self._saved = self._params.b

        def saved(self):
            return self._saved

    return Stateful()


def jax_value_and_grad(fn):
    import jax

    return jax.value_and_grad(fn)


def main(out_dir):
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, make in [("trivial", trivial_program), ("stateful", stateful_program)]:
        Program.get_compiled_artifact(make()).save(out / f"{name}.oxla")
        print(f"wrote {out / (name + '.oxla')}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "crates/oxla-runtime/tests/data")
