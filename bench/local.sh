#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench-local: what the livepatch costs local traffic without IPsec
# (UDP sendto, TCP connect/close; bench/guest/local.sh).  Variants: stock;
# idle, the module loaded with its patch disabled (stock's lookup, the
# module's memory); redirect, the module with every lookup through
# xnc_lookup(), which has stock's shape, and no counting: redirect/idle is
# the livepatch redirect's own cost (ftrace entry and the livepatch
# handler); module, as shipped.  One boot of Debian's kernel, one vCPU,
# -icount shift=1.  Writes docs/local.md and docs/local.raw, and its
# section of docs/bench.md (KERNEL=6.12...: local-<kernel>.*, bench-<kernel>.md).
# XNC_LOCAL_PREV=REV adds "prev", the module as committed at git REV, for
# a before/after in the same boot.  XNC_LOCAL_ROUNDS, XNC_LOCAL_POLICIES,
# XNC_LOCAL_UDP, XNC_LOCAL_TCP pass through; --report DIR writes the
# report again from an earlier run's DIR; --section prints the benchmark
# page's section from docs/local*.raw (bench/report.sh).
# Debian 13's kernels (13, 13-rt, 7.3): the variants build in the trixie
# root (scripts/kernel.sh build), which sees only this repository, so the
# run's directory must be inside it (the default, tests/out/), and KDIR,
# if set, is the headers as seen there (scripts/kernel.sh bkdir).

set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
kline=$(scripts/kernel.sh name)
out=${XNC_OUT:-$top/tests/out/bench-local-$(date +%Y%m%d-%H%M%S)}
docs=${XNC_BENCH_DOCS:-$top/docs}
die() { echo "bench/local.sh: $*" >&2; exit 1; }
case ${1:-} in
--report) out=${2:?--report DIR} ;;
--section) out= ;;
esac
[ -z "$out" ] || mkdir -p "$out"
mkdir -p "$docs"
sfx=
[ "$kline" = 6.1 ] || sfx=-$kline
report=$docs/local$sfx.md
page=$docs/bench$sfx.md

# variant NAME: build the module from the tree in $out/tree-NAME
variant() {
	local t=$out/tree-$1
	{ "${kb[@]}" make -s -C "$kdir" M="$t" modules &&
	  python3 scripts/klp-relocs.py "$t/xfrm_nocache.ko"; } \
		>"$out/$1.build" 2>&1 || die "building $1 failed: see $out/$1.build"
	mkdir -p "$out/ko/$1"
	cp "$t/xfrm_nocache.ko" "$out/ko/$1/"
}

# tree NAME: the working tree's module sources in $out/tree-NAME
tree() {
	rm -rf "$out/tree-$1"
	mkdir -p "$out/tree-$1"
	cp -r src include Kbuild "$out/tree-$1/"
}

if [ -z "${1:-}" ]; then
	# every module build runs in the kernel's root (/ on bookworm's
	# lines, the trixie root on Debian 13's), against its headers there
	kdir=${KDIR:-$(scripts/kernel.sh bkdir)}
	kb=(scripts/kernel.sh build)
	# absolute: the builds' M= is read in the root, from its /
	out=$(cd "$out" && pwd)
	if [ "$(scripts/kernel.sh root)" != / ] && [[ $out != "$top"/* ]]; then
		die "$out is outside $top, which the trixie root that builds $kline's modules does not see (XNC_OUT)"
	fi
	variants="stock idle redirect module"
	# the one tool the guest runs: a host build, which runs on trixie's
	# newer glibc too; make tools would also build klp-other, on the host
	# for a Debian 13 XNC_KLINE without make's KERNEL
	make -s tests/tools/xcost
	tree module
	variant module
	# redirect: every lookup through xnc_lookup(), a function of stock's
	# shape, which counts nothing
	tree redirect
	f=$out/tree-redirect/src/lookup.c
	sub() {
		local n
		n=$(grep -c -e "$1" "$f" || true)
		[ "$n" = "$2" ] || die "src/lookup.c: $n lines match '$1', not $2: the source moved"
		sed -i -e "/$1/$3" "$f"
	}
	sub '^[[:space:]]*xnc_account(net, .*);$' 2 d
	sub '^[[:space:]]*xnc_count_outcome(net, .*);$' 2 d
	sub '^[[:space:]]if (static_branch_unlikely(&xnc_latency_key) ||$' 1 's/(static_branch_unlikely(&xnc_latency_key) ||/(true ||/'
	variant redirect
	if [ -n "${XNC_LOCAL_PREV:-}" ]; then
		rm -rf "$out/tree-prev"
		mkdir -p "$out/tree-prev"
		git archive "$XNC_LOCAL_PREV" src include Kbuild | tar -x -C "$out/tree-prev"
		variant prev
		variants="$variants prev"
	fi

	echo "bench-local: running in the VM (one vCPU, -icount shift=1); progress in $out/local.log"
	rc=0
	XNC_LOCAL_VARIANTS=$variants XNC_QUIET=${XNC_QUIET-1} \
		scripts/vm.sh --smp 1 --icount --timeout "${XNC_BENCH_TIMEOUT:-3600}" \
		--out "$out" --log "$out/console.log" -- \
		bash -c "'$top/bench/guest/local.sh' > '$out/local.log' 2>&1" || rc=$?
	tail -n 3 "$out/local.log" || true
	[ $rc -eq 0 ] || die "the VM run failed ($rc); see $out/local.log and $out/console.log"
fi

# table RAW: ops/s per policy count, test and variant, the mean of the
# rounds, and each variant against stock
table() {
	awk '
	{ k = $1 SUBSEP $2; v = $3
	  if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
	  if (!(v in vseen)) { vseen[v] = 1; vars[++nv] = v }
	  ops[k, v] += $5; ns[k, v] += $6; r[k, v, $4] = $5 / $6
	  if (v == "module") { lk[k] += $7 / $5; nl[k]++ } }
	END {
		hdr = "| policies | test |"; sep = "|---:|---|"
		for (j = 1; j <= nv; j++) {
			hdr = hdr " " vars[j] " |"; sep = sep "---:|"
		}
		for (j = 2; j <= nv; j++) {
			hdr = hdr " " vars[j] "/stock |"; sep = sep "---:|"
		}
		hdr = hdr " module/stock by round | lookups/op |"; sep = sep "---|---:|"
		print hdr; print sep
		for (i = 1; i <= nk; i++) {
			k = keys[i]; split(k, kk, SUBSEP)
			line = "| " kk[1] " | " kk[2] " |"
			for (j = 1; j <= nv; j++)
				line = line sprintf(" %.0f |", ops[k, vars[j]] / ns[k, vars[j]] * 1e9)
			s = ops[k, "stock"] / ns[k, "stock"]
			for (j = 2; j <= nv; j++)
				line = line sprintf(" %.4f |", ops[k, vars[j]] / ns[k, vars[j]] / s)
			pr = ""
			for (m = 1; (k, "stock", m) in r; m++)
				pr = pr sprintf("%s%.4f", m > 1 ? " " : "", r[k, "module", m] / r[k, "stock", m])
			print line " " pr " | " sprintf("%.2f", lk[k] / nl[k]) " |"
		}
	}' "$1"
}

# section: the benchmark page's, between markers, so that a run here
# replaces it there and bench/report.sh writes the same
section() {
	echo "<!-- local: bench/local.sh --section -->"
	echo "## Local traffic without IPsec"
	echo
	echo "The livepatch sits on every output route lookup of the host. Operations/s"
	echo "of guest time, from \`make bench-local\` (setup and raw samples:"
	echo "[local$sfx.md](local$sfx.md)): 1-byte UDP \`sendto()\` and TCP"
	echo "connect/reset, P outbound policies matching none of it. \`idle\`: the"
	echo "module loaded, its patch disabled; \`redirect\`: the livepatch with a"
	echo "replacement of stock's shape that counts nothing."
	echo
	table "$docs/local$sfx.raw"
	echo "<!-- /local -->"
}

if [ "${1:-}" = --section ]; then
	[ -f "$docs/local$sfx.raw" ] || exit 0
	section
	exit 0
fi

[ "$out/local.raw" -ef "$docs/local$sfx.raw" ] || cp "$out/local.raw" "$docs/local$sfx.raw"
kver=$(scripts/kernel.sh version)
{
	echo "# The cost to local traffic without IPsec"
	echo
	echo "Written by \`make bench-local\` (bench/local.sh,"
	echo "bench/guest/local.sh) on $(date -u +%Y-%m-%d), kernel $kver. One vCPU,"
	echo "\`-icount shift=1\`: guest time counts instructions. Namespace \`a\`"
	echo "sends 1-byte UDP datagrams with \`sendto()\` on an unconnected socket"
	echo "to a dummy device (\`udp\`), and opens and resets TCP connections to"
	echo "a listener in namespace \`b\` over a veth (\`tcp\`), with P outbound"
	echo "tunnel policies in \`a\` that match none of it. Variants, interleaved,"
	echo "their order rotating each round:"
	echo
	echo "- \`stock\`: Debian's own lookup, no module;"
	echo "- \`idle\`: the module loaded, its patch disabled: stock's lookup, the"
	echo "  module's memory;"
	echo "- \`redirect\`: the livepatch, every lookup through \`xnc_lookup()\`,"
	echo "  which has stock's shape, and no counting: against \`idle\`, the"
	echo "  redirect's own cost (ftrace entry and the livepatch handler);"
	echo "- \`module\`: as shipped;"
	echo "- \`prev\`, where present: the module as committed before (XNC_LOCAL_PREV)."
	echo
	echo "Operations/s, the mean of the rounds; \`lookups/op\`: the module's"
	echo "count of lookups per operation in \`a\` and \`b\`."
	echo
	table "$out/local.raw"
	echo
	echo "Raw (docs/local$sfx.raw): policies test variant round ops ns lookups"
	echo
	sed 's/^/    /' "$out/local.raw"
} >"$report"
cat "$report"

# the benchmark page's section: replaced where it has one, else put before
# the profile, or at the end
if [ -f "$page" ] && grep -q '^# Benchmark' "$page"; then
	sec=$(section)
	awk -v sec="$sec" '
		/^<!-- local:/ { print sec; done = 1; skip = 1; next }
		skip && /^<!-- \/local -->/ { skip = 0; next }
		skip { next }
		/^## Where a packet/ && !done { print sec; print ""; done = 1 }
		{ print }
		END { if (!done) { print ""; print sec } }' "$page" >"$page.tmp" &&
		mv "$page.tmp" "$page"
	echo "bench-local: its section in $page"
fi
