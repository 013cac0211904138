#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Helpers for guest tests: source it.  Run directly with "unload" to remove
# the module whatever state it is in, with "reset" for xnc_reset.

XNC_TOP=${XNC_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
XNC_KO=${XNC_KO:-$XNC_TOP/xfrm_nocache.ko}
LP=/sys/kernel/livepatch/xfrm_nocache

fail() { echo "$*"; exit 1; }
skip() { echo "$*"; exit 4; }
log() { echo "# $*"; }

# How many times slower than Debian's kernel the kernel under test runs
# the tests (make check-debug: 4).  Time limits that measure the test rig
# rather than the kernel (how long a listener waits for a first datagram,
# how soon traffic must be back) are multiplied by it.
XNC_SLOW=${XNC_SLOW:-1}

# knob VAR NAME DEFAULT MIN MAX: VAR = $NAME, or DEFAULT if that is unset or
# empty; a whole number from MIN to MAX, else the test fails naming NAME
knob() {
	local v=${!2:-$3}
	{ [[ $v =~ ^[0-9]+$ ]] && [ "$v" -ge "$4" ] && [ "$v" -le "$5" ]; } ||
		fail "$2 must be a number from $4 to $5, not '$v'"
	printf -v "$1" %s "$v"
}

# wait_for SECONDS CMD...: poll every 0.1 s until CMD succeeds
wait_for() {
	local t=$(($1 * 10)); shift
	while [ $t -gt 0 ]; do
		"$@" && return 0
		sleep 0.1
		t=$((t - 1))
	done
	return 1
}

# stock_window CMD...: run CMD (in this shell) on the stock path, in
# namespaces of its own that it deletes, and record the kernel's jiffies
# before and after in $XNC_OUT/stock-windows.  The kmemleak check of make
# check-debug (runner.sh) reports leaks of objects allocated in such a
# window as the stock kernel's, and does not fail on them: no code of ours
# ran then, and what was allocated then is gone with those namespaces.
# The caller makes sure the module is not loaded.
jiffies() { awk '$1 == "jiffies:" { print $2; exit }' /proc/timer_list; }
stock_window() {
	local t0 rc
	t0=$(jiffies)
	"$@"
	rc=$?
	echo "$t0 $(jiffies) $*" >>"$XNC_OUT/stock-windows"
	return $rc
}

# dmesg_mark: remember where the kernel log ends; dmesg_since: what the
# kernel logged after the mark
dmesg_mark() { XNC_DMESG_MARK=$(dmesg | wc -l); }
dmesg_since() { dmesg | tail -n +$((XNC_DMESG_MARK + 1)); }

lp_settled() { [ "$(cat $LP/transition 2>/dev/null)" = 0 ]; }
lp_gone() { [ ! -e $LP ]; }
mod_loaded() { grep -q '^xfrm_nocache ' /proc/modules; }

# Load and wait until every task runs the patched function.  XNC_LOAD_ARGS
# (runner.sh): "unchecked=1" on a kernel release scripts/kernel.record does
# not list, whose sources make drift checked in the same run.
xnc_load() {
	# shellcheck disable=SC2086 # XNC_LOAD_ARGS: words
	insmod "$XNC_KO" ${XNC_LOAD_ARGS:-} "$@" || return 1
	wait_for 30 lp_settled || { echo "livepatch transition did not finish"; return 1; }
	[ "$(cat $LP/enabled)" = 1 ]
}

# Disable the livepatch (back to stock), keep the module.
xnc_disable() {
	[ -e $LP ] || return 0
	echo 0 >$LP/enabled || return 1
	wait_for 30 lp_gone || { echo "livepatch did not go away"; return 1; }
}

# Disable and remove.
xnc_unload() {
	xnc_disable || return 1
	if mod_loaded; then
		wait_for 10 rmmod xfrm_nocache 2>/dev/null || return 1
	fi
	! mod_loaded
}

# xnc_stat NAME [NETNS]: one counter of /proc/net/xfrm_nocache
xnc_stat() {
	local f=/proc/net/xfrm_nocache
	if [ -n "${2:-}" ]; then
		# shellcheck disable=SC2016 # awk program
		ip netns exec "$2" awk -v n="$1" '$1 == n { print $2 }' $f
	else
		awk -v n="$1" '$1 == n { print $2 }' $f
	fi
}

# mib NAME [NETNS]: one counter of /proc/net/xfrm_stat
mib() {
	if [ -n "${2:-}" ]; then
		# shellcheck disable=SC2016 # awk program
		ip netns exec "$2" awk -v n="$1" '$1 == n { print $2 }' /proc/net/xfrm_stat
	else
		awk -v n="$1" '$1 == n { print $2 }' /proc/net/xfrm_stat
	fi
}

# sa_packets NETNS SPI: packets carried by that SA (ip -s xfrm state)
sa_packets() {
	ip -n "$1" -s xfrm state list spi "$2" |
		awk '/lifetime current:/ { getline; split($2, a, "("); print a[1]; exit }'
}

# load_errno KO [PARAMS]: load a module with finit_module(2), print the
# errno it failed with, 0 if it loaded (insmod only says it failed)
load_errno() {
	perl -e 'open(my $f, "<", $ARGV[0]) or die "$ARGV[0]: $!\n";
		 my $params = $ARGV[1] // "";
		 print syscall(313, fileno($f), $params, 0) == 0 ? 0 : $! + 0, "\n"' "$@"
}

# write_errno FILE DATA: write DATA with one write(2), print its errno (0: ok)
write_errno() {
	perl -e 'open(my $f, ">", $ARGV[0]) or die "$ARGV[0]: $!\n";
		 print defined(syswrite($f, $ARGV[1])) ? 0 : $! + 0, "\n"' "$@"
}

# expect_eq WHAT GOT WANT
expect_eq() {
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}

# expect_ge WHAT GOT MIN
expect_ge() {
	[ "$2" -ge "$3" ] 2>/dev/null || fail "$1: got '$2', want >= $3"
}

# esp_pair one|both: namespaces a (10.9.0.1) and b (10.9.0.2) over a
# veth, an ESP transport SA a -> b (SPI 0x101) in both and a's outbound
# policy for it; with "both", b -> a too (SPI 0x201, b's policy)
esp_pair() {
	local k=0x0102030405060708091011121314151617181920 n
	ip netns add a
	ip netns add b
	ip link add va netns a type veth peer name vb netns b
	ip -n a addr add 10.9.0.1/24 dev va
	ip -n a link set va up
	ip -n b addr add 10.9.0.2/24 dev vb
	ip -n b link set vb up
	for n in a b; do
		ip -n $n xfrm state add src 10.9.0.1 dst 10.9.0.2 proto esp spi 0x101 \
			mode transport aead 'rfc4106(gcm(aes))' $k 128
		[ "$1" != both ] ||
			ip -n $n xfrm state add src 10.9.0.2 dst 10.9.0.1 proto esp spi 0x201 \
				mode transport aead 'rfc4106(gcm(aes))' $k 128
	done
	ip -n a xfrm policy add src 10.9.0.1 dst 10.9.0.2 dir out tmpl proto esp mode transport
	[ "$1" != both ] ||
		ip -n b xfrm policy add src 10.9.0.2 dst 10.9.0.1 dir out tmpl proto esp mode transport
}

# xnc_reset: the state every test starts from, whatever it did: no
# namespace, no xfrm policy or SA, the module unloaded
xnc_reset() {
	ip -all netns delete 2>/dev/null
	ip xfrm policy flush
	ip xfrm state flush
	xnc_unload >/dev/null 2>&1
}

# A test cleans up after itself when it exits (fails, skips, passes, or is
# killed by the runner's timeout): first what it registered with at_exit
# (last registered first; $XNC_RC is its exit status), then its background
# jobs are killed and xnc_reset runs.  So each t-*.sh runs alone.
XNC_AT_EXIT=()
at_exit() { XNC_AT_EXIT=("$*" "${XNC_AT_EXIT[@]}"); }
xnc_exit() {
	XNC_RC=$?
	local c j
	# (a test under set -e: no step of the cleanup may end it early)
	set +e
	trap - EXIT TERM INT
	for c in "${XNC_AT_EXIT[@]}"; do
		eval "$c"
	done
	j=$(jobs -p)
	# shellcheck disable=SC2086 # job pids: words
	[ -z "$j" ] || kill $j 2>/dev/null
	xnc_reset
	exit $XNC_RC
}
case ${0##*/} in
t-*.sh)
	trap xnc_exit EXIT
	trap 'exit 143' TERM INT
	;;
esac

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	case ${1:-} in
	unload) xnc_unload ;;
	reset) xnc_reset ;;
	esac
fi
