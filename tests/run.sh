#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run every test: host-side ones here, guest-side ones in one VM boot of
# Debian's kernel per kernel line.  Prints one line per test and a final
# "N passed, N failed".
#
#   tests/run.sh [PATTERN]     only tests whose name matches PATTERN (grep -E)
#
# Kernels (scripts/kernel.sh: bookworm's line 6.1 or 6.12, or its real-time flavor,
# 6.1-rt or 6.12-rt; Debian 13's 13, 13-rt and 7.3, whose builds run in
# the trixie root and whose guest runs on it, which sees this repository:
# XNC_OUT must be in it): XNC_KLINES lists the kernels to boot, each
# LINE or LINE=GUESTPATTERN (that line runs only the guest tests matching
# GUESTPATTERN as well as PATTERN), e.g. "6.1 13=^(0|1|2|4|5)" (make
# check: the Makefile's CHECK_KLINES); by default the one line XNC_KLINE (6.1 unless set).  Each line's
# guest result lines name it ("ok [6.12] 00-load"), the final line sums
# them all.  The host tests run once, before any boot.
#
# For each line, the module (scripts/build.sh) and the test-only second
# livepatch (tests/tools/klp-other) are built against that kernel's headers
# into the run's directory, never into the source tree; XNC_KO and
# XNC_OTHER_KO give ready builds instead (one line only: make check-debug).
#
# Environment: XNC_TEST_TIMEOUT (VM seconds per boot, default 4800),
# XNC_OUT (results directory, default a new one under tests/out/; with
# several lines, each line's results are in its subdirectory named after
# it), XNC_HOST_TESTS=0 (guest tests only: make check-debug, whose kernel
# the host tests do not use).

set -uo pipefail
shopt -s nullglob

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
pattern=${1:-${T:-.}}

die() { echo "run.sh: $*" >&2; exit 2; }

# the kernel lines, checked before anything runs
read -ra specs <<<"${XNC_KLINES:-${XNC_KLINE:-}}"
[ ${#specs[@]} -gt 0 ] || specs=("")
lines=() gpats=()
for s in "${specs[@]}"; do
	l=${s%%=*}
	gp=.
	[ "$s" = "$l" ] || gp=${s#*=}
	# (with XNC_KERNEL, the debug kernel's own)
	l=$(XNC_KLINE=$l scripts/kernel.sh name) || exit 2
	for seen in "${lines[@]}"; do
		[ "$seen" != "$l" ] || die "kernel $l given twice in XNC_KLINES='$XNC_KLINES'"
	done
	lines+=("$l") gpats+=("$gp")
done
multi=
[ ${#lines[@]} -eq 1 ] || multi=1
if [ -n "$multi" ] && [ -n "${XNC_KERNEL:-}${XNC_KO:-}${XNC_OTHER_KO:-}" ]; then
	die "XNC_KERNEL, XNC_KO and XNC_OTHER_KO are for one kernel line, not XNC_KLINES='$XNC_KLINES'"
fi

# a fresh directory per run (several runs may wait on the VM lock at once);
# tests/out/latest points at the newest
out=${XNC_OUT:-$top/tests/out/$(date +%Y%m%d-%H%M%S)-$$}
mkdir -p "$out"
out=$(cd "$out" && pwd)
ln -sfn "$out" "$top/tests/out/latest" 2>/dev/null || true
: >"$out/results"

pass=0 fail=0 skip=0
# timed NAME CMD...: run CMD, keep "NAME M min S s" for the end
times=()
timed() {
	local what=$1 t0=$SECONDS rc=0
	shift
	"$@" || rc=$?
	t0=$((SECONDS - t0))
	times+=("$what $((t0 / 60)) min $((t0 % 60)) s")
	return $rc
}
# result LINE: print and keep one result line, count it
result() {
	echo "$*" | tee -a "$out/results"
	case ${1%% *} in
	ok) pass=$((pass + 1)) ;;
	FAIL) fail=$((fail + 1)) ;;
	skip) skip=$((skip + 1)) ;;
	esac
}

# Host-side tests (no VM): tests/host/*.sh, once; those that build against
# a kernel do it on this machine for the Debian 12 lines XNC_HOST_KLINES
# (by default those of the run; none: their default, both), lint also in
# the trixie root for the run's Debian 13 ones (XNC_TRIXIE_KLINES)
hl=() tl=()
for l in "${lines[@]}"; do
	if [ "$(XNC_KLINE=$l scripts/kernel.sh root)" = / ]; then
		hl+=("$l")
	else
		tl+=("$l")
	fi
done
export XNC_HOST_KLINES="${XNC_HOST_KLINES-${hl[*]}}" XNC_TRIXIE_KLINES="${tl[*]}"
: >"$out/host.results"
host_tests() {
	local t name log rc
	for t in tests/host/*.sh; do
		name=host/$(basename "$t" .sh)
		echo "$name" | grep -qE -- "$pattern" || continue
		log=$out/${name//\//_}.log
		if bash "$t" >"$log" 2>&1; then
			result "ok $name"
		else
			rc=$?
			if [ $rc = 4 ]; then
				result "skip $name: $(tail -n1 "$log")"
			else
				result "FAIL $name: $(tail -n1 "$log")"
			fi
		fi
	done
}
[ "${XNC_HOST_TESTS:-1}" = 0 ] || timed "host tests" host_tests
grep -E '^(ok|FAIL|skip) host/' "$out/results" >"$out/host.results"

# the guest tests a line runs: matching PATTERN and its own pattern
guest_tests() { # GUESTPATTERN
	local t n
	for t in tests/guest/t-*.sh; do
		n=$(basename "$t" .sh)
		n=${n#t-}
		echo "$n" | grep -qE -- "$pattern" && echo "$n" | grep -qE -- "$1" && echo "$n"
	done
}

# first_error LOG: the first error line of a build's log (or its last line)
first_error() {
	grep -m1 -E 'error|Error' "$1" || tail -n1 "$1"
}

# prepare_package LINE LOUT: LOUT/package.env for t-70-package: the .deb
# make deb builds, and the other kernel line's headers package (its name
# and its .deb, from apt's archive or downloaded into LOUT); on Debian 13
# the other is 13-rt for 13, else 13, its headers those of the trixie root
prepare_package() {
	local l=$1 lout=$2 other k2 hdr ver deb hdeb
	rm -rf "$lout/deb" "$lout/package.env"
	scripts/deb.sh "$lout/deb" || return 1
	deb=$(ls "$lout/deb"/xfrm-nocache-dkms_*_all.deb) || return 1
	case $l in
	6.1 | 6.1-rt) other=6.12 ;;
	13) other=13-rt ;;
	13-rt | 7.3) other=13 ;;
	*) other=6.1 ;;
	esac
	k2=$(XNC_KLINE=$other scripts/kernel.sh version) || return 1
	hdr=linux-headers-$k2
	# (in the trixie root for Debian 13's kernels)
	# shellcheck disable=SC2016 # dpkg-query's format
	ver=$(scripts/kernel.sh build dpkg-query -W -f='${Version}' "$hdr") || return 1
	hdeb=$(scripts/kernel.sh root)
	hdeb=${hdeb%/}/var/cache/apt/archives/${hdr}_${ver//:/%3a}_amd64.deb
	if [ ! -f "$hdeb" ]; then
		mkdir -p "$lout/pkgs"
		# shellcheck disable=SC2016 # expanded by the inner shell
		scripts/kernel.sh build sh -c 'cd "$1" && apt-get -q download "$2"' \
			sh "$lout/pkgs" "$hdr=$ver" || return 1
		hdeb=$(ls "$lout/pkgs/${hdr}_"*.deb)
	fi
	printf 'XNC_PKG_DEB=%q\nXNC_PKG_K2=%q\nXNC_PKG_HDR2=%q\nXNC_PKG_HDR2_DEB=%q\n' \
		"$deb" "$k2" "$hdr" "$hdeb" >"$lout/package.env"
	cat "$lout/package.env"
}

# prepare I: what line I's guest tests need, built on the host: the
# module and klp-other against its headers, its selftests and netdevsim
# into the cache.  Fails only when the module could not be built.
prepare() {
	local i=$1 l=${lines[$1]} lout=${louts[$1]} tag=${tags[$1]} kdir sel kb
	export XNC_KLINE=$l
	sel=$(guest_tests "${gpats[i]}")
	# the headers as the builds see them: in the trixie root for Debian
	# 13's kernels, whose builds run there (scripts/kernel.sh build)
	kdir=$(scripts/kernel.sh bkdir) || {
		result "FAIL $tag build: no headers for kernel line $l (scripts/deps.sh)"
		return 1
	}
	kb=(nice -n 19 scripts/kernel.sh build)
	if [ "$(scripts/kernel.sh root)" != / ] && [[ $lout != "$top"/* ]]; then
		result "FAIL $tag build: $lout is outside $top, which the trixie root does not see (XNC_OUT)"
		return 1
	fi
	if [ -n "${XNC_KO:-}" ]; then
		kos[i]=$XNC_KO
		okos[i]=${XNC_OTHER_KO:-$top/tests/tools/klp-other/xnc_klp_other.ko}
	else
		# the module, as every build of it is made (scripts/build.sh: a
		# copy of the sources, the build, its livepatch relocation step)
		rm -rf "$lout/mod"
		if ! "${kb[@]}" "$top/scripts/build.sh" "$kdir" "$lout/mod" >"$lout/mod.build" 2>&1 ||
		   [ ! -f "$lout/mod/xfrm_nocache.ko" ]; then
			result "FAIL $tag build: xfrm_nocache.ko against $kdir: $(first_error "$lout/mod.build")"
			return 1
		fi
		kos[i]=$lout/mod/xfrm_nocache.ko
		# t-02-refusals' test-only builds, next to it in mod/variants
		if grep -q '^02-' <<<"$sel"; then
			"${kb[@]}" "$top/scripts/build.sh" --variants "$kdir" "$lout/mod" \
				>"$lout/variants.build" 2>&1 ||
				result "FAIL $tag build: variants against $kdir: $(first_error "$lout/variants.build")"
		fi
		# the test-only second livepatch (t-02-refusals), a copy built
		# where the guest sees it
		rm -rf "$lout/klp-other"
		mkdir -p "$lout/klp-other"
		cp tests/tools/klp-other/Kbuild tests/tools/klp-other/*.c "$lout/klp-other/"
		"${kb[@]}" make -C "$kdir" M="$lout/klp-other" modules >"$lout/klp-other.build" 2>&1 ||
			result "FAIL $tag build: klp-other against $kdir: $(first_error "$lout/klp-other.build")"
		okos[i]=$lout/klp-other/xnc_klp_other.ko
	fi
	# The kernel's own selftests (t-60-selftest-*): extracted and built
	# into the host cache, which the guest only reads.
	if grep -q '^60-' <<<"$sel"; then
		scripts/selftests.sh >/dev/null ||
			echo "selftests.sh prepare failed for $l: t-60-selftest-* will fail" >&2
	fi
	# t-70-package: the Debian package (make deb) and the .deb of the
	# other kernel line's headers, which the guest installs (not on a
	# debug kernel, where the test skips)
	if grep -q '^70-' <<<"$sel" && [ -z "${XNC_KERNEL:-}" ]; then
		prepare_package "$l" "$lout" >"$lout/package.build" 2>&1 ||
			echo "package prepare failed for $l (see $lout/package.build): t-70-package will fail" >&2
	fi
	# netdevsim, the simulated offload NIC of t-40-offload-*: built into
	# the host cache; the guest reads the path from netdevsim.path.
	scripts/netdevsim.sh >"$lout/netdevsim.path" 2>"$lout/netdevsim.log" || {
		rm -f "$lout/netdevsim.path"
		echo "netdevsim.sh failed for $l (see $lout/netdevsim.log): t-40-offload-* will fail" >&2
	}
	return 0
}

# boot I: line I's guest tests, in one VM boot
boot() {
	local i=$1 l=${lines[$1]} lout=${louts[$1]} tag=${tags[$1]} vrc first
	XNC_KLINE=$l XNC_KO=${kos[i]} XNC_OTHER_KO=${okos[i]} XNC_QUIET=${XNC_QUIET-1} \
		scripts/vm.sh --timeout "${XNC_TEST_TIMEOUT:-4800}" \
		--out "$lout" --log "$lout/console.log" -- \
		"$top/tests/guest/runner.sh" "$(guest_tests "${gpats[i]}" | paste -sd'|' | sed 's/.*/^(&)$/')"
	vrc=$?
	touch "$lout/guest.results"
	while read -r r name rest; do
		result "$r $tag $name${rest:+ $rest}"
	done <"$lout/guest.results"
	if [ $vrc -ne 0 ] && [ $vrc -ne 1 ]; then
		# 1 is "some test failed" (already counted); anything else is the
		# VM itself: timeout, crash, or a splat on the console.
		result "FAIL $tag vm: scripts/vm.sh exited $vrc (see $lout/console.log)"
		if [ -s "$lout/splats" ]; then
			head -n 20 "$lout/splats"
			# the first splat with its backtrace, for a CI log
			first=$(head -n1 "$lout/splats" | cut -d: -f1)
			echo "--- console.log from line $first ---"
			sed -n "${first},$((first + 80))p" "$lout/console.log"
			echo "---"
		fi
	fi
}

# Guest-side tests: every line's builds first (a build failure shows
# before the first boot), then one boot per line, in the order given.
louts=() tags=() kos=() okos=() ready=()
for i in "${!lines[@]}"; do
	l=${lines[i]}
	louts[i]=$out${multi:+/$l}
	tags[i]="[$l${XNC_KERNEL:+-debug}]"
	ready[i]=
	[ -n "$(guest_tests "${gpats[i]}")" ] || continue
	mkdir -p "${louts[i]}"
	timed "${tags[i]} build" prepare "$i" && ready[i]=1
done
for i in "${!lines[@]}"; do
	[ -n "${ready[i]}" ] && timed "${tags[i]} boot" boot "$i"
done

for t in "${times[@]}"; do
	echo "# time: $t"
done

if [ $skip -gt 0 ]; then
	echo "$pass passed, $fail failed, $skip skipped"
else
	echo "$pass passed, $fail failed"
fi
[ $fail -eq 0 ] && [ $((pass + fail)) -gt 0 ]
