#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Debian 13's linux-source of a kernel line, fetched into the cache: for
# make drift (scripts/drift.py) and for what Debian 13's kernels build from
# their source (scripts/kernel.sh source: netdevsim, the selftests, the
# debug kernel).  Line 6.12 is trixie's own kernel line; any other comes
# from trixie-backports (7.3 now).
#
#   scripts/trixie-source.sh [LINE]           the newest, fetched if not
#                                             cached; prints "TARBALL VERSION"
#   scripts/trixie-source.sh --cached [LINE]  the cached one, no network;
#                                             exit 1 (printing nothing) if none
#
# LINE defaults to 6.12.  The host's apt configuration is left alone: a
# private apt state (sources list, package lists, cache, an empty dpkg
# status) under $XNC_CACHE (default /var/cache/xfrm_nocache), so Debian
# 13's version is the candidate whatever the host has installed:
# - 6.12, trixie-apt/: trixie main and trixie-security main, as a trixie
#   system has them.  A kernel update reaches trixie through its security
#   archive first and through main only at the next point release, so the
#   newest version is the security archive's while it has one;
#   XNC_TRIXIE_SUITES="trixie" leaves the security archive out.
# - another line, bpo-apt/: trixie-backports main.  The version is the one
#   backports' linux-source metapackage depends on, the newest build of
#   the line backports follows; once it follows another line, LINE is
#   refused (exit 2): that line is the one to port to.
# Both are signed by debian-archive-keyring's trixie keys.  The .deb is
# unpacked to the tarball it carries, kept as linux-source-LINE_VERSION.tar.xz
# beside the apt state (an older one of LINE goes when a newer one
# arrives), and removed.  Offline, the cached tarball is used, with a
# warning.  A second run only refreshes the package lists (seconds).

set -euo pipefail
XNC_CACHE=${XNC_CACHE:-/var/cache/xfrm_nocache}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

die() { echo "trixie-source.sh: $*" >&2; exit 2; }
usage() { die "usage: $0 [--cached] [LINE] (a kernel line: 6.12, 7.3)"; }

cached=
[ "${1:-}" != --cached ] || { cached=1; shift; }
[ $# -le 1 ] || usage
line=${1:-6.12}
[[ $line =~ ^[0-9]+\.[0-9]+$ ]] || usage
pkg=linux-source-$line
if [ "$line" = 6.12 ]; then
	dir=$XNC_CACHE/trixie-apt current=$dir/current
	suites=${XNC_TRIXIE_SUITES:-trixie trixie-security}
else
	dir=$XNC_CACHE/bpo-apt current=$dir/current-$line
	suites=trixie-backports
fi

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
: >"$dir/sources.list.new"
for s in $suites; do
	case $s in
	trixie | trixie-updates | trixie-backports) url=http://deb.debian.org/debian ;;
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
[ "$suites" != trixie-backports ] || apt_opts+=(-o "APT::Default-Release=trixie-backports")

if ! apt-get "${apt_opts[@]}" update >"$dir/update.log" 2>&1; then
	if cached; then
		echo "trixie-source.sh: apt-get update failed (see $dir/update.log): using the cached tarball" >&2
		exit 0
	fi
	die "apt-get update of $suites failed: $(tail -n1 "$dir/update.log")"
fi
if [ "$suites" = trixie-backports ]; then
	# the metapackage's newest build names the line and its version
	meta=$(apt-cache "${apt_opts[@]}" policy linux-source | sed -n 's/^ *Candidate: //p')
	case $meta in "" | "(none)") die "trixie-backports has no linux-source" ;; esac
	dep=$(apt-cache "${apt_opts[@]}" show "linux-source=$meta" | sed -n 's/^Depends: //p' |
		grep -o 'linux-source-[0-9][^ ,]* (= [^)]*)' | head -n1)
	[ -n "$dep" ] || die "linux-source $meta depends on no linux-source-<line> (= <version>)"
	have=${dep%% *}
	[ "$have" = "$pkg" ] ||
		die "linux-source $meta of trixie-backports is for line ${have#linux-source-}, not $line"
	ver=${dep#*(= }
	ver=${ver%)}
else
	ver=$(apt-cache "${apt_opts[@]}" policy "$pkg" | sed -n 's/^ *Candidate: //p')
	case $ver in "" | "(none)") die "$suites has no $pkg" ;; esac
fi
tb=$dir/${pkg}_$ver.tar.xz
if [ ! -f "$tb" ]; then
	echo "trixie-source.sh: fetching $pkg $ver from $suites" >&2
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
