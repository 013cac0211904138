#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run every test: host-side ones here, guest-side ones in one VM boot of
# Debian's kernel per kernel line.  Reports in KTAP (on stdout and in
# $XNC_OUT/ktap): one subtest for the host tests, one per kernel line
# (its guest tests, tests/guest/runner.sh's, and any build or VM failure),
# then each phase's time and a final "N passed, N failed" that sums them.
#
#   tests/run.sh [PATTERN]     only tests whose name matches PATTERN (grep -E)
#
# Kernels (scripts/kernel.sh: bookworm's line 6.1 or 6.12, or its
# real-time flavor, 6.1-rt or 6.12-rt; Debian 13's 13, 13-rt and 7.3, whose
# builds run in the trixie root and whose guest runs on it, which sees this
# repository: XNC_OUT must be in it): XNC_KLINES lists the kernels to boot,
# each LINE or LINE=GUESTPATTERN (that line runs only the guest tests
# matching GUESTPATTERN as well as PATTERN), e.g. "6.1 13=^(0|1|2|4|5)";
# make check's are the Makefile's CHECK_KLINES.  By default the one line
# XNC_KLINE (6.1 unless set).  The host tests run once, before any boot.
#
# For each line, the module (scripts/build.sh) and the test-only second
# livepatch (tests/tools/klp-other) are built against that kernel's headers
# into the run's directory, never into the source tree; XNC_KO and
# XNC_OTHER_KO give ready builds instead (one line only: make check-debug).
#
# Environment: XNC_TEST_TIMEOUT (VM seconds per boot, default 4800; each
# guest test has its own limit, tests/guest/settings), XNC_OUT (results
# directory, default a new one under tests/out/; with several lines, each
# line's results are in its subdirectory named after it), XNC_HOST_TESTS=0
# (guest tests only: make check-debug, whose kernel the host tests do not
# use).

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
ktap=$out/ktap
: >"$ktap"
emit() { echo "$*" | tee -a "$ktap"; }

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
# leaf INDENT N NAME RC REASON: one KTAP test line (RC 0 ok, 4 skip, else
# not ok; REASON, if any, as a diagnostic line before a failure), counted
leaf() {
	case $4 in
	0) emit "$1ok $2 $3"; pass=$((pass + 1)) ;;
	4) emit "$1ok $2 $3 # SKIP $5"; skip=$((skip + 1)) ;;
	*)
		[ -z "$5" ] || emit "$1# $3: $5"
		emit "$1not ok $2 $3"
		fail=$((fail + 1))
		;;
	esac
}
group=0
# parent RC NAME: the KTAP line of a subtest whose leaves were just printed
parent() {
	group=$((group + 1))
	if [ "$1" = 0 ]; then emit "ok $group $2"; else emit "not ok $group $2"; fi
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
host=()
if [ "${XNC_HOST_TESTS:-1}" != 0 ]; then
	for t in tests/host/*.sh; do
		name=host/$(basename "$t" .sh)
		echo "$name" | grep -qE -- "$pattern" && host+=("$name")
	done
fi
host_tests() {
	local name log rc j=0 bad=0
	emit "  KTAP version 1"
	emit "  1..${#host[@]}"
	for name in "${host[@]}"; do
		j=$((j + 1))
		log=$out/${name//\//_}.log
		bash "tests/$name.sh" >"$log" 2>&1
		rc=$?
		[ $rc = 0 ] || [ $rc = 4 ] || bad=1
		leaf "  " $j "$name" $rc "$(tail -n1 "$log")"
	done
	parent $bad host
}

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
# berr I NAME REASON: a failed build step of line I, a failed test of its
# subtest (said now, before any boot)
berr() {
	emit "# ${tags[$1]} $2: $3"
	berrs[$1]+="$2|$3"$'\n'
}

prepare() {
	local i=$1 l=${lines[$1]} lout=${louts[$1]} kdir sel kb
	export XNC_KLINE=$l
	# the kernel's version, resolved once for every script below
	XNC_KVER=$(env -u XNC_KVER scripts/kernel.sh version) || {
		berr "$i" build "cannot resolve kernel $l"
		return 1
	}
	export XNC_KVER XNC_KVER_OF=$l
	kvers[i]=$XNC_KVER
	sel=$(guest_tests "${gpats[i]}")
	# the headers as the builds see them: in the trixie root for Debian
	# 13's kernels, whose builds run there (scripts/kernel.sh build)
	kdir=$(scripts/kernel.sh bkdir) || {
		berr "$i" build "no headers for kernel line $l (scripts/deps.sh)"
		return 1
	}
	kb=(nice -n 19 scripts/kernel.sh build)
	if [ "$(scripts/kernel.sh root)" != / ] && [[ $lout != "$top"/* ]]; then
		berr "$i" build "$lout is outside $top, which the trixie root does not see (XNC_OUT)"
		return 1
	fi
	if [ -n "${XNC_KO:-}" ]; then
		kos[i]=$XNC_KO
		okos[i]=${XNC_OTHER_KO:-$top/tests/tools/klp-other/xnc_klp_other.ko}
	else
		# the module, as every build of it is made (scripts/build.sh: a
		# copy of the sources, the build, its livepatch relocation step)
		rm -rf "$lout/mod"
		if ! KDIR=$kdir nice -n 19 scripts/build.sh --line "$lout/mod" >"$lout/mod.build" 2>&1 ||
		   [ ! -f "$lout/mod/xfrm_nocache.ko" ]; then
			berr "$i" build "xfrm_nocache.ko against $kdir: $(first_error "$lout/mod.build")"
			return 1
		fi
		kos[i]=$lout/mod/xfrm_nocache.ko
		# t-02-refusals' test-only builds, next to it in mod/variants
		if grep -q '^02-' <<<"$sel"; then
			KDIR=$kdir nice -n 19 scripts/build.sh --line --variants "$lout/mod" \
				>"$lout/variants.build" 2>&1 ||
				berr "$i" build-variants "against $kdir: $(first_error "$lout/variants.build")"
		fi
		# the test-only second livepatch (t-02-refusals), a copy built
		# where the guest sees it
		rm -rf "$lout/klp-other"
		mkdir -p "$lout/klp-other"
		cp tests/tools/klp-other/Kbuild tests/tools/klp-other/*.c "$lout/klp-other/"
		"${kb[@]}" make -C "$kdir" M="$lout/klp-other" modules >"$lout/klp-other.build" 2>&1 ||
			berr "$i" build-klp-other "against $kdir: $(first_error "$lout/klp-other.build")"
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
	local i=$1 l=${lines[$1]} lout=${louts[$1]} vrc first
	XNC_KLINE=$l XNC_KVER=${kvers[i]} XNC_KVER_OF=$l XNC_KO=${kos[i]} XNC_OTHER_KO=${okos[i]} XNC_QUIET=${XNC_QUIET-1} \
		scripts/vm.sh --timeout "${XNC_TEST_TIMEOUT:-4800}" \
		--out "$lout" --log "$lout/console.log" -- \
		"$top/tests/guest/runner.sh" "$(guest_tests "${gpats[i]}" | paste -sd'|' | sed 's/.*/^(&)$/')"
	vrc=$?
	if [ $vrc -ne 0 ] && [ $vrc -ne 1 ]; then
		# 1 is "some test failed"; anything else is the VM itself:
		# timeout, crash, or a splat on the console
		berrs[i]+="vm|scripts/vm.sh exited $vrc (see $lout/console.log)"$'\n'
		if [ -s "$lout/splats" ]; then
			head -n 20 "$lout/splats" | sed 's/^/# /'
			# the first splat with its backtrace, for a CI log
			first=$(head -n1 "$lout/splats" | cut -d: -f1)
			echo "# --- console.log from line $first ---"
			sed -n "${first},$((first + 80))p" "$lout/console.log" | sed 's/^/# /'
			echo "# ---"
		fi
	fi
}

# report I: line I's subtest, from its guest tests' KTAP and its failed
# build steps, renumbered into one plan
report() {
	local i=$1 lout=${louts[$1]} n=0 bad=0 diag=() k rest name how
	local -a res=()
	touch "$lout/guest.ktap"
	while IFS= read -r k; do
		if [[ $k == "# |"* ]]; then
			continue
		elif [[ $k =~ ^#\ ([^ ]+):\ (.*)$ ]]; then
			diag[${#diag[@]}]="${BASH_REMATCH[1]}|${BASH_REMATCH[2]}"
		elif [[ $k =~ ^(not\ )?ok\ [0-9]+\ ([^ ]+)(\ #\ (.*))?$ ]]; then
			name=${BASH_REMATCH[2]} rest=${BASH_REMATCH[4]:-} k=${BASH_REMATCH[1]:-}
			if [ -z "$k" ] && [[ $rest == SKIP* ]]; then
				res+=("4|$name|${rest#SKIP }")
			elif [ -z "$k" ]; then
				res+=("0|$name|")
			else
				# the reason: the last "# NAME: ..." before it
				how=$rest
				for k in "${diag[@]}"; do
					[ "${k%%|*}" != "$name" ] || how=${k#*|}
				done
				[ -z "$rest" ] || how=$rest
				res+=("1|$name|$how")
			fi
			diag=()
		fi
	done <"$lout/guest.ktap"
	while IFS='|' read -r name how; do
		[ -n "$name" ] && res+=("1|$name|$how")
	done <<<"${berrs[i]:-}"
	emit "  KTAP version 1"
	emit "  1..${#res[@]}"
	for k in "${res[@]}"; do
		n=$((n + 1))
		IFS='|' read -r rc name how <<<"$k"
		[ "$rc" != 1 ] || bad=1
		leaf "  " $n "$name" "$rc" "$how"
	done
	parent $bad "${lines[i]}${XNC_KERNEL:+-debug}"
}

# the subtests: the host tests, then each line with guest tests
louts=() tags=() kos=() okos=() kvers=() ready=() berrs=() sel=()
for i in "${!lines[@]}"; do
	louts[i]=$out${multi:+/${lines[i]}}
	tags[i]="[${lines[i]}${XNC_KERNEL:+-debug}]"
	[ -z "$(guest_tests "${gpats[i]}")" ] || sel+=("$i")
done
# the test programs the guest runs (tests/tools), as make builds them
if [ ${#sel[@]} -gt 0 ] && ! make -s --no-print-directory test-programs >&2; then
	die "cannot build the test programs (make test-programs)"
fi
emit "KTAP version 1"
emit "1..$(( (${#host[@]} > 0) + ${#sel[@]} ))"
[ ${#host[@]} = 0 ] || timed "host tests" host_tests
# every line's builds first (a build failure shows before the first boot),
# then one boot per line, in the order given
for i in "${sel[@]}"; do
	mkdir -p "${louts[i]}"
	timed "${tags[i]} build" prepare "$i" && ready[i]=1
done
for i in "${sel[@]}"; do
	[ -z "${ready[i]:-}" ] || timed "${tags[i]} boot" boot "$i"
	report "$i"
done

sum="$pass passed, $fail failed"
[ $skip = 0 ] || sum="$sum, $skip skipped"
# the phases' times, also as a table (docs/timings.md is the last CI's)
{
	echo "# Timings of a test run"
	echo
	echo "\`tests/run.sh${1:+ $1}\` with XNC_KLINES='${XNC_KLINES:-${XNC_KLINE:-}}'" \
		"on $(date -u +%Y-%m-%d) at $(git -C "$top" describe --always --dirty 2>/dev/null):" \
		"$sum, in $((SECONDS / 60)) min $((SECONDS % 60)) s (this machine: $(nproc) cores)."
	echo
	echo "| phase | time |"
	echo "|---|---|"
	for t in "${times[@]}"; do
		what=${t% * min * s}
		echo "| $what | ${t#"$what "} |"
	done
} >"$out/timings.md"
for t in "${times[@]}"; do
	emit "# time: $t"
done

echo "$sum"
[ $fail -eq 0 ] && [ $((pass + fail)) -gt 0 ]
