#!/usr/bin/env python3
"""Single JAX operations on JAX's ``cpu`` backend and on ``oxla``, side by side.

Where ``jax_bench.py`` times whole workloads, this times the building blocks users write
between them: random numbers, sorts, cumulative sums, gathers and scatters, pooling,
padding, integer arithmetic, special functions, FFTs, linear algebra. Each operation is jitted once per
backend, warmed up, then called repeatedly for at least ``--seconds`` (and at least five
times), cpu and oxla alternating ``--rounds`` times; the table shows each backend's fastest
call, the median of its best round, and the oxla/cpu ratio of the fastest calls, then the
geometric mean of the ratios. Outputs are compared (exactly for integers, loosely for
floats) and a mismatch is marked.

Usage::

    OXLA_LIBRARY_PATH=target/release/liboxla_pjrt.so python3 bench/op_sweep.py
    python3 bench/op_sweep.py --only sort --only random --rounds 3
"""

import argparse
import math
import time

import numpy as np


def cases(jax, jnp):
    rng = np.random.default_rng(0)
    n = 1 << 20
    x = rng.standard_normal(n).astype(np.float32)
    positive = np.abs(x) + 0.1
    m = rng.standard_normal((1024, 1024)).astype(np.float32)
    ints = rng.integers(-1000, 1000, n).astype(np.int32)
    ids = rng.integers(0, 50000, 4096).astype(np.int32)
    table = rng.standard_normal((50000, 128)).astype(np.float32)
    images = rng.standard_normal((8, 64, 64, 32)).astype(np.float32)
    key = np.asarray(jax.random.key_data(jax.random.key(0)))
    lax = jax.lax
    # Gradients of NHWC 3x3 convolutions (batch 16, 32x32): an RGB first layer and a
    # stride-2 layer of 16 -> 32 channels, against their output gradients.
    dn = ("NHWC", "HWIO", "NHWC")

    def conv(stride, groups=1):
        return lambda x, w: lax.conv_general_dilated(x, w, (stride, stride), "SAME",
                                                     dimension_numbers=dn,
                                                     feature_group_count=groups)

    rgb = rng.standard_normal((16, 32, 32, 3)).astype(np.float32)
    rgb_w = rng.standard_normal((3, 3, 3, 16)).astype(np.float32)
    rgb_dy = rng.standard_normal((16, 32, 32, 16)).astype(np.float32)
    act = rng.standard_normal((16, 32, 32, 16)).astype(np.float32)
    act_w = rng.standard_normal((3, 3, 16, 32)).astype(np.float32)
    act_dy = rng.standard_normal((16, 16, 16, 32)).astype(np.float32)

    def kernel_grad(stride, w):
        return lambda x, dy: jax.vjp(lambda v: conv(stride)(x, v), w)[1](dy)[0]

    # A depthwise 3x3 convolution over `images` (one channel per group) and its kernel
    # gradient, a convolution with batch_group_count = channels.
    dw_w = rng.standard_normal((3, 3, 1, 32)).astype(np.float32)
    dw_dy = rng.standard_normal((8, 64, 64, 32)).astype(np.float32)

    def depthwise_kernel_grad(x, dy):
        return jax.vjp(lambda v: conv(1, 32)(x, v), dw_w)[1](dy)[0]

    def input_grad(stride, x):
        return lambda w, dy: jax.vjp(lambda v: conv(stride)(v, w), x)[1](dy)[0]

    # A recurrent weight gradient's accumulator: 50 steps of `acc + (dz^T h)^T` (batch 32,
    # a 256x1024 weight), the product summed into the carried buffer.
    acc = rng.standard_normal((256, 1024)).astype(np.float32)
    dzs = rng.standard_normal((50, 32, 1024)).astype(np.float32)
    hs = rng.standard_normal((50, 32, 256)).astype(np.float32)

    def accumulate(acc, dz, h):
        return lax.fori_loop(0, 50, lambda i, a: a + (dz[i].T @ h[i]).T, acc)

    # A loop writing one element per iteration from the one before (`x.at[i].set`).
    def running(v):
        return lax.fori_loop(1, 1024, lambda i, v: v.at[i].set(v[i - 1] * 0.5 + 1.0), v)

    # Linear algebra on well-conditioned matrices; eigen- and singular vectors are computed
    # but only the values are compared (the vectors' signs are free).
    spd = (m[:512, :512] @ m[:512, :512].T + 512 * np.eye(512)).astype(np.float32)
    square = (m[:256, :256] + 16 * np.eye(256)).astype(np.float32)
    sym = m[:128, :128] + m[:128, :128].T

    return {
        "random_normal_1M": (lambda k: jax.random.normal(k, (n,)), [key]),
        "random_uniform_1M": (lambda k: jax.random.uniform(k, (n,)), [key]),
        "random_bits_1M": (lambda k: jax.random.bits(k, (n,)), [key]),
        "sort_1M": (jnp.sort, [x]),
        "argsort_64k": (jnp.argsort, [x[:65536]]),
        "top_k_rows": (lambda a: lax.top_k(a, 8), [m]),
        "argmax_rows": (lambda a: jnp.argmax(a, axis=1), [m]),
        "cumsum_1M": (jnp.cumsum, [x]),
        "cumsum_rows": (lambda a: jnp.cumsum(a, axis=1), [m]),
        "gather_rows": (lambda t, i: t[i], [table, ids]),
        "scatter_add_rows": (lambda t, i: jnp.zeros_like(t).at[i].add(1.0), [table, ids]),
        "one_hot": (lambda i: jax.nn.one_hot(i, 1000), [ids]),
        "pad": (lambda a: jnp.pad(a, 3), [m]),
        "reverse": (lambda a: a[::-1], [x]),
        "slice_update": (lambda a: a.at[100:200, 50:900].set(0.0), [m]),
        "concatenate": (lambda a: jnp.concatenate([a, a * 2], axis=1), [m]),
        "max_pool": (
            lambda a: lax.reduce_window(a, -np.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME"),
            [images],
        ),
        "avg_pool": (
            lambda a: lax.reduce_window(a, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4,
            [images],
        ),
        "int_floordiv": (lambda a: a // 7, [ints]),
        "int_mod": (lambda a: a % 7, [ints]),
        "int_sum": (lambda a: a.sum(), [ints]),
        "u32_hash": (
            lambda a: (a.astype(jnp.uint32) ^ (a.astype(jnp.uint32) >> 3)) * jnp.uint32(2654435761),
            [ints],
        ),
        "erf": (jax.scipy.special.erf, [x]),
        "gelu": (jax.nn.gelu, [x]),
        "silu": (jax.nn.silu, [x]),
        "power": (lambda a: a**1.7, [positive]),
        "clip": (lambda a: jnp.clip(a, -0.5, 0.5), [x]),
        "norm_rows": (lambda a: jnp.linalg.norm(a, axis=1), [m]),
        "logsumexp_rows": (lambda a: jax.nn.logsumexp(a, axis=1), [m]),
        "softmax_grad": (jax.grad(lambda a: jax.nn.softmax(a, axis=1)[:, 0].sum()), [m]),
        "transpose_add": (lambda a: a.T + a, [m]),
        "conv_kernel_grad_rgb": (kernel_grad(1, rgb_w), [rgb, rgb_dy]),
        "conv_kernel_grad_s2": (kernel_grad(2, act_w), [act, act_dy]),
        "conv_input_grad_s2": (input_grad(2, act), [act_w, act_dy]),
        "conv_depthwise": (conv(1, 32), [images, dw_w]),
        "conv_depthwise_kernel_grad": (depthwise_kernel_grad, [images, dw_dy]),
        "dot_accumulate_loop": (accumulate, [acc, dzs, hs]),
        "fori_set_1k": (running, [x[:1024]]),
        "fft_rows": (jnp.fft.fft, [m[:256].astype(np.complex64)]),
        "rfft2": (jnp.fft.rfft2, [m[:512, :512]]),
        "solve_256": (jnp.linalg.solve, [square, m[:256, :8]]),
        "det_256": (jnp.linalg.det, [square]),
        "cholesky_512": (jnp.linalg.cholesky, [spd]),
        "eigh_128": (lambda a: jnp.linalg.eigh(a)[0], [sym]),
        "svd_128": (lambda a: jnp.linalg.svd(a)[1], [m[:128, :128]]),
        "qr_256": (lambda a: jnp.linalg.qr(a)[1], [square]),
        "qr_tall": (lambda a: jnp.linalg.qr(a)[0], [m[:512, :128]]),
        # The eigenvalues sorted: past a few dozen rows their order is not LAPACK's.
        "eigvals_100": (lambda a: jnp.sort(jnp.linalg.eigvals(a)), [m[:100, :100]]),
    }


def time_calls(jax, fn, args, seconds):
    jax.block_until_ready(fn(*args))
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 5:
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    times.sort()
    return times[0], times[len(times) // 2]


def agree(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if not np.issubdtype(a.dtype, np.inexact):
        return np.array_equal(a, b)
    wide = np.complex128 if np.issubdtype(a.dtype, np.complexfloating) else np.float64
    return np.allclose(a.astype(wide), b.astype(wide), rtol=1e-3, atol=1e-4,
                       equal_nan=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", default=[],
                        help="run the operations whose name contains this (repeatable)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=0.5)
    options = parser.parse_args()

    import jax
    import jax.numpy as jnp

    backends = {name: jax.devices(name)[0] for name in ("cpu", "oxla")}
    print(f"{'operation':26} {'cpu us':>10} {'(median)':>10} {'oxla us':>10} {'(median)':>10}"
          f" {'ratio':>7}")
    ratios = []
    for name, (fn, host_args) in cases(jax, jnp).items():
        if options.only and not any(o in name for o in options.only):
            continue
        best = {}
        outputs = {}
        try:
            for _ in range(options.rounds):
                for backend, device in backends.items():
                    args = [jax.device_put(a, device) for a in host_args]
                    jitted = jax.jit(fn)
                    fastest, median = time_calls(jax, jitted, args, options.seconds)
                    if backend not in best or fastest < best[backend][0]:
                        best[backend] = (fastest, median)
                    outputs[backend] = jax.device_get(jitted(*args))
        except Exception as error:  # one failing op must not end the sweep
            print(f"{name:26} failed: {type(error).__name__}: {str(error)[:80]}")
            continue
        matched = all(agree(a, b) for a, b in zip(jax.tree.leaves(outputs["cpu"]),
                                                  jax.tree.leaves(outputs["oxla"])))
        ratio = best["oxla"][0] / best["cpu"][0]
        ratios.append(ratio)
        print(f"{name:26} {best['cpu'][0] * 1e6:10.1f} {best['cpu'][1] * 1e6:10.1f}"
              f" {best['oxla'][0] * 1e6:10.1f} {best['oxla'][1] * 1e6:10.1f} {ratio:6.2f}x"
              f"{'' if matched else '  OUTPUTS DIFFER'}", flush=True)
    if ratios:
        geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"geometric mean oxla/cpu over {len(ratios)} operations: {geomean:.2f}x")


if __name__ == "__main__":
    main()
