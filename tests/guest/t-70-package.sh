#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The Debian package, installed as an operator installs it, in the guest
# (its root is a writable overlay: nothing reaches the host).  The run's
# host side (tests/run.sh) built it with make deb and found the .deb of
# the other kernel line's headers; package.env names both.
#  1. Only the running kernel's headers: every other kernel's are purged
#     first (the other line's, and any flavour the host has installed).
#     dpkg -i the package: DKMS builds the module for the running kernel,
#     with its livepatch relocation sections (not stripped); modprobe loads
#     it from updates/dkms, the livepatch applies and resolves lookups.
#     /etc/modules-load.d/xfrm-nocache.conf is there, its line commented.
#     /usr/sbin/xfrm-nocache-stats exports the lookups counted; its timer
#     is installed but not enabled.
#  2. A kernel line's headers installed afterwards (what a kernel upgrade
#     does): DKMS builds the module for that kernel too.
#  3. Headers of a kernel outside dkms.conf's BUILD_EXCLUSIVE_KERNEL (a
#     made-up one, as the headers package's postinst hooks see it): no
#     module for it either way; dkms before 3.0.11 (bookworm's 3.0.10)
#     fails that postinst (README.Debian), later ones (trixie's 3.2.2)
#     skip the module and succeed.
#  4. Purge: no module, DKMS tree, source, conffile or command left.
# Each DKMS build compiles the module under TCG: a few minutes.  On a
# Debian 13 guest the package is trixie's make deb (tests/run.sh), and
# DKMS is trixie's.
# shellcheck source-path=SCRIPTDIR # lib.sh, diff-lib.sh (shellcheck -x)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/diff-lib.sh"
[ -z "${XNC_KERNEL:-}" ] || skip "the package test is for Debian's kernels and headers, not a debug kernel"
env=$XNC_OUT/package.env
[ -f "$env" ] || fail "no $env: the host did not build the package (see package.build)"
# shellcheck disable=SC1090 # tests/run.sh's prepare_package writes it
. "$env"
k1=$(uname -r)
k2=$XNC_PKG_K2
[ -f "$XNC_PKG_DEB" ] || fail "no package at $XNC_PKG_DEB"
[ -f "$XNC_PKG_HDR2_DEB" ] || fail "no headers package at $XNC_PKG_HDR2_DEB"
command -v dkms >/dev/null || fail "no dkms in the guest root"
export DEBIAN_FRONTEND=noninteractive
mod_loaded && fail "module loaded before the test"

# built: the DKMS status line of KVER says installed
dkms_installed() {
	dkms status -m xfrm_nocache -k "$1" 2>/dev/null | grep -q ': installed'
}
# dkms_ko KVER: the module DKMS installed for KVER (.ko, or .ko.xz where
# the kernel's own modules are: 6.12's, 7.3's)
dkms_ko() {
	local f
	for f in /lib/modules/"$1"/updates/dkms/xfrm_nocache.ko*; do
		[ ! -e "$f" ] || { echo "$f"; return; }
	done
}
# klp_sections FILE: number of livepatch relocation sections in a module
klp_sections() {
	local f=$1 t
	case $f in
	*.xz) t=$XNC_OUT/t70.ko; xz -dc "$f" >"$t"; f=$t ;;
	esac
	readelf -SW "$f" | grep -c '\.klp\.rela\.vmlinux\.'
}

# step NAME: the seconds since the last step, as a log line (the test's
# time varies between runs: which step takes it)
t_step=$SECONDS
step() {
	log "$1: $((SECONDS - t_step)) s"
	t_step=$SECONDS
}

# The running kernel's modules directory is the extracted image: the
# headers package's build link is what installing it would have added.
[ -e "/lib/modules/$k1/build" ] || ln -s "/usr/src/linux-headers-$k1" "/lib/modules/$k1/build"
# Only k1's headers: purge every other kernel's, k2's and any other
# flavour's the host has (its real-time ones, say: DKMS would build for
# them too), with the metapackages that pull them in; the -common trees
# stay, k2's headers need its own when they come back.
hdrs=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' 'linux-headers-*' 2>/dev/null |
	awk -v k1="linux-headers-$k1" '$2 ~ /^.i/ && $1 != k1 && $1 !~ /-common/ { print $1 }')
echo "$hdrs" | grep -qx "$XNC_PKG_HDR2" || fail "$XNC_PKG_HDR2 is not installed in the guest root"
# shellcheck disable=SC2086 # one package name a word
dpkg --purge --force-depends $hdrs >"$XNC_OUT/t70.purge-hdr" 2>&1 ||
	fail "purging ${hdrs//$'\n'/ }: $(tail -n1 "$XNC_OUT/t70.purge-hdr")"
[ ! -e "/usr/src/linux-headers-$k2/Makefile" ] || fail "k2's headers still there"
others=
for b in /lib/modules/*/build; do
	[ ! -e "$b" ] || [ "$b" = "/lib/modules/$k1/build" ] || others+=" $b"
done
[ -z "$others" ] || fail "headers of another kernel left:$others"
step "purge of the other kernels' headers (${hdrs//$'\n'/ })"

# 1. install
dpkg -i "$XNC_PKG_DEB" >"$XNC_OUT/t70.install" 2>&1 ||
	fail "dpkg -i failed: $(tail -n 3 "$XNC_OUT/t70.install")"
step "dpkg -i of the package, DKMS build for $k1"
dkms_installed "$k1" || fail "DKMS did not build for $k1: $(dkms status 2>&1)"
dkms_installed "$k2" && fail "DKMS built for $k2, whose headers are gone"
built=$(dkms status -m xfrm_nocache 2>/dev/null | grep -c ': installed')
expect_eq "kernels DKMS built for" "$built" 1
ko=$(dkms_ko "$k1")
[ -n "$ko" ] || fail "no module in /lib/modules/$k1/updates/dkms"
n=$(klp_sections "$ko")
expect_ge "livepatch relocation sections in $ko" "$n" 1
grep -qx '#xfrm_nocache' /etc/modules-load.d/xfrm-nocache.conf ||
	fail "modules-load.d file missing or its line not commented"
[ -x /usr/sbin/xfrm-nocache-stats ] || fail "no /usr/sbin/xfrm-nocache-stats"
# (/lib/systemd/system from bookworm's debhelper, /usr/lib/... from trixie's)
timer=$(dpkg -L xfrm-nocache-dkms | grep '/systemd/system/xfrm-nocache-stats\.timer$') ||
	fail "the package ships no xfrm-nocache-stats.timer"
[ -f "$timer" ] || fail "no $timer"
wants=$(ls /etc/systemd/system/*.wants/xfrm-nocache-stats.* 2>/dev/null || true)
[ -z "$wants" ] || fail "the package enabled $wants"
[ "$(modinfo -F filename xfrm_nocache)" = "$ko" ] || fail "modprobe would not load $ko"
# shellcheck disable=SC2086 # XNC_LOAD_ARGS: words (runner.sh)
modprobe xfrm_nocache ${XNC_LOAD_ARGS:-} || fail "modprobe xfrm_nocache failed"
wait_for 30 lp_settled || fail "livepatch transition did not finish"
pair
sa "a b" 10.0.0.1 10.0.0.2 0x100 transport
pol a src 10.0.0.1 dst 10.0.0.2 dir out tmpl proto esp mode transport
udp a 10.0.0.2 >/dev/null
expect_ge "lookups through the packaged module" "$(xnc_stat Lookups a)" 3
expect_ge "packets on the SA" "$(sa_packets a 0x100)" 3
prom=$(/usr/sbin/xfrm-nocache-stats --prometheus) || fail "xfrm-nocache-stats --prometheus failed"
v=$(sed -n 's/^xfrm_nocache_lookups_total{netns="a"} //p' <<<"$prom")
expect_ge "lookups of a exported" "$v" 3
# (a's own packets may have been looked up since)
expect_ge "lookups of a, after the export" "$(xnc_stat Lookups a)" "$v"
xnc_unload || fail "unload failed"
echo "installed: built for $k1 ($n klp sections), loaded, lookups counted"
step "load, traffic and unload"

# 2. the other line's headers come: DKMS builds for that kernel
dpkg -i "$XNC_PKG_HDR2_DEB" >"$XNC_OUT/t70.hdr2" 2>&1 ||
	fail "installing $XNC_PKG_HDR2 failed: $(tail -n 3 "$XNC_OUT/t70.hdr2")"
step "dpkg -i of $k2's headers, DKMS build for $k2"
dkms_installed "$k2" || fail "DKMS did not build for $k2 on its headers: $(dkms status 2>&1)"
ko2=$(dkms_ko "$k2")
[ -n "$ko2" ] || fail "no module in /lib/modules/$k2/updates/dkms"
n2=$(klp_sections "$ko2")
expect_ge "livepatch relocation sections in $ko2" "$n2" 1
echo "headers of $k2 installed: built for it ($n2 klp sections)"

# 3. headers of a kernel the module is not for: what their package's
# postinst runs (trixie: linux-run-hooks; bookworm: run-parts), on a tree
# with an include/ (all dkms checks before BUILD_EXCLUSIVE_KERNEL)
kx=9.99.0-xnc-amd64
[ ! -e /lib/modules/$kx ] || fail "/lib/modules/$kx exists"
mkdir -p /lib/modules/$kx/build/include
rc=0
if command -v linux-run-hooks >/dev/null; then
	linux-run-hooks headers postinst $kx -- configure >"$XNC_OUT/t70.hdrx" 2>&1 || rc=$?
else
	run-parts --report --exit-on-error --arg=$kx /etc/kernel/header_postinst.d \
		>"$XNC_OUT/t70.hdrx" 2>&1 || rc=$?
fi
xko=$(dkms_ko $kx)
# (a module built for no kernel yet is listed as "added", with no kernel)
xst=$(dkms status -m xfrm_nocache -k $kx 2>/dev/null | grep -F $kx || true)
xst+=$(ls -d /var/lib/dkms/xfrm_nocache/*/$kx 2>/dev/null || true)
rm -rf /lib/modules/$kx
[ -z "$xko" ] || fail "DKMS installed $xko for $kx"
[ -z "$xst" ] || fail "dkms lists $kx: $xst"
dv=$(dkms --version | sed -n 's/^dkms-//p')
[ -n "$dv" ] || fail "no version from dkms --version: $(dkms --version 2>&1)"
# (upstream dkms 0f499c9, in 3.0.11: a skip no longer fails autoinstall)
if dpkg --compare-versions "$dv" lt 3.0.11; then
	[ $rc -ne 0 ] || fail "dkms $dv: headers of $kx configured, README.Debian says they fail"
	grep -q 'BUILD_EXCLUSIVE directive which does not match' "$XNC_OUT/t70.hdrx" ||
		fail "dkms $dv: headers of $kx failed for another reason: $(tail -n 3 "$XNC_OUT/t70.hdrx")"
	echo "headers of $kx: dkms $dv fails their postinst (exit $rc), as README.Debian says"
else
	[ $rc -eq 0 ] || fail "dkms $dv: headers of $kx failed (exit $rc): $(tail -n 3 "$XNC_OUT/t70.hdrx")"
	grep -q 'skipped for .*xfrm_nocache' "$XNC_OUT/t70.hdrx" ||
		fail "dkms $dv: no skip of xfrm_nocache for $kx: $(tail -n 3 "$XNC_OUT/t70.hdrx")"
	echo "headers of $kx: dkms $dv skips the module, their postinst succeeds"
fi
step "headers of $kx (BUILD_EXCLUSIVE_KERNEL)"

# 4. purge
dpkg --purge xfrm-nocache-dkms >"$XNC_OUT/t70.purge" 2>&1 ||
	fail "purge failed: $(tail -n 3 "$XNC_OUT/t70.purge")"
step "purge of the package"
left=$(dkms status -m xfrm_nocache 2>/dev/null)
[ -z "$left" ] || fail "dkms still lists: $left"
left=$(ls -d /usr/src/xfrm_nocache-* /var/lib/dkms/xfrm_nocache \
	/lib/modules/*/updates/dkms/xfrm_nocache.ko* \
	/etc/modules-load.d/xfrm-nocache.conf /usr/sbin/xfrm-nocache-stats \
	/lib/systemd/system/xfrm-nocache-stats.* \
	/usr/lib/systemd/system/xfrm-nocache-stats.* 2>/dev/null || true)
[ -z "$left" ] || fail "left after purge: $left"
dpkg -s xfrm-nocache-dkms >/dev/null 2>&1 && fail "dpkg still knows the package"
echo "purged: nothing left"
