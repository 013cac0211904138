#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench-notifier: what a NETDEV_DOWN costs with the module's notifier
# against stock, in one boot of Debian's kernel with one vCPU and -icount
# shift=1 (bench/guest/notifier.sh: 10,000 SAs in the namespace, 200
# downs of a veth and of a netdevsim port with 32 SAs bound to it).
# Writes docs/notifier.md (6.1) or docs/notifier-<kernel>.md (KERNEL=6.12...).
# KERNEL (XNC_KLINE: 6.1, 6.12, 6.1-rt or 6.12-rt) picks the kernel;
# XNC_NB_SAS, XNC_NB_BOUND, XNC_NB_ROUNDS, XNC_NB_CYCLES pass through;
# --report DIR writes the report again from an earlier run's DIR.

set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
kline=$(scripts/kernel.sh name)
out=${XNC_OUT:-$top/tests/out/bench-notifier-$(date +%Y%m%d-%H%M%S)}
docs=${XNC_BENCH_DOCS:-$top/docs}
[ "${1:-}" = --report ] && out=${2:?--report DIR}
mkdir -p "$out" "$docs"
out=$(cd "$out" && pwd)
report=$docs/notifier.md
[ "$kline" = 6.1 ] || report=$docs/notifier-$kline.md

# --report DIR: only write the report again from an earlier run's DIR
if [ "${1:-}" != --report ]; then
	if [ "$(scripts/kernel.sh root)" != / ] && [[ $out != "$top"/* ]]; then
		echo "bench/notifier.sh: $out is outside $top, which the trixie root does not see (XNC_OUT)" >&2
		exit 1
	fi
	scripts/build.sh --line "$out/mod" >"$out/mod.build" 2>&1 ||
		{ cat "$out/mod.build" >&2; exit 1; }
	scripts/netdevsim.sh >"$out/netdevsim.path"

	echo "bench-notifier: running in the VM (one vCPU, -icount shift=1); progress in $out/notifier.log"
	rc=0
	XNC_KO=$out/mod/xfrm_nocache.ko XNC_QUIET=${XNC_QUIET-1} \
		scripts/vm.sh --smp 1 --icount --timeout "${XNC_BENCH_TIMEOUT:-3600}" \
		--out "$out" --log "$out/console.log" -- \
		bash -c "'$top/bench/guest/notifier.sh' > '$out/notifier.log' 2>&1" || rc=$?
	tail -n 3 "$out/notifier.log" || true
	[ $rc -eq 0 ] || { echo "bench/notifier.sh: the VM run failed ($rc); see $out/notifier.log and $out/console.log" >&2; exit 1; }
fi

kver=$(scripts/kernel.sh version)
{
	echo "# The notifier's cost: one \`ip link set DEV down\`"
	echo
	echo "Written by \`make bench-notifier\` (bench/notifier.sh) on"
	echo "$(date -u +%Y-%m-%d), kernel $kver. One vCPU, -icount shift=1: guest"
	echo "time counts instructions, so the figures compare"
	echo "variants, not machines.  The namespace holds $(grep -c . "$out/sas.batch") software SAs;"
	echo "\`nsim\` is a netdevsim port with $(grep -c . "$out/bound.batch") SAs offloaded to it, which each"
	echo "down deletes (both variants; checked after every down), \`veth\` a"
	echo "device without xfrmdev_ops.  Per down, mean over the rounds' cycles:"
	echo "\`command\`, the whole \`ip\` command (exec, netlink, the device's"
	echo "close); \`kernel\`, \`__dev_notify_flags()\` (NETDEV_DOWN through the"
	echo "notifier chain, ours and xfrm's among it, and the rtnetlink message),"
	echo "timed by function_graph with nothing else instrumented.  Stock and"
	echo "module interleaved, order alternating by round; per round: module/stock"
	echo "of \`kernel\`."
	echo
	echo "| device | command: stock (µs) | module (µs) | module/stock | kernel: stock (µs) | module (µs) | module/stock | per round |"
	echo "|--------|------:|------:|------:|------:|------:|------:|-----------|"
	awk '
	{ t[$1, $2] += $5; k[$1, $2] += $6; c[$1, $2] += $4; r[$1, $2, $3] = $6 / $4 }
	END {
		split("v0 sim1", order, " ")
		name["v0"] = "veth"; name["sim1"] = "nsim"
		for (j = 1; j <= 2; j++) {
			d = order[j]
			s = t[d, "stock"] / c[d, "stock"] / 1000
			m = t[d, "module"] / c[d, "module"] / 1000
			ks = k[d, "stock"] / c[d, "stock"] / 1000
			km = k[d, "module"] / c[d, "module"] / 1000
			pr = ""
			for (i = 1; (d, "stock", i) in r; i++)
				pr = pr sprintf("%s%.3f", i > 1 ? " " : "", r[d, "module", i] / r[d, "stock", i])
			printf "| %s | %.0f | %.0f | %.3f | %.1f | %.1f | %.3f | %s |\n",
				name[d], s, m, m / s, ks, km, km / ks, pr
		}
	}' "$out/notifier.raw"
	echo
	echo "Raw: device variant round cycles command_ns kernel_ns"
	echo
	sed 's/^/    /' "$out/notifier.raw"
} >"$report"
cat "$report"
