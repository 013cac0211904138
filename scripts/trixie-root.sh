#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A Debian 13 (trixie) build root, to build the module against trixie's
# kernel headers with trixie's gcc-14, as DKMS on Debian 13 would.  It is
# $XNC_CACHE/trixie-root (default XNC_CACHE /var/cache/xfrm_nocache); the
# host's apt sources are left alone, the root has its own.
#
#   scripts/trixie-root.sh create            debootstrap it once; then only
#                                            apt-get update and upgrade in it
#   scripts/trixie-root.sh headers LINE...   install LINE's headers in it,
#                                            print "LINE VERSION KDIR-IN-ROOT"
#   scripts/trixie-root.sh path              the root's path on this machine
#   scripts/trixie-root.sh kdir LINE         host path of LINE's headers
#   scripts/trixie-root.sh run CMD...        CMD in the root, this repo at the
#                                            same path, /proc and /dev mounted
#   scripts/trixie-root.sh make LINE [ARGS]  make ARGS of a scratch copy of
#                                            the work tree, in the root, against
#                                            LINE's headers; prints the .ko
#   scripts/trixie-root.sh guest             install what the guest tests run
#                                            (scripts/vm.sh boots Debian 13's
#                                            kernels on this root)
#   scripts/trixie-root.sh resolve LINE      print "ABI VERSION" of LINE's
#                                            kernel, from the root's lists
#   scripts/trixie-root.sh image LINE DIR    download the .debs of LINE's
#                                            image into DIR, print their paths
#   scripts/trixie-root.sh ready LINE...     exit 0 if the root, the guest's
#                                            packages and LINE's newest headers
#                                            are there (no network)
#
# LINE: 13 (trixie's linux-headers-amd64: trixie-security's if newer),
# 13-rt (linux-headers-rt-amd64), or trixie-backports' linux-headers-amd64
# named after its line (7, 7.3: refused if backports has another line;
# bpo: whatever it has); -rt after any of them for the rt flavor.

set -euo pipefail
XNC_CACHE=${XNC_CACHE:-/var/cache/xfrm_nocache}
root=$XNC_CACHE/trixie-root
top=$(cd "$(dirname "$0")/.." && pwd)
mirror=http://deb.debian.org/debian
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
lines=$root/var/lib/xnc-lines # "LINE ABI VERSION", written by headers
# the module's build (python3: scripts/klp-relocs.py, stdlib only), make lint
# (sparse, objdump, perl for checkpatch), make deb (git, debhelper, dh-dkms,
# lintian) and DKMS itself
pkgs=(build-essential gcc-14 make bc bison flex libelf-dev python3 kmod dkms
	debhelper dh-dkms fakeroot sparse binutils perl git lintian xz-utils)
# what the guest tests run (tests/guest/*.sh), on a Debian 13 router: its
# iproute2 and strongSwan 6 (charon, swanctl, the openssl and vici
# plugins), netdevsim's ethtool, perf and trace-cmd (t-21), node_exporter,
# promtool and curl (t-22), and the selftests' tools (ping, iptables, nft,
# nc, socat, iperf3, and jq: 7.x's rtnetlink.sh reads ip's JSON with it);
# kmod and python3 are the build's
gpkgs=(iproute2 iputils-ping ethtool iptables nftables netcat-openbsd socat iperf3 jq
	strongswan-charon strongswan-swanctl libcharon-extra-plugins
	libstrongswan-standard-plugins trace-cmd linux-perf procps file curl
	prometheus-node-exporter prometheus)

die() { echo "trixie-root.sh: $*" >&2; exit 2; }
usage() { sed -n '9,33s/^# \{0,1\}//p' "$0" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mounts)"

# run CMD...: in the root.  A private mount namespace, so its mounts go
# with it whatever happens; the trap unmounts for a process left behind.
run() {
	[ -f "$root/.xnc-created" ] || die "no root in $root: $0 create"
	local env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
		HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "TERM=${TERM:-dumb}")
	local v
	for v in $(compgen -e -X '!XNC_*' || :); do env+=("$v=${!v}"); done
	env+=("XNC_CACHE=$XNC_CACHE")
	mkdir -p "$root$top" "$root$XNC_CACHE/checkpatch"
	# shellcheck disable=SC2016 # expanded by the inner shell
	unshare -m --propagation private -- /bin/bash -c '
		set -e
		r=$1 top=$2 cp=$3 n=$4
		shift 4
		trap "umount -R \"\$r\$top\" \"\$r\$cp\" \"\$r/dev\" \"\$r/proc\" 2>/dev/null || :" EXIT
		mount -t proc proc "$r/proc"
		mount --rbind /dev "$r/dev"
		mount --bind "$top" "$r$top"
		# scripts/checkpatch.sh: the host'"'"'s extracted checkpatch.pl
		[ ! -d "$cp" ] || mount --bind -o ro "$cp" "$r$cp"
		rc=0
		chroot "$r" /usr/bin/env -i "${@:1:n}" "${@:n+1}" || rc=$?
		exit $rc
	' run "$root" "$top" "$XNC_CACHE/checkpatch" ${#env[@]} "${env[@]}" "$@"
}

apt_root() { run apt-get -q -y -o Dpkg::Use-Pty=0 "$@"; }

create() {
	if ! command -v debootstrap >/dev/null; then
		apt-get -q update && apt-get -q -y install debootstrap
	fi
	[ -f "$keyring" ] || die "$keyring missing (apt-get install debian-archive-keyring)"
	gpg --show-keys "$keyring" 2>/dev/null | grep -q '(13/trixie)' ||
		die "$keyring has no trixie key (a newer debian-archive-keyring is needed)"
	mkdir -p "$XNC_CACHE"
	if [ ! -f "$root/.xnc-created" ]; then
		# a half-made root is made again, never anything still mounted
		! findmnt -rn -o TARGET | grep -q "^$root" || die "something is mounted under $root"
		rm -rf "$root" "$root.new"
		echo "trixie-root.sh: debootstrap trixie into $root (log: $root.log)" >&2
		debootstrap --variant=minbase --keyring="$keyring" trixie "$root.new" "$mirror" \
			>"$root.log" 2>&1 || die "debootstrap failed: $(tail -n1 "$root.log")"
		rm -f "$root.new/etc/apt/sources.list"
		cat >"$root.new/etc/apt/sources.list.d/debian.sources" <<-EOF
			Types: deb
			URIs: $mirror
			Suites: trixie trixie-updates trixie-backports
			Components: main
			Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

			Types: deb
			URIs: http://deb.debian.org/debian-security
			Suites: trixie-security
			Components: main
			Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
		EOF
		# no daemon starts in the root
		printf '#!/bin/sh\nexit 101\n' >"$root.new/usr/sbin/policy-rc.d"
		chmod +x "$root.new/usr/sbin/policy-rc.d"
		touch "$root.new/.xnc-created"
		mv "$root.new" "$root"
	fi
	cp -L /etc/resolv.conf "$root/etc/resolv.conf"
	apt_root update
	apt_root upgrade
	apt_root install --no-install-recommends "${pkgs[@]}"
	# headers depend on their image, whose hook would make an initramfs
	# (35 MB each, nothing to build with); DKMS's hook still runs
	run dpkg-divert --quiet --local --rename --add /usr/sbin/update-initramfs
	ln -sf /bin/true "$root/usr/sbin/update-initramfs"
	run apt-get -q clean
}

# resolve LINE: "ABI VERSION TARGET" of LINE's headers (TARGET: -t or "-")
resolve() {
	local line=$1 base=${1%-rt} meta=linux-headers-amd64 t=- ver abi
	[ "$base" = "$line" ] || meta=linux-headers-rt-amd64
	case $base in
	13) ;;
	bpo | [1-9] | [1-9][0-9] | [1-9]*.[0-9]*) t=trixie-backports ;;
	*) die "LINE is 13, 13-rt or a trixie-backports line (7, 7.3, bpo), not '$line'" ;;
	esac
	# backports are pinned at 100: without -t, the newest of trixie,
	# trixie-updates and trixie-security
	ver=$(run apt-cache -o "APT::Default-Release=${t#-}" policy "$meta" |
		sed -n 's/^ *Candidate: //p')
	case $ver in "" | "(none)") die "$line: no candidate for $meta" ;; esac
	[ "$t" = - ] || [[ $ver == *bpo* ]] || die "$line: trixie-backports has no $meta (candidate $ver)"
	abi=$(run apt-cache show "$meta=$ver" | grep '^Depends:' |
		grep -o 'linux-headers-[0-9][^ ,]*-amd64' | head -n1)
	abi=${abi#linux-headers-}
	[ -n "$abi" ] || die "$line: $meta $ver depends on no linux-headers-<version>"
	case $base in
	13 | bpo) ;;
	*) [[ $abi == "$base".* ]] ||
		die "$line: trixie-backports' kernel is $abi ($meta $ver), not of line $base" ;;
	esac
	echo "$abi $ver $t"
}

headers() {
	[ $# -gt 0 ] || usage
	local line out abi ver t p
	apt_root update >/dev/null
	for line; do
		out=$(resolve "$line")
		read -r abi ver t <<<"$out"
		# backports for these packages only: as a default release it
		# would also move the trixie packages of the same source
		# (linux-perf, linux-libc-dev) to backports' versions
		p=linux-headers-$abi
		[ "$t" = - ] || p+=/$t
		apt_root install --no-install-recommends "$p" >&2
		[ -f "$root/usr/src/linux-headers-$abi/Makefile" ] || die "$line: no /usr/src/linux-headers-$abi"
		touch "$lines"
		sed -i "/^$line /d" "$lines"
		echo "$line $abi $ver" >>"$lines"
		echo "$line $ver /usr/src/linux-headers-$abi"
	done
	run apt-get -q clean
}

guest() {
	apt_root update >/dev/null
	apt_root install --no-install-recommends "${gpkgs[@]}" >&2
	run apt-get -q clean
}

# image LINE DIR: the image of LINE's kernel, as .debs in DIR.  Its 6.12
# is one package, linux-image-ABI-unsigned; 7.x has no -unsigned one, and
# its linux-image-ABI is a metapackage of linux-base-ABI (config),
# linux-binary-ABI (vmlinuz) and linux-modules-ABI
image() {
	[ $# -eq 2 ] || usage
	local out abi ver t d=/var/tmp/xnc-image p=()
	out=$(resolve "$1")
	read -r abi ver t <<<"$out"
	if run apt-cache show "linux-image-$abi-unsigned=$ver" >/dev/null 2>&1; then
		p=("linux-image-$abi-unsigned=$ver")
	else
		mapfile -t p < <(run apt-cache show "linux-image-$abi=$ver" | awk -v s="-$abi" -v v="$ver" '
			/^Depends:/ {
				n = split(substr($0, 10), d, /[,|]/)
				for (i = 1; i <= n; i++) {
					split(d[i], w, " ")
					if (substr(w[1], length(w[1]) - length(s) + 1) == s)
						print w[1] "=" v
				}
			}')
	fi
	[ ${#p[@]} -gt 0 ] || die "$1: no image package for $abi $ver"
	rm -rf "${root:?}$d"
	mkdir -p "$root$d" "$2"
	# (as root: the root's _apt need not be able to write there)
	# shellcheck disable=SC2016 # expanded by the inner shell
	run sh -c 'cd "$1" && shift && apt-get -q -o APT::Sandbox::User=root download "$@"' \
		sh "$d" "${p[@]}" >&2 ||
		die "$1: apt-get download ${p[*]} failed (old package lists? $0 headers $1)"
	mv "$root$d"/*.deb "$2/"
	rm -rf "${root:?}$d"
	ls "$2"/*.deb
}

# ready LINE...: the root, the guest's packages and each LINE's newest
# headers (as the root's package lists have them) are installed
ready() {
	local line out abi n
	[ -f "$root/.xnc-created" ] || return 1
	n=$(run dpkg-query -W -f='${db:Status-Abbrev}\n' "${pkgs[@]}" "${gpkgs[@]}" 2>/dev/null |
		grep -c '^ii') || :
	[ "$n" = $((${#pkgs[@]} + ${#gpkgs[@]})) ] || return 1
	for line; do
		out=$(resolve "$line") || return 1
		abi=${out%% *}
		[ -f "$root/usr/src/linux-headers-$abi/Makefile" ] || return 1
	done
}

# kdirin LINE: LINE's headers dir inside the root, installed by headers
kdirin() {
	local abi
	abi=$(awk -v l="$1" '$1 == l { print $2 }' "$lines" 2>/dev/null)
	[ -d "$root/usr/src/linux-headers-${abi:-none}" ] ||
		die "no headers for line '$1' in the root: $0 headers $1"
	echo "/usr/src/linux-headers-$abi"
}

# make LINE [ARGS]: in a scratch copy (the work tree's tracked files and new
# ones git does not ignore), so the host's in-tree build is left alone
build() {
	local line=$1 kdir b
	shift
	kdir=$(kdirin "$line")
	b=/var/tmp/xnc-build/$line
	rm -rf "${root:?}$b"
	mkdir -p "$root$b"
	git -C "$top" ls-files -z -c -o --exclude-standard |
		tar -C "$top" -c --null --ignore-failed-read -T - -f - 2>/dev/null |
		tar -x -C "$root$b" -f -
	run make -C "$b" KDIR="$kdir" "$@"
	[ ! -f "$root$b/xfrm_nocache.ko" ] || echo "$root$b/xfrm_nocache.ko"
}

cmd=${1:-}
[ $# -eq 0 ] || shift
mkdir -p "$XNC_CACHE"
exec 9>"$XNC_CACHE/trixie-root.lock"
case $cmd in
path) echo "$root" ;;
create) flock 9; create ;;
headers) flock 9; headers "$@" ;;
kdir)
	[ $# -eq 1 ] || usage
	flock -s 9
	k=$(kdirin "$1")
	echo "$root$k"
	;;
run) [ $# -gt 0 ] || usage; flock -s 9; run "$@" ;;
make) [ $# -gt 0 ] || usage; flock -s 9; build "$@" ;;
guest) flock 9; guest ;;
resolve)
	[ $# -eq 1 ] || usage
	flock -s 9
	out=$(resolve "$1")
	echo "${out% *}"
	;;
image) flock -s 9; image "$@" ;;
ready) flock -s 9; ready "$@" ;;
*) usage ;;
esac
