#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make deb (scripts/deb.sh), into a directory of its own: the Debian package
# xfrm-nocache-dkms builds and lintian finds no error in it (its warnings
# are listed here).  Its version is dkms.conf's.  The DKMS source tree it
# installs, /usr/src/xfrm_nocache-<version>/, is exactly dkms.conf,
# Makefile, Kbuild, scripts/klp-relocs.py, src/*.[ch] and include/*.h: no
# tests/, docs/ or build products.  From a copy of that tree the module
# builds as DKMS builds it (make KDIR=... module), livepatch relocations
# and all, for every kernel line of the run (XNC_HOST_KLINES), and make
# clean works there.  /etc/modules-load.d/xfrm-nocache.conf is a conffile
# whose only module line is commented out, and the maintainer scripts hand
# the module to DKMS and take it back.  The operator's command is
# /usr/sbin/xfrm-nocache-stats with its man page, and its systemd service
# and timer are shipped, neither enabled nor started.  Nothing is
# installed.
# All that twice: the package this machine's (bookworm's) tools build, and
# the one Debian 13's build in the trixie root (make deb KERNEL=13:
# XNC_DEB_ROOT=trixie), whose tree is built there, with its gcc-14, for its
# lines (XNC_TRIXIE_KLINES, set by tests/run.sh: the run's; alone: 13 and
# 7.3); without the root that half is skipped, and the last line says so.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/xnc-deb-test.XXXXXX)
fail() { echo "$*"; exit 1; }
troot=$(XNC_KLINE=13 "$top/scripts/kernel.sh" root)
rtmp=''
trap 'rm -rf "$tmp" ${rtmp:+"$rtmp"}' EXIT

# pkg WHERE LINES: make deb with WHERE's tools (XNC_DEB_ROOT: host or
# trixie), checked; its tree built for each of LINES (kernel.sh build: on
# this machine or in the trixie root).  Sets sum, its summary.
pkg() {
	local where=$1 lines=$2 t=$tmp/$1
	mkdir "$t"
	echo "# make deb, XNC_DEB_ROOT=$where"
	XNC_DEB_ROOT=$where make -C "$top" --no-print-directory deb DIST="$t/dist"

	# lintian: make deb fails on an error; its output is here in full
	lint=$t/dist/lintian.txt
	[ -f "$lint" ] || fail "make deb left no lintian.txt"
	if grep '^E: ' "$lint"; then
		fail "lintian: $(grep -c '^E: ' "$lint") errors"
	fi
	nwarn=$(grep -c '^W: ' "$lint") || true
	echo "lintian ($where): no errors, $nwarn warnings"
	grep '^W: ' "$lint" || true

	debs=("$t"/dist/*.deb)
	if [ ${#debs[@]} -ne 1 ] || [ ! -f "${debs[0]}" ]; then
		fail "make deb made ${#debs[@]} .deb files: ${debs[*]##*/}"
	fi
	deb=${debs[0]}
	f() { dpkg-deb -f "$deb" "$1"; }

	# the version, the name, the dependencies
	dkver=$(sed -n "s/^PACKAGE_VERSION=[\"']\{0,1\}\([^\"']*\).*/\1/p" "$top/dkms.conf")
	[ -n "$dkver" ] || fail "no PACKAGE_VERSION in dkms.conf"
	ver=$(f Version)
	up=${ver#*:}
	up=${up%-*}
	[ "$up" = "$dkver" ] ||
		fail "package version $ver, dkms.conf's PACKAGE_VERSION $dkver"
	[ "$(basename "$deb")" = "xfrm-nocache-dkms_${ver#*:}_all.deb" ] ||
		fail "the package is $(basename "$deb"), not xfrm-nocache-dkms_${ver#*:}_all.deb"
	[ "$(f Architecture)" = all ] || fail "Architecture: $(f Architecture)"
	for d in dkms make python3 iproute2; do
		grep -qE "(^|, )$d( |,|$)" <<<"$(f Depends)" ||
			fail "Depends: $(f Depends): no $d"
	done
	grep -qE "(^|, )prometheus-node-exporter( |,|$)" <<<"$(f Suggests)" ||
		fail "Suggests: $(f Suggests): no prometheus-node-exporter"

	# the files: the DKMS source tree and nothing else but the conffile and docs
	src=/usr/src/xfrm_nocache-$dkver
	files=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\./|/|' | sort)
	want=$(cd "$top" && printf "$src/%s\n" dkms.conf Makefile Kbuild scripts/klp-relocs.py \
		src/*.c src/*.h include/*.h | sort)
	got=$(grep "^$src/" <<<"$files") || true
	if [ "$got" != "$want" ]; then
		diff <(echo "$want") <(echo "$got") | sed -n 's/^</missing:/p; s/^>/extra:/p' || true
		fail "$src is not exactly what the build needs"
	fi
	for p in tests/ docs/ .o .ko .cmd; do
		if grep -F -- "$p" <<<"$files"; then
			fail "the package holds $p files"
		fi
	done
	conf=/etc/modules-load.d/xfrm-nocache.conf
	cmd=/usr/sbin/xfrm-nocache-stats
	man=/usr/share/man/man8/xfrm-nocache-stats.8.gz
	# bookworm's debhelper (13.11) installs units in /lib, trixie's (13.24,
	# the /usr merge) in /usr/lib
	units=/lib/systemd/system/xfrm-nocache-stats
	[ "$where" = host ] || units=/usr$units
	others=$(grep -v -e "^$src/" -e "^$conf$" -e '^/usr/share/doc/xfrm-nocache-dkms/' \
		-e "^$cmd$" -e "^$man$" -e "^$units\.service$" -e "^$units\.timer$" <<<"$files") || true
	[ -z "$others" ] || fail "files outside $src: $others"
	nsrc=$(grep -c . <<<"$got")

	# boot-time loading: opt-in, in a conffile (removed by dpkg on purge)
	[ "$(dpkg-deb -I "$deb" conffiles)" = "$conf" ] ||
		fail "conffiles: $(dpkg-deb -I "$deb" conffiles | paste -sd' ')"
	dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ".$conf" >"$t/modules.conf"
	if grep -vE '^[[:space:]]*(#|$)' "$t/modules.conf"; then
		fail "$conf loads a module at boot"
	fi
	# README.Debian's way of enabling it
	on=$(sed 's/^#xfrm_nocache$/xfrm_nocache/' "$t/modules.conf" | grep -vE '^[[:space:]]*(#|$)') || true
	[ "$on" = xfrm_nocache ] || fail "$conf has no '#xfrm_nocache' line to uncomment"

	# the command, as in the tree and executable; its man page; the units
	x() { dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ".$1"; }
	for p in $cmd $man $units.service $units.timer; do
		grep -qx "$p" <<<"$files" || fail "no $p in the package"
	done
	x $cmd | cmp -s - "$top/scripts/xfrm-nocache-stats" ||
		fail "$cmd is not scripts/xfrm-nocache-stats"
	mode=$(dpkg-deb -c "$deb" | awk -v p=".$cmd" '$6 == p { print $1 }')
	[ "$mode" = -rwxr-xr-x ] || fail "$cmd is $mode, not -rwxr-xr-x"
	x $man | gzip -dc | cmp -s - "$top/docs/xfrm-nocache-stats.8" ||
		fail "$man is not docs/xfrm-nocache-stats.8"
	x $man | gzip -dc >"$t/stats.8"
	manwarn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$t/stats.8" 2>&1 >/dev/null) ||
		fail "man fails on $man: $manwarn"
	[ -z "$manwarn" ] || fail "man warns on $man: $manwarn"
	grep -qx "ExecStart=$cmd --textfile /var/lib/prometheus/node-exporter" <(x $units.service) ||
		fail "$units.service does not run $cmd --textfile /var/lib/prometheus/node-exporter"
	grep -qx 'Type=oneshot' <(x $units.service) || fail "$units.service is not Type=oneshot"
	grep -qx 'OnCalendar=\*:\*:0/15' <(x $units.timer) || fail "$units.timer does not run every 15 s"
	grep -qx 'WantedBy=timers.target' <(x $units.timer) ||
		fail "$units.timer has no WantedBy=timers.target: systemctl enable would do nothing"
	if command -v systemd-analyze >/dev/null; then
		mkdir "$t/units"
		x $units.service >"$t/units/xfrm-nocache-stats.service"
		x $units.timer >"$t/units/xfrm-nocache-stats.timer"
		# (the ExecStart binary must exist for verify: the tree's)
		sed -i "s|=$cmd |=$top/scripts/xfrm-nocache-stats |" "$t/units/xfrm-nocache-stats.service"
		systemd-analyze verify --man=no "$t"/units/xfrm-nocache-stats.{service,timer} ||
			fail "systemd-analyze verify fails on the units"
	fi

	# maintainer scripts: dh_dkms's (dkms add, build, install; dkms remove)
	dpkg-deb -e "$deb" "$t/control"
	if ! grep -q "^DKMS_NAME=xfrm_nocache$" "$t/control/postinst" ||
		! grep -q "^DKMS_VERSION=$dkver$" "$t/control/postinst" ||
		! grep -q common.postinst "$t/control/postinst"; then
		fail "postinst does not hand xfrm_nocache $dkver to DKMS"
	fi
	# shellcheck disable=SC2016 # the script's own words
	if ! grep -q 'dkms remove -m $DKMS_NAME -v $DKMS_VERSION --all' "$t/control/prerm" ||
		! grep -q "^DKMS_VERSION=$dkver$" "$t/control/prerm"; then
		fail "prerm does not remove xfrm_nocache $dkver from DKMS"
	fi
	# and dh_installsystemd's --no-enable --no-start: the timer is enabled
	# again on upgrade only if it was (its "debian-installed" guard), and
	# nothing is started
	grep -q "if deb-systemd-helper debian-installed 'xfrm-nocache-stats.timer'" "$t/control/postinst" ||
		fail "postinst may enable xfrm-nocache-stats.timer on installation"
	if grep -E 'deb-systemd-invoke|systemctl .*(start|restart)' "$t/control/postinst"; then
		fail "postinst starts a unit"
	fi

	# the installed tree builds, as DKMS builds it: in a copy, by the Makefile,
	# on the system the line's modules build on (kernel.sh build: here, or
	# in the trixie root, the copy in its /tmp)
	dpkg-deb -x "$deb" "$t/root"
	built=
	for l in $lines; do
		local k=("$top/scripts/kernel.sh") gr ib b
		gr=$(XNC_KLINE=$l "${k[@]}" root)
		gr=${gr%/}
		kver=$(XNC_KLINE=$l "${k[@]}" version)
		kdir=$(XNC_KLINE=$l "${k[@]}" bkdir)
		ib=$t/build-$l
		if [ -n "$gr" ]; then
			[ -n "$rtmp" ] || rtmp=$(mktemp -d "$gr/tmp/xnc-deb-test.XXXXXX")
			ib=${rtmp#"$gr"}/build-$l
		fi
		b=$gr$ib
		cp -a "$t/root$src" "$b"
		if ! XNC_KLINE=$l "${k[@]}" build make -C "$ib" -j"$(nproc)" KERNELRELEASE="$kver" \
			KDIR="$kdir" module >"$t/build-$l.log" 2>&1; then
			grep -m3 -E 'error|Error' "$t/build-$l.log" || tail -n 5 "$t/build-$l.log"
			fail "$l: make KDIR=$kdir module fails in the package's $src"
		fi
		ko=$b/xfrm_nocache.ko
		[ -f "$ko" ] || fail "$l: no xfrm_nocache.ko from the package's tree"
		n=$(readelf -SW "$ko" | grep -c '\.klp\.rela\.vmlinux\.') ||
			fail "$l: no .klp.rela.vmlinux sections: the livepatch step did not run"
		XNC_KLINE=$l "${k[@]}" build python3 "$ib/scripts/klp-relocs.py" --check "$ib/xfrm_nocache.ko" ||
			fail "$l: --check fails"
		modinfo -F vermagic "$ko" | grep -q "^$kver " ||
			fail "$l: vermagic $(modinfo -F vermagic "$ko"), not $kver"
		XNC_KLINE=$l "${k[@]}" build make -C "$ib" KDIR="$kdir" clean >"$t/clean-$l.log" 2>&1 ||
			{ tail -n 5 "$t/clean-$l.log"; fail "$l: make clean fails in the package's $src"; }
		[ ! -e "$ko" ] || fail "$l: make clean left xfrm_nocache.ko"
		built="${built:+$built, }$kver ($n klp sections)"
	done

	sum="$(basename "$deb"), $nsrc files in $src, lintian $nwarn warnings;"
	sum+=" $cmd, its man page and $units.* (not enabled); built from it for $built"
}

pkg host "${XNC_HOST_KLINES:-6.1 6.12}"
hsum=$sum
tl=${XNC_TRIXIE_KLINES-13 7.3}
if [ -z "$tl" ]; then
	tsum="no Debian 13 line in the run: no trixie package"
elif [ ! -f "$troot/.xnc-created" ]; then
	# (a run of Debian 13's lines without the root is broken, not skipped)
	[ -z "${XNC_TRIXIE_KLINES:-}" ] || fail "no trixie root in $troot for $tl"
	tsum="skip trixie: no trixie root in $troot (scripts/trixie-root.sh create)"
else
	pkg trixie "$tl"
	tsum="trixie's: $sum"
fi
echo "deb ok: $hsum; $tsum"
