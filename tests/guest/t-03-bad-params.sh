#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Bad module parameters: latency=2 and latency=abc (and a long value) are
# refused with EINVAL at load, leaving nothing loaded, and at runtime through
# /sys/module/xfrm_nocache/parameters/latency, leaving the value as it was;
# each time the kernel log names the problem in one line, the value quoted
# without the newline "echo" adds and cut at 32 characters.  0 and 1, and
# the other words of a bool parameter (y/n, on/off), are taken.  No
# network: nothing here depends on traffic.
# shellcheck disable=SC2119 # xnc_load: no insmod parameters here
. "$(dirname "$0")/lib.sh"
P=/sys/module/xfrm_nocache/parameters/latency
long=$(printf 'x%.0s' $(seq 1 100))

for v in 2 abc "$long"; do
	expect_eq "errno of insmod latency=${v:0:10}" "$(load_errno "$XNC_KO" "latency=$v")" 22
	mod_loaded && fail "module left loaded after latency=${v:0:10}"
	[ -e $LP ] && fail "livepatch left after latency=${v:0:10}"
done
for v in 2 abc; do
	dmesg | grep -q "xfrm_nocache: latency must be 0 or 1 (or n/y, off/on), not '$v'\$" ||
		fail "no message naming the bad value '$v' at load"
done
dmesg | grep -q "latency must be 0 or 1 (or n/y, off/on), not '${long:0:32}'\$" ||
	fail "long value not quoted cut at 32 characters"

xnc_load || fail "load failed"
expect_eq "default" "$(cat $P)" N
for v in 2 abc; do
	# as "echo v >" writes it: with a newline
	expect_eq "errno of writing '$v' at runtime" "$(write_errno $P "$v"$'\n')" 22
	dmesg | grep -q "xfrm_nocache: latency must be 0 or 1 (or n/y, off/on), not '$v'\$" ||
		fail "no one-line message naming the bad value '$v' at runtime"
	expect_eq "value after refusing '$v'" "$(cat $P)" N
done
dmesg -t | grep -qx "'" && fail "a message broken over two lines (newline of the value printed)"
expect_eq "errno of writing 1" "$(write_errno $P $'1\n')" 0
expect_eq "value after writing 1" "$(cat $P)" Y
expect_eq "errno of writing 2 while on" "$(write_errno $P 2)" 22
expect_eq "value after refusing 2 while on" "$(cat $P)" Y
expect_eq "errno of writing 0" "$(write_errno $P 0)" 0
expect_eq "value after writing 0" "$(cat $P)" N
for w in y:Y n:N on:Y off:N Y:Y N:N; do
	expect_eq "errno of writing '${w%:*}'" "$(write_errno $P "${w%:*}"$'\n')" 0
	expect_eq "value after writing '${w%:*}'" "$(cat $P)" "${w#*:}"
done
xnc_unload || fail "unload failed"
echo "latency=2, abc and a 100-character value refused with EINVAL at load and at runtime, each named in one log line; y/n and on/off taken"
