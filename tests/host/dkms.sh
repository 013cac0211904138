#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# dkms add + build against Debian's headers (no VM needed), under a
# throwaway version so a real installation is left alone.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
kver=$("$top/scripts/kernel.sh" version)
ver=0.0test
src=/usr/src/xfrm_nocache-$ver
cleanup() { dkms remove -m xfrm_nocache -v $ver --all >/dev/null 2>&1 || true; rm -rf "$src"; }
trap cleanup EXIT
cleanup
mkdir -p "$src"
cp -r "$top"/Kbuild "$top"/Makefile "$top"/src "$top"/include "$top"/scripts "$src"/
sed "s/^PACKAGE_VERSION=.*/PACKAGE_VERSION=\"$ver\"/" "$top/dkms.conf" >"$src/dkms.conf"
dkms add -m xfrm_nocache -v $ver
dkms build -m xfrm_nocache -v $ver -k "$kver"
ko=$(find /var/lib/dkms/xfrm_nocache/$ver/"$kver" -name 'xfrm_nocache.ko*' | head -n1)
[ -n "$ko" ] || { echo "dkms build produced no xfrm_nocache.ko"; exit 1; }
modinfo "$ko" | grep -q '^livepatch: *Y' || { echo "built module lacks livepatch modinfo"; exit 1; }
echo "dkms build ok for $kver: $ko"
