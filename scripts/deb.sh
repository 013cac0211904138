#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the Debian package xfrm-nocache-dkms (debian/): source and binary,
# with dpkg-buildpackage, in a copy of the tree under /tmp (it writes its
# results next to the tree it builds), check them all with lintian, and put
# them in DIST (default: dist/ in the tree).
#
#   scripts/deb.sh [DIST]
#
# What is built is the git work tree's tracked files, and new ones git
# does not ignore, as they are now (no build products, no test results).
# Fails if lintian reports an error (E:); then DIST gets no package.
# Lintian's whole output (errors, warnings, information tags) is printed and
# kept in DIST/lintian.txt, dpkg-buildpackage's in DIST/build.log.  The last
# line printed is the .deb's path.
#
# Where it builds: XNC_DEB_ROOT=host with this machine's dpkg-dev, debhelper,
# dh-dkms and lintian; XNC_DEB_ROOT=trixie with Debian 13's, in the trixie
# root (scripts/trixie-root.sh run: as root; the copy of the tree is in the
# root's /tmp, DIST may be anywhere).  By default the system XNC_KLINE's
# kernel builds on (scripts/kernel.sh root): the trixie root for 13, 13-rt
# and 7.3 (make deb KERNEL=13), this machine for the others.

set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "deb.sh: $*" >&2; exit 1; }

dist=${1:-$top/dist}
mkdir -p "$dist"
dist=$(cd "$dist" && pwd)
cd "$top"

where=${XNC_DEB_ROOT:-}
if [ -z "$where" ]; then
	where=host
	if [ -n "${XNC_KLINE:-}" ]; then
		# (a debug kernel, XNC_KERNEL, is of Debian 12's lines)
		r=$(XNC_KERNEL='' scripts/kernel.sh root) || die "XNC_KLINE=$XNC_KLINE: no kernel"
		[ "$r" = / ] || where=trixie
	fi
fi
# groot: the build system's / as this machine sees it
case $where in
host) groot= ;;
trixie)
	groot=$(scripts/trixie-root.sh path)
	[ -f "$groot/.xnc-created" ] ||
		die "no trixie root in $groot: scripts/trixie-root.sh create"
	;;
*) die "XNC_DEB_ROOT is '$where': host or trixie" ;;
esac

# on DIR CMD...: CMD in DIR (as the build system sees it), on that system
on() {
	local d=$1
	shift
	if [ "$where" = host ]; then
		(cd "$d" && "$@")
	else
		# (this repository is at the same path in the root)
		# shellcheck disable=SC2016 # expanded by the inner shell
		scripts/trixie-root.sh run sh -c 'cd "$1" && shift && exec "$@"' sh "$d" "$@"
	fi
}

# the tools, and what the build is made with (one call: each in the root
# mounts and unmounts)
# shellcheck disable=SC2016 # expanded by the inner shell
sys=$(on / sh -c '
	for t in dpkg-buildpackage dpkg-parsechangelog dh dh_dkms lintian; do
		command -v "$t" >/dev/null || echo "missing $t"
	done
	echo "Debian $(cat /etc/debian_version):" \
		$(dpkg-query -W -f "\${Package} \${Version}, " debhelper dh-dkms lintian 2>/dev/null)') ||
	die "cannot run in the $where system"
if grep -q '^missing ' <<<"$sys"; then
	case $where in
	host) die "no $(sed -n 's/^missing //p' <<<"$sys" | paste -sd' '): install debhelper, dh-dkms and lintian (scripts/deps.sh)" ;;
	*) die "no $(sed -n 's/^missing //p' <<<"$sys" | paste -sd' ') in $groot: scripts/trixie-root.sh create installs them" ;;
	esac
fi
sys=${sys%,}
# what git tracks or would track is the source: the build products and test
# results it ignores stay out
git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
	die "$top is not a git work tree: make deb builds what git tracks"

# The package's upstream version is the DKMS module's version: dh_dkms
# puts the tree in /usr/src/xfrm_nocache-<dkms.conf's PACKAGE_VERSION>
# (debian/rules refuses a difference too).
cl=$(on "$top" dpkg-parsechangelog)
src=$(sed -n 's/^Source: //p' <<<"$cl")
ver=$(sed -n 's/^Version: //p' <<<"$cl")
if [ -z "$src" ] || [ -z "$ver" ]; then
	die "dpkg-parsechangelog: no Source or Version in debian/changelog"
fi
upver=${ver#*:}
upver=${upver%-*}
dkver=$(sed -n "s/^PACKAGE_VERSION=[\"']\{0,1\}\([^\"']*\).*/\1/p" dkms.conf)
[ "$upver" = "$dkver" ] ||
	die "debian/changelog's version is $ver, dkms.conf's PACKAGE_VERSION $dkver: the upstream version must be the same"

# tmp: this machine's path; itmp: the build system's
tmp=$(mktemp -d "$groot/tmp/xnc-deb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
itmp=${tmp#"$groot"}
tree=$tmp/$src-$upver
mkdir "$tree"
while IFS= read -r -d '' f; do
	# (a tracked file deleted in the work tree is left out)
	if [ -e "$f" ] || [ -L "$f" ]; then
		printf '%s\0' "$f"
	fi
done < <(git ls-files -z --cached --others --exclude-standard) |
	tar -c --null -T - -f - | tar -x -C "$tree" -f -

dirty=$(git status --porcelain --untracked-files=normal | cut -c4- | paste -sd' ')
[ -z "$dirty" ] || echo "deb.sh: note: uncommitted changes go into the package's source: $dirty"
case $where in
host) echo "deb.sh: on this machine, $sys" ;;
*) echo "deb.sh: in the trixie root $groot, $sys" ;;
esac
echo "deb.sh: dpkg-buildpackage of $src $ver in $itmp/$src-$upver"
rm -f "$dist/build.log" "$dist/lintian.txt" "$dist/${src}"_* "$dist/${src}"-*_*
if ! on "$itmp/$src-$upver" dpkg-buildpackage -us -uc --build=full >"$dist/build.log" 2>&1; then
	tail -n 30 "$dist/build.log" >&2
	die "dpkg-buildpackage failed: see $dist/build.log"
fi

changes=$(cd "$tmp" && ls ./*.changes)
changes=${changes#./}
echo "deb.sh: lintian $changes"
rc=0
on "$itmp" lintian --display-info --fail-on error "$changes" >"$dist/lintian.txt" 2>&1 || rc=$?
cat "$dist/lintian.txt"
if [ $rc -ne 0 ] || grep -q '^E: ' "$dist/lintian.txt"; then
	die "lintian: $(grep -c '^E: ' "$dist/lintian.txt") errors (exit $rc): no package in $dist"
fi
echo "deb.sh: lintian: no errors, $(grep -c '^W: ' "$dist/lintian.txt") warnings," \
	"$(grep -c '^I: ' "$dist/lintian.txt") information tags"

# the .changes, and every file it lists
files=$(awk '/^Files:/ { f = 1; next } /^[^ ]/ { f = 0 } f { print $NF }' "$tmp/$changes")
for f in $changes $files; do
	cp "$tmp/$f" "$dist/"
done
for f in $files; do
	case $f in
	*.deb) echo "deb.sh: $dist/$f" ;;
	esac
done
