#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# scripts/vm.sh picks KVM only when /dev/kvm can run a guest.  A device
# node that opens but cannot make a vCPU (this kind of machine: a VM
# without nested VMX; here faked by /dev/null bound over /dev/kvm in a
# private mount namespace) must give TCG with the reason, and --accel kvm
# must then refuse; --icount never takes KVM; a bad --accel is refused.
# The probe boots no kernel: a second of firmware at most.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
vm=$top/scripts/vm.sh
fail() { echo "FAIL: $*"; exit 1; }

real=$("$vm" --probe-accel)
echo "this machine: $real"
case $real in
kvm) [ -e /dev/kvm ] || fail "kvm chosen without /dev/kvm" ;;
tcg*) ;;
*) fail "probe printed '$real'" ;;
esac

if [ ! -e /dev/kvm ]; then
	[ "$real" = "tcg: no usable /dev/kvm" ] || fail "no /dev/kvm, probe: $real"
else
	fake=$(unshare -m bash -c "mount --bind /dev/null /dev/kvm && '$vm' --probe-accel")
	echo "fake /dev/kvm: $fake"
	case $fake in
	"tcg: /dev/kvm cannot run a guest: "*) ;;
	*) fail "a /dev/kvm that cannot run a guest gave '$fake'" ;;
	esac
	if out=$(unshare -m bash -c "mount --bind /dev/null /dev/kvm &&
		'$vm' --accel kvm --probe-accel" 2>&1); then
		fail "--accel kvm accepted a /dev/kvm that cannot run a guest: $out"
	fi
	echo "$out" | grep -q 'vm.sh: --accel kvm: /dev/kvm cannot run a guest' ||
		fail "--accel kvm refused without the reason: $out"
fi

[ "$("$vm" --icount --probe-accel)" = tcg ] || fail "--icount not on TCG"
if out=$("$vm" --icount --accel kvm --probe-accel 2>&1); then
	fail "--icount --accel kvm accepted"
fi
echo "$out" | grep -q 'needs TCG' || fail "--icount --accel kvm: $out"
if out=$(XNC_ACCEL=hvf "$vm" --probe-accel 2>&1); then
	fail "XNC_ACCEL=hvf accepted"
fi
echo "$out" | grep -q "takes auto, kvm or tcg, not 'hvf'" || fail "XNC_ACCEL=hvf: $out"
echo "ok"
