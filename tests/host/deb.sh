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
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/xnc-deb-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "$*"; exit 1; }

make -C "$top" --no-print-directory deb DIST="$tmp/dist"

# lintian: make deb fails on an error; its output is here in full
lint=$tmp/dist/lintian.txt
[ -f "$lint" ] || fail "make deb left no lintian.txt"
if grep '^E: ' "$lint"; then
	fail "lintian: $(grep -c '^E: ' "$lint") errors"
fi
nwarn=$(grep -c '^W: ' "$lint") || true
echo "lintian: no errors, $nwarn warnings"
grep '^W: ' "$lint" || true

debs=("$tmp"/dist/*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] ||
	fail "make deb made ${#debs[@]} .deb files: ${debs[*]##*/}"
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
units=/lib/systemd/system/xfrm-nocache-stats
others=$(grep -v -e "^$src/" -e "^$conf$" -e '^/usr/share/doc/xfrm-nocache-dkms/' \
	-e "^$cmd$" -e "^$man$" -e "^$units\.service$" -e "^$units\.timer$" <<<"$files") || true
[ -z "$others" ] || fail "files outside $src: $others"
nsrc=$(grep -c . <<<"$got")

# boot-time loading: opt-in, in a conffile (removed by dpkg on purge)
[ "$(dpkg-deb -I "$deb" conffiles)" = "$conf" ] ||
	fail "conffiles: $(dpkg-deb -I "$deb" conffiles | paste -sd' ')"
dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ".$conf" >"$tmp/modules.conf"
if grep -vE '^[[:space:]]*(#|$)' "$tmp/modules.conf"; then
	fail "$conf loads a module at boot"
fi
# README.Debian's way of enabling it
on=$(sed 's/^#xfrm_nocache$/xfrm_nocache/' "$tmp/modules.conf" | grep -vE '^[[:space:]]*(#|$)') || true
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
x $man | gzip -dc >"$tmp/stats.8"
manwarn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$tmp/stats.8" 2>&1 >/dev/null) ||
	fail "man fails on $man: $manwarn"
[ -z "$manwarn" ] || fail "man warns on $man: $manwarn"
grep -qx "ExecStart=$cmd --textfile /var/lib/prometheus/node-exporter" <(x $units.service) ||
	fail "$units.service does not run $cmd --textfile /var/lib/prometheus/node-exporter"
grep -qx 'Type=oneshot' <(x $units.service) || fail "$units.service is not Type=oneshot"
grep -qx 'OnCalendar=\*:\*:0/15' <(x $units.timer) || fail "$units.timer does not run every 15 s"
grep -qx 'WantedBy=timers.target' <(x $units.timer) ||
	fail "$units.timer has no WantedBy=timers.target: systemctl enable would do nothing"
if command -v systemd-analyze >/dev/null; then
	mkdir "$tmp/units"
	x $units.service >"$tmp/units/xfrm-nocache-stats.service"
	x $units.timer >"$tmp/units/xfrm-nocache-stats.timer"
	# (the ExecStart binary must exist for verify: the tree's)
	sed -i "s|=$cmd |=$top/scripts/xfrm-nocache-stats |" "$tmp/units/xfrm-nocache-stats.service"
	systemd-analyze verify --man=no "$tmp"/units/xfrm-nocache-stats.{service,timer} ||
		fail "systemd-analyze verify fails on the units"
fi

# maintainer scripts: dh_dkms's (dkms add, build, install; dkms remove)
dpkg-deb -e "$deb" "$tmp/control"
grep -q "^DKMS_NAME=xfrm_nocache$" "$tmp/control/postinst" &&
	grep -q "^DKMS_VERSION=$dkver$" "$tmp/control/postinst" &&
	grep -q common.postinst "$tmp/control/postinst" ||
	fail "postinst does not hand xfrm_nocache $dkver to DKMS"
grep -q 'dkms remove -m $DKMS_NAME -v $DKMS_VERSION --all' "$tmp/control/prerm" &&
	grep -q "^DKMS_VERSION=$dkver$" "$tmp/control/prerm" ||
	fail "prerm does not remove xfrm_nocache $dkver from DKMS"
# and dh_installsystemd's --no-enable --no-start: the timer is enabled
# again on upgrade only if it was (its "debian-installed" guard), and
# nothing is started
grep -q "if deb-systemd-helper debian-installed 'xfrm-nocache-stats.timer'" "$tmp/control/postinst" ||
	fail "postinst may enable xfrm-nocache-stats.timer on installation"
if grep -E 'deb-systemd-invoke|systemctl .*(start|restart)' "$tmp/control/postinst"; then
	fail "postinst starts a unit"
fi

# the installed tree builds, as DKMS builds it: in a copy, by the Makefile
dpkg-deb -x "$deb" "$tmp/root"
built=
for l in ${XNC_HOST_KLINES:-6.1 6.12}; do
	kver=$(XNC_KLINE=$l "$top/scripts/kernel.sh" version)
	kdir=$(XNC_KLINE=$l "$top/scripts/kernel.sh" kdir)
	b=$tmp/build-$l
	cp -a "$tmp/root$src" "$b"
	if ! (cd "$b" && make -j"$(nproc)" KERNELRELEASE="$kver" KDIR="$kdir" module) \
		>"$tmp/build-$l.log" 2>&1; then
		grep -m3 -E 'error|Error' "$tmp/build-$l.log" || tail -n 5 "$tmp/build-$l.log"
		fail "$l: make KDIR=$kdir module fails in the package's $src"
	fi
	ko=$b/xfrm_nocache.ko
	[ -f "$ko" ] || fail "$l: no xfrm_nocache.ko from the package's tree"
	n=$(readelf -SW "$ko" | grep -c '\.klp\.rela\.vmlinux\.') ||
		fail "$l: no .klp.rela.vmlinux sections: the livepatch step did not run"
	python3 "$b/scripts/klp-relocs.py" --check "$ko" || fail "$l: --check fails"
	modinfo -F vermagic "$ko" | grep -q "^$kver " ||
		fail "$l: vermagic $(modinfo -F vermagic "$ko"), not $kver"
	(cd "$b" && make KDIR="$kdir" clean) >"$tmp/clean-$l.log" 2>&1 ||
		{ tail -n 5 "$tmp/clean-$l.log"; fail "$l: make clean fails in the package's $src"; }
	[ ! -e "$ko" ] || fail "$l: make clean left xfrm_nocache.ko"
	built="${built:+$built, }$kver ($n klp sections)"
done

echo "deb ok: $(basename "$deb"), $nsrc files in $src, lintian $nwarn warnings;" \
	"$cmd, its man page and units (not enabled); built from it for $built"
