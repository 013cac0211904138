#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make lint as a test: W=1, sparse, checkpatch --strict, no BH toggling,
# against the headers of the kernels this run tests (tests/run.sh's
# XNC_HOST_KLINES; make lint: all of them).
set -euo pipefail
cd "$(dirname "$0")/../.."
XNC_LINT_KERNELS=${XNC_HOST_KLINES:-} scripts/lint.sh
