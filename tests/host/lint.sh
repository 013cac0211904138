#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make lint as a test: W=1, sparse, checkpatch --strict, no BH toggling,
# against the headers of the kernels this run tests (tests/run.sh's
# XNC_HOST_KLINES and XNC_TRIXIE_KLINES; make lint: all bookworm's).
set -euo pipefail
cd "$(dirname "$0")/../.."
read -r -a ks <<<"${XNC_HOST_KLINES:-} ${XNC_TRIXIE_KLINES:-}"
XNC_LINT_KERNELS="${ks[*]}" scripts/lint.sh
