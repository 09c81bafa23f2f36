"""pytest plugin for scripts/jax_test_suite.sh: hands ``$OXLA_SUITE_DUT`` to JAX's test
utilities as ``--jax_test_dut``.

JAX's tests read that flag only from the command line (``parse_flags_with_absl`` takes
the ``--jax*`` arguments of ``sys.argv``), which pytest itself would reject; the plugin
appends it to ``sys.argv`` before the test modules are imported. With it set to ``cpu``,
tests JAX runs only on devices tagged ``cpu`` run on whatever backend ``JAX_PLATFORMS``
selects.
"""

import os
import sys


def pytest_configure(config):
    dut = os.environ.get("OXLA_SUITE_DUT")
    if dut and not any(a.startswith("--jax_test_dut") for a in sys.argv):
        sys.argv.append(f"--jax_test_dut={dut}")
