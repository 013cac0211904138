#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# strongSwan scenario for the guest: source it after lib.sh.  Used by
# t-50-strongswan.sh and demo.sh.
#
#   10.1.X.10/24        10.1.X.1/24  192.0.2.1    192.0.2.2  10.2.X.1/24       10.2.X.10/24
#   +---------+ lan  +--------------+  wan  +--------------+  lan  +---------+
#   | swan-ca |------|   swan-ga    |=======|   swan-gb    |-------| swan-cb |
#   | clients |      | charon (A)   |  ESP  | charon (B)   |       | clients |
#   +---------+      +--------------+       +--------------+       +---------+
#                      N IKE_SAs "netX", one CHILD_SA each:
#                      10.1.X.0/24 <=> 10.2.X.0/24, X = 1..N
#
# Each gateway runs its own charon in its netns, in a private mount namespace
# where $SWAN_DIR/<gw>/run is bind-mounted on /run: the pid file
# (/var/run/charon.pid) and the vici socket (/var/run/charon.vici) are thus
# per gateway and visible from outside as $SWAN_DIR/<gw>/run/.  The daemon's
# strongswan.conf is chosen with STRONGSWAN_CONF, swanctl talks to it with
# --uri.  A initiates every connection (start_action = start) and is the only
# side that rekeys CHILD_SAs (every SWAN_REKEY seconds); B only responds.
#
# Settings (environment): SWAN_N tunnels (30), SWAN_REKEY seconds (25 times
# XNC_SLOW, see lib.sh; 0 = no rekeying), SWAN_DIR working directory.

SWAN_N=${SWAN_N:-30}
SWAN_REKEY=${SWAN_REKEY:-$((25 * ${XNC_SLOW:-1}))}
SWAN_DIR=${SWAN_DIR:-/tmp/xnc-swan}
SWAN_CHARON=${SWAN_CHARON:-/usr/lib/ipsec/charon}
SWAN_NS="swan-ca swan-ga swan-gb swan-cb"
SWAN_PSK=0sc3Ryb25nU3dhbiBvdmVyIHhmcm1fbm9jYWNoZSwgdGVzdCBrZXk=

swan_have() {
	[ -x "$SWAN_CHARON" ] || { echo "no $SWAN_CHARON (apt-get install strongswan-charon)"; return 1; }
	command -v swanctl >/dev/null || { echo "no swanctl (apt-get install strongswan-swanctl)"; return 1; }
	local p
	for p in random nonce openssl kernel-netlink socket-default vici; do
		[ -e /usr/lib/ipsec/plugins/libstrongswan-$p.so ] ||
			{ echo "strongSwan plugin $p missing"; return 1; }
	done
}

# the plugins charon loads: 5.9's KDFs are the kdf plugin's; 6.0 as Debian
# 13 builds it has none, its openssl plugin derives the keys
swan_plugins() {
	local p=(random nonce openssl kernel-netlink socket-default vici)
	[ ! -e /usr/lib/ipsec/plugins/libstrongswan-kdf.so ] || p+=(kdf)
	echo "${p[*]}"
}

# swan_net: namespaces, links, addresses, routes, forwarding
swan_net() {
	local ns x
	for ns in $SWAN_NS; do
		ip netns add "$ns" || return 1
		ip -n "$ns" link set lo up
	done
	ip link add lan netns swan-ca type veth peer name lan netns swan-ga || return 1
	ip link add wan netns swan-ga type veth peer name wan netns swan-gb || return 1
	ip link add lan netns swan-gb type veth peer name lan netns swan-cb || return 1
	ip -n swan-ga addr add 192.0.2.1/24 dev wan
	ip -n swan-gb addr add 192.0.2.2/24 dev wan
	for x in $(seq 1 "$SWAN_N"); do
		ip -n swan-ca addr add "10.1.$x.10/24" dev lan
		ip -n swan-ga addr add "10.1.$x.1/24" dev lan
		ip -n swan-gb addr add "10.2.$x.1/24" dev lan
		ip -n swan-cb addr add "10.2.$x.10/24" dev lan
	done
	for ns in $SWAN_NS; do
		ip -n "$ns" link set lan up 2>/dev/null
		ip -n "$ns" link set wan up 2>/dev/null
	done
	ip -n swan-ca route add default via 10.1.1.1
	ip -n swan-cb route add default via 10.2.1.1
	ip -n swan-ga route add 10.2.0.0/16 via 192.0.2.2
	ip -n swan-gb route add 10.1.0.0/16 via 192.0.2.1
	ip netns exec swan-ga sysctl -qw net.ipv4.ip_forward=1
	ip netns exec swan-gb sysctl -qw net.ipv4.ip_forward=1
}

# swan_conf GW(a|b): strongswan.conf and swanctl.conf of one gateway
swan_conf() {
	local gw=$1 d=$SWAN_DIR/$1 me peer ml pl x start rekey life=0 rand=0
	if [ "$gw" = a ]; then
		me=192.0.2.1 peer=192.0.2.2 ml=1 pl=2 start=start rekey=${SWAN_REKEY}s
		# hard expiry at twice the rekey time, not charon's default
		# 1.1 times: there, one IKE retransmission (4 s) in a rekey on
		# a loaded guest lets the CHILD_SA expire: the tunnel goes down
		life=$((2 * SWAN_REKEY))s rand=$((SWAN_REKEY / 5))s
	else
		me=192.0.2.2 peer=192.0.2.1 ml=2 pl=1 start=none rekey=0
	fi
	[ "$SWAN_REKEY" = 0 ] && rekey=0
	mkdir -p "$d/run"
	cat >"$d/strongswan.conf" <<EOF
# charon of gateway $gw; swanctl reads this too (STRONGSWAN_CONF)
charon {
	load_modular = no
	load = $(swan_plugins)
	install_routes = no
	filelog {
		log {
			path = $d/charon.log
			time_format = %T
			ike_name = yes
			flush_line = yes
			default = 1
		}
	}
}
swanctl {
	load = random
}
EOF
	{
		echo "connections {"
		for x in $(seq 1 "$SWAN_N"); do
			cat <<EOF
	net$x {
		version = 2
		local_addrs = $me
		remote_addrs = $peer
		proposals = aes128gcm16-prfsha256-x25519
		local { auth = psk
			id = gw$gw-net$x }
		remote { auth = psk
			id = gw$( [ "$gw" = a ] && echo b || echo a)-net$x }
		children {
			net$x {
				local_ts = 10.$ml.$x.0/24
				remote_ts = 10.$pl.$x.0/24
				esp_proposals = aes128gcm16-x25519
				rekey_time = $rekey
				life_time = $life
				rand_time = $rand
				start_action = $start
			}
		}
	}
EOF
		done
		echo "}"
		echo "secrets {"
		echo "	ike { secret = $SWAN_PSK }"
		echo "}"
	} >"$d/swanctl.conf"
}

# swan_ctl GW COMMAND [options]: swanctl against that gateway's charon
swan_ctl() {
	local d=$SWAN_DIR/$1 cmd=$2; shift 2
	STRONGSWAN_CONF=$d/strongswan.conf swanctl "$cmd" --uri "unix://$d/run/charon.vici" "$@"
}

# swan_charon GW: start the gateway's charon in its netns, wait for vici
swan_charon() {
	local gw=$1 d=$SWAN_DIR/$1
	ip netns exec "swan-g$gw" unshare -m --propagation private sh -c \
		"mount --bind $d/run /run && STRONGSWAN_CONF=$d/strongswan.conf exec $SWAN_CHARON" \
		>"$d/charon.out" 2>&1 </dev/null &
	echo $! >"$d/pid"
	wait_for 60 swan_ctl "$gw" --stats >/dev/null 2>&1 ||
		{ echo "charon $gw did not come up: $(tail -n 3 "$d/charon.out")"; return 1; }
}

# swan_stop: stop both daemons (they remove their SAs and policies)
swan_stop() {
	local gw pid
	for gw in a b; do
		pid=$(cat "$SWAN_DIR/$gw/pid" 2>/dev/null) || continue
		kill "$pid" 2>/dev/null
	done
	for gw in a b; do
		pid=$(cat "$SWAN_DIR/$gw/pid" 2>/dev/null) || continue
		wait_for 10 sh -c "! kill -0 $pid 2>/dev/null" || kill -9 "$pid" 2>/dev/null
		rm -f "$SWAN_DIR/$gw/pid"
	done
}

# swan_start: fresh directory, both daemons, B's config (B answers only)
swan_start() {
	rm -rf "$SWAN_DIR"
	swan_conf a && swan_conf b || return 1
	swan_charon b && swan_charon a || return 1
	swan_ctl b --load-all --file "$SWAN_DIR/b/swanctl.conf" >"$SWAN_DIR/b/load.out" 2>&1 ||
		{ echo "load on b failed: $(tail -n 2 "$SWAN_DIR/b/load.out")"; return 1; }
}

# swan_initiate: load A's config; start_action = start initiates everything
swan_initiate() {
	swan_ctl a --load-all --file "$SWAN_DIR/a/swanctl.conf" >"$SWAN_DIR/a/load.out" 2>&1 ||
		{ echo "load on a failed: $(tail -n 2 "$SWAN_DIR/a/load.out")"; return 1; }
}

# swan_up GW: "IKE TUNNELS" from one swanctl --list-sas: IKE_SAs
# established, and tunnels (IKE_SA names) with an established IKE_SA and a
# CHILD_SA that carries traffic.  While a CHILD_SA is rekeyed, the old one
# is REKEYING (initiator) and the new one not yet listed, or the old one is
# REKEYED and the new one INSTALLED: either way the tunnel is up, once.
swan_up() {
	swan_ctl "$1" --list-sas 2>/dev/null | awk '
		/^[^ ].*: #[0-9]+, / { name = $1; ike = ($3 == "ESTABLISHED,")
				       if (ike) n++; next }
		/^  [^ ]+: #[0-9]+, reqid [0-9]+, (INSTALLED|REKEYING), / {
			if (ike) up[name] = 1 }
		END { print n + 0, length(up) }'
}
swan_ike_up() { swan_up "$1" | cut -d' ' -f1; }
swan_child_up() { swan_up "$1" | cut -d' ' -f2; }

# swan_all_up [N]: both sides have N IKE_SAs, and N tunnels up
swan_all_up() {
	local n=${1:-$SWAN_N}
	[ "$(swan_up a)" = "$n $n" ] && [ "$(swan_up b)" = "$n $n" ]
}

# swan_policies NS DIR: number of xfrm policies of that direction
swan_policies() { ip -n "$1" xfrm policy list dir "$2" | grep -c '^src '; }
swan_states() { ip -n "$1" xfrm state | grep -c '^src '; }

# swan_sas NS: one line per ESP SA: "spi reqid src dst packets"
swan_sas() {
	ip -n "$1" -s xfrm state | awk '
		/^src / { src = $2; dst = $4 }
		/^\tproto esp spi/ { spi = $4; sub(/\(.*/, "", spi)
				    req = $6; sub(/\(.*/, "", req) }
		/lifetime current:/ { getline; p = $2; sub(/\(.*/, "", p)
				      print spi, req, src, dst, p }'
}

# swan_tunnels NS: "X reqid out-spi in-spi" for every tunnel X of a gateway,
# from the out policy of 10.<side>.X.0/24 and the SAs with its reqid; while
# a rekey is in flight a direction has two SAs: "spi1,spi2"
swan_tunnels() {
	local ns=$1 ml me
	if [ "$ns" = swan-ga ]; then ml=1 me=192.0.2.1; else ml=2 me=192.0.2.2; fi
	{
		ip -n "$ns" xfrm policy list dir out | awk -v ml="$ml" '
			/^src / { split($2, a, "."); x = (a[1] "." a[2] == "10." ml) ? a[3] : "" }
			/reqid/ && x != "" { for (i = 1; i < NF; i++) if ($i == "reqid") print "P", x, $(i + 1) }'
		swan_sas "$ns" | sed 's/^/S /'
	} | awk -v me="$me" '
		$1 == "P" { x[$3] = $2; next }
		$1 == "S" && $4 == me { out[$3] = out[$3] "," $2; next }
		$1 == "S" { in_[$3] = in_[$3] "," $2 }
		END { for (r in x) print x[r], r, substr(out[r], 2), substr(in_[r], 2) }' | sort -n
}

# swan_pk SNAPSHOT SPI[,SPI...]: packets of those SAs in a swan_sas
# snapshot (an SA not in it counts 0)
swan_pk() {
	awk -v l="$2" 'BEGIN { n = split(l, a, ","); for (i = 1; i <= n; i++) w[a[i]] = 1 }
		$1 in w { p += $5 } END { print p + 0 }' "$1"
}

# swan_ping_start DIR COUNT INTERVAL [X...]: one ping per tunnel, from
# 10.1.X.10 to 10.2.X.10 (default every tunnel); COUNT may be "var" for
# 2 + X % 5 probes (each tunnel its own number, to tell SAs apart), or
# "open" for probes until swan_ping_stop (each reply logged, see
# swan_ping_lost)
swan_ping_start() {
	local dir=$1 cnt=$2 int=$3 x c; shift 3
	mkdir -p "$dir"
	rm -f "$dir"/*.ping "$dir/pids"
	# shellcheck disable=SC2068 # tunnel numbers: the arguments, or seq's
	for x in ${@:-$(seq 1 "$SWAN_N")}; do
		c=(-q -c "$cnt")
		[ "$cnt" = var ] && c=(-q -c $((2 + x % 5)))
		[ "$cnt" = open ] && c=()
		ip netns exec swan-ca ping -n "${c[@]}" -i "$int" -W 3 -I "10.1.$x.10" "10.2.$x.10" \
			>"$dir/$x.ping" 2>&1 &
		echo $! >>"$dir/pids"
	done
}

swan_ping_wait() {
	local p
	# shellcheck disable=SC2013 # pids: one number a line
	for p in $(cat "$1/pids"); do wait "$p"; done
	return 0
}

# swan_ping_stop DIR: end an "open" run (ping prints its summary on SIGINT)
swan_ping_stop() {
	local p
	# shellcheck disable=SC2013 # pids: one number a line
	for p in $(cat "$1/pids"); do kill -INT "$p" 2>/dev/null; done
	swan_ping_wait "$1"
}

# swan_ping_sum DIR: "sent received" over every ping of DIR
swan_ping_sum() {
	cat "$1"/*.ping | awk '/packets transmitted/ { s += $1; r += $4 } END { print s + 0, r + 0 }'
}

# swan_ping_lost DIR X: probes lost by tunnel X's ping.  For an "open" run
# stopped by swan_ping_stop, the last probe sent may still have been on its
# way: there, lost = sequence numbers up to the last one answered that got
# no answer, plus any after it but that one.
swan_ping_lost() {
	awk '/ bytes from .* icmp_seq=/ {
			sub(/.*icmp_seq=/, ""); q = $1 + 0
			if (!(q in got)) { got[q] = 1; n++ }
			if (q > max) max = q
		}
		/packets transmitted/ { t = $1; r = $4 }
		END {
			if (!n) { print t - r; exit }	# -q: no reply lines
			tail = t - max - 1
			print max - n + (tail > 0 ? tail : 0)
		}' "$1/$2.ping"
}

# swan_rekeys: CHILD_SA rekeys completed by A so far (its log says
# "outbound CHILD_SA netX{N} established" once per rekey it initiated)
swan_rekeys() {
	grep -c 'outbound CHILD_SA .* established with SPIs' "$SWAN_DIR/a/charon.log" 2>/dev/null
}

swan_cleanup() {
	swan_stop
	local ns
	# probes left running by a test that failed (an "open" run never ends)
	for ns in $SWAN_NS; do ip netns pids "$ns" 2>/dev/null | xargs -r kill -9; done
	for ns in $SWAN_NS; do ip netns del "$ns" 2>/dev/null; done
	return 0
}
