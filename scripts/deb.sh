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

set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "deb.sh: $*" >&2; exit 1; }

dist=${1:-$top/dist}
mkdir -p "$dist"
dist=$(cd "$dist" && pwd)
cd "$top"

for t in dpkg-buildpackage dpkg-parsechangelog dh dh_dkms lintian; do
	command -v "$t" >/dev/null ||
		die "no $t: install debhelper, dh-dkms and lintian (scripts/deps.sh)"
done
# what git tracks or would track is the source: the build products and test
# results it ignores stay out
git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
	die "$top is not a git work tree: make deb builds what git tracks"

# The package's upstream version is the DKMS module's version: dh_dkms
# puts the tree in /usr/src/xfrm_nocache-<dkms.conf's PACKAGE_VERSION>
# (debian/rules refuses a difference too).
src=$(dpkg-parsechangelog -S Source)
ver=$(dpkg-parsechangelog -S Version)
upver=${ver#*:}
upver=${upver%-*}
dkver=$(sed -n "s/^PACKAGE_VERSION=[\"']\{0,1\}\([^\"']*\).*/\1/p" dkms.conf)
[ "$upver" = "$dkver" ] ||
	die "debian/changelog's version is $ver, dkms.conf's PACKAGE_VERSION $dkver: the upstream version must be the same"

tmp=$(mktemp -d /tmp/xnc-deb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
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
echo "deb.sh: dpkg-buildpackage of $src $ver in $tree"
rm -f "$dist/build.log" "$dist/lintian.txt" "$dist/${src}"_* "$dist/${src}"-*_*
if ! (cd "$tree" && dpkg-buildpackage -us -uc --build=full) >"$dist/build.log" 2>&1; then
	tail -n 30 "$dist/build.log" >&2
	die "dpkg-buildpackage failed: see $dist/build.log"
fi

changes=$(ls "$tmp"/*.changes)
echo "deb.sh: lintian $(basename "$changes")"
rc=0
lintian --display-info --fail-on error "$changes" >"$dist/lintian.txt" 2>&1 || rc=$?
cat "$dist/lintian.txt"
if [ $rc -ne 0 ] || grep -q '^E: ' "$dist/lintian.txt"; then
	die "lintian: $(grep -c '^E: ' "$dist/lintian.txt") errors (exit $rc): no package in $dist"
fi
echo "deb.sh: lintian: no errors, $(grep -c '^W: ' "$dist/lintian.txt") warnings," \
	"$(grep -c '^I: ' "$dist/lintian.txt") information tags"

# the .changes, and every file it lists
files=$(awk '/^Files:/ { f = 1; next } /^[^ ]/ { f = 0 } f { print $NF }' "$changes")
for f in $(basename "$changes") $files; do
	cp "$tmp/$f" "$dist/"
done
for f in $files; do
	case $f in
	*.deb) echo "deb.sh: $dist/$f" ;;
	esac
done
