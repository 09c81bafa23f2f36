#!/usr/bin/env bash
# The main job: sets everything up (scripts/setup.sh), then trains a small MLP
# on oxla next to JAX's cpu backend (examples/mlp_train.py). Extra arguments go
# to the example.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_build_tools
ensure_python
ensure_python_deps
install_oxla
log "running examples/mlp_train.py"
cd "$OXLA_ROOT"
exec "$PYTHON" examples/mlp_train.py "$@"
