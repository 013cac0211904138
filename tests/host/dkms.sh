#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# dkms add + build against Debian's headers (no VM needed), under a
# throwaway version so a real installation is left alone: for every kernel
# line of the run (XNC_HOST_KLINES, set by tests/run.sh; default both, 6.1
# and 6.12), one dkms tree built for each line's kernel.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
kvers=()
for l in ${XNC_HOST_KLINES:-6.1 6.12}; do
	kvers+=("$(XNC_KLINE=$l "$top/scripts/kernel.sh" version)")
done
ver=0.0test
src=/usr/src/xfrm_nocache-$ver
cleanup() { dkms remove -m xfrm_nocache -v $ver --all >/dev/null 2>&1 || true; rm -rf "$src"; }
trap cleanup EXIT
cleanup
mkdir -p "$src"
cp -r "$top"/Kbuild "$top"/Makefile "$top"/src "$top"/include "$top"/scripts "$src"/
sed "s/^PACKAGE_VERSION=.*/PACKAGE_VERSION=\"$ver\"/" "$top/dkms.conf" >"$src/dkms.conf"
dkms add -m xfrm_nocache -v $ver
built=
for kver in "${kvers[@]}"; do
	if ! dkms build -m xfrm_nocache -v $ver -k "$kver"; then
		grep -s -m3 -E 'error|Error' /var/lib/dkms/xfrm_nocache/$ver/build/make.log || true
		echo "dkms build failed for $kver"
		exit 1
	fi
	ko=$(find /var/lib/dkms/xfrm_nocache/$ver/"$kver" -name 'xfrm_nocache.ko*' | head -n1)
	[ -n "$ko" ] || { echo "dkms build produced no xfrm_nocache.ko for $kver"; exit 1; }
	modinfo "$ko" | grep -q '^livepatch: *Y' ||
		{ echo "module built for $kver lacks livepatch modinfo"; exit 1; }
	modinfo "$ko" | grep -q "^vermagic: *$kver " ||
		{ echo "module built for $kver has vermagic $(modinfo -F vermagic "$ko")"; exit 1; }
	built="${built:+$built; }$kver: $ko"
done
echo "dkms build ok for $built"
