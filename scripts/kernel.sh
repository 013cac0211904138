#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Resolve the Debian kernel of a kernel (6.1, 6.12, or the real-time
# flavor of either: 6.1-rt, 6.12-rt) that matches the installed headers,
# and make sure its unsigned image is extracted (with depmod run) in the
# cache.
#
#   scripts/kernel.sh version   print e.g. 6.1.0-57-amd64, 6.1.0-57-rt-amd64
#   scripts/kernel.sh kdir      print the headers build dir
#   scripts/kernel.sh image     fetch+extract if needed, print the image root
#   scripts/kernel.sh name      print the kernel: 6.1, 6.12, 6.1-rt, 6.12-rt
#   scripts/kernel.sh line      print its kernel line (6.1 or 6.12)
#   scripts/kernel.sh flavor    print "rt" for a real-time kernel, else ""
#   scripts/kernel.sh source    print the line's source tarball
#                               (/usr/src/linux-source-<line>.tar.xz)
#   scripts/kernel.sh srcpkg    print its package (linux-source-<line>)
#   scripts/kernel.sh headers   print the kernel's headers metapackage
#
# The kernel comes from XNC_KLINE (6.1, the default; make's KERNEL).  The
# version always comes from a Debian metapackage, so a point release moves
# everything (headers, image, guest) at once: linux-headers-amd64 for 6.1
# (bookworm's own kernel; it must resolve to a 6.1 ABI),
# linux-headers-6.12-amd64 for 6.12 (bookworm's 6.12 LTS kernel),
# linux-headers-rt-amd64 and linux-headers-6.12-rt-amd64 for their
# PREEMPT_RT flavors.  The guest boots linux-image-<version>-unsigned.
# Cache: $XNC_CACHE (default /var/cache/xfrm_nocache), outside the repo,
# keyed by version.
#
# XNC_KERNEL=DIR selects a kernel built by scripts/debug-kernel.sh instead
# (DIR as that script prints it): version, kdir and image then print its
# release, its build tree and DIR/root, laid out like an extracted image,
# and nothing is fetched.  Its kernel is that of its release (a release
# ending in -rt is a real-time one); an XNC_KLINE that says otherwise is an
# error.

set -euo pipefail

XNC_CACHE=${XNC_CACHE:-/var/cache/xfrm_nocache}
KERNELS="6.1 6.12 6.1-rt 6.12-rt"

die() { echo "kernel.sh: $*" >&2; exit 1; }

# the kernel asked for, checked: LINE or LINE-rt
kname() {
	local l=${XNC_KLINE:-} rel name
	if [ -n "${XNC_KERNEL:-}" ]; then
		[ -f "$XNC_KERNEL/.ready" ] ||
			die "XNC_KERNEL=$XNC_KERNEL is not a built kernel (run make debug-kernel)"
		rel=$(cat "$XNC_KERNEL/kernelrelease")
		name=$(echo "$rel" | sed -n 's/^\([0-9]*\.[0-9]*\)[.-].*/\1/p')
		case $rel in *-rt) name=$name-rt ;; esac
		[ -z "$l" ] || [ "$l" = "$name" ] ||
			die "XNC_KLINE=$l, but XNC_KERNEL=$XNC_KERNEL is a $name kernel"
		echo "$name"
		return
	fi
	case ${l:=6.1} in
	6.1|6.12|6.1-rt|6.12-rt) echo "$l" ;;
	*) die "XNC_KLINE (make's KERNEL) is '$l': the kernels are ${KERNELS// /, }" ;;
	esac
}

# the headers metapackage that names the kernel's current ABI
metapkg() {
	case $1 in
	6.1) echo linux-headers-amd64 ;;
	6.1-rt) echo linux-headers-rt-amd64 ;;
	*) echo "linux-headers-$1-amd64" ;;
	esac
}

kver() {
	local meta dep
	if [ -n "${XNC_KERNEL:-}" ]; then
		cat "$XNC_KERNEL/kernelrelease"
		return
	fi
	meta=$(metapkg "$name")
	dep=$(apt-cache depends "$meta" 2>/dev/null |
	      sed -n 's/^ *Depends: linux-headers-\(.*-amd64\)$/\1/p' | head -n1)
	[ -n "$dep" ] || die "cannot resolve the $name kernel version from 'apt-cache depends $meta' (run scripts/deps.sh, or apt-get update)"
	case $dep in
	"$line".*) ;;
	*) die "$meta depends on linux-headers-$dep, not a $line.x kernel: kernel $name needs a metapackage of that line (is this Debian bookworm?)" ;;
	esac
	case $flavor:$dep in
	:*-rt-amd64) die "$meta depends on linux-headers-$dep, a real-time kernel: use KERNEL=$line-rt" ;;
	rt:*-rt-amd64 | :*) ;;
	*) die "$meta depends on linux-headers-$dep, not a real-time (-rt-amd64) kernel" ;;
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

name=$(kname) || exit 1
line=${name%-rt}
flavor=
[ "$name" = "$line" ] || flavor=rt
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
name) echo "$name" ;;
line) echo "$line" ;;
flavor) echo "$flavor" ;;
headers) metapkg "$name" ;;
source) echo "/usr/src/linux-source-$line.tar.xz" ;;
srcpkg) echo "linux-source-$line" ;;
*) die "usage: $0 version|kdir|image|name|line|flavor|source|srcpkg|headers" ;;
esac
