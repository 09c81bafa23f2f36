"""Running programs: eager ops, jit, donation, synchronisation, the persistent cache."""

import json

import numpy as np
import pytest

from _support import require_jax, run_python_ok

jax = require_jax()
jnp = jax.numpy


def on_device(array, device):
    return array.devices() == {device}


def test_eager_add(oxla_device):
    result = jnp.add(1, 1)
    assert on_device(result, oxla_device)
    assert result.dtype == jnp.int32
    assert int(result) == 2


def test_jit_scalar(oxla_device):
    result = jax.jit(lambda x: x * 2)(1.0)
    assert on_device(result, oxla_device)
    assert result.dtype == jnp.float32
    assert float(result) == 2.0


def test_jit_several_inputs_and_outputs(oxla_device):
    @jax.jit
    def f(x, y):
        return x + y, x * y, (x - y).sum()

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.full((2, 3), 2.0, np.float32)
    total, product, difference = f(x, y)
    for result in (total, product, difference):
        assert on_device(result, oxla_device)
    np.testing.assert_array_equal(total, x + y)
    np.testing.assert_array_equal(product, x * y)
    assert float(difference) == float((x - y).sum())


def test_jit_reuses_compiled_executable():
    traces = []

    @jax.jit
    def f(x):
        traces.append(1)
        return x + 1

    for i in range(3):
        np.testing.assert_array_equal(f(np.full((4,), i, np.int32)), np.full((4,), i + 1))
    assert len(traces) == 1


def test_jit_with_pytree_and_static_argument():
    @jax.jit
    def f(params, x):
        return {"y": params["w"] * x + params["b"]}

    out = f({"w": np.float32(3), "b": np.float32(1)}, np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(out["y"], [1.0, 4.0, 7.0])

    g = jax.jit(lambda x, n: x * n, static_argnums=1)
    np.testing.assert_array_equal(g(np.ones(2, np.float32), 5), [5.0, 5.0])


def test_outputs_have_memory_of_their_own(oxla_device):
    # Pass-through and repeated outputs are new buffers, as on the cpu backend: a copy
    # (`jnp.array(x, copy=True)`) must not alias its source.
    x = jax.device_put(jnp.arange(3), oxla_device)
    y = jax.jit(lambda v: v)(x)
    z1, z2 = jax.jit(lambda v: (v, v))(x)
    copied = jnp.array(x, copy=True)
    pointers = [a.unsafe_buffer_pointer() for a in (x, y, z1, z2, copied)]
    assert len(set(pointers)) == len(pointers)
    for a in (y, z1, z2, copied):
        assert a.tolist() == [0, 1, 2]


def test_constant_outputs_are_new_buffers_on_every_call(oxla_device):
    # The executable keeps small constants between calls; what it returns is still memory
    # of each call's own, as on the cpu backend.
    f = jax.jit(lambda: (jnp.array([1.0, 2.0, 3.0]), jnp.full((4,), 7, jnp.int32)),
                device=oxla_device)
    first, second = f(), f()
    pointers = [a.unsafe_buffer_pointer() for a in (*first, *second)]
    assert len(set(pointers)) == len(pointers)
    for a, b in zip(first, second):
        assert a.tolist() == b.tolist()
    assert second[0].tolist() == [1.0, 2.0, 3.0] and second[1].tolist() == [7] * 4


def test_dce_sink_keeps_a_value_without_effect(oxla_device):
    def f(v):
        jax.lax.dce_sink(v + 1, prevent_mlir_dce=True)
        return v * 2

    x = jax.device_put(jnp.arange(3.0), oxla_device)
    assert jax.jit(f)(x).tolist() == [0.0, 2.0, 4.0]


def test_layout_constraint_to_the_default_layout_passes_the_value_on(oxla_device, cpu_device):
    # `with_sharding_constraint` to a `Format` with a concrete layout lowers to a
    # `LayoutConstraint` custom call; row-major is the layout oxla's buffers have.
    from jax.experimental.layout import Format, Layout
    from jax.sharding import SingleDeviceSharding

    def run(device):
        fmt = Format(Layout(major_to_minor=(0, 1)), SingleDeviceSharding(device))
        f = jax.jit(lambda x: jax.lax.with_sharding_constraint(x.T * 2, fmt) + 1)
        assert "LayoutConstraint" in f.lower(np.ones((3, 4), np.float32)).as_text()
        out = f(jax.device_put(np.arange(12, dtype=np.float32).reshape(3, 4), device))
        assert out.format.layout.major_to_minor == (0, 1)
        return np.asarray(out)

    np.testing.assert_array_equal(run(oxla_device), run(cpu_device))


def test_tokens_pass_through_jit_and_hold_no_value(oxla_device):
    token = jax.lax.create_token()
    assert on_device(token._buf, oxla_device)
    # As on `cpu`: a token's buffer has the token type, which has no host value.
    with pytest.raises(RuntimeError, match="Cannot convert a token-shape buffer"):
        token._buf._value

    @jax.jit
    def step(x, token):
        return x * 2, jax.lax.after_all(token)

    x = jax.device_put(jnp.arange(3.0), oxla_device)
    y, out = step(x, token)
    y, out = step(y, out)
    assert isinstance(out, jax._src.core.Token) and out is not token
    assert y.tolist() == [0.0, 4.0, 8.0]
    assert "token[]" in step.lower(x, token).compile().as_text()


def test_donated_argument_is_deleted(oxla_device):
    f = jax.jit(lambda x: x + 1, donate_argnums=0)
    x = jax.device_put(np.arange(8, dtype=np.float32), oxla_device)
    y = f(x)
    assert x.is_deleted()
    assert not y.is_deleted()
    np.testing.assert_array_equal(y, np.arange(8, dtype=np.float32) + 1)
    with pytest.raises(RuntimeError):
        np.asarray(x)


def test_delete_frees_an_array(oxla_device):
    x = jax.device_put(np.ones(4, np.float32), oxla_device)
    x.delete()
    assert x.is_deleted()
    with pytest.raises(RuntimeError):
        jax.jit(lambda v: v * 2)(x)


def test_block_until_ready(oxla_device):
    f = jax.jit(lambda x: jnp.tanh(x) * 2)
    x = jax.device_put(np.linspace(-1, 1, 16, dtype=np.float32), oxla_device)
    y = f(x)
    assert y.block_until_ready() is y
    assert y.is_fully_replicated
    tree = jax.block_until_ready({"a": y, "b": [f(x), x]})
    assert tree["a"] is y
    np.testing.assert_allclose(y, np.tanh(np.asarray(x)) * 2, rtol=1e-6)


def test_many_calls_in_flight():
    f = jax.jit(lambda x: x * 2 + 1)
    results = [f(np.full((16,), i, np.float32)) for i in range(32)]
    jax.block_until_ready(results)
    for i, result in enumerate(results):
        np.testing.assert_array_equal(result, np.full((16,), 2 * i + 1, np.float32))


CACHE_PROGRAM = """
import json, sys
import jax
import numpy as np
from jax._src import monitoring

jax.config.update("jax_compilation_cache_dir", sys.argv[1] if len(sys.argv) > 1 else {cache_dir!r})
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)

events = []
monitoring.register_event_listener(lambda event, **kwargs: events.append(event))

@jax.jit
def f(x, y):
    return jax.numpy.sin(x) * y + 1

# NumPy inputs, so that no eager op compiles anything before f.
out = f(np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4), np.float32(3))
print(json.dumps({{
    "hits": events.count("/jax/compilation_cache/cache_hits"),
    "misses": events.count("/jax/compilation_cache/cache_misses"),
    "platform": next(iter(out.devices())).platform,
    "result": np.asarray(out).tolist(),
}}))
"""


def test_persistent_compilation_cache(tmp_path):
    cache_dir = tmp_path / "jax-cache"
    program = CACHE_PROGRAM.format(cache_dir=str(cache_dir))
    env = {"JAX_PLATFORMS": "oxla"}

    first = json.loads(run_python_ok(program, env=env).stdout.strip().splitlines()[-1])
    assert first["platform"] == "oxla"
    assert first["hits"] == 0
    assert first["misses"] >= 1
    assert any(cache_dir.iterdir()), "the first run wrote nothing to the cache"

    second = json.loads(run_python_ok(program, env=env).stdout.strip().splitlines()[-1])
    assert second["platform"] == "oxla"
    assert second["hits"] >= 1, "the second run did not hit the persistent cache"
    assert second["misses"] == 0
    assert second["result"] == first["result"]

    expected = np.sin(np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4)) * 3 + 1
    np.testing.assert_allclose(np.array(second["result"], np.float32), expected, rtol=1e-6)
