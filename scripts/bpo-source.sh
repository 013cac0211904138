#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Debian 13 trixie-backports' linux-source-LINE, for make drift
# (scripts/drift.py): a kernel line bookworm has no source package of.
#
#   scripts/bpo-source.sh LINE           fetched if not cached; prints
#                                        "TARBALL VERSION"
#   scripts/bpo-source.sh --cached LINE  the cached one, no network; exit 1
#                                        (and print nothing) if there is none
#
# The version is the one backports' linux-source metapackage depends on:
# the newest build of the line backports follows.  Backports keeps older
# lines' builds too, but once it follows another line, LINE is refused
# (exit 2): that line is the one to port to.
#
# As scripts/trixie-source.sh: the host's apt configuration is left alone
# (a private apt state, $XNC_CACHE/bpo-apt, default XNC_CACHE
# /var/cache/xfrm_nocache, with only trixie-backports main in its sources
# and an empty dpkg status); the .deb is unpacked to the tarball it carries,
# kept as bpo-apt/linux-source-LINE_VERSION.tar.xz (an older one of LINE
# goes when a newer one arrives), and removed.  Offline, the cached tarball
# is used, with a warning.

set -euo pipefail
XNC_CACHE=${XNC_CACHE:-/var/cache/xfrm_nocache}
dir=$XNC_CACHE/bpo-apt
suite=trixie-backports
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

die() { echo "bpo-source.sh: $*" >&2; exit 2; }
usage() { die "usage: $0 [--cached] LINE (a kernel line: 7.3)"; }

cached=
[ "${1:-}" != --cached ] || { cached=1; shift; }
[ $# -eq 1 ] || usage
line=$1
[[ $line =~ ^[0-9]+\.[0-9]+$ ]] || usage
pkg=linux-source-$line
current=$dir/current-$line

# cached: print "TARBALL VERSION" of the cached tarball, or fail
cached() {
	local tb ver
	[ -f "$current" ] || return 1
	read -r tb ver <"$current" || return 1
	[ -f "$tb" ] || return 1
	echo "$tb $ver"
}

if [ -n "$cached" ]; then
	cached || exit 1
	exit 0
fi

mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/parts" "$dir/deb"
exec 9>"$dir/lock"
flock 9
[ -f "$keyring" ] || die "$keyring missing (apt-get install debian-archive-keyring)"
gpg --show-keys "$keyring" 2>/dev/null | grep -q '(13/trixie)' ||
	die "$keyring has no trixie key (a newer debian-archive-keyring is needed)"
echo "deb [signed-by=$keyring] http://deb.debian.org/debian $suite main" >"$dir/sources.list"
: >"$dir/status"
# apt fetches as _apt where it can write
if getent passwd _apt >/dev/null; then
	chown _apt "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/deb" 2>/dev/null || true
fi
apt_opts=(-q
	-o "Dir::Etc::SourceList=$dir/sources.list"
	-o "Dir::Etc::SourceParts=$dir/parts"
	-o "Dir::State::Lists=$dir/lists"
	-o "Dir::State::status=$dir/status"
	-o "Dir::Cache=$dir/cache"
	-o "APT::Architecture=amd64"
	-o "APT::Default-Release=$suite")

if ! apt-get "${apt_opts[@]}" update >"$dir/update.log" 2>&1; then
	if cached; then
		echo "bpo-source.sh: apt-get update failed (see $dir/update.log): using the cached tarball" >&2
		exit 0
	fi
	die "apt-get update of $suite failed: $(tail -n1 "$dir/update.log")"
fi
# the metapackage's newest build names the line and its version
meta=$(apt-cache "${apt_opts[@]}" policy linux-source | sed -n 's/^ *Candidate: //p')
case $meta in "" | "(none)") die "$suite has no linux-source" ;; esac
dep=$(apt-cache "${apt_opts[@]}" show "linux-source=$meta" | sed -n 's/^Depends: //p' |
	grep -o 'linux-source-[0-9][^ ,]* (= [^)]*)' | head -n1)
[ -n "$dep" ] || die "linux-source $meta depends on no linux-source-<line> (= <version>)"
have=${dep%% *}
[ "$have" = "$pkg" ] || die "linux-source $meta of $suite is for line ${have#linux-source-}, not $line"
ver=${dep#*(= }
ver=${ver%)}
tb=$dir/${pkg}_$ver.tar.xz
if [ ! -f "$tb" ]; then
	echo "bpo-source.sh: fetching $pkg $ver from $suite" >&2
	rm -f "$dir/deb"/*.deb
	(cd "$dir/deb" && apt-get "${apt_opts[@]}" download "$pkg=$ver" >&2) ||
		die "apt-get download $pkg=$ver failed"
	deb=$(ls "$dir/deb/${pkg}_"*.deb)
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$pkg.tar.xz" >"$tb.tmp" ||
		{ rm -f "$tb.tmp"; die "no usr/src/$pkg.tar.xz in $deb"; }
	mv "$tb.tmp" "$tb"
	rm -f "$deb"
fi
for old in "$dir/${pkg}_"*.tar.xz; do
	[ "$old" = "$tb" ] || rm -f "$old"
done
echo "$tb $ver" >"$current"
echo "$tb $ver"
