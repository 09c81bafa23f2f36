# Shared helpers for the scripts in this directory; source it, do not run it.
#
# Knobs (all optional):
#   PYTHON        the interpreter to install into and test with (default python3)
#   OXLA_VENV     where to create a virtual environment when that interpreter is
#                 externally managed (PEP 668) and no venv is active
#                 (default: target/python-venv in the repository)

set -euo pipefail

OXLA_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_ROOT_USER_ACTION=ignore
export PIP_NO_INPUT=1

# Fresh CI checkouts gain nothing from incremental compilation, and full debug
# info makes the debug build slower to compile and link; line tables keep
# backtraces readable.
if [ "${CI:-}" = "true" ]; then
    export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
    export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}"
    export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
fi

# The Python packages the test suite and the example need.
OXLA_PY_TEST_DEPS=(
    "jax==0.10.2"
    "jaxlib==0.10.2"
    numpy
    ml_dtypes
    pytest
    pytest-xdist
    # jax.export's serialization (tests export programs and read them back)
    flatbuffers
)

# Debian packages needed to build the plugin (bindgen needs libclang; the XLA
# protos need protoc and the well-known .proto files of libprotobuf-dev).
OXLA_APT_DEPS=(libclang-dev protobuf-compiler libprotobuf-dev)

log() {
    printf '==> %s\n' "$*" >&2
}

die() {
    printf 'error: %s\n' "$*" >&2
    exit 1
}

# Runs a command as root: directly when already root, through sudo otherwise.
as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "need root (or sudo) to run: $*"
    fi
}

apt_package_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# Installs the given Debian packages unless they are installed already.
ensure_apt_packages() {
    local missing=() package
    if ! command -v dpkg-query >/dev/null 2>&1; then
        log "not a Debian-like system: make sure these are installed: $*"
        return 0
    fi
    for package in "$@"; do
        apt_package_installed "$package" || missing+=("$package")
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        return 0
    fi
    log "installing Debian packages: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

ensure_build_tools() {
    command -v cargo >/dev/null 2>&1 || die "cargo is not on PATH: install Rust (https://rustup.rs)"
    ensure_apt_packages "${OXLA_APT_DEPS[@]}"
}

# Makes sure rustfmt and clippy are present (test.sh needs them).
ensure_rust_components() {
    local component
    for component in rustfmt clippy; do
        if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
            command -v rustup >/dev/null 2>&1 || die "cargo ${component} is missing and rustup is not available to add it"
            log "adding the Rust component ${component}"
            rustup component add "$component"
        fi
    done
}

python_is_externally_managed() {
    "$1" - <<'PY'
import os, sys, sysconfig
in_venv = sys.prefix != sys.base_prefix
marker = os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")
sys.exit(0 if (not in_venv and os.path.exists(marker)) else 1)
PY
}

# Sets PYTHON to the interpreter everything is installed into. A system Python
# that refuses `pip install` (PEP 668) gets a virtual environment instead.
ensure_python() {
    PYTHON="${PYTHON:-python3}"
    command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found: install Python >= 3.10"
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
        || die "$PYTHON is $("$PYTHON" --version 2>&1); oxla needs Python >= 3.10"
    if python_is_externally_managed "$PYTHON"; then
        local venv="${OXLA_VENV:-$OXLA_ROOT/target/python-venv}"
        if [ ! -x "$venv/bin/python" ]; then
            log "$PYTHON is externally managed; creating a virtual environment in $venv"
            if ! "$PYTHON" -m venv "$venv" 2>/dev/null; then
                local version
                version="$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
                ensure_apt_packages "python${version}-venv"
                "$PYTHON" -m venv "$venv"
            fi
        fi
        PYTHON="$venv/bin/python"
        log "using $PYTHON (activate it with: source $venv/bin/activate)"
    fi
    if ! "$PYTHON" -m pip --version >/dev/null 2>&1; then
        log "pip is missing for $PYTHON; bootstrapping it"
        "$PYTHON" -m ensurepip --upgrade >/dev/null 2>&1 || ensure_apt_packages python3-pip
    fi
    export PYTHON
}

pip_install() {
    "$PYTHON" -m pip install -q "$@"
}

ensure_python_deps() {
    log "installing Python dependencies (already-satisfied ones are skipped)"
    pip_install "${OXLA_PY_TEST_DEPS[@]}"
}

# Builds the plugin (cargo, release mode) and installs the `oxla` package.
install_oxla() {
    log "building the PJRT plugin (release) and installing the oxla package"
    (cd "$OXLA_ROOT" && "$PYTHON" -m pip install -q .)
    "$PYTHON" - <<'PY'
import oxla
print(f"==> oxla {oxla.__version__} installed; plugin library: {oxla.library_path()}")
PY
}
