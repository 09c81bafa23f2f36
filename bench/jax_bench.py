#!/usr/bin/env python3
"""JAX-level benchmark: the same workloads on JAX's own ``cpu`` backend and on ``oxla``.

One invocation runs every workload on both backends and prints a table with, per
workload: the steady-state run time (median over repeats after a warm-up run, each
call ending in ``block_until_ready``), the compile time (the ``.compile()`` step of
``jax.jit(f).lower(*args).compile()`` on a fresh function object, so nothing is
served from a cache; JAX's tracing and lowering before it is reported apart), the
peak memory growth while compiling and running, whether the outputs agree, and the
oxla/cpu ratios; then the geometric mean of the ratios, the machine's measured
peak f32 FLOP/s and copy bandwidth, and for the matrix products and the elementwise
chains the rate each backend reached as a share of those limits.

Each (workload, backend) pair runs in its own child process: a crash or an
unsupported op on one backend cannot take the rest of the run with it, and the
peak resident set of the child (``VmHWM``, reset before the workload starts when
the kernel allows it) measures that workload alone. Both backends are loaded in
every child (``JAX_PLATFORMS=cpu,oxla``; leaving the variable unset also makes both
available); the inputs are placed on the backend under test with
``jax.device_put`` and the jitted function runs where its inputs are.

oxla's library is the one ``oxla`` finds: the installed package's, or
``$OXLA_LIBRARY_PATH`` (e.g. ``target/release/liboxla_pjrt.so`` after
``cargo build --release -p oxla-pjrt``).

Usage::

    python3 bench/jax_bench.py                  # full sizes
    python3 bench/jax_bench.py --quick          # smaller sizes, fewer repeats
    python3 bench/jax_bench.py --only matmul_512 --only softmax --repeats 20
    python3 bench/jax_bench.py --json results.json
    python3 bench/jax_bench.py --rounds 3       # alternate the backends 3 times each

On a shared or throttled machine single runs of one build move by 2-3x within the hour;
``--rounds N`` runs each workload N times per backend, cpu and oxla alternating, and
reports each backend's fastest round (every round's time is in the JSON), so both sides
are measured in the same phases of the machine.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

BACKENDS = ("cpu", "oxla")


# --------------------------------------------------------------------------------------
# Workloads. Each builder returns (function, list of numpy inputs); sizes depend on
# `quick`. Builders import jax lazily so the parent process never initialises JAX.
# --------------------------------------------------------------------------------------


def _rng(seed=0):
    import numpy as np

    return np.random.default_rng(seed)


def w_scalar_dispatch(quick):
    import numpy as np

    def f(x):
        return x + 1.0

    return f, [np.float32(2.0)]


def w_elementwise_chain(quick):
    import jax.numpy as jnp

    n = (1 << 20) if quick else (1 << 22)
    x = _rng().standard_normal(n, dtype="float32")

    def f(x):
        y = x * 1.5 + 0.25
        y = jnp.tanh(y) * jnp.exp(-0.5 * x * x)
        y = y + jnp.sin(x) * 0.1 - jnp.abs(x) * 0.01
        y = jnp.maximum(y, -0.5) / (1.0 + x * x)
        return jnp.sqrt(y * y + 1.0) + jnp.log1p(jnp.abs(y))

    return f, [x]


def _bandwidth_n(quick):
    return (1 << 20) if quick else (1 << 23)


def w_bandwidth_chain(quick):
    import jax.numpy as jnp

    n = _bandwidth_n(quick)
    r = _rng()
    x = r.standard_normal(n, dtype="float32")
    y = r.standard_normal(n, dtype="float32")

    def f(x, y):
        z = x * 0.5 + y
        z = jnp.maximum(z, 0.0) - jnp.minimum(x, y) * 0.25
        z = jnp.where(z > 1.0, z - 1.0, z * z)
        z = jnp.abs(z - y) + jnp.clip(x, -2.0, 2.0)
        return z * 0.75 + x * y

    return f, [x, y]


def _matrix(quick):
    n = 1024 if quick else 2048
    return _rng().standard_normal((n, n), dtype="float32")


def w_reduce_axis0(quick):
    import jax.numpy as jnp

    return (lambda x: jnp.sum(x, axis=0)), [_matrix(quick)]


def w_reduce_axis1(quick):
    import jax.numpy as jnp

    return (lambda x: jnp.sum(x, axis=1)), [_matrix(quick)]


def w_reduce_max_axis1(quick):
    import jax.numpy as jnp

    return (lambda x: jnp.max(x, axis=1)), [_matrix(quick)]


def w_softmax(quick):
    import jax

    n = 512 if quick else 1024
    x = _rng().standard_normal((n, n), dtype="float32")
    return (lambda x: jax.nn.softmax(x, axis=-1)), [x]


def w_layer_norm(quick):
    import jax.numpy as jnp

    n = 512 if quick else 1024
    r = _rng()
    x = r.standard_normal((n, n), dtype="float32")
    g = r.standard_normal(n, dtype="float32")
    b = r.standard_normal(n, dtype="float32")

    def f(x, g, b):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
        return (x - mean) * (1.0 / jnp.sqrt(var + 1e-5)) * g + b

    return f, [x, g, b]


def _matmul(n):
    def build(quick):
        import jax.numpy as jnp

        r = _rng()
        a = r.standard_normal((n, n), dtype="float32")
        b = r.standard_normal((n, n), dtype="float32")
        return (lambda a, b: jnp.matmul(a, b)), [a, b]

    return build


def w_cnn(quick):
    import jax
    import jax.numpy as jnp

    batch = 4 if quick else 16
    r = _rng()
    x = r.standard_normal((batch, 32, 32, 3), dtype="float32")
    w1 = r.standard_normal((3, 3, 3, 16), dtype="float32") * 0.3
    w2 = r.standard_normal((3, 3, 16, 32), dtype="float32") * 0.1
    w3 = r.standard_normal((3, 3, 32, 64), dtype="float32") * 0.1
    wd = r.standard_normal((64, 10), dtype="float32") * 0.1
    dn = ("NHWC", "HWIO", "NHWC")

    def conv(x, w, stride):
        return jax.lax.conv_general_dilated(
            x, w, (stride, stride), "SAME", dimension_numbers=dn
        )

    def f(x, w1, w2, w3, wd):
        h = jax.nn.relu(conv(x, w1, 1))
        h = jax.nn.relu(conv(h, w2, 2))
        h = jax.nn.relu(conv(h, w3, 2))
        h = jnp.mean(h, axis=(1, 2))
        return h @ wd

    return f, [x, w1, w2, w3, wd]


def w_cnn_train_step(quick):
    import jax
    import jax.numpy as jnp

    forward, args = w_cnn(quick)
    x, weights = args[0], args[1:]
    labels = _rng(1).integers(0, 10, x.shape[0]).astype("int32")

    def loss(weights, x, labels):
        logp = jax.nn.log_softmax(forward(x, *weights))
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))

    def f(w1, w2, w3, wd, x, labels):
        weights = (w1, w2, w3, wd)
        value, grads = jax.value_and_grad(loss)(weights, x, labels)
        return (value,) + tuple(w - 0.01 * g for w, g in zip(weights, grads))

    return f, [*weights, x, labels]


def w_mlp_train_step(quick):
    import jax
    import jax.numpy as jnp

    batch, d_in, hidden, d_out = (64, 256, 256, 10) if quick else (128, 784, 512, 10)
    r = _rng()
    x = r.standard_normal((batch, d_in), dtype="float32")
    labels = r.integers(0, d_out, batch).astype("int32")
    w1 = r.standard_normal((d_in, hidden), dtype="float32") / math.sqrt(d_in)
    b1 = (r.standard_normal(hidden, dtype="float32") * 0.01).astype("float32")
    w2 = r.standard_normal((hidden, hidden), dtype="float32") / math.sqrt(hidden)
    b2 = (r.standard_normal(hidden, dtype="float32") * 0.01).astype("float32")
    w3 = r.standard_normal((hidden, d_out), dtype="float32") / math.sqrt(hidden)
    b3 = (r.standard_normal(d_out, dtype="float32") * 0.01).astype("float32")

    def loss(params, x, labels):
        w1, b1, w2, b2, w3, b3 = params
        h = jax.nn.relu(x @ w1 + b1)
        h = jax.nn.relu(h @ w2 + b2)
        logits = h @ w3 + b3
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))

    def f(w1, b1, w2, b2, w3, b3, x, labels):
        params = (w1, b1, w2, b2, w3, b3)
        value, grads = jax.value_and_grad(loss)(params, x, labels)
        new = tuple(p - 0.01 * g for p, g in zip(params, grads))
        return (value,) + new

    return f, [w1, b1, w2, b2, w3, b3, x, labels]


def w_transformer_block(quick):
    import jax
    import jax.numpy as jnp

    batch, seq, d, heads, ff = (2, 64, 128, 4, 512) if quick else (4, 128, 256, 4, 1024)
    r = _rng()

    def p(*shape, scale):
        return (r.standard_normal(shape, dtype="float32") * scale).astype("float32")

    x = p(batch, seq, d, scale=1.0)
    params = [
        p(d, scale=0.1) + 1.0,  # ln1 gain
        p(d, 3 * d, scale=1 / math.sqrt(d)),  # qkv
        p(d, d, scale=1 / math.sqrt(d)),  # attention output
        p(d, scale=0.1) + 1.0,  # ln2 gain
        p(d, ff, scale=1 / math.sqrt(d)),  # mlp in
        p(ff, d, scale=1 / math.sqrt(ff)),  # mlp out
    ]

    def ln(h, g):
        mean = jnp.mean(h, axis=-1, keepdims=True)
        var = jnp.mean((h - mean) ** 2, axis=-1, keepdims=True)
        return (h - mean) * jax.lax.rsqrt(var + 1e-5) * g

    def block(params, x):
        g1, wqkv, wo, g2, w_in, w_out = params
        h = ln(x, g1)
        q, k, v = jnp.split(h @ wqkv, 3, axis=-1)
        split = lambda t: t.reshape(batch, seq, heads, d // heads).transpose(0, 2, 1, 3)
        q, k, v = split(q), split(k), split(v)
        att = jnp.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(d // heads)
        mask = jnp.tril(jnp.ones((seq, seq), dtype=bool))
        att = jax.nn.softmax(jnp.where(mask, att, -1e9), axis=-1)
        o = jnp.einsum("bhqk,bhkd->bhqd", att, v).transpose(0, 2, 1, 3).reshape(batch, seq, d)
        x = x + o @ wo
        h = ln(x, g2)
        x = x + jax.nn.gelu(h @ w_in) @ w_out
        return x

    def f(x, *params):
        loss = lambda params, x: jnp.mean(block(params, x) ** 2)
        value, grads = jax.value_and_grad(loss)(list(params), x)
        return (value,) + tuple(grads)

    return f, [x] + params


def w_fori_loop(quick):
    import jax
    import jax.numpy as jnp

    steps = 200 if quick else 1000
    x = _rng().standard_normal(16, dtype="float32")

    def f(x):
        return jax.lax.fori_loop(0, steps, lambda i, x: x * 0.99 + jnp.sin(x) * 0.01, x)

    return f, [x]


WORKLOADS = {
    "scalar_dispatch": (w_scalar_dispatch, "x + 1 on an f32 scalar: per-call overhead"),
    "elementwise_chain": (w_elementwise_chain, "~20 elementwise ops on 4M f32 (1M quick)"),
    "bandwidth_chain": (
        w_bandwidth_chain,
        "~12 cheap elementwise ops on two 8M f32 vectors (1M quick): memory-bound",
    ),
    "reduce_sum_axis0": (w_reduce_axis0, "sum over rows of a 2048x2048 f32 matrix"),
    "reduce_sum_axis1": (w_reduce_axis1, "sum over columns of a 2048x2048 f32 matrix"),
    "reduce_max_axis1": (w_reduce_max_axis1, "max over columns of a 2048x2048 f32 matrix"),
    "softmax": (w_softmax, "softmax over the last axis of 1024x1024 f32"),
    "layer_norm": (w_layer_norm, "layer norm with gain and bias, 1024x1024 f32"),
    "matmul_512": (_matmul(512), "512x512 @ 512x512 f32"),
    "matmul_2048": (_matmul(2048), "2048x2048 @ 2048x2048 f32"),
    "cnn_forward": (w_cnn, "3 NHWC 3x3 convs (3->16->32->64), mean pool, dense; batch 16"),
    "cnn_train_step": (w_cnn_train_step, "cnn_forward's network: loss, grads, SGD"),
    "mlp_train_step": (w_mlp_train_step, "784-512-512-10 MLP, batch 128: loss, grads, SGD"),
    "transformer_block": (w_transformer_block, "pre-LN block d=256 seq=128 b=4: fwd + bwd"),
    "fori_loop": (w_fori_loop, "1000 iterations of a tiny update on 16 f32"),
}


def _matmul_flops(n):
    return lambda quick: 2.0 * n**3


#: Workloads measured against the machine's limits: the work one call does, as
#: ("flops", count) against the measured peak f32 FLOP/s, or ("bytes", count) of
#: memory read plus written against the measured copy bandwidth.
ROOFLINE = {
    "matmul_512": ("flops", _matmul_flops(512)),
    "matmul_2048": ("flops", _matmul_flops(2048)),
    # Two f32 inputs read, one f32 output written.
    "bandwidth_chain": ("bytes", lambda quick: 3 * 4.0 * _bandwidth_n(quick)),
    # One input, one output; its transcendentals make it compute-bound on most machines.
    "elementwise_chain": ("bytes", lambda quick: 2 * 4.0 * ((1 << 20) if quick else (1 << 22))),
}


def roofline_lines(results, names, backends, peaks, quick):
    """One line per workload of `ROOFLINE` that ran: the rate each backend reached and its
    share of the machine's measured limit."""
    lines = []
    for name in names:
        if name not in ROOFLINE:
            continue
        kind, amount = ROOFLINE[name]
        work = amount(quick)
        if kind == "flops":
            limit, unit, what = peaks["peak_f32_gflops"], "GFLOP/s", "of peak f32"
        else:
            limit, unit, what = peaks["copy_bandwidth_gbs"], "GB/s", "of copy bandwidth"
        parts = []
        for b in backends:
            run_s = results[name].get(b, {}).get("run_s")
            if not run_s:
                continue
            rate = work / run_s / 1e9
            results[name][b]["rate"] = {"unit": unit, "value": rate, "share": rate / limit}
            parts.append(f"{b} {rate:.1f} {unit} ({100 * rate / limit:.0f}%)")
        if parts:
            lines.append(f"{name:20s} " + ", ".join(parts) + f" {what} {limit:.1f} {unit}")
    return lines


# --------------------------------------------------------------------------------------
# The child: one workload on one backend.
# --------------------------------------------------------------------------------------


def _rss_kib(field):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak():
    """Resets VmHWM to the current RSS (Linux >= 4.0); False when not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _block(tree):
    import jax

    for leaf in jax.tree_util.tree_leaves(tree):
        leaf.block_until_ready()
    return tree


def run_child(args):
    os.environ["JAX_PLATFORMS"] = "cpu,oxla"
    os.environ["JAX_ENABLE_COMPILATION_CACHE"] = "false"
    import numpy as np
    import jax

    jax.config.update("jax_enable_compilation_cache", False)
    backend, name = args.child_backend, args.child_workload
    build = WORKLOADS[name][0]
    f, inputs = build(args.quick)
    device = jax.devices(backend)[0]
    dev_inputs = [jax.device_put(x, device) for x in inputs]
    _block(dev_inputs)
    budget = args.budget if backend == "oxla" else args.budget * 4
    result = {"backend": backend, "workload": name, "device": str(device)}

    peak_reset = _reset_peak()
    rss0 = _rss_kib("VmRSS")

    # Compile time: fresh function objects, so neither jit's nor the lowering cache hits.
    compile_times, lower_times = [], []
    t_budget = time.perf_counter()
    for _ in range(args.compile_repeats):
        g = lambda *a, _f=f: _f(*a)  # noqa: E731 - a new object each time
        t0 = time.perf_counter()
        lowered = jax.jit(g).lower(*dev_inputs)
        t1 = time.perf_counter()
        lowered.compile()
        t2 = time.perf_counter()
        lower_times.append(t1 - t0)
        compile_times.append(t2 - t1)
        if time.perf_counter() - t_budget > budget / 2:
            break

    # Steady state: one warm-up call, then up to `repeats` timed calls within the budget.
    jf = jax.jit(f)
    t0 = time.perf_counter()
    out = _block(jf(*dev_inputs))
    warmup = time.perf_counter() - t0
    times = []
    t_budget = time.perf_counter()
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        _block(jf(*dev_inputs))
        times.append(time.perf_counter() - t0)
        if time.perf_counter() - t_budget > budget:
            break

    peak = _rss_kib("VmHWM")
    result.update(
        run_s=statistics.median(times),
        run_min_s=min(times),
        runs=len(times),
        warmup_s=warmup,
        compile_s=statistics.median(lower_times[i] + compile_times[i] for i in range(len(compile_times))),
        backend_compile_s=statistics.median(compile_times),
        lower_s=statistics.median(lower_times),
        peak_mem_mib=(peak - rss0) / 1024 if (peak_reset and peak and rss0) else None,
    )
    leaves = jax.tree_util.tree_leaves(out)
    np.savez(args.child_out + ".npz", *[np.asarray(x) for x in leaves])
    with open(args.child_out, "w") as fh:
        json.dump(result, fh)


# --------------------------------------------------------------------------------------
# The parent: machine measurements, children, comparison, table.
# --------------------------------------------------------------------------------------


def cpu_description():
    """The CPU's model name and widest vector level from ``/proc/cpuinfo`` (Linux), which
    decides what oxla generates code for: AVX-512F, else AVX2 with FMA, else the baseline."""
    try:
        with open("/proc/cpuinfo") as fh:
            text = fh.read()
    except OSError:
        return "unknown cpu"
    model, flags = "unknown model", set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and model == "unknown model":
            model = value.strip()
        elif key == "flags" and not flags:
            flags = set(value.split())
    if "avx512f" in flags:
        level = "AVX-512F"
    elif {"avx2", "fma"} <= flags:
        level = "AVX2+FMA, no AVX-512"
    elif flags:
        level = "no AVX2"
    else:
        level = "vector level unknown"
    return f"{model} ({level})"


def machine_peaks(quick):
    """Measured, not theoretical: numpy's f32 matmul (its BLAS, all cores) and a large copy."""
    import numpy as np

    n = 2048 if quick else 4096
    r = _rng()
    a = r.standard_normal((n, n), dtype="float32")
    b = r.standard_normal((n, n), dtype="float32")
    a @ b
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    flops = 2.0 * n**3 / best
    src = np.ones(1 << 26, dtype="float32")  # 256 MiB
    dst = np.empty_like(src)
    np.copyto(dst, src)
    best = math.inf
    for _ in range(5):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    bandwidth = 2.0 * src.nbytes / best  # bytes read + bytes written
    return {
        "peak_f32_gflops": flops / 1e9,
        "matmul_n": n,
        "copy_bandwidth_gbs": bandwidth / 1e9,
        "cpu_count": os.cpu_count(),
        "cpu": cpu_description(),
    }


def compare_outputs(path_a, path_b, rtol, atol):
    import numpy as np

    a, b = np.load(path_a), np.load(path_b)
    if sorted(a.files) != sorted(b.files):
        return False, "output count differs"
    worst = 0.0
    for key in a.files:
        x, y = a[key], b[key]
        if x.shape != y.shape or x.dtype != y.dtype:
            return False, f"{key}: {x.shape}/{x.dtype} vs {y.shape}/{y.dtype}"
        if x.dtype.kind in "fc":
            x64, y64 = x.astype("float64"), y.astype("float64")
            scale = max(1.0, float(np.max(np.abs(x64))) if x.size else 1.0)
            if not np.allclose(x64, y64, rtol=rtol, atol=atol * scale, equal_nan=True):
                err = float(np.max(np.abs(x64 - y64)))
                return False, f"{key}: max abs diff {err:.3g} (scale {scale:.3g})"
            if x.size:
                worst = max(worst, float(np.max(np.abs(x64 - y64))) / scale)
        elif not np.array_equal(x, y):
            return False, f"{key}: values differ"
    return True, f"max scaled diff {worst:.2g}"


def fmt_time(s):
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.0f} us"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


def fmt_mem(m):
    return "n/a" if m is None else f"{m:.0f}"


def fmt_ratio(r):
    if r is None:
        return "-"
    return f"{r:.2f}x" if r < 1 else (f"{r:.1f}x" if r < 100 else f"{r:.0f}x")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    p.add_argument("--only", action="append", metavar="NAME", help="run only NAME (repeatable)")
    p.add_argument("--repeats", type=int, default=None, help="timed runs per workload")
    p.add_argument("--compile-repeats", type=int, default=3)
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds of timed runs per oxla workload (cpu gets 4x); remaining repeats "
        "are skipped once it is spent",
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run each workload this many times per backend, alternating the backends; "
        "report each backend's fastest round",
    )
    p.add_argument("--backends", default=",".join(BACKENDS))
    p.add_argument("--timeout", type=float, default=600, help="seconds per child process")
    p.add_argument("--json", metavar="PATH", help="also write all results as JSON")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument("--child-backend", help=argparse.SUPPRESS)
    p.add_argument("--child-workload", help=argparse.SUPPRESS)
    p.add_argument("--child-out", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.repeats is None:
        args.repeats = 5 if args.quick else 20
    if args.budget is None:
        args.budget = 3.0 if args.quick else 8.0

    if args.child_backend:
        run_child(args)
        return 0
    if args.list:
        for name, (_, what) in WORKLOADS.items():
            print(f"{name:20s} {what}")
        return 0

    names = args.only or list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        p.error(f"unknown workload(s) {unknown}; --list shows them")
    backends = [b for b in args.backends.split(",") if b]

    env = dict(os.environ)
    env.pop("JAX_PLATFORMS", None)
    env["TF_CPP_MIN_LOG_LEVEL"] = env.get("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        from oxla import _library

        library = _library.library_path()
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        library = f"unavailable ({e})"

    print(f"oxla library: {library}", flush=True)
    peaks = machine_peaks(args.quick)
    print(
        f"machine: {peaks['cpu_count']} cpus, {peaks['cpu']}, measured peak f32 "
        f"{peaks['peak_f32_gflops']:.1f} GFLOP/s (numpy {peaks['matmul_n']}^2 matmul), "
        f"copy bandwidth {peaks['copy_bandwidth_gbs']:.1f} GB/s (read + write, 256 MiB copy)",
        flush=True,
    )

    def run_one(tmp, name, backend, round_):
        """One child process: `name` on `backend`; its JSON result (or an error)."""
        out = os.path.join(tmp, f"{name}.{backend}.{round_}.json")
        cmd = [
            sys.executable,
            os.path.abspath(__file__),
            "--child-backend", backend,
            "--child-workload", name,
            "--child-out", out,
            "--repeats", str(args.repeats),
            "--compile-repeats", str(args.compile_repeats),
            "--budget", str(args.budget),
        ] + (["--quick"] if args.quick else [])
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                cmd, env=env, capture_output=True, text=True, timeout=args.timeout
            )
            ok = proc.returncode == 0 and os.path.exists(out)
            err = None if ok else (proc.stderr.strip().splitlines() or ["?"])[-1]
        except subprocess.TimeoutExpired:
            ok, err = False, f"timed out after {args.timeout:.0f} s"
        if ok:
            with open(out) as fh:
                r = json.load(fh)
            r["outputs"] = out + ".npz"
        else:
            r = {"error": err[:200]}
        r["wall_s"] = time.perf_counter() - t0
        status = fmt_time(r.get("run_s")) if ok else "FAILED: " + r["error"]
        tag = f" (round {round_ + 1})" if args.rounds > 1 else ""
        print(f"  {name:20s} {backend:5s} {status}{tag}", flush=True)
        return r

    def best_of(rounds):
        """The rounds of one backend as one result: the fastest run and compile, the
        highest peak memory, every round's run time kept."""
        good = [r for r in rounds if "error" not in r]
        if not good:
            return rounds[0]
        best = dict(min(good, key=lambda r: r["run_s"]))
        for key in ("backend_compile_s", "lower_s"):
            values = [r[key] for r in good if r.get(key) is not None]
            if values:
                best[key] = min(values)
        mems = [r["peak_mem_mib"] for r in good if r.get("peak_mem_mib") is not None]
        if mems:
            best["peak_mem_mib"] = max(mems)
        best["round_run_s"] = [r.get("run_s") for r in rounds]
        return best

    results = {}
    with tempfile.TemporaryDirectory(prefix="oxla-bench-") as tmp:
        for name in names:
            # Backends alternate round by round, so a slow phase of the machine falls on
            # both rather than on one.
            rounds = {b: [] for b in backends}
            for round_ in range(args.rounds):
                for backend in backends:
                    rounds[backend].append(run_one(tmp, name, backend, round_))
            results[name] = {b: best_of(rounds[b]) for b in backends}
            if all("error" not in results[name].get(b, {"error": 1}) for b in BACKENDS):
                same, detail = compare_outputs(
                    results[name]["cpu"]["outputs"],
                    results[name]["oxla"]["outputs"],
                    rtol=2e-3,
                    atol=2e-3,
                )
                results[name]["match"] = {"ok": same, "detail": detail}
            for b in backends:
                results[name][b].pop("outputs", None)

    # The table.
    # The compile columns are the backend's `.compile()` step alone; tracing and lowering
    # (JAX's own work, the same on both backends) is the `lower` column, cpu/oxla.
    header = (
        f"{'workload':20s} {'cpu run':>10s} {'oxla run':>10s} {'ratio':>7s} "
        f"{'cpu comp':>10s} {'oxla comp':>10s} {'ratio':>7s} {'lower cpu/oxla':>19s} "
        f"{'cpu MiB':>8s} {'oxla MiB':>8s} {'runs':>6s} match"
    )
    print()
    print(header)
    print("-" * len(header))
    run_ratios, compile_ratios = [], []
    for name in names:
        c = results[name].get("cpu", {})
        o = results[name].get("oxla", {})
        run_ratio = o["run_s"] / c["run_s"] if "run_s" in c and "run_s" in o else None
        comp_ratio = (
            o["backend_compile_s"] / c["backend_compile_s"]
            if "backend_compile_s" in c and "backend_compile_s" in o
            else None
        )
        if run_ratio:
            run_ratios.append(run_ratio)
        if comp_ratio:
            compile_ratios.append(comp_ratio)
        results[name]["run_ratio"] = run_ratio
        results[name]["compile_ratio"] = comp_ratio
        m = results[name].get("match")
        match = "-" if m is None else ("ok" if m["ok"] else "MISMATCH " + m["detail"])
        if "error" in o:
            match = "oxla failed: " + o["error"][:60]
        if "error" in c:
            match = "cpu failed: " + c["error"][:60]
        runs = f"{c.get('runs', '-')}/{o.get('runs', '-')}"
        print(
            f"{name:20s} {fmt_time(c.get('run_s')):>10s} {fmt_time(o.get('run_s')):>10s} "
            f"{fmt_ratio(run_ratio):>7s} {fmt_time(c.get('backend_compile_s')):>10s} "
            f"{fmt_time(o.get('backend_compile_s')):>10s} {fmt_ratio(comp_ratio):>7s} "
            f"{fmt_time(c.get('lower_s')) + '/' + fmt_time(o.get('lower_s')):>19s} "
            f"{fmt_mem(c.get('peak_mem_mib')):>8s} {fmt_mem(o.get('peak_mem_mib')):>8s} "
            f"{runs:>6s} {match}"
        )

    def gmean(xs):
        return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None

    g_run, g_comp = gmean(run_ratios), gmean(compile_ratios)
    print("-" * len(header))
    print(
        f"geometric mean oxla/cpu: run {fmt_ratio(g_run)} over {len(run_ratios)} workloads, "
        f"compile (backend .compile() only) {fmt_ratio(g_comp)}"
    )
    roofline = roofline_lines(results, names, backends, peaks, args.quick)
    if roofline:
        print()
        print("against the machine's measured limits:")
        for line in roofline:
            print(line)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(
                {
                    "machine": peaks,
                    "library": library,
                    "quick": args.quick,
                    "repeats": args.repeats,
                    "budget_s": args.budget,
                    "rounds": args.rounds,
                    "workloads": results,
                    "geomean_run_ratio": g_run,
                    "geomean_compile_ratio": g_comp,
                },
                fh,
                indent=2,
            )
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
