#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# scripts/drift.py, the source drift check (make drift): the installed 6.1
# and 6.12 sources, trixie's 6.12 and trixie-backports' 7.3 are as
# scripts/kernel.record says, and so are the module's own prototypes;
# then, on a copy of only the files it reads, extracted once from the 6.12
# tarball: one planted change in xfrm_lookup_with_ifid's body is drift,
# named, with a "+" line in its diff (from a small tarball); a parameter's
# type changed in xfrm_policy_lookup_bytype is a prototype change; the
# same files under a newer version pass, noting the release is not in the
# record; a comment and whitespace change passes; a hand-edited
# include/xnc_record.h fails.  The extractor on a made-up file: a return
# type on its own line, static noinline, __weak, #ifdef alternatives,
# braces in strings, characters and comments, prototypes, EXPORT_SYMBOL,
# a name that is another's prefix.  Each line's header branch and
# prototypes are keyed on its major version too.  No VM; about 60 s (the
# tarballs' decompression).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
drift=$top/scripts/drift.py
line=6.12
tarball=/usr/src/linux-source-$line.tar.xz
[ -f "$tarball" ] || { echo "no $tarball (apt-get install linux-source-$line)"; exit 4; }
ver=$(dpkg-query -W -f='${Version}' "linux-source-$line")
tmp=$(mktemp -d /tmp/xnc-drift.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
top_dir=linux-source-$line

# the files the record names, extracted once (while the real check runs)
mapfile -t paths < <(awk '$1 == "item" { print $4 }' "$top/scripts/kernel.record" | sort -u)
[ ${#paths[@]} -gt 0 ] || fail "no items in scripts/kernel.record"
mkdir -p "$tmp/base"
tar -xJf "$tarball" -C "$tmp/base" "${paths[@]/#/$top_dir/}" &
tarpid=$!

# (a) the real sources, trixie's 6.12 too (its release is in the record,
# so a module built for it loads there), and 7.3 (scripts/trixie-source.sh 7.3)
if ! "$drift" check --trixie >"$tmp/a.out" 2>&1; then
	cat "$tmp/a.out"
	fail "scripts/drift.py check on the installed sources: $(tail -n1 "$tmp/a.out")"
fi
cat "$tmp/a.out"
for l in 6.1 6.12 7.3; do
	grep -q "^${l//./\\.} .*items checked, all as recorded" "$tmp/a.out" || fail "(a): line $l not checked"
done
wait "$tarpid" || fail "extracting ${paths[*]} from $tarball"

# variant NAME: a copy of the extracted files to plant a change in
variant() {
	cp -a "$tmp/base" "$tmp/$1"
	echo "$tmp/$1/$top_dir/net/xfrm/xfrm_policy.c"
}
# run NAME WANT_RC SOURCE VERSION: check against SOURCE, its output in
# $tmp/NAME.out, exiting WANT_RC
run() {
	local rc=0
	"$drift" check --line "$line" --source "$3" --version "$4" >"$tmp/$1.out" 2>&1 || rc=$?
	echo "--- $1: exit $rc"
	cat "$tmp/$1.out"
	[ "$rc" = "$2" ] || fail "$1: exit $rc, not $2: $(tail -n1 "$tmp/$1.out")"
}
# changed FILE: exactly one line of FILE differs from the base
changed() {
	local n
	n=$(diff "$tmp/base/$top_dir/net/xfrm/xfrm_policy.c" "$1" | grep -c '^>') || true
	[ "$n" = 1 ] || fail "planted $n changed lines, not 1, in $1"
}

# (b) one line of xfrm_lookup_with_ifid's body, from a tarball
f=$(variant body)
awk '/^struct dst_entry \*xfrm_lookup_with_ifid\(/ { in_fn = 1 }
     in_fn && !done && sub(/XFRM_MODE_TUNNEL/, "XFRM_MODE_BEET") { done = 1 }
     { print }' "$tmp/base/$top_dir/net/xfrm/xfrm_policy.c" >"$f"
changed "$f"
tar -cJf "$tmp/body.tar.xz" -C "$tmp/body" "$top_dir"
run body 1 "$tmp/body.tar.xz" "$ver"
grep -q '^DRIFT .*xfrm_lookup_with_ifid (copy, net/xfrm/xfrm_policy.c): body changed' "$tmp/body.out" ||
	fail "body: xfrm_lookup_with_ifid's change not named"
grep -q '^+ .*XFRM_MODE_BEET' "$tmp/body.out" || fail "body: no '+' line with the planted text"
grep -q '^- \[checked line [0-9]*, hash [0-9a-f]\{12\}\]' "$tmp/body.out" ||
	fail "body: no '-' line naming the checked line"
[ "$(grep -c '^DRIFT ' "$tmp/body.out")" = 1 ] || fail "body: more than the one item reported"

# (c) a parameter's type in xfrm_policy_lookup_bytype's prototype
f=$(variant proto)
sed '/^static struct xfrm_policy \*xfrm_policy_lookup_bytype(/s/u8 type,/u16 type,/' \
	"$tmp/base/$top_dir/net/xfrm/xfrm_policy.c" >"$f"
changed "$f"
run proto 1 "$tmp/proto" "$ver"
grep -q '^DRIFT .*xfrm_policy_lookup_bytype (bind, .*): prototype changed' "$tmp/proto.out" ||
	fail "proto: no 'prototype changed' for xfrm_policy_lookup_bytype"
grep -q '^+ proto .*xfrm_policy_lookup_bytype(struct net \*net, u16 type' "$tmp/proto.out" ||
	fail "proto: the new prototype not shown"

# (d) the same sources under a newer version: passes, with a note
run newer 0 "$tmp/base" "$ver+1"
grep -qF "release $ver+1 is not in the record; its items are unchanged: \`scripts/drift.py update\` adds it" \
	"$tmp/newer.out" || fail "newer: no 'not in the record' note"

# (e) comments and whitespace only: a comment line, a trailing comment,
# a line's indent, trailing blanks, an empty line, in the function's body
f=$(variant cosmetic)
awk '/^struct dst_entry \*xfrm_lookup_with_ifid\(/ { in_fn = 1 }
     in_fn && !done && /XFRM_MODE_TUNNEL/ {
	print "\t/* a planted comment */"; print ""
	sub(/^\t+/, "  "); $0 = $0 " /* and one */   "; done = 1 }
     { print }' "$tmp/base/$top_dir/net/xfrm/xfrm_policy.c" >"$f"
cmp -s "$f" "$tmp/base/$top_dir/net/xfrm/xfrm_policy.c" && fail "cosmetic: nothing planted"
run cosmetic 0 "$tmp/cosmetic" "$ver"

# (f) include/xnc_record.h edited by hand: a copy of the tree's parts
mkdir -p "$tmp/tree/scripts" "$tmp/tree/include" "$tmp/tree/src"
cp "$drift" "$top/scripts/kernel.record" "$tmp/tree/scripts/"
cp "$top/include/xfrm_nocache.h" "$top/include/xnc_compat.h" "$tmp/tree/include/"
cp "$top/src/verify.c" "$tmp/tree/src/"
sed 's/^#define XNC_RECORD_RELEASES .*/& "0.0"/' "$top/include/xnc_record.h" >"$tmp/tree/include/xnc_record.h"
drift=$tmp/tree/scripts/drift.py
run header 1 "$tmp/base" "$ver"
grep -q 'include/xnc_record.h is not what' "$tmp/header.out" || fail "header: not reported"
cp "$top/include/xnc_record.h" "$tmp/tree/include/"

# (g) the module's own prototype differs from the record's: a parameter
# of verify.c's xfrm_policy_lookup_bytype() declared u16, then the same
# in the header's declaration
sed -i 's/"u16 family", "u8 dir", "u32 if_id"/"u16 family", "u16 dir", "u32 if_id"/' "$tmp/tree/src/verify.c"
cmp -s "$tmp/tree/src/verify.c" "$top/src/verify.c" && fail "ours: nothing planted in verify.c"
run ours-table 1 "$tmp/base" "$ver"
grep -q 'xfrm_policy_lookup_bytype() in src/verify.c is' "$tmp/ours-table.out" ||
	fail "ours: verify.c's prototype not reported"
cp "$top/src/verify.c" "$tmp/tree/src/"
sed -i 's/ u16 family, u8 dir,$/ u16 family, u16 dir,/' "$tmp/tree/include/xfrm_nocache.h"
cmp -s "$tmp/tree/include/xfrm_nocache.h" "$top/include/xfrm_nocache.h" &&
	fail "ours: nothing planted in xfrm_nocache.h"
run ours-decl 1 "$tmp/base" "$ver"
grep -q 'xfrm_policy_lookup_bytype() in include/xfrm_nocache.h is' "$tmp/ours-decl.out" ||
	fail "ours: the header's declaration not reported"
drift=$top/scripts/drift.py

# (g) the extractor on made-up C
python3 -B - "$top/scripts/drift.py" >"$tmp/g.out" 2>&1 <<'PY' || { cat "$tmp/g.out"; fail "extractor: $(tail -n1 "$tmp/g.out")"; }
import importlib.util
import sys

spec = importlib.util.spec_from_file_location("drift", sys.argv[1])
d = importlib.util.module_from_spec(spec)
spec.loader.exec_module(d)
C = r'''
static int alpha(int a);
static int beta_gamma(void) { return 0; }

/* alpha(int a) { in a comment */
static noinline int
alpha(int a)
{
	const char *s = "}{ alpha(";	/* } */
	char c = '{';

	return a + (c == '}') + s[0]; // }
}
EXPORT_SYMBOL(alpha);

#ifdef CONFIG_X
int __weak beta(int (*cb)(void *, int), void *p) __acquires(x)
{
	return cb(p, 1);
}
#else
int __weak beta(int (*cb)(void *, int), void *p) __acquires(x)
{
	return 0;
}
#endif
static struct beta *beta_var[4] __read_mostly;
extern struct mutex lock_b;
DEFINE_MUTEX(lock_b);
static int uses(void) { return beta(NULL, &lock_b); }
'''
src = d.Source("x.c", C)
want = {
    "alpha": (1, ["int alpha(int a)"], 7),
    "beta": (2, ["int __weak beta(int (*cb)(void *, int), void *p)"] * 2, 8),
    "beta_gamma": (1, ["int beta_gamma(void)"], 1),
}
for name, (defs, protos, nlines) in want.items():
    f = d.find_function(src, "bind", name)
    got = (f.defs, f.protos, len(f.lines))
    if got != (defs, protos, nlines):
        sys.exit(f"{name}: {got}, want {(defs, protos, nlines)}")
f = d.find_function(src, "bind", "alpha")
if f.lines[0][1] != "static noinline int" or f.lines[-1][1] != "}":
    sys.exit(f"alpha: from {f.lines[0]} to {f.lines[-1]}")
for name, text in (("beta_var", "static struct beta *beta_var[4] __read_mostly;"),
                   ("lock_b", "DEFINE_MUTEX(lock_b);")):
    f = d.find_variable(src, name)
    if f.defs != 1 or [t for _, t in f.lines] != [text]:
        sys.exit(f"{name}: {f.defs} definitions, {f.lines}")
if d.find_function(src, "bind", "gamma").defs:
    sys.exit("gamma: found in beta_gamma")
print("extractor: all cases")
PY
cat "$tmp/g.out"

# (h) per line, the header's branch tests the major version too, and the
# module's prototypes are those of the line's own branch (6.1's kallsyms
# callback has a module argument, 6.12's and 7.3's none)
python3 -B - "$top/scripts/drift.py" >"$tmp/h.out" 2>&1 <<'PY' || { cat "$tmp/h.out"; fail "lines: $(tail -n1 "$tmp/h.out")"; }
import importlib.util
import sys

spec = importlib.util.spec_from_file_location("drift", sys.argv[1])
d = importlib.util.module_from_spec(spec)
spec.loader.exec_module(d)
hdr = d.header_text(d.read_record())
for line in d.KLINES:
    major, patch = line.split(".")
    cond = f"LINUX_VERSION_MAJOR == {major} && LINUX_VERSION_PATCHLEVEL == {patch}\n"
    if cond not in hdr:
        sys.exit(f"{line}: no '{cond.strip()}' in the header")
    protos = [p for _, p in d.ours(line)["kallsyms_on_each_symbol"]]
    mod = [("struct module" in p) for p in protos]
    if mod != [line == "6.1"] * len(protos):
        sys.exit(f"{line}: kallsyms_on_each_symbol {protos}")
print(f"lines: {', '.join(d.KLINES)} keyed on major and patch level")
PY
cat "$tmp/h.out"

echo "drift: installed and fetched sources as recorded; planted body and prototype changes reported, a newer release noted, cosmetic changes pass, a stale header and the module's own wrong prototypes fail"
