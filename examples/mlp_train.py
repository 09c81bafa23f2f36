"""Trains a small MLP with SGD on oxla and on JAX's cpu backend, side by side.

The same jitted training step (softmax cross-entropy, jax.grad) runs on both
backends from the same initial parameters and synthetic data. The script prints
the loss of every step on each backend, then the largest difference between the
final parameters, and exits non-zero when the backends disagree beyond the
tolerance.

    JAX_PLATFORMS=oxla,cpu python3 examples/mlp_train.py [--steps N]
"""

import argparse
import os
import sys
import time

# Both backends must be available; oxla is the default one.
os.environ.setdefault("JAX_PLATFORMS", "oxla,cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

BATCH = 64
FEATURES = 32
HIDDEN = 64
CLASSES = 10
LEARNING_RATE = 0.1


def init_params(rng):
    """Glorot-style initial weights, drawn on the host so both backends share them."""

    def dense(n_in, n_out):
        scale = np.sqrt(2.0 / (n_in + n_out))
        return {
            "w": (rng.standard_normal((n_in, n_out)) * scale).astype(np.float32),
            "b": np.zeros((n_out,), np.float32),
        }

    return {"hidden": dense(FEATURES, HIDDEN), "out": dense(HIDDEN, CLASSES)}


def synthetic_data(rng):
    """Inputs from a normal distribution, labels from a random linear teacher."""
    x = rng.standard_normal((BATCH, FEATURES)).astype(np.float32)
    teacher = rng.standard_normal((FEATURES, CLASSES)).astype(np.float32)
    labels = np.argmax(x @ teacher, axis=1).astype(np.int32)
    return x, labels


def forward(params, x):
    h = jnp.tanh(x @ params["hidden"]["w"] + params["hidden"]["b"])
    return h @ params["out"]["w"] + params["out"]["b"]


def loss_fn(params, x, labels):
    logits = forward(params, x)
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    one_hot = jax.nn.one_hot(labels, CLASSES, dtype=log_probs.dtype)
    return -jnp.mean(jnp.sum(one_hot * log_probs, axis=-1))


@jax.jit
def train_step(params, x, labels):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, labels)
    new_params = jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads)
    return new_params, loss


def train(device, params, x, labels, steps):
    """Runs `steps` SGD steps with every array committed to `device`."""
    params, x, labels = jax.device_put((params, x, labels), device)
    losses = []
    started = time.perf_counter()
    for _ in range(steps):
        params, loss = train_step(params, x, labels)
        losses.append(float(loss))
    elapsed = time.perf_counter() - started
    placed_on = {d for leaf in jax.tree.leaves(params) for d in leaf.devices()}
    if placed_on != {device}:
        raise RuntimeError(f"parameters ended up on {placed_on}, expected {device}")
    return jax.device_get(params), losses, elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tolerance", type=float, default=1e-4,
                        help="largest allowed |oxla - cpu| for losses and parameters")
    args = parser.parse_args()
    if args.steps < 1:
        parser.error("--steps must be at least 1")

    try:
        oxla_device = jax.devices("oxla")[0]
        cpu_device = jax.devices("cpu")[0]
    except RuntimeError as err:
        sys.exit(f"error: this example needs the oxla and cpu backends "
                 f"(JAX_PLATFORMS={os.environ.get('JAX_PLATFORMS')!r}): {err}")

    rng = np.random.default_rng(args.seed)
    params = init_params(rng)
    x, labels = synthetic_data(rng)
    print(f"MLP {FEATURES}-{HIDDEN}-{CLASSES}, batch {BATCH}, {args.steps} SGD steps "
          f"(lr {LEARNING_RATE}); oxla device: {oxla_device}, reference: {cpu_device}")

    oxla_params, oxla_losses, oxla_time = train(oxla_device, params, x, labels, args.steps)
    cpu_params, cpu_losses, cpu_time = train(cpu_device, params, x, labels, args.steps)

    print(f"{'step':>4}  {'loss (oxla)':>12}  {'loss (cpu)':>12}  {'|diff|':>9}")
    for step, (a, b) in enumerate(zip(oxla_losses, cpu_losses)):
        print(f"{step:>4}  {a:>12.6f}  {b:>12.6f}  {abs(a - b):>9.2e}")

    loss_diff = max(abs(a - b) for a, b in zip(oxla_losses, cpu_losses))
    param_diff = max(
        float(np.max(np.abs(np.asarray(a) - np.asarray(b)), initial=0.0))
        for a, b in zip(jax.tree.leaves(oxla_params), jax.tree.leaves(cpu_params))
    )
    print(f"max |loss diff| = {loss_diff:.3e}; "
          f"max |final parameter diff| = {param_diff:.3e}")
    print(f"time for {args.steps} steps incl. compilation: "
          f"oxla {oxla_time:.3f}s, cpu {cpu_time:.3f}s")

    finite = np.isfinite(oxla_losses).all() and np.isfinite(cpu_losses).all()
    decreased = oxla_losses[-1] < oxla_losses[0] if args.steps > 1 else True
    if not finite or not (loss_diff <= args.tolerance and param_diff <= args.tolerance):
        print(f"FAIL: oxla and cpu disagree beyond the tolerance {args.tolerance}")
        return 1
    if not decreased:
        print("FAIL: the loss did not decrease")
        return 1
    print("OK: oxla matches cpu")
    return 0


if __name__ == "__main__":
    sys.exit(main())
