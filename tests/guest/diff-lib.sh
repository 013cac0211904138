#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Differential testing: run one scenario on the stock path and again with
# the livepatch, and compare what a user can observe.  Source after lib.sh.
#
#   +-------------------+            +-------------------+
#   | netns a           |    veth    | netns b           |
#   | 10.0.0.1/24       |------------| 10.0.0.2/24       |
#   | fd00::1/64     va |            | vb     fd00::2/64 |
#   +-------------------+            +-------------------+
#
# A case is a shell function case_NAME that builds its scenario (usually
# with pair/sa/pol below), sends probes and prints observations; "expect"
# checks what stock 6.1 must do, so a case where both paths are equally
# wrong still fails.  diff_case runs it twice and diffs the observations,
# which also include every SA's packet count, whether each policy was used
# (curlft.use_time), and the nonzero /proc/net/xfrm_stat counters of every
# namespace.

KEY=0x0102030405060708091011121314151617181920
XSEND=$XNC_TOP/tests/tools/xsend

# pair: two namespaces joined by a veth, IPv4 and IPv6 addresses
pair() {
	ip netns add a
	ip netns add b
	ip link add va netns a type veth peer name vb netns b
	ip -n a addr add 10.0.0.1/24 dev va
	ip -n b addr add 10.0.0.2/24 dev vb
	ip -n a addr add fd00::1/64 dev va nodad
	ip -n b addr add fd00::2/64 dev vb nodad
	ip -n a link set va up
	ip -n b link set vb up
	ip -n a link set lo up
	ip -n b link set lo up
	# settle both families (link up, neighbours known) before any policy
	# exists, so probe timing never depends on how fast the link came up
	wait_for 5 ip netns exec a ping -q -c1 -W1 10.0.0.2 >/dev/null
	wait_for 5 ip netns exec a ping -q -c1 -W1 fd00::2 >/dev/null
}

# sa "NS..." SRC DST SPI MODE [extra ip-xfrm-state args]: ESP (AEAD) SA
sa() {
	local nss=$1 src=$2 dst=$3 spi=$4 mode=$5 n
	shift 5
	for n in $nss; do
		ip -n "$n" xfrm state add src "$src" dst "$dst" proto esp spi "$spi" \
			mode "$mode" aead 'rfc4106(gcm(aes))' $KEY 128 "$@" ||
			echo "EXPECT-FAIL cannot add SA $spi in $n"
	done
}

# pol NS ARGS...: ip xfrm policy add ARGS in NS
pol() {
	local n=$1
	shift
	ip -n "$n" xfrm policy add "$@" || echo "EXPECT-FAIL cannot add policy in $n: $*"
}

# expect WHAT GOT WANT: record (do not abort) a mismatch with stock 6.1
expect() {
	[ "$2" = "$3" ] || echo "EXPECT-FAIL $1: got '$2', want '$3'"
}

# pings NS DST [COUNT] [ping args]: number of replies
pings() {
	local ns=$1 dst=$2 c=${3:-3}
	shift 3 2>/dev/null || shift $#
	ip netns exec "$ns" ping -q -c "$c" -i 0.2 -W 2 "$@" "$dst" 2>&1 |
		sed -n 's/.* \([0-9]*\) received.*/\1/p; s/.*sendmsg: \(.*\)/sendmsg: \1/p' |
		sort -u | tr '\n' ' ' | sed 's/ $//'
}

# udp NS DST [xsend args]: send 3 datagrams to DST:5000 from NS with xsend,
# count arrivals in the namespace owning DST (RXNS, default b): those in by
# XNC_SLOW seconds after the sender is done.  The listener is stopped then,
# not by its own timer, which would start before the sender does (and
# starting a process can take a second on a busy guest).
udp() {
	local ns=$1 dst=$2 rx=${RXNS:-b} v6='' out
	shift 2
	case $dst in *:*) v6=-6 ;; esac
	ip netns exec "$rx" "$XSEND" -l $v6 -w 600 5000 >/tmp/udp.rx &
	local l=$!
	wait_for 5 grep -q listening /tmp/udp.rx
	out=$(ip netns exec "$ns" "$XSEND" $v6 -n 3 "$@" "$dst" 5000 | tr '\n' ' ')
	sleep "$XNC_SLOW"
	kill -TERM $l
	wait $l
	echo "$out$(grep received /tmp/udp.rx)"
}

# observe: the user-visible state of every namespace
observe() {
	local n
	for n in $(ip netns list | awk '{print $1}' | sort); do
		ip -n "$n" -s xfrm state | awk -v n="$n" '
			/^src/ { s = $2 " > " $4 }
			/proto/ && /spi/ { s = s " " $2 " " $4 " " $8 }
			/lifetime current:/ { getline; split($2, p, "("); print n ": SA " s " packets=" p[1] }'
		ip -n "$n" -s xfrm policy | awk -v n="$n" '
			/^src/ { s = $2 " > " $4 }
			/dir/ { s = s " " $2 " " $4
				if (match($0, /ptype [a-z]+/)) s = s " " substr($0, RSTART, RLENGTH)
				if (match($0, /flag [a-z]+/)) s = s " " substr($0, RSTART, RLENGTH) }
			/ use / { u = ($NF == "-" || $0 ~ /use 1970/) ? "unused" : "used"; print n ": POL " s " " u }'
		# shellcheck disable=SC2016 # awk program
		ip netns exec "$n" awk -v n="$n" '$2 != 0 { print n ": MIB " $1 "=" $2 }' /proc/net/xfrm_stat
	done
}

# module_lookups: sum of Lookups over all namespaces (the patched path ran)
module_lookups() {
	local n t=0 v
	for n in $(ip netns list | awk '{print $1}'); do
		v=$(xnc_stat Lookups "$n")
		t=$((t + ${v:-0}))
	done
	echo $t
}

# cleanup_ns: delete every namespace.  Each one's policies go first: that
# purges their hold queues at once, under the path that queued the packets;
# a namespace's own teardown runs later, from a workqueue, and until then a
# queue's timer would look its packets up again on whatever path is in
# place by then (the stock one, once the module is gone).
cleanup_ns() {
	local n
	for n in $(ip netns list | awk '{print $1}'); do
		ip -n "$n" xfrm policy flush
		ip netns del "$n"
	done
	ip xfrm policy flush
	ip xfrm state flush
}

# diff_case NAME: stock run, module run, compare; one result line
# diff_stock NAME FILE: the stock half of a case, in namespaces of its own
diff_stock() {
	( "case_$1" ; observe ) >"$2" 2>&1
	cleanup_ns
}

diff_case() {
	local name=$1 d=$XNC_OUT/diff so lk
	mkdir -p "$d"
	xnc_unload >/dev/null 2>&1
	stock_window diff_stock "$name" "$d/$name.stock"
	xnc_load || { echo "FAIL $name: module load failed"; return 1; }
	( "case_$name" ; observe ) >"$d/$name.module" 2>&1
	lk=$(module_lookups)
	# the counters that name this case's cause must have moved (in a, or NS:Name)
	local c v moved=
	for c in ${WANT[$name]:-}; do
		case $c in
		*:*) v=$(xnc_stat "${c#*:}" "${c%%:*}") ;;
		*) v=$(xnc_stat "$c" a) ;;
		esac
		[ "${v:-0}" -gt 0 ] || moved="$moved $c"
	done
	cleanup_ns
	xnc_unload || { echo "FAIL $name: module unload failed"; return 1; }

	so=$(grep -c EXPECT-FAIL "$d/$name.stock")
	if ! diff -u "$d/$name.stock" "$d/$name.module" >"$d/$name.diff"; then
		echo "FAIL $name: stock and module differ:"
		sed -n '3,$p' "$d/$name.diff" | grep '^[-+]' | head -n 10
		return 1
	fi
	if [ "$so" != 0 ]; then
		echo "FAIL $name: not what stock 6.1 does: $(grep -m1 EXPECT-FAIL "$d/$name.stock")"
		return 1
	fi
	if [ -n "$moved" ]; then
		echo "FAIL $name: counters did not move in a:$moved"
		return 1
	fi
	if [ "${lk:-0}" -eq 0 ]; then
		echo "FAIL $name: the module saw no lookups (path not in use?)"
		return 1
	fi
	echo "same $name: $lk lookups; moved: ${WANT[$name]:-}"
}
