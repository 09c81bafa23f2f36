"""Backend registration and the devices the plugin exposes."""

import json

from _support import require_jax, run_python_ok

jax = require_jax()


def test_devices_are_oxla():
    devices = jax.devices()
    assert devices, "jax.devices() is empty"
    assert all(device.platform == "oxla" for device in devices), devices
    assert jax.default_backend() == "oxla"
    assert jax.devices("oxla") == devices


def test_device_ids_are_distinct():
    ids = [device.id for device in jax.devices("oxla")]
    assert len(ids) == len(set(ids))


def test_cpu_backend_stays_available():
    assert jax.devices("cpu")[0].platform == "cpu"


def test_oxla_initialize_is_idempotent():
    import oxla

    oxla.initialize()
    assert oxla.devices() == jax.devices("oxla")


def test_num_devices_env():
    result = run_python_ok(
        """
        import json
        import jax
        import numpy as np
        devices = jax.devices()
        # Every device holds its own buffer.
        arrays = [jax.device_put(np.full((3,), i, np.float32), d) for i, d in enumerate(devices)]
        print(json.dumps({
            "platforms": [d.platform for d in devices],
            "ids": [d.id for d in devices],
            "local": jax.local_device_count(),
            "placed": [[d.id for d in a.devices()] for a in arrays],
            "values": [np.asarray(a).tolist() for a in arrays],
        }))
        """,
        env={"JAX_PLATFORMS": "oxla", "OXLA_NUM_DEVICES": "4"},
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["platforms"] == ["oxla"] * 4
    assert len(set(report["ids"])) == 4
    assert report["local"] == 4
    assert report["placed"] == [[device_id] for device_id in report["ids"]]
    assert report["values"] == [[float(i)] * 3 for i in range(4)]


def test_jit_runs_on_a_chosen_device():
    result = run_python_ok(
        """
        import json
        import jax
        import numpy as np
        device = jax.devices()[2]
        x = jax.device_put(np.arange(4, dtype=np.float32), device)
        y = jax.jit(lambda v: v * 3)(x)
        print(json.dumps({"device": [d.id for d in y.devices()], "want": device.id,
                          "value": np.asarray(y).tolist()}))
        """,
        env={"JAX_PLATFORMS": "oxla", "OXLA_NUM_DEVICES": "3"},
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["device"] == [report["want"]]
    assert report["value"] == [0.0, 3.0, 6.0, 9.0]
