"""Programs exported for JAX's `cpu` backend run on oxla.

jaxlib ships the programs its own compatibility tests keep (serialized StableHLO for the
`cpu` platform, with LAPACK custom calls of the time) with their inputs and the outputs
`cpu` gave. Each runs here on oxla from its serialized bytes and is compared with those
outputs: exactly determined results in full (factors, pivots, solves), and for
decompositions whose vectors LAPACK leaves open (their phase, or a basis of a repeated
eigenvalue's space) the eigenvalues, singular values and the Schur form's magnitudes.
"""

import json

from _support import require_jax, run_python_ok

require_jax()

SCRIPT = r"""
import importlib, json, pkgutil
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
from jax._src import compiler
from jax._src.internal_test_util import export_back_compat_test_data as data_pkg
from jax._src.lib import xla_client as xc

dev = jax.devices("oxla")[0]
# Outputs compared in full, by routine; the others compare only these output positions.
VALUES_ONLY = {"geev": [0], "syev": [1], "gesdd": [1], "gees": [0]}
# ... compared in magnitude (the Schur form's off-diagonal signs follow Z's column signs).
MAGNITUDE = ("gees",)
report = {}
for info in pkgutil.iter_modules(data_pkg.__path__):
    if not info.name.startswith("cpu_"):
        continue
    module = importlib.import_module(f"{data_pkg.__name__}.{info.name}")
    for key, value in vars(module).items():
        if not key.startswith("data_") or not isinstance(value, dict):
            continue
        cases = [value] if "mlir_module_serialized" in value else [
            v for v in value.values() if isinstance(v, dict) and "mlir_module_serialized" in v]
        for case in cases:
            name = f"{info.name}:{','.join(case['custom_call_targets'])}"
            options = compiler.get_compile_options(num_replicas=1, num_partitions=1)
            exe = dev.client.compile_and_load(
                case["mlir_module_serialized"], xc.DeviceList((dev,)), options)
            outs = exe.execute([jax.device_put(np.asarray(a), dev) for a in case["inputs"]])
            keep = next((v for k, v in VALUES_ONLY.items() if k in info.name), None)
            pairs = [(np.asarray(o), np.asarray(w))
                     for i, (o, w) in enumerate(zip(outs, case["expected_outputs"]))
                     if keep is None or i in keep]
            if any(k in info.name for k in MAGNITUDE):
                pairs = [(np.abs(o), np.abs(w)) for o, w in pairs]
            tol = 1e-4 if any(w.dtype in (np.float32, np.complex64) for _, w in pairs) else 1e-10
            report[name] = bool(len(outs) == len(case["expected_outputs"]) and all(
                o.shape == w.shape and o.dtype == w.dtype
                and np.allclose(o, w, rtol=tol, atol=tol) for o, w in pairs))
print(json.dumps(report))
"""


def test_programs_exported_for_cpu_give_cpu_results():
    result = run_python_ok(SCRIPT, env={"JAX_PLATFORMS": "oxla,cpu"})
    report = json.loads(result.stdout.strip().splitlines()[-1])
    # Every LAPACK routine JAX's cpu rules call, in four element types each.
    routines = {name.split(":")[0] for name in report}
    assert len(routines) >= 10 and len(report) >= 40, sorted(report)
    assert all(report.values()), sorted(k for k, v in report.items() if not v)
