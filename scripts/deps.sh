#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install what building and testing need on Debian bookworm.  Idempotent:
# does nothing (and needs no network) when everything is already there.

set -euo pipefail

pkgs=(
	build-essential bc bison flex libelf-dev libssl-dev dwarves kmod cpio
	linux-headers-amd64 linux-source-6.1 sparse dkms
	qemu-system-x86 busybox-static
	iproute2 iputils-ping ethtool iptables socat iperf3 gnuplot-nox
	strongswan-charon strongswan-swanctl libcharon-extra-plugins
	libstrongswan-standard-plugins
	trace-cmd
)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
# the metapackage may point at a newer ABI than the installed headers
if [ ${#missing[@]} -eq 0 ]; then
	want=$(apt-cache depends linux-headers-amd64 2>/dev/null |
	       sed -n 's/^ *Depends: //p' | head -n1)
	[ -n "$want" ] && ! dpkg-query -W "$want" >/dev/null 2>&1 && missing+=("$want")
fi
if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all present"
	exit 0
fi

echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done"
