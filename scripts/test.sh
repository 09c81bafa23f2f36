#!/usr/bin/env bash
# Runs every test: installs what is missing (as scripts/setup.sh does), then
#   cargo fmt --check
#   cargo clippy --workspace --all-targets -- -D warnings
#   cargo test --workspace
#   scripts/fuzz.sh (each fuzz target for OXLA_FUZZ_SECONDS, default 20; 0 skips it)
#   pytest python/tests
# Every step runs even when an earlier one fails; the script ends with a
# summary and exits non-zero if any step failed. Logs go to target/test-logs/.
# Extra arguments are passed to pytest.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
set +e

cd "$OXLA_ROOT"
LOG_DIR="$OXLA_ROOT/target/test-logs"
mkdir -p "$LOG_DIR"

STEP_NAMES=()
STEP_RESULTS=()
STEP_NOTES=()

# run_step NAME SUMMARY_REGEX COMMAND...: runs COMMAND, keeps its output in
# $LOG_DIR/NAME.log and remembers the lines matching SUMMARY_REGEX.
run_step() {
    local name="$1" summary_regex="$2"
    shift 2
    local log_file="$LOG_DIR/$name.log" started=$SECONDS status
    log "$name: $*"
    "$@" 2>&1 | tee "$log_file"
    status=${PIPESTATUS[0]}
    STEP_NAMES+=("$name")
    STEP_RESULTS+=("$( [ "$status" -eq 0 ] && echo ok || echo "FAILED (exit $status)" ) in $((SECONDS - started))s")
    STEP_NOTES+=("$(grep -E "$summary_regex" "$log_file" 2>/dev/null | tail -n 1)")
    return "$status"
}

setup_environment() {
    (
        set -e
        ensure_build_tools
        ensure_rust_components
        ensure_python
        ensure_python_deps
        install_oxla
    )
}

run_step setup '^==> oxla .* installed' setup_environment
# The later steps use the interpreter that setup resolved (a subshell, so that
# a failure here cannot end the script).
PYTHON="$(ensure_python >/dev/null 2>&1 && echo "$PYTHON")" || PYTHON="${PYTHON:-python3}"
run_step fmt 'Diff in|^error' cargo fmt --all --check
run_step clippy '^(error|warning): .*(generated|could not compile)|Finished' \
    cargo clippy --workspace --all-targets -- -D warnings
run_step cargo-test '^test result:' cargo test --workspace

cargo_totals="$(
    grep -E '^test result:' "$LOG_DIR/cargo-test.log" 2>/dev/null | awk '
        { for (i = 1; i <= NF; i++) {
              if ($(i) ~ /^passed;?$/) passed += $(i - 1);
              if ($(i) ~ /^failed;?$/) failed += $(i - 1);
              if ($(i) ~ /^ignored;?$/) ignored += $(i - 1) } }
        END { printf "%d passed, %d failed, %d ignored (all test binaries)", passed, failed, ignored }'
)"
STEP_NOTES[${#STEP_NOTES[@]} - 1]="$cargo_totals"

# Each reader's fuzz target for a short, bounded time (OXLA_FUZZ_SECONDS per target;
# 0 skips the step, e.g. for a quick local run).
fuzz_seconds="${OXLA_FUZZ_SECONDS:-20}"
if [ "$fuzz_seconds" != "0" ]; then
    run_step fuzz '^fuzz.sh: (no failures|failures)' bash scripts/fuzz.sh "$fuzz_seconds"
fi

pytest_args=(python/tests -ra)
if "$PYTHON" -c 'import xdist' >/dev/null 2>&1; then
    pytest_args+=(-n "${OXLA_PYTEST_WORKERS:-2}" --max-worker-restart=4)
fi
run_step pytest '^=+ .*(passed|failed|error|skipped|no tests ran).* =+$' \
    "$PYTHON" -m pytest "${pytest_args[@]}" "$@"

echo
echo "==================== summary ===================="
failed=0
for index in "${!STEP_NAMES[@]}"; do
    printf '%-11s %s\n' "${STEP_NAMES[$index]}" "${STEP_RESULTS[$index]}"
    [ -n "${STEP_NOTES[$index]}" ] && printf '            %s\n' "${STEP_NOTES[$index]}"
    case "${STEP_RESULTS[$index]}" in ok*) ;; *) failed=1 ;; esac
done
echo "logs: target/test-logs/"
exit "$failed"
