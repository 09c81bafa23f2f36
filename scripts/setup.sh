#!/usr/bin/env bash
# Sets up a machine for oxla: build dependencies, the Python test dependencies
# (jax/jaxlib 0.10.2, numpy, pytest), then builds the plugin and installs the
# `oxla` package. Safe to run again: what is installed already is skipped.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_build_tools
ensure_python
ensure_python_deps
install_oxla
