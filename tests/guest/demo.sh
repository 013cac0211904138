#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of "make demo" (not a test: tests are t-*.sh).  A router
# operator's view: xfrm_nocache loaded, two strongSwan gateways with
# SWAN_N IKEv2 tunnels (default 8) forwarding traffic between client
# networks, a CHILD_SA rekey under traffic, the module disabled and removed
# under traffic and loaded again.  Topology: see swan-lib.sh.
#
#   swan-ca --lan-- swan-ga [charon A] ==ESP== [charon B] swan-gb --lan-- swan-cb
#   10.1.X.0/24                                                 10.2.X.0/24
# shellcheck disable=SC2119 # xnc_load: no insmod parameters here
. "$(dirname "$0")/lib.sh"
SWAN_N=${SWAN_N:-8}
SWAN_REKEY=${SWAN_REKEY:-20}
SWAN_DIR=/tmp/swan
. "$(dirname "$0")/swan-lib.sh"
exec 2>&1
trap swan_cleanup EXIT
N=$SWAN_N

say() { printf '\n== %s\n' "$*"; }
cmd() { printf '$ %s\n' "$*"; }
secs() { printf '%d.%01d' $(($1 / 1000)) $(($1 % 1000 / 100)); }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
table() {	# per-tunnel traffic: DIR of pings, snapshot before, after
	printf '  %-6s %-27s %-10s %7s  %-10s %7s  %s\n' tunnel "traffic selectors" "SA A->B" pkts "SA B->A" pkts probes
	while read -r x _ out in; do
		printf '  %-6s %-27s %-10s %7s  %-10s %7s  %s\n' "net$x" "10.1.$x.0/24 <=> 10.2.$x.0/24" \
			"$out" "$(( $(pk "$3" "$out") - $(pk "$2" "$out") ))" \
			"$in" "$(( $(pk "$3" "$in") - $(pk "$2" "$in") ))" \
			"$(awk '/transmitted/ { print $4 "/" $1 }' "$1/$x.ping")"
	done <"$3.map"
}
pk() { swan_pk "$1" "$2"; }
snap() { swan_sas swan-ga >"$1"; swan_tunnels swan-ga >"$1.map"; }
counters() {
	# shellcheck disable=SC2016 # awk program
	ip netns exec "$1" awk '$1 ~ /^(Lookups|LookupsIPv4|SocketPolicy|NoPolicy|Transformed|BundlesCreated|Queued|NoStates|Errors)$/ { printf "  %-16s %s\n", $1, $2 }' /proc/net/xfrm_nocache
}

echo "=== demo start"
echo "kernel $(uname -r), strongSwan $($SWAN_CHARON --version 2>/dev/null | awk '{ print $NF }'), $N tunnels, CHILD_SA rekey every ${SWAN_REKEY}s"
if ! why=$(swan_have); then
	echo "strongSwan not usable ($why): make deps"
	echo "=== demo end"; exit 1
fi

say "1. load the module (livepatch of xfrm_lookup_with_ifid)"
cmd "insmod xfrm_nocache.ko"
xnc_load || { echo "insmod failed"; echo "=== demo end"; exit 1; }
cmd "cat /sys/kernel/livepatch/xfrm_nocache/enabled"; cat $LP/enabled

say "2. two gateways, one charon each, $N IKEv2 connections (PSK, AES-GCM, X25519)"
{ swan_net && swan_start; } || { echo "setup failed"; echo "=== demo end"; exit 1; }
t0=$(date +%s%N)
swan_initiate
wait_for 120 swan_all_up || echo "NOT all up: A $(swan_child_up a)/$N, B $(swan_child_up b)/$N"
t_up=$(ms_since "$t0")
echo "all $N tunnels up in $(secs "$t_up")s (qemu TCG, no KVM)"
echo "gateway A: $(swan_ike_up a) IKE_SAs ESTABLISHED, $(swan_child_up a) tunnels with a CHILD_SA installed"
echo "gateway B: $(swan_ike_up b) IKE_SAs ESTABLISHED, $(swan_child_up b) tunnels with a CHILD_SA installed"
cmd "swanctl --list-sas --ike net1        # on gateway A"
swan_ctl a --list-sas --ike net1 | sed 's/^/  /'

say "3. the kernel's view on gateway A"
for d in out in fwd; do printf '%s policies: %s   ' "$d" "$(swan_policies swan-ga $d)"; done
echo "SAs: $(swan_states swan-ga)"
cmd "ip xfrm policy list src 10.1.1.0/24 dst 10.2.1.0/24"
ip -n swan-ga xfrm policy list src 10.1.1.0/24 dst 10.2.1.0/24 | sed 's/^/  /'
read -r _ _ out1 _ <<<"$(swan_tunnels swan-ga | awk '$1 == 1')"
cmd "ip -s xfrm state list spi $out1      # net1, A->B"
ip -n swan-ga -s xfrm state list spi "$out1" | sed -n '1,2p;/lifetime current/,+1p' | sed 's/^/  /'

say "4. traffic: 10 pings per tunnel, client 10.1.X.10 -> 10.2.X.10, forwarded by both gateways"
P=$SWAN_DIR/ping
snap "$SWAN_DIR/s0"
swan_ping_start "$P" 10 0.2
swan_ping_wait "$P"
snap "$SWAN_DIR/s1"
table "$P" "$SWAN_DIR/s0" "$SWAN_DIR/s1"
cmd "ip netns exec swan-ga cat /proc/net/xfrm_nocache      # (excerpt)"
counters swan-ga

say "5. rekeying under traffic: 4 pings/s per tunnel for $((SWAN_REKEY + 6))s"
rk0=$(swan_rekeys)
snap "$SWAN_DIR/r0"
cnt=$(((SWAN_REKEY + 6) * 4))
swan_ping_start "$P" "$cnt" 0.25
swan_ping_wait "$P"
wait_for 10 sh -c "[ \$(ip -n swan-ga xfrm state | grep -c '^src') = $((2 * N)) ]"
snap "$SWAN_DIR/r1"
read -r s r <<<"$(swan_ping_sum "$P")"
changed=$(awk 'FNR == NR { old[$1] = $3; next } !index(old[$1], $3)' "$SWAN_DIR/r0.map" "$SWAN_DIR/r1.map" | wc -l)
echo "CHILD_SA rekeys: $(( $(swan_rekeys) - rk0 )); tunnels with new SAs: $changed/$N; SAs now: $(swan_states swan-ga) (old ones deleted)"
echo "probes: $s sent, $r answered, $((s - r)) lost"
echo "net1 A->B SA: $(awk '$1 == 1 { print $3 }' "$SWAN_DIR/r0.map") -> $(awk '$1 == 1 { print $3 }' "$SWAN_DIR/r1.map")"
grep 'outbound CHILD_SA net1{' "$SWAN_DIR/a/charon.log" | tail -n1 | sed 's/^/  charon A: /'

say "6. disable + rmmod under traffic (the stock path takes over), then insmod again"
swan_ping_start "$P" 40 0.2
sleep 2
cmd "echo 0 > /sys/kernel/livepatch/xfrm_nocache/enabled; rmmod xfrm_nocache"
snap "$SWAN_DIR/u0"
xnc_unload && echo "module removed: $(grep -c '^xfrm_nocache ' /proc/modules) loaded, /proc/net/xfrm_nocache $([ -e /proc/net/xfrm_nocache ] && echo present || echo gone)"
sleep 2
snap "$SWAN_DIR/u1"
moved=0
while read -r x _ out _; do
	[ "$(pk "$SWAN_DIR/u1" "$out")" -gt "$(pk "$SWAN_DIR/u0" "$out")" ] && moved=$((moved + 1))
done <"$SWAN_DIR/u1.map"
echo "stock path: $moved/$N tunnels' A->B SAs carried traffic while unloaded"
cmd "insmod xfrm_nocache.ko"
xnc_load || echo "insmod failed"
swan_ping_wait "$P"
read -r s r <<<"$(swan_ping_sum "$P")"
echo "probes across rmmod/insmod: $s sent, $r answered, $((s - r)) lost"
cmd "ip netns exec swan-ga cat /proc/net/xfrm_nocache      # counting again"
counters swan-ga

say "summary"
wait_for 10 sh -c "[ \$(ip -n swan-ga xfrm state | grep -c '^src') = $((2 * N)) ]"
cmd "lsmod | grep xfrm_nocache; cat /sys/kernel/livepatch/xfrm_nocache/enabled"
grep '^xfrm_nocache ' /proc/modules | awk '{ print "  " $1, $2 }'
echo "  livepatch enabled: $(cat $LP/enabled)"
echo "  tunnels up: A $(swan_child_up a)/$N, B $(swan_child_up b)/$N; established in $(secs "$t_up")s"
echo "  SAs per gateway: $(swan_states swan-ga) (2 x $N); policies out/in/fwd: $(swan_policies swan-ga out)/$(swan_policies swan-ga in)/$(swan_policies swan-ga fwd)"

say "by hand"
cat <<EOF
  On a router (Debian, strongswan-charon + strongswan-swanctl):
    insmod xfrm_nocache.ko; cat /sys/kernel/livepatch/xfrm_nocache/enabled
    systemctl restart strongswan; swanctl --load-all; swanctl --list-sas
    ip -s xfrm state; ip xfrm policy; cat /proc/net/xfrm_nocache
  This demo's gateways (tests/guest/swan-lib.sh), each charon in its netns
  with a private /run (pid file, vici socket) and its own strongswan.conf:
    ip netns exec swan-ga unshare -m sh -c 'mount --bind $SWAN_DIR/a/run /run &&
        STRONGSWAN_CONF=$SWAN_DIR/a/strongswan.conf exec /usr/lib/ipsec/charon' &
    swanctl --load-all --uri unix://$SWAN_DIR/a/run/charon.vici --file $SWAN_DIR/a/swanctl.conf
    swanctl --list-sas --uri unix://$SWAN_DIR/a/run/charon.vici
  Bigger: make demo SWAN_N=30; the full scenario with assertions (N=30,
  rekeys, terminate/initiate, rmmod under traffic): make check T=strongswan
EOF
echo "=== demo end"
