#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Resolve the Debian kernel that matches the installed headers, and make
# sure its unsigned image is extracted (with depmod run) in the cache.
#
#   scripts/kernel.sh version   print e.g. 6.1.0-57-amd64
#   scripts/kernel.sh kdir      print the headers build dir
#   scripts/kernel.sh image     fetch+extract if needed, print the image root
#
# The version always comes from the linux-headers-amd64 metapackage, so a
# point release of Debian moves everything (headers, image, guest) at once.
# Cache: $XNC_CACHE (default /var/cache/xfrm_nocache), outside the repo.
#
# XNC_KERNEL=DIR selects a kernel built by scripts/debug-kernel.sh instead
# (DIR as that script prints it): the three commands then print its
# release, its build tree and DIR/root, laid out like an extracted image,
# and nothing is fetched.

set -euo pipefail

XNC_CACHE=${XNC_CACHE:-/var/cache/xfrm_nocache}

die() { echo "kernel.sh: $*" >&2; exit 1; }

kver() {
	local dep
	if [ -n "${XNC_KERNEL:-}" ]; then
		[ -f "$XNC_KERNEL/.ready" ] ||
			die "XNC_KERNEL=$XNC_KERNEL is not a built kernel (run make debug-kernel)"
		cat "$XNC_KERNEL/kernelrelease"
		return
	fi
	dep=$(apt-cache depends linux-headers-amd64 2>/dev/null |
	      sed -n 's/^ *Depends: linux-headers-\(.*-amd64\)$/\1/p' | head -n1)
	[ -n "$dep" ] || die "cannot resolve the kernel version from 'apt-cache depends linux-headers-amd64' (run scripts/deps.sh, or apt-get update)"
	echo "$dep"
}

image() {
	local ver dir deb
	ver=$(kver)
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

case "${1:-}" in
version) kver ;;
kdir)
	if [ -n "${XNC_KERNEL:-}" ]; then
		kver >/dev/null
		echo "$XNC_KERNEL/linux"
		exit 0
	fi
	d=/usr/src/linux-headers-$(kver)
	[ -d "$d" ] || die "$d missing (run scripts/deps.sh)"
	echo "$d"
	;;
image) image ;;
*) die "usage: $0 version|kdir|image" ;;
esac
