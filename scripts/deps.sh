#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install what building, packaging (make deb) and testing need on Debian
# bookworm, for both kernel lines (scripts/kernel.sh): the headers
# metapackages of 6.1 (linux-headers-amd64) and 6.12
# (linux-headers-6.12-amd64) and both linux-source packages; for a
# real-time kernel (6.1-rt, 6.12-rt) in XNC_KLINE (make's KERNEL) or in
# XNC_DEPS_KERNELS (a list: make check-all), its headers metapackage too.
# The guest runs on the host's root filesystem, so the tools its tests
# use are installed here too (nftables, and 6.1's nc, for the
# nft-flowtable selftest: scripts/selftests.sh; node_exporter, promtool,
# from the prometheus package, and curl for t-22-prometheus and the host
# test stats-prom).
# Debian 13's kernels (13, 13-rt, 7.3) in XNC_KLINE or XNC_DEPS_KERNELS:
# the trixie root too (scripts/trixie-root.sh: created, the guest's
# packages and each one's headers installed), where they build and their
# guest runs; nothing of it otherwise.
# Idempotent: does nothing (and needs no network) when everything is
# already there.

set -euo pipefail

pkgs=(
	build-essential bc bison flex libelf-dev libssl-dev dwarves kmod cpio python3 procps
	linux-headers-amd64 linux-source-6.1
	linux-headers-6.12-amd64 linux-source-6.12
	sparse dkms
	debhelper dh-dkms lintian
	qemu-system-x86 busybox-static
	iproute2 iputils-ping ethtool iptables socat iperf3 gnuplot-nox
	nftables netcat-openbsd
	strongswan-charon strongswan-swanctl libcharon-extra-plugins
	libstrongswan-standard-plugins
	trace-cmd linux-perf xz-utils
	prometheus-node-exporter prometheus curl
)
metas=(linux-headers-amd64 linux-headers-6.12-amd64)
trixie=()
for k in ${XNC_KLINE:-} ${XNC_DEPS_KERNELS:-}; do
	case $k in
	13 | 13-rt | 7.3) trixie+=("$k") ;;
	*-rt)
		meta=$(XNC_KLINE=$k "$(dirname "$0")/kernel.sh" headers) || exit 1
		pkgs+=("$meta") metas+=("$meta")
		;;
	esac
done

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
# a metapackage may point at a newer ABI than the installed headers
if [ ${#missing[@]} -eq 0 ]; then
	for meta in "${metas[@]}"; do
		want=$(apt-cache depends "$meta" 2>/dev/null |
		       sed -n 's/^ *Depends: //p' | head -n1)
		[ -n "$want" ] && ! dpkg-query -W -f='${Status}' "$want" 2>/dev/null |
			grep -q 'install ok installed' && missing+=("$want")
	done
fi
# qemu 10 or later, for multi-threaded TCG (bookworm's own 7.2 hangs the
# guest in kernel text patching there: scripts/vm.sh); on bookworm it comes
# from bookworm-backports.  Without it vm.sh runs single-threaded, slower.
qemu_major() {
	qemu-system-x86_64 --version 2>/dev/null | sed -n '1s/.*version \([0-9]*\)\..*/\1/p'
}
new_qemu=
if ! [ "$(qemu_major)" -ge 10 ] 2>/dev/null; then
	new_qemu=1
	# installed below, from backports: not first bookworm's own
	for i in "${!missing[@]}"; do
		[ "${missing[$i]}" = qemu-system-x86 ] && unset "missing[$i]"
	done
fi

# (ready needs no network: it reads the root's own package lists)
trs=$(dirname "$0")/trixie-root.sh
if [ ${#trixie[@]} -gt 0 ] && ! "$trs" ready "${trixie[@]}" 2>/dev/null; then
	echo "deps: setting up the Debian 13 root for ${trixie[*]} ($trs)"
	"$trs" create >/dev/null
	"$trs" guest >/dev/null
	"$trs" headers "${trixie[@]}" >/dev/null
fi

if [ ${#missing[@]} -eq 0 ] && [ -z "$new_qemu" ]; then
	echo "deps: all present"
	exit 0
fi

export DEBIAN_FRONTEND=noninteractive
if [ -n "$new_qemu" ] && grep -qs '^VERSION_CODENAME=bookworm$' /etc/os-release; then
	grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/ ||
		echo 'deb http://deb.debian.org/debian bookworm-backports main' \
			>/etc/apt/sources.list.d/xnc-bookworm-backports.list
fi
apt-get update -qq
# a test host: start none of the services the packages bring (strongSwan's
# charon, prometheus, node_exporter); the tests start what they need
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod 755 /usr/sbin/policy-rc.d
	trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}"
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ -n "$new_qemu" ]; then
	echo "deps: installing qemu-system-x86 from bookworm-backports"
	apt-get install -y -qq --no-install-recommends -t bookworm-backports \
		qemu-system-x86 >/dev/null || {
		echo "deps: no qemu 10 or later: scripts/vm.sh runs single-threaded TCG, slower" >&2
		apt-get install -y -qq --no-install-recommends qemu-system-x86 >/dev/null
	}
fi
echo "deps: done ($(qemu-system-x86_64 --version | head -n1))"
