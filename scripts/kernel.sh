#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Resolve the Debian kernel of a kernel line (6.1 or 6.12) that matches the
# installed headers, and make sure its unsigned image is extracted (with
# depmod run) in the cache.
#
#   scripts/kernel.sh version   print e.g. 6.1.0-57-amd64
#   scripts/kernel.sh kdir      print the headers build dir
#   scripts/kernel.sh image     fetch+extract if needed, print the image root
#   scripts/kernel.sh line      print the kernel line (6.1 or 6.12)
#   scripts/kernel.sh source    print the line's source tarball
#                               (/usr/src/linux-source-<line>.tar.xz)
#   scripts/kernel.sh srcpkg    print its package (linux-source-<line>)
#
# The line comes from XNC_KLINE (6.1, the default, or 6.12; make's KERNEL).
# The version always comes from a Debian metapackage, so a point release
# moves everything (headers, image, guest) at once: linux-headers-amd64 for
# 6.1 (bookworm's own kernel; it must resolve to a 6.1 ABI),
# linux-headers-6.12-amd64 for 6.12 (bookworm's 6.12 LTS kernel).  The
# guest boots linux-image-<version>-unsigned.
# Cache: $XNC_CACHE (default /var/cache/xfrm_nocache), outside the repo,
# keyed by version.
#
# XNC_KERNEL=DIR selects a kernel built by scripts/debug-kernel.sh instead
# (DIR as that script prints it): version, kdir and image then print its
# release, its build tree and DIR/root, laid out like an extracted image,
# and nothing is fetched.  Its line is that of its release; an XNC_KLINE
# that says otherwise is an error.

set -euo pipefail

XNC_CACHE=${XNC_CACHE:-/var/cache/xfrm_nocache}
LINES="6.1 6.12"

die() { echo "kernel.sh: $*" >&2; exit 1; }

# the kernel line asked for, checked
kline() {
	local l=${XNC_KLINE:-} rel
	if [ -n "${XNC_KERNEL:-}" ]; then
		[ -f "$XNC_KERNEL/.ready" ] ||
			die "XNC_KERNEL=$XNC_KERNEL is not a built kernel (run make debug-kernel)"
		rel=$(cat "$XNC_KERNEL/kernelrelease")
		rel=$(echo "$rel" | sed -n 's/^\([0-9]*\.[0-9]*\)[.-].*/\1/p')
		[ -z "$l" ] || [ "$l" = "$rel" ] ||
			die "XNC_KLINE=$l, but XNC_KERNEL=$XNC_KERNEL is a $rel kernel"
		echo "$rel"
		return
	fi
	case ${l:=6.1} in
	6.1|6.12) echo "$l" ;;
	*) die "XNC_KLINE (make's KERNEL) is '$l': the kernel lines are ${LINES// / and }" ;;
	esac
}

# the headers metapackage that names the line's current ABI
metapkg() {
	case $1 in
	6.1) echo linux-headers-amd64 ;;
	*) echo "linux-headers-$1-amd64" ;;
	esac
}

kver() {
	local meta dep
	if [ -n "${XNC_KERNEL:-}" ]; then
		cat "$XNC_KERNEL/kernelrelease"
		return
	fi
	meta=$(metapkg "$line")
	dep=$(apt-cache depends "$meta" 2>/dev/null |
	      sed -n 's/^ *Depends: linux-headers-\(.*-amd64\)$/\1/p' | head -n1)
	[ -n "$dep" ] || die "cannot resolve the $line kernel version from 'apt-cache depends $meta' (run scripts/deps.sh, or apt-get update)"
	case $dep in
	"$line".*) ;;
	*) die "$meta depends on linux-headers-$dep, not a $line.x kernel: kernel line $line needs a metapackage of that line (is this Debian bookworm?)" ;;
	esac
	echo "$dep"
}

image() {
	local ver dir deb
	ver=$(kver) || exit 1
	if [ -n "${XNC_KERNEL:-}" ]; then
		echo "$XNC_KERNEL/root"
		return
	fi
	dir=$XNC_CACHE/$ver
	if [ -f "$dir/.ready" ]; then
		echo "$dir/root"
		return
	fi
	mkdir -p "$dir"
	# two runs (two kernel lines, or two make checks) must not extract
	# into the same place at once
	exec 7>"$dir/.lock"
	flock 7
	if [ -f "$dir/.ready" ]; then
		echo "$dir/root"
		return
	fi
	rm -rf "$dir/root" "$dir"/*.deb
	echo "kernel.sh: fetching linux-image-$ver-unsigned" >&2
	(cd "$dir" && apt-get download -q "linux-image-$ver-unsigned" >&2) ||
		die "apt-get download linux-image-$ver-unsigned failed"
	deb=$(ls "$dir"/linux-image-"$ver"-unsigned_*.deb)
	dpkg-deb -x "$deb" "$dir/root"
	rm -f "$deb"
	[ -f "$dir/root/boot/vmlinuz-$ver" ] || die "no vmlinuz in the package"
	depmod -b "$dir/root" "$ver"
	touch "$dir/.ready"
	echo "$dir/root"
}

line=$(kline) || exit 1
case "${1:-}" in
version) kver ;;
kdir)
	if [ -n "${XNC_KERNEL:-}" ]; then
		echo "$XNC_KERNEL/linux"
		exit 0
	fi
	d=/usr/src/linux-headers-$(kver) || exit 1
	[ -d "$d" ] || die "$d missing (run scripts/deps.sh)"
	echo "$d"
	;;
image) image ;;
line) echo "$line" ;;
source) echo "/usr/src/linux-source-$line.tar.xz" ;;
srcpkg) echo "linux-source-$line" ;;
*) die "usage: $0 version|kdir|image|line|source|srcpkg" ;;
esac
