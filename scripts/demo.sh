#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo: boot Debian's kernel in a VM, load xfrm_nocache, and show it
# resolving a tunnel's traffic.  Needs nothing pre-built (make deps first
# on a fresh machine; make demo does that).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
XNC_QUIET=1 scripts/vm.sh --timeout 600 -- "$top/tests/guest/demo.sh"
rc=$?
out=$(ls -td /tmp/xnc-vm.* | head -n1)
sed -n '/^=== demo start/,/^=== demo end/p' "$out/console.log" | sed '/^=== demo/d'
exit $rc
