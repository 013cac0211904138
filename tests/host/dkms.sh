#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# dkms add + build against Debian's headers (no VM needed), under a
# throwaway version so a real installation is left alone: for every kernel
# line of the run (XNC_HOST_KLINES, set by tests/run.sh; default both, 6.1
# and 6.12), one dkms tree built for each line's kernel.  Then the same with
# Debian 13's dkms in the trixie root (scripts/trixie-root.sh) for its lines
# (XNC_TRIXIE_KLINES, set by tests/run.sh: the run's; alone: 13 and 7.3),
# in a source and dkms tree of its own there (--sourcetree, --dkmstree: a
# guest booted on the root meanwhile sees no module of ours); without the
# root that half is skipped, and the last line says so.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
kvers=()
for l in ${XNC_HOST_KLINES:-6.1 6.12}; do
	kvers+=("$(XNC_KLINE=$l "$top/scripts/kernel.sh" version)")
done
ver=0.0test
src=/usr/src/xfrm_nocache-$ver
troot=$(XNC_KLINE=13 "$top/scripts/kernel.sh" root)
tmp='' mokmade=''
cleanup() {
	dkms remove -m xfrm_nocache -v $ver --all >/dev/null 2>&1 || true
	rm -rf "$src"
	[ -z "$tmp" ] || rm -rf "$tmp"
	# the signing key dkms made in the root for our builds
	[ -z "${mokmade:-}" ] || rm -f "$troot/var/lib/dkms/mok.key" "$troot/var/lib/dkms/mok.pub"
}
trap cleanup EXIT
cleanup
# copy DIR: the module's DKMS source tree, dkms.conf at the throwaway version
copy() {
	mkdir -p "$1"
	cp -r "$top"/Kbuild "$top"/Makefile "$top"/src "$top"/include "$top"/scripts "$1"/
	sed "s/^PACKAGE_VERSION=.*/PACKAGE_VERSION=\"$ver\"/" "$top/dkms.conf" >"$1/dkms.conf"
}
# check KVER KO: the module dkms built for KVER is a livepatch for it
check() {
	[ -n "$2" ] || { echo "dkms build produced no xfrm_nocache.ko for $1"; exit 1; }
	modinfo "$2" | grep -q '^livepatch: *Y' ||
		{ echo "module built for $1 lacks livepatch modinfo"; exit 1; }
	modinfo "$2" | grep -q "^vermagic: *$1 " ||
		{ echo "module built for $1 has vermagic $(modinfo -F vermagic "$2")"; exit 1; }
}

copy "$src"
dkms add -m xfrm_nocache -v $ver
built=
for kver in "${kvers[@]}"; do
	if ! dkms build -m xfrm_nocache -v $ver -k "$kver"; then
		grep -s -m3 -E 'error|Error' /var/lib/dkms/xfrm_nocache/$ver/build/make.log || true
		echo "dkms build failed for $kver"
		exit 1
	fi
	ko=$(find /var/lib/dkms/xfrm_nocache/$ver/"$kver" -name 'xfrm_nocache.ko*' | head -n1)
	check "$kver" "$ko"
	built="${built:+$built; }$kver: $ko"
done

# Debian 13's dkms (3.2), in the root: its gcc-14 and kbuild
tl=${XNC_TRIXIE_KLINES-13 7.3}
if [ -z "$tl" ]; then
	tsum="no Debian 13 line in the run: not in the trixie root"
elif [ ! -f "$troot/.xnc-created" ]; then
	# (a run of Debian 13's lines without the root is broken, not skipped)
	[ -z "${XNC_TRIXIE_KLINES:-}" ] || { echo "no trixie root in $troot for $tl"; exit 1; }
	tsum="skip trixie: no trixie root in $troot (scripts/trixie-root.sh create)"
else
	[ -e "$troot/var/lib/dkms/mok.key" ] || mokmade=1
	tmp=$(mktemp -d "$troot/tmp/xnc-dkms-test.XXXXXX")
	it=${tmp#"$troot"}
	copy "$tmp/src/xfrm_nocache-$ver"
	tdkms() { "$top/scripts/trixie-root.sh" run dkms "$@" --sourcetree "$it/src" --dkmstree "$it/dkms"; }
	mkdir "$tmp/dkms"
	tdkms add -m xfrm_nocache -v $ver
	tbuilt=
	for l in $tl; do
		XNC_KLINE=$l "$top/scripts/kernel.sh" bkdir >/dev/null
		kver=$(XNC_KLINE=$l "$top/scripts/kernel.sh" version)
		if ! tdkms build -m xfrm_nocache -v $ver -k "$kver"; then
			grep -s -m3 -E 'error|Error' "$tmp/dkms/xfrm_nocache/$ver/build/make.log" || true
			echo "trixie: dkms build failed for $kver"
			exit 1
		fi
		ko=$(find "$tmp/dkms/xfrm_nocache/$ver/$kver" -name 'xfrm_nocache.ko*' | head -n1)
		check "$kver" "$ko"
		tbuilt="${tbuilt:+$tbuilt, }$kver (${ko##*/})"
	done
	st=$(tdkms status -m xfrm_nocache -v $ver | grep -c ': built') || true
	[ "$st" = "$(wc -w <<<"$tl")" ] || { echo "trixie: dkms status lists $st built, not $(wc -w <<<"$tl")"; exit 1; }
	tsum="trixie root's $("$top/scripts/trixie-root.sh" run dkms --version) for $tbuilt"
fi
echo "dkms build ok for $built; $tsum"
