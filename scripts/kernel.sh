#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Resolve the Debian kernel of a kernel (6.1, 6.12, or the real-time
# flavor of either: 6.1-rt, 6.12-rt; Debian 13's 13, 13-rt, 7.3) that
# matches the installed headers, and make sure its unsigned image is
# extracted (with depmod run) in the cache.
#
#   scripts/kernel.sh version   print e.g. 6.1.0-57-amd64, 6.1.0-57-rt-amd64
#   scripts/kernel.sh kdir      print the headers build dir
#   scripts/kernel.sh image     fetch+extract if needed, print the image root
#   scripts/kernel.sh name      print the kernel: 6.1, 6.12, 6.1-rt, 6.12-rt,
#                               13, 13-rt, 7.3
#   scripts/kernel.sh line      print its upstream line (6.1, 6.12, 7.3)
#   scripts/kernel.sh flavor    print "rt" for a real-time kernel, else ""
#   scripts/kernel.sh source [--cached]  print "TARBALL VERSION" of the
#                               line's linux-source: bookworm's installed
#                               package, Debian 13's fetched into the cache
#                               (trixie-source.sh; with
#                               --cached only a cached one); XNC_KSRC_TARBALL
#                               names another tarball
#   scripts/kernel.sh srcpkg    print its package (linux-source-<line>)
#   scripts/kernel.sh headers   print the kernel's headers metapackage
#   scripts/kernel.sh root      print the Debian root its modules build in
#                               and its guest runs on: / or the trixie root
#   scripts/kernel.sh bkdir     print kdir as build's CMD sees it
#   scripts/kernel.sh build CMD...  run CMD in that root (this repo is at
#                               the same path there)
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
# Debian 13's kernels live in the trixie root (scripts/trixie-root.sh,
# $XNC_CACHE/trixie-root), whose own package lists resolve them: 13 is
# trixie's linux-headers-amd64 (6.12, trixie-security's when newer), 13-rt
# its linux-headers-rt-amd64, 7.3 trixie-backports' linux-headers-amd64
# (refused once backports moves to another line).  A bookworm host cannot
# build for them (gcc-14, their kbuild needs a newer glibc): kdir is the
# headers in the root, which build runs make in; the guest runs on that
# root too (scripts/vm.sh).  7.x has no -unsigned image: the guest boots
# linux-image-<version>'s linux-binary, -modules and -base packages.
#
# XNC_KVER=VERSION with XNC_KVER_OF=NAME gives kernel NAME's version as a
# caller resolved it (tests/run.sh, once per run), without asking again.
#
# XNC_KERNEL=DIR selects a kernel built by scripts/debug-kernel.sh instead
# (DIR as that script prints it): version, kdir and image then print its
# release, its build tree and DIR/root, laid out like an extracted image,
# and nothing is fetched.  Its kernel is that of its release (a release
# ending in -rt is a real-time one); an XNC_KLINE that says otherwise is an
# error.

set -euo pipefail

XNC_CACHE=${XNC_CACHE:-/var/cache/xfrm_nocache}
KERNELS="6.1 6.12 6.1-rt 6.12-rt 13 13-rt 7.3"
here=$(cd "$(dirname "$0")" && pwd)
# scripts/trixie-root.sh's
troot=$XNC_CACHE/trixie-root

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
	6.1|6.12|6.1-rt|6.12-rt|13|13-rt|7.3) echo "$l" ;;
	*) die "XNC_KLINE (make's KERNEL) is '$l': the kernels are ${KERNELS// /, }" ;;
	esac
}

# the headers metapackage that names the kernel's current ABI
metapkg() {
	case $1 in
	6.1) echo linux-headers-amd64 ;;
	6.1-rt | 13-rt) echo linux-headers-rt-amd64 ;;
	13 | 7.3) echo linux-headers-amd64 ;;
	*) echo "linux-headers-$1-amd64" ;;
	esac
}

kver() {
	local meta dep
	if [ -n "${XNC_KERNEL:-}" ]; then
		cat "$XNC_KERNEL/kernelrelease"
		return
	fi
	# resolved once by the caller (tests/run.sh) for this kernel
	if [ -n "${XNC_KVER:-}" ] && [ "${XNC_KVER_OF:-}" = "$name" ]; then
		echo "$XNC_KVER"
		return
	fi
	if [ -n "$trixie" ]; then
		dep=$("$here/trixie-root.sh" resolve "$name") ||
			die "cannot resolve kernel $name in the trixie root (XNC_DEPS_KERNELS=$name scripts/deps.sh sets it up)"
		echo "${dep%% *}"
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
	if [ -n "$trixie" ]; then
		# with the root's apt, never this machine's
		echo "kernel.sh: fetching the image of $ver from the trixie root" >&2
		"$here/trixie-root.sh" image "$name" "$dir" >/dev/null ||
			die "could not fetch the image of $ver"
	else
		echo "kernel.sh: fetching linux-image-$ver-unsigned" >&2
		(cd "$dir" && apt-get download -q "linux-image-$ver-unsigned" >&2) ||
			die "apt-get download linux-image-$ver-unsigned failed"
	fi
	for deb in "$dir"/*.deb; do
		dpkg-deb -x "$deb" "$dir/root"
		rm -f "$deb"
	done
	# Debian 13's packages are /usr-merged (/usr/lib/modules), and 7.x
	# keeps vmlinuz there too: the layout the VM expects, as links
	[ -e "$dir/root/lib" ] || ln -s usr/lib "$dir/root/lib"
	if [ ! -e "$dir/root/boot/vmlinuz-$ver" ] && [ -f "$dir/root/lib/modules/$ver/vmlinuz" ]; then
		mkdir -p "$dir/root/boot"
		ln -s "../lib/modules/$ver/vmlinuz" "$dir/root/boot/vmlinuz-$ver"
	fi
	[ -f "$dir/root/boot/vmlinuz-$ver" ] || die "no vmlinuz in the package"
	depmod -b "$dir/root" "$ver"
	touch "$dir/.ready"
	echo "$dir/root"
}

# ksource [--cached]: "TARBALL VERSION" of the line's linux-source
ksource() {
	local tb=${XNC_KSRC_TARBALL:-} pkg=linux-source-$line v='' f
	if [ -n "$tb" ]; then
		# the version its name gives, as the fetchers name theirs; else
		# the installed package's (Debian 12), else its own
		case ${tb##*/} in "${pkg}_"?*.tar.xz)
			v=${tb##*/"${pkg}_"}
			v=${v%.tar.xz} ;;
		esac
		[ -n "$v" ] || [ -n "$trixie" ] ||
			v=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || true)
		[ -n "$v" ] || [ ! -r "$tb" ] ||
			v=local-$(stat -Lc '%s %Y' "$tb" | md5sum | cut -c1-8)
		[ -n "$v" ] || die "$tb missing"
		echo "$tb $v"
		return
	fi
	if [ -z "$trixie" ]; then
		v=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || true)
		[ -n "$v" ] || die "$pkg is not installed (run scripts/deps.sh)"
		echo "/usr/src/$pkg.tar.xz $v"
		return
	fi
	f=$here/trixie-source.sh
	"$f" --cached "$line" && return
	[ "${1:-}" != --cached ] || die "no $pkg in the cache ($f $line fetches it)"
	"$f" "$line" || die "could not fetch $pkg ($f $line)"
}

# bkdir: the headers dir in the kernel's root
bkdir() {
	local d
	if [ -n "${XNC_KERNEL:-}" ]; then
		echo "$XNC_KERNEL/linux"
		return
	fi
	d=/usr/src/linux-headers-$(kver) || exit 1
	[ -d "${groot%/}$d" ] || case $trixie in
	"") die "$d missing (run scripts/deps.sh)" ;;
	*) die "${groot%/}$d missing (scripts/trixie-root.sh headers $name, or XNC_DEPS_KERNELS=$name scripts/deps.sh)" ;;
	esac
	echo "$d"
}

name=$(kname) || exit 1
line=${name%-rt}
flavor=
[ "$name" = "$line" ] || flavor=rt
trixie='' groot=/
case $line in
13) trixie=1 line=6.12 groot=$troot ;;
7.3) trixie=1 groot=$troot ;;
esac
case "${1:-}" in
version) kver ;;
kdir) d=$(bkdir) && echo "${groot%/}$d" ;;
bkdir) bkdir ;;
root) echo "$groot" ;;
build)
	shift
	[ $# -gt 0 ] || die "usage: $0 build CMD..."
	[ -n "$trixie" ] || exec "$@"
	exec "$here/trixie-root.sh" run "$@"
	;;
image) image ;;
name) echo "$name" ;;
line) echo "$line" ;;
flavor) echo "$flavor" ;;
headers) metapkg "$name" ;;
source) ksource "${2:-}" ;;
srcpkg) echo "linux-source-$line" ;;
*) die "usage: $0 version|kdir|bkdir|root|build|image|name|line|flavor|source|srcpkg|headers" ;;
esac
