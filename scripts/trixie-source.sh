#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Debian 13 trixie's own linux-source-6.12, for make drift
# (scripts/drift.py): the host's 6.12 is bookworm's backport, and trixie's
# kernel of the same line is a second release the record can name.
#
#   scripts/trixie-source.sh           newest in trixie, fetched if not cached;
#                                      prints "TARBALL VERSION"
#   scripts/trixie-source.sh --cached  the cached one, no network; exit 1
#                                      (and print nothing) if there is none
#
# The host's apt configuration is left alone: a private apt state under
# $XNC_CACHE/trixie-apt (default XNC_CACHE /var/cache/xfrm_nocache) with
# its own sources list, package lists, cache and an empty dpkg status, so
# trixie's version is the candidate whatever the host has installed.  The
# sources are trixie main and trixie-security main, as a trixie system has
# them (signed by debian-archive-keyring's trixie keys): a kernel update
# reaches trixie through its security archive first, and through main
# only at the next point release, so the newest version is the security
# archive's while it has one.  XNC_TRIXIE_SUITES="trixie" leaves the
# security archive out.  The .deb is
# unpacked to the tarball it carries, kept as
# trixie-apt/linux-source-6.12_VERSION.tar.xz, and removed; an older
# tarball goes when a newer one arrives.  Offline, the cached tarball is
# used, with a warning.  Idempotent: a second run only refreshes the
# package list (seconds).

set -euo pipefail
XNC_CACHE=${XNC_CACHE:-/var/cache/xfrm_nocache}
dir=$XNC_CACHE/trixie-apt
pkg=linux-source-6.12
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

die() { echo "trixie-source.sh: $*" >&2; exit 2; }

# cached: print "TARBALL VERSION" of the cached tarball, or fail
cached() {
	local tb ver
	[ -f "$dir/current" ] || return 1
	read -r tb ver <"$dir/current" || return 1
	[ -f "$tb" ] || return 1
	echo "$tb $ver"
}

case ${1:-} in
--cached)
	cached || exit 1
	exit 0
	;;
"") ;;
*) die "usage: $0 [--cached]" ;;
esac

mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/parts" "$dir/deb"
exec 9>"$dir/lock"
flock 9
[ -f "$keyring" ] || die "$keyring missing (apt-get install debian-archive-keyring)"
gpg --show-keys "$keyring" 2>/dev/null | grep -q '(13/trixie)' ||
	die "$keyring has no trixie key (a newer debian-archive-keyring is needed)"
suites=${XNC_TRIXIE_SUITES:-trixie trixie-security}
: >"$dir/sources.list.new"
for s in $suites; do
	case $s in
	trixie | trixie-updates) url=http://deb.debian.org/debian ;;
	trixie-security) url=http://deb.debian.org/debian-security ;;
	*) die "XNC_TRIXIE_SUITES: '$s' is not trixie, trixie-updates or trixie-security" ;;
	esac
	echo "deb [signed-by=$keyring] $url $s main" >>"$dir/sources.list.new"
done
mv "$dir/sources.list.new" "$dir/sources.list"
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
	-o "APT::Architecture=amd64")

if ! apt-get "${apt_opts[@]}" update >"$dir/update.log" 2>&1; then
	if cached; then
		echo "trixie-source.sh: apt-get update failed (see $dir/update.log): using the cached tarball" >&2
		exit 0
	fi
	die "apt-get update of trixie failed: $(tail -n1 "$dir/update.log")"
fi
ver=$(apt-cache "${apt_opts[@]}" policy "$pkg" | sed -n 's/^ *Candidate: //p')
case $ver in "" | "(none)") die "trixie has no $pkg" ;; esac
tb=$dir/${pkg}_$ver.tar.xz
if [ ! -f "$tb" ]; then
	echo "trixie-source.sh: fetching $pkg $ver from trixie" >&2
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
echo "$tb $ver" >"$dir/current"
echo "$tb $ver"
