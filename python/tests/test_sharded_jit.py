"""jax.jit over arrays sharded across several oxla devices.

Programs JAX leaves to the compiler to partition (arguments and results carrying shardings,
ops outside any `shard_map`) run on whole values: each check runs in a fresh interpreter
with OXLA_NUM_DEVICES=4 and compares the values with the same function on JAX's cpu
backend (one device, unsharded), and each device's shard with the matching slice of the
whole result.
"""

import json

import pytest
from _support import require_jax, run_python_ok

require_jax()

ENV = {"JAX_PLATFORMS": "oxla,cpu", "OXLA_NUM_DEVICES": "4"}

CASES = r"""
import json
import jax
import jax.numpy as jnp
import numpy as np
from jax import shard_map
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

devs = jax.devices("oxla")
assert len(devs) == 4, devs
cpu = jax.devices("cpu")[0]
rng = np.random.default_rng(0)
report = {}


def check(name, f, args, in_specs=None, out_spec=None, mesh=None, want=None):
    if want is None:
        want = jax.jit(f)(*[jax.device_put(a, cpu) for a in args])
    if in_specs is not None:
        args = [jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip(args, in_specs)]
    out = None if out_spec is None else NamedSharding(mesh, out_spec)
    got = jax.jit(f, out_shardings=out)(*args)
    leaves, want_leaves = jax.tree.leaves(got), jax.tree.leaves(want)
    entry = {"values": [], "shards": [], "specs": []}
    for leaf, ref in zip(leaves, want_leaves):
        whole = np.asarray(leaf)
        entry["values"].append(bool(
            whole.dtype == np.asarray(ref).dtype
            and np.allclose(whole, np.asarray(ref), rtol=1e-5, atol=1e-5)))
        entry["shards"].append(all(
            np.array_equal(np.asarray(s.data), whole[s.index]) for s in leaf.addressable_shards))
        entry["specs"].append(str(getattr(leaf.sharding, "spec", "")))
    report[name] = entry


line = Mesh(np.array(devs), ("x",))
square = Mesh(np.array(devs).reshape(2, 2), ("a", "b"))
backwards = Mesh(np.array(devs[::-1]), ("x",))
x = rng.standard_normal((8, 6), dtype=np.float32)
y = rng.standard_normal((6, 4), dtype=np.float32)
i = rng.integers(-100, 100, (4, 8), dtype=np.int32)

check("row_sum", lambda x: (x * 2).sum(0), [x], [P("x")], mesh=line)
check("matmul_2d_mesh", lambda x, y: x @ y + 1, [x, y], [P("a", "b"), P("b", "a")],
      P("b", None), square)
check("partly_replicated", lambda x: jnp.tanh(x) - x.mean(), [x], [P(None, "a")],
      P("b", "a"), square)
check("reversed_devices", lambda x: jnp.cumsum(x, 0), [x], [P("x")], P("x"), backwards)
check("ints_and_bools", lambda i: (i * 3 ^ 5, i > 0), [i], [P("a", "b")],
      P(None, ("a", "b")), square)
check("replicated_input", jnp.sin, [x], [P()], mesh=line)
check("elementwise_keeps_sharding", lambda x: x * 2 + 1, [x], [P("x")], mesh=line)
from jax.experimental.shard_alike import shard_alike
check("shard_alike", lambda x, y: shard_alike(x * 2, y + 1), [x, x], [P("x"), P()], mesh=line)

# shard_map regions among other ops: the regions run per device, the rest on whole values
# (the expected values from numpy: the regions name oxla's devices).
blocks = x.reshape(4, 2, 6).sum(0)
spread = shard_map(lambda v: v * 2 + jax.lax.psum(v, "x"), mesh=line,
                   in_specs=P("x"), out_specs=P("x"))
total = shard_map(lambda v: jax.lax.psum(v.sum(0), "x"), mesh=line,
                  in_specs=P("x"), out_specs=P())
check("shard_map_inside_jit", lambda x: jnp.sin(spread(x)) + 1, [x],
      want=np.sin(x * 2 + np.tile(blocks, (4, 1))) + 1)
check("shard_map_to_replicated", lambda x: total(x * x) / 3, [x], [P("x")], mesh=line,
      want=(x * x).sum(0) / 3)

# jax.export of partitioned functions, serialized and read back, then called: the calling
# program passes the exported shardings on through constraints and the called function's
# signature, as Shardy annotations or (exported without Shardy) HLO sharding strings.
from jax import export


def exported(name, f, args, in_specs, out_spec, mesh, shardy, meshes=None):
    jax.config.update("jax_use_shardy_partitioner", shardy)
    try:
        shardings = [NamedSharding(m, s) for m, s in zip(meshes or [mesh] * len(args), in_specs)]
        specs = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s)
                 for a, s in zip(args, shardings)]
        jf = jax.jit(f, in_shardings=shardings, out_shardings=NamedSharding(mesh, out_spec))
        exp = export.deserialize(export.export(jf)(*specs).serialize())
    finally:
        jax.config.update("jax_use_shardy_partitioner", True)
    want = jax.jit(f)(*[jax.device_put(a, cpu) for a in args])
    got = exp.call(*[jax.device_put(a, s) for a, s in zip(args, shardings)])
    whole = np.asarray(got)
    report[name] = {
        "values": [bool(np.allclose(whole, np.asarray(want), rtol=1e-5, atol=1e-5))],
        "shards": [all(np.array_equal(np.asarray(s.data), whole[s.index])
                       for s in got.addressable_shards)],
        "specs": [str(got.sharding.spec)],
        "indices": sorted(str(s.index) for s in got.addressable_shards),
    }


for shardy in (True, False):
    kind = "shardy" if shardy else "gspmd"
    exported(f"export_rows_{kind}", lambda x: jnp.tanh(x) * 2, [x], [P("x", None)],
             P("x", None), line, shardy)
    exported(f"export_matmul_{kind}", lambda x, y: x @ y, [x, y], [P("a", None), P()],
             P(None, "b"), square, shardy)
# Arguments over two meshes: the exported module declares both (private once inlined).
exported("export_two_meshes", lambda x, y: x @ y, [x, y], [P("x", None), P("a", None)],
         P("x", None), line, True, meshes=[line, square])

# pmap results fed to jit, stacked and differentiated.
y4 = jax.pmap(lambda v: v * 2)(jnp.arange(8.0).reshape(4, 2))
report["pmap_then_jit"] = np.asarray(y4 + 1).tolist()
report["stack"] = np.asarray(jnp.stack([y4, y4 + 1])).tolist()
report["grad_of_pmap"] = np.asarray(jax.grad(
    lambda v: jnp.sum(jax.pmap(lambda u: u ** 2)(v)))(jnp.arange(8.0).reshape(4, 2))).tolist()
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def report():
    result = run_python_ok(CASES, env=ENV)
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "name",
    [
        "row_sum",
        "matmul_2d_mesh",
        "partly_replicated",
        "reversed_devices",
        "ints_and_bools",
        "replicated_input",
        "elementwise_keeps_sharding",
        "shard_alike",
        "shard_map_inside_jit",
        "shard_map_to_replicated",
        "export_rows_shardy",
        "export_rows_gspmd",
        "export_matmul_shardy",
        "export_matmul_gspmd",
        "export_two_meshes",
    ],
)
def test_sharded_jit_matches_cpu(report, name):
    entry = report[name]
    assert all(entry["values"]), entry
    assert all(entry["shards"]), entry


def test_results_have_the_requested_shardings(report):
    # Unrequested: elementwise results follow their argument, others are replicated.
    assert report["elementwise_keeps_sharding"]["specs"] == ["P('x',)"]
    assert report["row_sum"]["specs"] == ["P()"]
    assert report["matmul_2d_mesh"]["specs"] == ["P('b', None)"]
    assert report["partly_replicated"]["specs"] == ["P('b', 'a')"]
    assert report["ints_and_bools"]["specs"] == ["P(None, ('a', 'b'))"] * 2


def test_exported_functions_keep_their_result_shardings(report):
    rows = [f"(slice({r}, {r + 2}, None), slice(None, None, None))" for r in (0, 2, 4, 6)]
    assert report["export_two_meshes"]["indices"] == sorted(rows)
    for kind in ("shardy", "gspmd"):
        assert report[f"export_rows_{kind}"]["indices"] == sorted(rows)
        # Columns split over "b": two column blocks, each on two devices.
        cols = report[f"export_matmul_{kind}"]["indices"]
        assert sorted(set(cols)) == [
            "(slice(None, None, None), slice(0, 2, None))",
            "(slice(None, None, None), slice(2, 4, None))",
        ] and len(cols) == 4


def test_pmap_results_feed_jit(report):
    doubled = [[2.0 * (2 * r + c) for c in range(2)] for r in range(4)]
    assert report["pmap_then_jit"] == [[v + 1 for v in row] for row in doubled]
    assert report["stack"] == [doubled, [[v + 1 for v in row] for row in doubled]]
    assert report["grad_of_pmap"] == [[2.0 * (2 * r + c) for c in range(2)] for r in range(4)]


INSPECT = r"""
import jax, jax.numpy as jnp, numpy as np
from jax import shard_map
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

devs = jax.devices()
assert len(devs) == 4, devs
line = Mesh(np.array(devs), ("x",))
square = Mesh(np.array(devs).reshape(2, 2), ("a", "b"))
x = np.arange(32, dtype=np.float32).reshape(8, 4)
seen = []


def inspect(name):
    def callback(sharding):
        seen.append((name, str(sharding.spec), len(sharding.device_set),
                     sharding.shard_shape((8, 4)) if name != "manual" else None))
    return lambda v: jax.debug.inspect_array_sharding(v, callback=callback)


def run(name, f, mesh, spec):
    f(jax.device_put(x, NamedSharding(mesh, spec)))


def argument(v):
    inspect("argument")(v)
    return v * 2

run("argument", jax.jit(argument), line, P("x"))
run("two_axes", jax.jit(lambda v: (inspect("two_axes")(v), v + 1)[1]), square, P("a", "b"))
run("computed", jax.jit(lambda v: (inspect("computed")(jnp.sin(v) * 3), v)[1]), line, P("x"))
run("replicated", jax.jit(lambda v: (inspect("replicated")(v), v)[1]), line, P())
run("columns", jax.jit(lambda v: (inspect("columns")(v.T), v)[1]), square, P("a", None))


def per_device(v):
    inspect("manual")(v)
    return v * 2

run("manual", jax.jit(shard_map(per_device, mesh=line, in_specs=P("x"), out_specs=P("x"))),
    line, P("x"))


def failing(sharding):
    raise ValueError("the callback refused")

try:
    jax.jit(lambda v: (jax.debug.inspect_array_sharding(v, callback=failing), v)[1])(
        jax.device_put(x, NamedSharding(line, P("x"))))
    seen.append(("error", "none"))
except Exception as err:
    seen.append(("error", "the callback refused" in str(err)))

for entry in seen:
    print("SEEN", entry)
"""


def test_inspect_array_sharding_reports_what_cpu_reports():
    # In a partitioned program JAX hands the callback to the compiler (a handle in the
    # `InspectSharding` call's backend config), which calls it with the value's sharding.
    # The same calls on JAX's cpu backend over four host devices are the reference.
    got = run_python_ok(INSPECT, env=ENV | {"JAX_PLATFORMS": "oxla"})
    want = run_python_ok(
        INSPECT,
        env={"JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_force_host_platform_device_count=4"},
    )
    seen = [l for l in got.stdout.splitlines() if l.startswith("SEEN")]
    expected = [l for l in want.stdout.splitlines() if l.startswith("SEEN")]
    assert len(expected) == 7, want.stdout
    assert seen == expected


def test_shard_map_of_a_replicated_operand_inside_a_larger_program():
    # Each device sees the whole (replicated) operand and returns one element; the results
    # form a 2x2 array over the mesh. Alone, the shard_map runs per device; inside a program
    # with other ops it runs on whole values: both must put the shards together.
    result = run_python_ok(
        """
        import jax, jax.numpy as jnp, numpy as np
        from jax import shard_map
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        mesh = Mesh(np.array(jax.devices("oxla")).reshape(2, 2), ("x", "y"))
        per_device = shard_map(
            lambda b: (b.sum() + 10 * jax.lax.axis_index("x") + jax.lax.axis_index("y"))
            .reshape(1, 1),
            mesh=mesh, in_specs=P(), out_specs=P("x", "y"),
        )
        x = np.arange(16, dtype=np.float32).reshape(4, 4)
        x = jax.device_put(x, NamedSharding(mesh, P()))
        alone = np.asarray(jax.jit(per_device)(x))
        inside = np.asarray(jax.jit(lambda v: per_device(v * 1.0) + jnp.zeros((2, 2)))(x))
        print("alone", alone.ravel().tolist())
        print("inside", inside.ravel().tolist())
        """,
        env=ENV,
    )
    want = [120.0, 121.0, 130.0, 131.0]
    assert f"alone {want}" in result.stdout, result.stdout
    assert f"inside {want}" in result.stdout, result.stdout


def test_unreduced_values_sum_their_shards():
    # A value with unreduced axes (`P(..., unreduced={"y"})`, partial sums left for a later
    # reshard to add up) is the sum of its shards along those axes. oxla computes it whole
    # and hands it out whole to the first device along them, zeros to the others; an
    # unreduced argument is summed back. Each result is compared with numpy.
    result = run_python_ok(
        """
        import json
        import jax, jax.numpy as jnp, numpy as np
        from jax import shard_map
        from jax.sharding import AxisType, NamedSharding, PartitionSpec as P, reshard
        mesh = jax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2,
                             devices=jax.devices("oxla"))
        rng = np.random.default_rng(1)
        a = rng.standard_normal((8, 6), dtype=np.float32)
        b = rng.standard_normal((6, 4), dtype=np.float32)
        k = rng.integers(-50, 50, (4, 8), dtype=np.int32)
        report = {}

        def summed(arr):
            # The value a (rows over "x", unreduced over "y") array stands for: each row
            # block's shards along "y" added up (JAX gives unreduced shards no index).
            whole = np.zeros(arr.shape, arr.dtype)
            rows = arr.shape[0] // 2
            for s in arr.addressable_shards:
                i = int(np.argwhere(mesh.devices == s.device)[0][0])
                whole[i * rows:(i + 1) * rows] += np.asarray(s.data)
            return whole

        with jax.set_mesh(mesh):
            x = jax.device_put(a, P("x", "y"))
            y = jax.device_put(b, P("y", None))
            part = jax.jit(lambda x, y: jnp.einsum(
                "ij,jk->ik", x, y, out_sharding=P("x", unreduced={"y"})))(x, y)
            report["spec"] = str(part.sharding.spec)
            report["shard_shape"] = list(part.addressable_shards[0].data.shape)
            report["sum_of_shards"] = bool(np.allclose(summed(part), a @ b, atol=1e-5))
            # An unreduced argument: doubled, then reduced by a reshard.
            out = jax.jit(lambda v: reshard(v + v, P("x", None)))(part)
            report["reduced_again"] = bool(np.allclose(np.asarray(out), 2 * (a @ b), atol=1e-5))
            report["reduced_spec"] = str(out.sharding.spec)
            # Integers, summed over every mesh axis: exact.
            ki = jax.device_put(k, P(None, ("x", "y")))
            total = jax.jit(lambda v: jax.lax.reduce_sum(
                v * 3, axes=(1,), out_sharding=P(None, unreduced={"x", "y"})))(ki)
            back = jax.jit(lambda v: reshard(v, P()))(total)
            report["int_total"] = np.asarray(back).tolist() == (k * 3).sum(1).tolist()
            # A shard_map whose per-device results are partial sums, inside a larger program.
            mm = shard_map(lambda p, q: p @ q, in_specs=(P("x", "y"), P("y", None)),
                           out_specs=P("x", None, unreduced={"y"}))
            inner = jax.jit(lambda p, q: reshard(mm(p * 2.0, q) + mm(p, q), P("x", None)))(x, y)
            report["shard_map"] = bool(np.allclose(np.asarray(inner), 3 * (a @ b), atol=1e-5))
        print(json.dumps(report))
        """,
        env=ENV,
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {
        "spec": "P('x', None, unreduced={'y'})",
        "shard_shape": [4, 4],
        "sum_of_shards": True,
        "reduced_again": True,
        "reduced_spec": "P('x', None)",
        "int_total": True,
        "shard_map": True,
    }, report


def test_shard_map_in_a_called_function_does_not_wait_on_busy_workers():
    # The gradient of a shard_map puts the region in a called function among ops on whole
    # values: every device runs the program and the region's devices exchange shards. With
    # more devices than worker threads, executions that waited for a worker never met the
    # others (each exchange timed out after two minutes, and later calls queued behind it).
    result = run_python_ok(
        """
        import jax, jax.numpy as jnp, numpy as np
        from functools import partial
        from jax import shard_map
        from jax.sharding import Mesh, PartitionSpec as P
        mesh = Mesh(np.array(jax.devices("oxla")), ("x",))
        f = jax.jit(partial(shard_map, mesh=mesh, in_specs=P("x"), out_specs=P())(
            lambda a: jax.lax.all_gather(a, "x", tiled=True, to="invarying")))
        grad = jax.jit(jax.grad(lambda v: f(v).sum()))(jnp.arange(8.0))
        print("grad", np.asarray(grad).tolist())
        """,
        env={**ENV, "OXLA_FLAGS": "--num_threads=2"},
        timeout=100,
    )
    assert "grad " + str([1.0] * 8) in result.stdout, result.stdout


def test_shard_map_shardings_reach_jax_without_annotations_on_the_signature():
    # Results of a shard_map region carry no sharding on the program's signature, and the
    # programs JAX builds for an eager gradient carry none on their arguments either: the
    # region's in and out shardings give them, as XLA's propagation does. Before, JAX got
    # no shardings for such programs and failed with `UnspecifiedValue` errors.
    result = run_python_ok(
        """
        import json
        import jax, jax.numpy as jnp, numpy as np
        from jax import shard_map
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        mesh = Mesh(np.array(jax.devices("oxla")).reshape(2, 2), ("a", "b"))
        x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
        arr = jax.device_put(x, NamedSharding(mesh, P("b", "a")))
        gather = lambda v: jax.lax.all_gather(v, "b", axis=0, tiled=True, to="invarying")
        spread = lambda v: jax.lax.all_gather(v, "a", axis=1, tiled=True, to="invarying")
        f = jax.jit(shard_map(lambda v: (gather(v), spread(v)), mesh=mesh,
                              in_specs=P("b", "a"), out_specs=(P(None, "a"), P("b"))))
        c, d = f(arr)
        loss = lambda v: (f(v)[0] * f(v)[1]).sum()
        report = {
            "specs": [str(c.sharding.spec), str(d.sharding.spec)],
            "values": [np.asarray(c).tolist() == x.tolist(), np.asarray(d).tolist() == x.tolist()],
        }
        for name, g in (("eager", jax.grad(loss)(arr)), ("jit", jax.jit(jax.grad(loss))(arr))):
            report[name] = [str(g.sharding.spec), np.allclose(np.asarray(g), 2 * x)]
        print(json.dumps(report))
        """,
        env=ENV,
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {
        "specs": ["P(None, 'a')", "P('b',)"],
        "values": [True, True],
        "eager": ["P('b', 'a')", True],
        "jit": ["P('b', 'a')", True],
    }, report


def test_nested_shard_maps_put_shards_together_within_the_outer_block():
    # An outer shard_map over "i" (other axes left to the compiler) around an inner one over
    # "j": the inner region's shards make a value only among the devices of one "i" block.
    # Before, every device took the first block's shards and half the rows came out wrong.
    result = run_python_ok(
        """
        import jax, jax.numpy as jnp, numpy as np
        from jax import shard_map
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        mesh = Mesh(np.array(jax.devices("oxla")).reshape(2, 2), ("i", "j"))
        x = np.arange(32.0, dtype=np.float32).reshape(4, 8)
        v = jax.device_put(x, NamedSharding(mesh, P("i", "j")))
        inner = lambda b: shard_map(lambda c: c * c + jax.lax.axis_index("j"),
                                    in_specs=P(None, "j"), out_specs=P(None, "j"))(b)
        f = jax.jit(shard_map(inner, mesh=mesh, in_specs=P("i", None), out_specs=P("i", None),
                              check_vma=False, axis_names=frozenset({"i"})))
        with jax.set_mesh(mesh):
            got = np.asarray(f(v))
        want = x * x + (np.arange(8) >= 4)
        print("match", bool(np.array_equal(got, want)))
        """,
        env=ENV,
    )
    assert "match True" in result.stdout, result.stdout


def test_a_value_made_unreduced_before_a_shard_map_is_held_by_one_device():
    # The gradient of a shard_map whose output is `reduced` over "y" makes the cotangent
    # (1.0, replicated) unreduced over "y" and hands it to a region that sums it over "y".
    # Made unreduced, one device holds the value and the others zeros; run per device, every
    # device held it and the sum came out twice the value.
    result = run_python_ok(
        """
        import jax, jax.numpy as jnp, numpy as np
        from jax.sharding import AxisType, PartitionSpec as P
        mesh = jax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2,
                             devices=jax.devices("oxla"))
        with jax.set_mesh(mesh):
            arr = jax.device_put(np.arange(32.0).reshape(8, 4), P("x", "y"))

            @jax.shard_map(out_specs=P(reduced={"y"}))
            def f(v):
                whole = jax.lax.all_gather(v, "y", axis=1, tiled=True, to="reduced")
                return jax.lax.psum(jnp.sum(whole), "x")

            grad = jax.jit(jax.grad(f))(arr)
            print("grad", sorted(set(np.asarray(grad).ravel().tolist())), grad.sharding.spec)
        """,
        env=ENV,
    )
    assert "grad [1.0] P('x', 'y')" in result.stdout, result.stdout


def test_reduced_and_unreduced_gradients_add_up_once():
    # Gradients through `reduced`/`unreduced` shard_map boundaries: the cotangent of a
    # `reduced` input comes back unreduced (one summand per device), and a region run per
    # device keeps its own summand even when the shard has the whole value's shape. Before,
    # such a region's results were summed over the devices on every device, and a reshard
    # added them once more: twice the gradient. Expected values are the analytic gradients.
    result = run_python_ok(
        """
        import jax, jax.numpy as jnp, numpy as np
        from jax.sharding import AxisType, PartitionSpec as P
        mesh = jax.make_mesh((2,), ("x",), axis_types=(AxisType.Explicit,),
                             devices=jax.devices("oxla")[:2])
        with jax.set_mesh(mesh):
            arr = jax.device_put(np.arange(8.0), P(reduced={"x"}))

            @jax.shard_map(out_specs=P("x"))
            def varying(v):
                return jax.lax.pcast(v, "x", to="varying")

            # sum(concat(v, v)): every element's gradient is 2.
            for name, grad in [
                ("eager", jax.grad(lambda v: varying(v).sum())),
                ("jit", jax.jit(jax.grad(lambda v: varying(v).sum()))),
                ("nested", jax.jit(jax.grad(lambda v: jax.jit(varying)(v).sum()))),
            ]:
                g = grad(arr)
                whole = np.asarray(jax.reshard(g, P()))
                print(name, g.sharding.spec, sorted(set(whole.tolist())))

            x = np.arange(8.0).reshape(2, 4)
            y = np.arange(24.0).reshape(4, 6)

            @jax.shard_map(in_specs=P(), out_specs=P(reduced={"x"}))
            def reduced(v):
                return jax.lax.pcast(v, "x", to="reduced")

            @jax.jit
            def f(a, b):
                return jnp.einsum("ab,bc->ac", reduced(a), b).sum()

            a = jax.device_put(x, P(None, None))
            b = jax.device_put(y, P(None, "x"))
            print("value", float(f(a, b)) == float((x @ y).sum()))
            g = jax.jit(jax.grad(f))(a, b)
            print("reduced", g.sharding.spec, np.array_equal(np.asarray(g),
                  np.broadcast_to(y.sum(axis=1), x.shape)))
        """,
        env=ENV,
    )
    out = result.stdout
    for name in ("eager", "jit", "nested"):
        assert f"{name} P(None, unreduced={{'x'}}) [2.0]" in out, out
    assert "value True" in out, out
    assert "reduced P(None, None) True" in out, out


def test_results_without_shardings_are_sharded_as_on_cpu():
    # Results jit leaves to the compiler get the sharding XLA's propagation gives them from
    # the arguments' and constraints' shardings: compared with `cpu` over four devices of
    # its own, spec by spec, values included.
    result = run_python_ok(
        """
        import jax, jax.numpy as jnp, numpy as np
        from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
        from jax.lax import with_sharding_constraint as wsc
        from jax.experimental.shard_alike import shard_alike

        def run(platform):
            mesh = jax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2,
                                 devices=jax.devices(platform))
            put = lambda v, spec: jax.device_put(v, NamedSharding(mesh, spec))
            a = put(np.arange(32.0).reshape(8, 4), P("x", "y"))
            b = put(np.arange(32.0).reshape(4, 8) / 7, P(None, "x"))
            cases = {
                "scaled": lambda a, b: jnp.sin(a * 2),
                "open": lambda a, b: jnp.cos(wsc(a * 2, NamedSharding(mesh, P(P.UNCONSTRAINED, "y")))),
                "matmul": lambda a, b: a @ b,
                "sum0": lambda a, b: a.sum(axis=0),
                "transposed": lambda a, b: a.T + 1,
                "broadcast": lambda a, b: jnp.broadcast_to(a.sum(axis=0), (3, 4)),
                "row": lambda a, b: a[3] * 2,
                "columns": lambda a, b: a[:, 1:3] + 1,
                "strided": lambda a, b: a[::2, :] - 1,
                "dynamic": lambda a, b: jax.lax.dynamic_slice_in_dim(a, b[0, 0].astype(int), 2, 1),
                "squeezed": lambda a, b: a.reshape(8, 1, 4)[:, 0, :] * 3,
                "alike": lambda a, b: shard_alike(a, jnp.arange(32.0).reshape(8, 4))[1],
            }
            out = {}
            for name, f in cases.items():
                r = jax.jit(f)(a, b)
                out[name] = (str(r.sharding.spec), np.asarray(r))
            return out

        oxla, cpu = run("oxla"), run("cpu")
        for name in cpu:
            same = oxla[name][0] == cpu[name][0]
            close = np.allclose(oxla[name][1], cpu[name][1], rtol=1e-5)
            print(name, oxla[name][0], cpu[name][0], same and close)
        """,
        env={**ENV, "XLA_FLAGS": "--xla_force_host_platform_device_count=4"},
    )
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 12, result.stdout
    for line in lines:
        assert line.endswith("True"), result.stdout


def test_ordered_callback_inside_shard_map_runs_once_per_device():
    # An ordered `io_callback` threads a runtime token through the partitioned program's
    # signature; every device's shard_map body calls it once with its own shard.
    result = run_python_ok(
        """
        import jax, jax.numpy as jnp, numpy as np
        from jax import shard_map
        from jax.experimental import io_callback
        from jax.sharding import Mesh, PartitionSpec as P

        def run(platform):
            mesh = Mesh(np.array(jax.devices(platform)), ("i",))
            seen = []

            def body(x, y):
                io_callback(lambda v: seen.append(np.asarray(v).copy()), None, x, ordered=True)
                return x + y[..., jnp.newaxis]

            f = jax.jit(shard_map(body, mesh=mesh, in_specs=(P(None, "i"), P(None)),
                                  out_specs=P(None, "i")))
            x = np.arange(32.0, dtype=np.float32).reshape(2, 16)
            with jax.default_device(jax.devices(platform)[0]):
                out = f(x, np.array([1.0, 2.0], np.float32))
            jax.effects_barrier()
            shards = sorted(s.tolist() for s in seen)
            return np.asarray(out), shards

        (out, shards), (want, want_shards) = run("oxla"), run("cpu")
        print("values", np.array_equal(out, want))
        print("calls", len(shards), len(want_shards), shards == want_shards)
        """,
        env={**ENV, "XLA_FLAGS": "--xla_force_host_platform_device_count=4"},
    )
    lines = result.stdout.strip().splitlines()
    assert lines == ["values True", "calls 4 4 True"], result.stdout


def test_callbacks_outside_shard_map_run_once_in_a_program_holding_one():
    # A program mixing a shard_map region with other ops runs whole on every device; its
    # callbacks outside the region run once (XLA places them on the first device), and the
    # value an io_callback returns reaches every device.
    result = run_python_ok(
        """
        import jax, jax.numpy as jnp, numpy as np
        from jax import shard_map
        from jax.experimental import io_callback
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

        def run(platform):
            mesh = Mesh(np.array(jax.devices(platform)), ("i",))
            seen = []

            def record(v):
                seen.append(float(v))
                return np.float32(v * 2)

            triple = shard_map(lambda x: x * 3, mesh=mesh, in_specs=P("i"), out_specs=P("i"))

            @jax.jit
            def ordered(x):
                s = io_callback(record, jax.ShapeDtypeStruct((), jnp.float32), x.sum(),
                                ordered=True)
                return triple(x) + s, s

            @jax.jit
            def unordered(x):
                jax.debug.callback(lambda v: seen.append(-float(v)), x.max())
                return triple(x)

            x = jax.device_put(np.arange(8.0, dtype=np.float32), NamedSharding(mesh, P("i")))
            out, s = ordered(x)
            out2 = unordered(x)
            jax.effects_barrier()
            return np.asarray(out), float(s), np.asarray(out2), sorted(seen)

        got, want = run("oxla"), run("cpu")
        print("values", all(np.array_equal(a, b) for a, b in zip(got, want)))
        print("calls", got[3], want[3])
        """,
        env={**ENV, "XLA_FLAGS": "--xla_force_host_platform_device_count=4"},
    )
    lines = result.stdout.strip().splitlines()
    assert lines == ["values True", "calls [-7.0, 28.0] [-7.0, 28.0]"], result.stdout


def test_callbacks_carry_the_sharding_jax_gives_them():
    # Outside shard_map, JAX gives a host callback a maximal sharding (the device that runs
    # it); the oxla lowering carries the same annotation as cpu's, and the program runs.
    result = run_python_ok(
        """
        import re
        import jax, jax.numpy as jnp, numpy as np
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P, SingleDeviceSharding

        def run(platform):
            devices = jax.devices(platform)
            mesh = Mesh(np.array(devices), ("i",))

            def f(x):
                y = jax.pure_callback(lambda v: np.asarray(v) * 2,
                                      jax.ShapeDtypeStruct(x.shape, x.dtype), x,
                                      sharding=SingleDeviceSharding(devices[3]))
                return y + 1

            x = jax.device_put(np.arange(8.0, dtype=np.float32), NamedSharding(mesh, P("i")))
            text = jax.jit(f).lower(x).as_text()
            notes = re.findall(r"sdy.sharding = #sdy.sharding_per_value<\\[[^\\]]*\\]>", text)
            return notes, np.asarray(jax.jit(f)(x))

        (notes, out), (want_notes, want) = run("oxla"), run("cpu")
        print("notes", notes == want_notes, len(notes))
        print("values", np.array_equal(out, want))
        """,
        env={**ENV, "XLA_FLAGS": "--xla_force_host_platform_device_count=4"},
    )
    lines = result.stdout.strip().splitlines()
    assert lines == ["notes True 1", "values True"], result.stdout
