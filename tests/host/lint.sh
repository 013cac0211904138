#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make lint as a test: W=1, sparse, checkpatch --strict, no BH toggling.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/lint.sh
