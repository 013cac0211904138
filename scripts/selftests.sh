#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's own xfrm selftests, taken at test time from Debian's
# linux-source-<line> tarball of the kernel line under test (XNC_KLINE: 6.1,
# the default, 6.12, their -rt flavors, or Debian 13's 13, 13-rt, 7.3;
# scripts/kernel.sh); nothing of them is kept in this repository.  The
# tarball: the host's installed package for Debian 12's kernels; for
# Debian 13's, trixie's linux-source-6.12 or trixie-backports'
# linux-source-7.3 (scripts/trixie-source.sh), fetched into the cache
# once; XNC_KSRC_TARBALL: another one.
#
#   scripts/selftests.sh [prepare]   extract + build into the cache
#                                    (idempotent), print the cache dir
#   scripts/selftests.sh dir         print the cache dir if it is ready
#   scripts/selftests.sh source      print "TARBALL VERSION": the tarball
#                                    and its Debian version, as prepare
#                                    takes them (no network: the cached one)
#   scripts/selftests.sh list [core] the suites of this kernel line, one per
#                                    line (core: make check's only)
# prepare runs on the host; dir and list only read, and the guest's
# tests/guest/selftests-run.sh, which runs a suite and counts its
# verdicts, calls them too.
#
# Suites (tools/testing/selftests/net/ of the tarball).  The core ones,
# which make check runs too (tests/guest/t-60-selftest-*):
#   xfrm_policy      xfrm_policy.sh            PASS:/FAIL:/SKIP: lines
#   ipsec            ipsec.c, built here       kselftest TAP: ok/not ok
#                    with one child, as its Makefile runs it, and its
#                    pings 1 ms apart, not 50 (IPSEC_PING_MS below)
#   vrf-xfrm         vrf-xfrm-tests.sh         TEST: ... [ OK ]/[FAIL]
#   rtnetlink-ipsec  rtnetlink.sh's kci_test_ipsec and kci_test_ipsec_offload
#                    only: 6.12's with its -t option; 6.1's has none, so its
#                    functions are sourced and only those two are called,
#                    on the dummy device the script itself sets up
# and the others that put xfrm to work, for scripts/selftests-table.sh:
#   pmtu-vti         pmtu.sh's tests named pmtu_vti*, given as its
#                    arguments (nettest.c built here for the ESP-in-UDP
#                    ones)                     TEST: ... [ OK ]/[FAIL]/[SKIP]
#   l2tp             l2tp.sh: L2TPv3 over IP, then with ESP transport mode
#                    under it                  TEST: ... [ OK ]/[FAIL]
#   nft-flowtable    netfilter's nft_flowtable.sh (not 6.1's, in
#                    net/netfilter/ from 6.8 on), whole: flowtable offload,
#                    its last check TCP through an ESP tunnel
#                                              PASS:/FAIL:/SKIP: lines
#   xfrm-policy-add-speed
#                    xfrm_policy_add_speed.sh (not 6.1's): policy
#                    insertion, timed; a check per batch, "Inserted N
#                    policies in T ms", failed by a WARNING: line
#   xfrm-state       xfrm_state.sh (7.x only), whole: ICMP errors and
#                    PMTU through an ESP tunnel between two gateways
#                                              TEST: ... [ PASS ]/[ FAIL ]/[SKIP]
# A kernel has its upstream line's suites (scripts/kernel.sh line): 13's
# and 13-rt's are 6.12's.
#
# Cache: $XNC_CACHE/selftests-<linux-source-<line> version>-<manifest sum>
# (default /var/cache/xfrm_nocache), outside the repo: the files taken and
# the programs built (manifest()) are part of its name, so that a cache
# made for another list is never used for this one, nor one that an older
# checkout may be reading replaced.  The guest reads it over the
# read-only host root, so "prepare" must run on the host first
# (tests/run.sh and scripts/selftests-table.sh do).

set -uo pipefail

XNC_CACHE=${XNC_CACHE:-/var/cache/xfrm_nocache}
SEL=tools/testing/selftests
# the selftest Makefile's flags for ipsec.c and nettest.c
CFLAGS=(-Wall "-Wl,--no-as-needed" -O2 -g)
# ipsec.c's one change: the pause between two of a test's pings.  Each of
# its 100 tunnel tests sends 100 UDP pings each way and passes when 80
# came back within 300 us; the 50 ms pause between them is most of its
# 18 minutes under TCG.  What it checks stays the same.  (Its nr_process
# argument is no way out: its children share one pair of namespaces, and
# two of them running the "expire state" and "expire policy" checks at
# once can each read the other's expiry message, which all listeners of
# XFRMNLGRP_EXPIRE get.)
IPSEC_PING_MS=1

die() { echo "selftests.sh: $*" >&2; exit 1; }

# the kernel line and its source package
here=$(dirname "$0")
kline=$("$here/kernel.sh" line) || exit 1
srcpkg=linux-source-$kline

# The suites: make check's (CORE) and the table's others, with the files
# they take from the tarball, the helpers their scripts source included.
CORE="xfrm_policy ipsec vrf-xfrm rtnetlink-ipsec"
SUITES="$CORE pmtu-vti l2tp"
FILES=(Makefile "$SEL/kselftest.h" "$SEL/net/ipsec.c" "$SEL/net/xfrm_policy.sh"
       "$SEL/net/vrf-xfrm-tests.sh" "$SEL/net/rtnetlink.sh"
       "$SEL/net/pmtu.sh" "$SEL/net/nettest.c" "$SEL/net/l2tp.sh")
# 6.1 has no nft-flowtable: its nft_flowtable.sh kills both ends of each
# TCP transfer 3 s after it starts them, and under TCG its 20 MB take
# longer, stock's as well (2026-12-06: stock failed 9 of its 16 checks
# with files cut short, the module 6 of 15)
if [ "$kline" != 6.1 ]; then
	# from 6.8 on: the scripts' shared helpers (setup_ns, ...),
	# pmtu.sh's net_helper.sh, the netfilter tests under net/ with a
	# lib.sh of their own that sources net/lib.sh; and a policy
	# insertion benchmark
	NFT=$SEL/net/netfilter
	SUITES="$SUITES nft-flowtable xfrm-policy-add-speed"
	FILES+=("$SEL/net/lib.sh")
	# (7.x: gone into lib.sh)
	[ "$kline" != 6.12 ] || FILES+=("$SEL/net/net_helper.sh")
	FILES+=("$NFT/nft_flowtable.sh" "$NFT/lib.sh" "$SEL/net/xfrm_policy_add_speed.sh")
fi
# 7.x: lib.sh sources lib/sh/defer.sh; ipsec.c includes "kselftest.h",
# found by its Makefile's -I../ (6.12's has it too, unneeded there: left
# out, so that the caches made without it stay valid); xfrm_state.sh, new
case $kline in
6.1 | 6.12) ;;
*)
	SUITES="$SUITES xfrm-state"
	FILES+=("$SEL/net/lib/sh/defer.sh" "$SEL/net/xfrm_state.sh")
	CFLAGS+=(-I../)
	;;
esac

# what the cache holds: the files taken and the programs built (how)
manifest() {
	printf 'file %s\n' "${FILES[@]}"
	echo "built $SEL/net/ipsec $SEL/net/nettest: gcc ${CFLAGS[*]}"
	echo "ipsec.c: ping_delay_nsec = $IPSEC_PING_MS ms"
}

# srcinfo [fetch]: print "TARBALL VERSION" of the line's source
# (scripts/kernel.sh source): Debian 13's the cached one, or with "fetch"
# (prepare, on the host) fetched when there is none; the guest never
# fetches.
srcinfo() {
	if [ "${1:-}" = fetch ]; then
		"$here/kernel.sh" source
	else
		"$here/kernel.sh" source --cached
	fi
}

# cachedir VERSION
cachedir() {
	local m
	m=$(manifest | md5sum | cut -c1-8)
	echo "$XNC_CACHE/selftests-$1-$m"
}

prepare() {
	local dir tmp top p TARBALL v
	read -r TARBALL v <<<"$(srcinfo fetch)"
	[ -n "$v" ] || exit 1
	dir=$(cachedir "$v")
	if [ -f "$dir/.ready" ]; then
		echo "$dir"
		return 0
	fi
	[ -r "$TARBALL" ] || die "$TARBALL missing (run scripts/deps.sh)"
	mkdir -p "$XNC_CACHE"
	tmp=$(mktemp -d "$XNC_CACHE/.selftests.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	chmod 755 "$tmp"
	top=$srcpkg
	echo "selftests.sh: extracting from $TARBALL" >&2
	tar -xJf "$TARBALL" -C "$tmp" --strip-components=1 "${FILES[@]/#/$top/}" ||
		die "tar failed"
	# ipsec.c's ping pause (IPSEC_PING_MS above)
	sed -i -E "s/^(const unsigned int ping_delay_nsec[[:space:]]*=) 50 (\* 1000 \* 1000;)\$/\1 $IPSEC_PING_MS \2/" \
		"$tmp/$SEL/net/ipsec.c"
	grep '^const unsigned int ping_delay_nsec' "$tmp/$SEL/net/ipsec.c" |
		grep -qF "= $IPSEC_PING_MS * 1000 * 1000;" ||
		die "ipsec.c: no 'ping_delay_nsec = 50 * 1000 * 1000;' to change"
	# the flags of the selftest's own Makefile, in its directory; uapi
	# headers from the installed linux-libc-dev (bookworm's, 6.1: 6.12's
	# and 7.3's ipsec.c and nettest.c need nothing newer).  Built here
	# for Debian 13's guests too: a bookworm binary runs on trixie's
	# newer glibc.
	for p in ipsec nettest; do
		(cd "$tmp/$SEL/net" && gcc "${CFLAGS[@]}" -o "$p" "$p.c") ||
			die "building $p.c failed"
	done
	manifest >"$tmp/MANIFEST"
	# the kernel release these came from, for the table
	awk '/^VERSION =/ { v = $3 } /^PATCHLEVEL =/ { p = $3 }
	     /^SUBLEVEL =/ { s = $3 } END { print v "." p "." s }' \
		"$tmp/Makefile" >"$tmp/RELEASE"
	rm -rf "$dir"
	mv "$tmp" "$dir" || die "cannot move into $dir"
	trap - EXIT
	touch "$dir/.ready"
	echo "$dir"
}

readydir() {
	local dir v
	read -r _ v <<<"$(srcinfo)"
	[ -n "$v" ] || exit 1
	dir=$(cachedir "$v")
	[ -f "$dir/.ready" ] ||
		die "$dir not prepared: run scripts/selftests.sh on the host first"
	echo "$dir"
}

case "${1:-prepare}" in
prepare) prepare ;;
dir) readydir ;;
source) srcinfo ;;
list)
	case ${2:-} in
	"") echo "$SUITES" ;;
	core) echo "$CORE" ;;
	*) die "usage: $0 list [core]" ;;
	esac | tr ' ' '\n'
	;;
*) die "usage: $0 [prepare|dir|source|list [core]]" ;;
esac
