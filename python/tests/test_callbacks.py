"""Host callbacks on oxla (`jax.debug.print`, `jax.debug.callback`, `jax.pure_callback`,
`io_callback`), compared with JAX's cpu backend running the same function."""

import numpy as np
import pytest

from _support import run_python_ok

jax = pytest.importorskip("jax", reason="jax is not installed")
jnp = pytest.importorskip("jax.numpy")

from jax.experimental import io_callback  # noqa: E402


def on(device, fn, *args):
    """Runs jit(fn) with its arguments placed on `device`; returns host values."""
    args = jax.device_put(args, device)
    out = jax.jit(fn)(*args)
    jax.effects_barrier()
    return jax.tree_util.tree_map(np.asarray, out)


def test_debug_print_matches_cpu(capfd, oxla_device, cpu_device):
    def fn(x):
        jax.debug.print("x={x} total={t}", x=x, t=x.sum())
        return x * 2

    x = jnp.arange(4.0)
    on(cpu_device, fn, x)
    expected = capfd.readouterr().out
    out = on(oxla_device, fn, x)
    assert capfd.readouterr().out == expected
    assert "x=[0. 1. 2. 3.] total=6.0" in expected
    np.testing.assert_array_equal(out, np.arange(4.0) * 2)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.uint8])
def test_pure_callback_matches_cpu(dtype, oxla_device, cpu_device):
    def host(a):
        a = np.asarray(a)
        return (a[::-1].copy(), np.asarray(a.size, np.int32))

    def fn(x):
        spec = (jax.ShapeDtypeStruct(x.shape, x.dtype), jax.ShapeDtypeStruct((), jnp.int32))
        rev, n = jax.pure_callback(host, spec, x)
        return rev, n + 1

    x = np.arange(6).reshape(2, 3).astype(dtype)
    expected = on(cpu_device, fn, x)
    got = on(oxla_device, fn, x)
    for e, g in zip(expected, got):
        assert e.dtype == g.dtype
        np.testing.assert_array_equal(e, g)


def test_pure_callback_under_vmap_and_grad(oxla_device, cpu_device):
    def fn(x):
        y = jax.vmap(
            lambda r: jax.pure_callback(
                lambda v: np.cumsum(v), jax.ShapeDtypeStruct(r.shape, r.dtype), r,
                vmap_method="sequential",
            )
        )(x)
        g = jax.grad(lambda v: jnp.sum(jnp.sin(v) * jax.lax.stop_gradient(y)))(x)
        return y, g

    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    for e, g in zip(on(cpu_device, fn, x), on(oxla_device, fn, x)):
        np.testing.assert_allclose(g, e, rtol=1e-6)


def test_io_callback_ordered_side_effects_in_loop(oxla_device, cpu_device):
    seen = {}

    def make(log):
        def fn(x):
            def body(i, carry):
                io_callback(lambda v: log.append(int(v)), None, i, ordered=True)
                return carry + i

            total = jax.lax.fori_loop(0, 5, body, x)
            back = io_callback(lambda v: np.asarray(v * 10, np.int32),
                               jax.ShapeDtypeStruct((), jnp.int32), total)
            return total, back

        return fn

    for name, device in [("cpu", cpu_device), ("oxla", oxla_device)]:
        log = []
        seen[name] = (on(device, make(log), np.int32(1)), log)
    assert seen["oxla"][1] == seen["cpu"][1] == [0, 1, 2, 3, 4]
    assert [int(v) for v in seen["oxla"][0]] == [int(v) for v in seen["cpu"][0]] == [11, 110]


def test_callback_errors_fail_the_call_and_leave_the_device_usable(oxla_device):
    def boom(v):
        raise ValueError("no negative values here")

    def fn(x):
        return jax.pure_callback(boom, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    with pytest.raises(Exception, match="no negative values here"):
        on(oxla_device, fn, np.ones(3, np.float32))

    def wrong_shape(x):
        return jax.pure_callback(
            lambda v: np.zeros(4, np.float32), jax.ShapeDtypeStruct(x.shape, x.dtype), x
        )

    with pytest.raises(Exception, match="Incorrect output shape"):
        on(oxla_device, wrong_shape, np.ones(3, np.float32))
    np.testing.assert_array_equal(on(oxla_device, lambda x: x + 1, np.ones(2)), [2.0, 2.0])


def test_callbacks_returning_python_literals_and_wide_arrays(oxla_device, cpu_device):
    # Literals and 64-bit arrays take JAX's canonical 32-bit dtypes without x64, as on cpu.
    for value, dtype in ((42.0, np.float32), (42, np.int32), (np.arange(3.0), np.float32)):
        shape = np.shape(value)
        for callback in (jax.pure_callback, io_callback):
            fn = lambda x, value=value, callback=callback, shape=shape, dtype=dtype: callback(
                lambda _: value, jax.ShapeDtypeStruct(shape, dtype), x
            )
            got = on(oxla_device, fn, np.float32(0))
            want = on(cpu_device, fn, np.float32(0))
            assert got.dtype == want.dtype == dtype
            np.testing.assert_array_equal(got, want)


def test_a_failing_pure_callback_fails_the_call(oxla_device):
    # Raised by the call itself, as on cpu, even though the result is never read.
    wrong_shape = lambda: jax.pure_callback(
        lambda: np.float32(1.0), jax.ShapeDtypeStruct((1,), np.float32)
    )
    with jax.default_device(oxla_device), pytest.raises(RuntimeError, match="Incorrect output shape"):
        jax.jit(wrong_shape)()
    np.testing.assert_array_equal(on(oxla_device, lambda x: x * 3, np.ones(2)), [3.0, 3.0])


def test_checkify_checks_under_jit(oxla_device, cpu_device):
    from jax.experimental import checkify

    def fn(x):
        checkify.check(jnp.all(x > 0), "x must be positive, got {}", x)
        return x * 2

    # Functionalized by checkify: the error is a value, as on cpu.
    checked = checkify.checkify(fn)
    for x in (np.ones(3, np.float32), np.array([1, -1, 2], np.float32)):
        err, out = on(oxla_device, checked, x)
        want_err, want_out = on(cpu_device, checked, x)
        assert err.get() == want_err.get()
        np.testing.assert_array_equal(out, want_out)
    # `debug_check` without checkify does nothing, also under jit.
    debug = lambda x: (checkify.debug_check(jnp.all(x > 0), "never raised"), x + 1)[1]
    np.testing.assert_array_equal(on(oxla_device, debug, np.zeros(2, np.float32)), [1.0, 1.0])
    # A bare `check` under jit is an error at lowering unless runtime errors are on; then
    # it raises when the program runs, from a host callback.
    with pytest.raises(ValueError, match="Cannot abstractly evaluate"):
        on(oxla_device, fn, np.ones(3, np.float32))
    from jax._src import config as jax_config

    with jax_config.xla_runtime_errors(True):
        with pytest.raises(Exception, match="x must be positive"):
            on(oxla_device, fn, np.array([3, -3], np.float32))
        # The device goes on (and the next call's token replaces the failed one's, which
        # the effects barrier would report again, as for any failed asynchronous call).
        np.testing.assert_array_equal(on(oxla_device, fn, np.ones(2, np.float32)), [2.0, 2.0])


def test_debug_print_with_only_oxla_listed():
    # JAX runs callbacks through its cpu backend; with JAX_PLATFORMS=oxla the plugin
    # keeps that backend running (after oxla, which stays the default).
    result = run_python_ok(
        """
        import jax, jax.numpy as jnp
        print(jax.default_backend(), jax.devices()[0].platform)
        @jax.jit
        def f(x):
            jax.debug.print("value {}", x)
            return x + 1
        print(f(jnp.float32(41)))
        """,
        env={"JAX_PLATFORMS": "oxla"},
    )
    lines = result.stdout.split()
    assert lines[:2] == ["oxla", "oxla"]
    assert "value 41.0" in result.stdout and "42.0" in result.stdout
