#!/usr/bin/env bash
# Fuzzes the program readers (fuzz/fuzz_targets/*) for a bounded time each; exits non-zero if
# any input makes a reader panic, hang (per-input timeout) or allocate past the memory limit.
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
#   SECONDS   time per target (default 20)
#   TARGET    fuzz targets to run (default: all of `cargo fuzz list`)
# Environment:
#   FUZZ_TIMEOUT     per-input time limit in seconds (default 10)
#   FUZZ_RSS_MB      memory limit in MB, also the largest single allocation (default 2048)
#   FUZZ_SANITIZER   cargo-fuzz sanitizer: address (default) or none
#
# Works with a stable toolchain: cargo-fuzz needs unstable rustc flags (-Zsanitizer), enabled
# here with RUSTC_BOOTSTRAP=1. The inputs it tries go to fuzz/target/corpus/<target> (not
# committed); fuzz/corpus/<target> (seeds) and fuzz/regressions/<target> (inputs that once
# failed) are read-only, and every regression input runs first, so a fixed bug stays fixed.
#
# Reproducing a failure: the run prints the input's path, fuzz/artifacts/<target>/crash-<sha1>
# (or timeout-*, oom-*, leak-*). Then, from the repository root:
#   cd fuzz
#   RUSTC_BOOTSTRAP=1 cargo fuzz run <target> artifacts/<target>/crash-<sha1>   # rerun it
#   RUSTC_BOOTSTRAP=1 cargo fuzz tmin <target> artifacts/<target>/crash-<sha1>  # minimize it
#   RUSTC_BOOTSTRAP=1 cargo fuzz fmt <target> artifacts/<target>/crash-<sha1>   # show it
# and save the minimized input as fuzz/regressions/<target>/<short-name> once it is fixed.
# RUST_BACKTRACE=1 before `cargo fuzz run` prints where a panic happened.
set -euo pipefail

CARGO_FUZZ_VERSION=0.13.2
seconds=${1:-20}
shift || true
timeout_s=${FUZZ_TIMEOUT:-10}
rss_mb=${FUZZ_RSS_MB:-2048}
sanitizer=${FUZZ_SANITIZER:-address}

case "$seconds" in
  '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, got '$seconds'" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/../fuzz"
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz.sh: installing cargo-fuzz $CARGO_FUZZ_VERSION"
  cargo install --locked "cargo-fuzz@$CARGO_FUZZ_VERSION"
fi

if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo fuzz list)
fi

# One build of every target first, so the time limits below are spent fuzzing.
cargo fuzz build --sanitizer "$sanitizer"

failed=()
for target in "${targets[@]}"; do
  work="target/corpus/$target"
  mkdir -p "$work" "artifacts/$target"
  dirs=("$work" "corpus/$target")
  [ -d "regressions/$target" ] && dirs+=("regressions/$target")
  log="artifacts/$target/fuzz.log"
  echo "fuzz.sh: $target for ${seconds}s (timeout ${timeout_s}s/input, ${rss_mb} MB)"
  if cargo fuzz run --sanitizer "$sanitizer" "$target" "${dirs[@]}" -- \
    -max_total_time="$seconds" -timeout="$timeout_s" -rss_limit_mb="$rss_mb" \
    -max_len=16384 -print_final_stats=1 2>&1 | tee "$log"; then
    :
  else
    failed+=("$target")
    echo "fuzz.sh: $target FAILED; the input that failed:" >&2
    grep -o 'Test unit written to .*' "$log" | sed 's/^Test unit written to /  /' >&2 ||
      echo "  (none written; see fuzz/$log)" >&2
    echo "  reproduce: cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run $target <that file>" >&2
  fi
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz.sh: failures in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: no failures in ${targets[*]}"
