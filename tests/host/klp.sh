#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The module as built for each kernel of the run (XNC_HOST_KLINES; alone:
# bookworm's 6.1 and 6.12) carries its binding to the kernel as livepatch
# relocations (scripts/klp-relocs.py): every
# "xnc_klp." target became a .klp.sym.vmlinux.NAME,0 symbol in
# SHN_LIVEPATCH, referenced only from .klp.rela.vmlinux.* sections flagged
# SHF_RELA_LIVEPATCH; no kprobe or kallsyms import is left (the one
# kretprobe, on xfrm_policy_insert() for src/subpol.c, finds no symbol for
# us); the step is idempotent, and --check tells a converted module from one that is not.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/xnc-klp.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
common="xfrm_sk_policy_lookup xfrm_policy_lookup_bytype xfrm_resolve_and_create_bundle
xdst_queue_output xfrm_policy_afinfo klp_patches klp_mutex
kallsyms_on_each_symbol bpf_get_btf_vmlinux btf_find_by_name_kind
btf_name_by_offset"

for line in ${XNC_HOST_KLINES:-6.1 6.12}; do
	# 6.1 registers our trace events itself (src/trace.c)
	want=$common
	case $line in 6.1 | 6.1-rt) want="$want event_mutex" ;; esac
	kdir=$(XNC_KLINE=$line "$top/scripts/kernel.sh" kdir)
	d=$tmp/$line
	"$top/scripts/build.sh" "$kdir" "$d"
	ko=$d/xfrm_nocache.ko
	secs=$(readelf -SW "$ko")
	syms=$(readelf -sW "$ko")
	relas=$(readelf -rW "$ko")

	n=$(grep -cE '\.klp\.rela\.vmlinux\.[^ ]* +RELA .* AIo ' <<<"$secs") ||
		{ echo "$line: no .klp.rela.vmlinux section flagged AIo"; exit 1; }
	for s in $want; do
		grep -qE "OS \[0xff20\] \.klp\.sym\.vmlinux\.$s,0$" <<<"$syms" ||
			{ echo "$line: no SHN_LIVEPATCH symbol for $s"; exit 1; }
	done
	total=$(grep -c 'OS \[0xff20\]' <<<"$syms")
	[ "$total" -eq "$(wc -w <<<"$want")" ] ||
		{ echo "$line: $total livepatch symbols, want $(wc -w <<<"$want")"; exit 1; }
	if grep -E ' UND (xnc_klp\.|register_kprobe|unregister_kprobe|kallsyms_)' <<<"$syms"; then
		echo "$line: an unconverted target or a kprobe/kallsyms import is left"; exit 1
	fi
	# only the klp sections may refer to livepatch symbols
	awk '/^Relocation section/ { klp = ($3 ~ /\.klp\.rela\./) }
	     !klp && /\.klp\.sym\./ { bad = 1; print } END { exit bad }' <<<"$relas" ||
		{ echo "$line: an ordinary relocation refers to a livepatch symbol"; exit 1; }
	modinfo "$ko" | grep -q '^livepatch: *Y' || { echo "$line: no livepatch modinfo"; exit 1; }

	python3 "$top/scripts/klp-relocs.py" --check "$ko" ||
		{ echo "$line: --check says the module is not converted"; exit 1; }
	sum=$(sha256sum <"$ko")
	python3 "$top/scripts/klp-relocs.py" "$ko" >/dev/null
	[ "$(sha256sum <"$ko")" = "$sum" ] || { echo "$line: a second run changed the module"; exit 1; }

	XNC_NO_KLP=1 "$top/scripts/build.sh" "$kdir" "$d-raw"
	if python3 "$top/scripts/klp-relocs.py" --check "$d-raw/xfrm_nocache.ko"; then
		echo "$line: --check accepts a module the step never ran on"; exit 1
	fi
	echo "$line: $total livepatch symbols, $n .klp.rela.vmlinux sections," \
		"$(awk '/^Relocation section .*\.klp\.rela\./ { n += $(NF-1) } END { print n }' <<<"$relas") relocations"
done
