#!/usr/bin/env bash
# Runs JAX's own test files on JAX's cpu backend and on oxla and prints per-file
# pass / fail / error / skip counts side by side. Opt-in and slow: not part of
# scripts/test.sh.
#
# Usage: scripts/jax_test_suite.sh JAX_CHECKOUT [TEST_FILE...]
#   JAX_CHECKOUT  a checkout of jax-ml/jax at the tag matching the installed jax
#                 (jax-v0.10.2); its tests/ directory is run in place
#   TEST_FILE     file names under tests/ (default: the core files below)
# Knobs:
#   OXLA_SUITE_OUT       where logs and JUnit XML go (default target/jax-suite)
#   OXLA_SUITE_BACKENDS  which backends to run (default "cpu oxla"); "oxla-as-cpu" runs
#                        on oxla with JAX told the device under test is cpu
#                        (--jax_test_dut=cpu, through jax_suite_dut_plugin.py), so tests
#                        JAX runs only on cpu run on oxla too
#   OXLA_SUITE_TIMEOUT   seconds per file and backend (default 3600)
#   OXLA_SUITE_WORKERS   pytest-xdist workers (default 2)
#   OXLA_SUITE_CASES     JAX_NUM_GENERATED_CASES (default 10, JAX's own default)
#   OXLA_SUITE_TEST_TIMEOUT  seconds per test (default 300; pytest-timeout)
# Workers that crash are restarted (--max-worker-restart) and their test counted as
# an error, so one crash does not end a file's run. A test past its time limit ends its
# worker the same way (pytest-timeout's thread method, which also stops native code).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ $# -ge 1 ] || die "usage: $0 JAX_CHECKOUT [TEST_FILE...]"
checkout="$(cd "$1" && pwd)"
shift
[ -d "$checkout/tests" ] || die "$checkout has no tests/ directory"
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
    files=(lax_test.py lax_numpy_test.py lax_control_flow_test.py lax_autodiff_test.py
           nn_test.py random_test.py linalg_test.py fft_test.py api_test.py pmap_test.py)
fi
out="${OXLA_SUITE_OUT:-$OXLA_ROOT/target/jax-suite}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"  # the runs below start in the checkout
python="${PYTHON:-python3}"
"$python" -m pip install -q absl-py hypothesis flatbuffers pytest pytest-xdist pytest-timeout >/dev/null

for file in "${files[@]}"; do
    for backend in ${OXLA_SUITE_BACKENDS:-cpu oxla}; do
        name="${file%.py}-$backend"
        log "$file on $backend"
        platforms="$backend"
        dut=""
        [ "$backend" = oxla ] && platforms="oxla,cpu"
        [ "$backend" = oxla-as-cpu ] && platforms="oxla,cpu" && dut=cpu
        # Non-zero exits are expected (failing tests); the XML holds the counts.
        (cd "$checkout" && JAX_PLATFORMS="$platforms" OXLA_SUITE_DUT="$dut" \
            PYTHONPATH="$OXLA_ROOT/scripts${PYTHONPATH:+:$PYTHONPATH}" \
            JAX_NUM_GENERATED_CASES="${OXLA_SUITE_CASES:-10}" \
            XLA_FLAGS="--xla_force_host_platform_device_count=8" OXLA_NUM_DEVICES=8 \
            timeout "${OXLA_SUITE_TIMEOUT:-3600}" "$python" -m pytest -q -p no:cacheprovider -p jax_suite_dut_plugin \
            -n "${OXLA_SUITE_WORKERS:-2}" --max-worker-restart=1000 \
            --timeout="${OXLA_SUITE_TEST_TIMEOUT:-300}" --timeout-method=thread \
            --junitxml="$out/$name.xml" "tests/$file" >"$out/$name.log" 2>&1) || true
    done
done

"$python" - "$out" "${OXLA_SUITE_BACKENDS:-cpu oxla}" "${files[@]}" <<'PY'
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

out, backends, files = Path(sys.argv[1]), sys.argv[2].split(), sys.argv[3:]

def counts(path):
    if not path.exists():
        return None
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    total = {k: 0 for k in ("tests", "failures", "errors", "skipped")}
    for s in suites:
        for k in total:
            total[k] += int(s.get(k, 0))
    total["passed"] = total["tests"] - total["failures"] - total["errors"] - total["skipped"]
    return total

def cell(c):
    if c is None:
        return "no result (timeout?)"
    return f"{c['passed']} / {c['failures']} / {c['errors']} / {c['skipped']}"

print(f"{'file':<28}" + "".join(f"{b + ': pass / fail / error / skip':>40}" for b in backends))
for f in files:
    stem = f[:-3] if f.endswith(".py") else f
    print(f"{f:<28}" + "".join(f"{cell(counts(out / f'{stem}-{b}.xml')):>40}" for b in backends))
PY
