#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo: boot Debian's kernel in a VM, load xfrm_nocache, and show two
# strongSwan gateways forwarding SWAN_N tunnels (default 8) over it, with a
# rekey and an rmmod/insmod under traffic (tests/guest/demo.sh).  Needs
# nothing pre-built (make deps first on a fresh machine; make demo does that).
#
#   make demo [SWAN_N=30] [SWAN_REKEY=20]
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck disable=SC2164 # top: a directory cd has just entered
cd "$top"
out=$(mktemp -d /tmp/xnc-demo.XXXXXX)
rc=0
XNC_QUIET=1 scripts/vm.sh --timeout 900 --out "$out" -- \
	env SWAN_N="${SWAN_N:-8}" SWAN_REKEY="${SWAN_REKEY:-20}" \
	"$top/tests/guest/demo.sh" || rc=$?
# the demo's own lines, without the kernel's console messages
sed -n '/^=== demo start/,/^=== demo end/p' "$out/console.log" |
	grep -av -e '^=== demo' -e '^\[ *[0-9]*\.[0-9]*\] '
if [ $rc -eq 0 ]; then rm -rf "$out"; else echo "demo: VM exited $rc (console: $out/console.log)" >&2; fi
exit $rc
