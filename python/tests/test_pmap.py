"""jax.pmap, collectives and shard_map over several oxla devices.

Each check runs in a fresh interpreter with OXLA_NUM_DEVICES=4 (the device count is fixed
when the backend starts) and compares oxla's results with the same computation in numpy.
"""

import json

import pytest
from _support import require_jax, run_python_ok

require_jax()
np = pytest.importorskip("numpy")

ENV = {"JAX_PLATFORMS": "oxla,cpu", "OXLA_NUM_DEVICES": "4"}


def run_report(code):
    """Runs `code` (which prints one JSON line last) on 4 oxla devices; returns the report."""
    result = run_python_ok(code, env=ENV)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_pmap_collectives_match_numpy():
    report = run_report(
        """
        import json
        import jax
        import jax.numpy as jnp
        import numpy as np

        assert jax.device_count() == 4, jax.devices()
        out = {}
        out["psum"] = jax.pmap(lambda x: x + jax.lax.psum(x, "i"), axis_name="i")(
            jnp.arange(4)
        )
        x = np.arange(16, dtype=np.float32).reshape(4, 4) * 1.5 - 7
        f = jax.pmap(
            lambda v: (
                jax.lax.pmean(v, "i"),
                jax.lax.pmax(v, "i"),
                jax.lax.pmin(v, "i"),
                jax.lax.all_gather(v, "i"),
                jax.lax.psum_scatter(v, "i"),
                jax.lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]),
                jax.lax.ppermute(v, "i", [(0, 3), (1, 2)]),
                jax.lax.axis_index("i"),
                jax.lax.all_to_all(v, "i", 0, 0),
            ),
            axis_name="i",
        )
        names = ["pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute",
                 "ppermute_partial", "axis_index", "all_to_all"]
        for name, value in zip(names, f(x)):
            out[name] = value
        # pmap of vmap: the collective reduces over devices only.
        out["pmap_vmap"] = jax.pmap(
            jax.vmap(lambda v: v - jax.lax.pmean(v, "i")), axis_name="i"
        )(x)
        print(json.dumps({k: np.asarray(v).tolist() for k, v in out.items()}))
        """
    )
    x = np.arange(16, dtype=np.float32).reshape(4, 4) * 1.5 - 7
    n = 4
    np.testing.assert_array_equal(report["psum"], np.arange(4) + np.arange(4).sum())
    np.testing.assert_allclose(report["pmean"], np.broadcast_to(x.mean(0), x.shape), rtol=1e-6)
    np.testing.assert_array_equal(report["pmax"], np.broadcast_to(x.max(0), x.shape))
    np.testing.assert_array_equal(report["pmin"], np.broadcast_to(x.min(0), x.shape))
    np.testing.assert_array_equal(report["all_gather"], np.broadcast_to(x, (n, n, 4)))
    np.testing.assert_allclose(report["psum_scatter"], x.sum(0), rtol=1e-6)
    np.testing.assert_array_equal(report["ppermute"], np.roll(x, 1, axis=0))
    partial = np.zeros_like(x)
    partial[3], partial[2] = x[0], x[1]
    np.testing.assert_array_equal(report["ppermute_partial"], partial)
    np.testing.assert_array_equal(report["axis_index"], np.arange(n))
    np.testing.assert_array_equal(report["all_to_all"], x.T)
    np.testing.assert_allclose(report["pmap_vmap"], x - x.mean(0), rtol=1e-6, atol=1e-6)


def test_pmap_lowered_without_shardy():
    # With Shardy off, JAX marks the per-device region with sharding custom calls
    # (@Sharding, @SPMDFullToShardShape, @SPMDShardToFullShape) instead of
    # sdy.manual_computation.
    report = run_report(
        """
        import json
        import jax
        import jax.numpy as jnp
        import numpy as np

        jax.config.update("jax_use_shardy_partitioner", False)
        x = np.arange(8, dtype=np.float32).reshape(4, 2)
        f = jax.pmap(
            lambda v: (v + jax.lax.psum(v, "i"), jax.lax.all_gather(v, "i")), axis_name="i"
        )
        total, gathered = f(x)
        print(json.dumps({"total": np.asarray(total).tolist(),
                          "gathered": np.asarray(gathered).tolist()}))
        """
    )
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    np.testing.assert_array_equal(report["total"], x + x.sum(0))
    np.testing.assert_array_equal(report["gathered"], np.broadcast_to(x, (4, 4, 2)))


def test_pmap_over_device_subsets_and_integer_types():
    report = run_report(
        """
        import json
        import jax
        import jax.numpy as jnp
        import numpy as np

        devices = jax.devices()
        x = np.arange(6, dtype=np.int32).reshape(2, 3) - 2
        f = jax.pmap(lambda v: jax.lax.psum(v, "i") * v, axis_name="i", devices=devices[2:])
        y = f(x)
        print(json.dumps({
            "value": np.asarray(y).tolist(),
            "devices": sorted(d.id for d in y.devices()),
        }))
        """
    )
    x = np.arange(6, dtype=np.int32).reshape(2, 3) - 2
    np.testing.assert_array_equal(report["value"], x.sum(0) * x)
    assert len(report["devices"]) == 2


def test_shard_map_over_a_mesh_of_oxla_devices():
    report = run_report(
        """
        import json
        import jax
        import numpy as np
        from jax import shard_map
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

        mesh = Mesh(np.array(jax.devices()).reshape(2, 2), ("a", "b"))

        def body(block):
            return jax.lax.psum(block, "a") * (jax.lax.axis_index("b") + 1)

        f = jax.jit(
            shard_map(body, mesh=mesh, in_specs=P("a", "b"), out_specs=P(None, "b")),
            in_shardings=NamedSharding(mesh, P("a", "b")),
            out_shardings=NamedSharding(mesh, P(None, "b")),
        )
        x = np.arange(16, dtype=np.float32).reshape(4, 4)
        print(json.dumps({"value": np.asarray(f(x)).tolist()}))
        """
    )
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    summed = x[:2] + x[2:]
    expected = np.concatenate([summed[:, :2] * 1, summed[:, 2:] * 2], axis=1)
    np.testing.assert_array_equal(report["value"], expected)


def test_shardings_jax_reads_back_from_the_executable():
    # With in_shardings and out_shardings left to the compiler, JAX asks the executable
    # for its parameter and output shardings.
    report = run_report(
        """
        import json
        import jax
        import numpy as np
        from jax import shard_map
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

        mesh = Mesh(np.array(jax.devices()), ("x",))
        f = jax.jit(shard_map(lambda b: b * 2 + jax.lax.axis_index("x"), mesh=mesh,
                              in_specs=P("x"), out_specs=P("x")))
        x = jax.device_put(np.arange(8, dtype=np.float32), NamedSharding(mesh, P("x")))
        out = f(x)
        compiled = f.lower(x).compile()
        twice = jax.pmap(lambda v: v * 2)(jax.pmap(lambda v: v + 1)(np.ones((4, 3))))
        print(json.dumps({
            "value": np.asarray(out).tolist(),
            "sharded": out.sharding.is_equivalent_to(NamedSharding(mesh, P("x")), 1),
            "shards": [s.data.shape[0] for s in out.addressable_shards],
            "in": compiled.input_shardings[0][0].is_equivalent_to(
                NamedSharding(mesh, P("x")), 1),
            "twice": np.asarray(twice).tolist(),
        }))
        """
    )
    expected = np.arange(8) * 2 + np.repeat(np.arange(4), 2)
    np.testing.assert_array_equal(report["value"], expected)
    assert report["sharded"] and report["in"]
    assert report["shards"] == [2, 2, 2, 2]
    np.testing.assert_array_equal(report["twice"], np.full((4, 3), 4.0))


def test_programs_without_results_over_several_devices():
    # A pmapped or sharded function that returns nothing (only prints) still compiles: jaxlib
    # reads one output sharding for its empty result tuple.
    result = run_python_ok(
        """
        import jax, jax.numpy as jnp, numpy as np
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

        @jax.pmap
        def f(x):
            jax.debug.print("row {}", x, ordered=False)

        f(jnp.arange(4))
        jax.effects_barrier()
        mesh = Mesh(np.array(jax.devices("oxla")), ("x",))
        x = jax.device_put(np.arange(8), NamedSharding(mesh, P("x")))
        print("outputs", jax.jit(lambda v: None)(x), jax.jit(lambda v: ())(x))
        """,
        env=ENV,
    )
    lines = result.stdout.splitlines()
    assert sorted(l for l in lines if l.startswith("row")) == [f"row {i}" for i in range(4)]
    assert "outputs None ()" in lines, result.stdout
