#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build a debug kernel for the test VM from Debian's linux-source-<line> of
# the kernel (XNC_KLINE, make's KERNEL: 6.1, the default, or 6.12;
# scripts/kernel.sh source and srcpkg), the same upstream release as the
# headers the module is built against: KASAN, lockdep, PROVE_RCU, kmemleak,
# SLUB debugging, refcount trackers, with just enough else for scripts/vm.sh
# and the tests.  "make check-debug" runs the test suite on it.
#
# A real-time kernel (6.1-rt, 6.12-rt; make's RT=1) gets the same checkers
# on PREEMPT_RT, where spinlocks sleep and softirqs run in threads: what is
# wrong only there (sleeping in atomic context, lock order through the
# per-CPU BH lock) shows.  Only on 6.12: PREEMPT_RT is upstream there.
# Debian's 6.1-rt is 6.1 plus the out-of-tree PREEMPT_RT patch set, which
# linux-source-6.1 does not carry (it is in the Debian source package,
# debian/patches-rt, which Debian's binary archive does not have): refused.
#
#   scripts/debug-kernel.sh          build if needed, print the kernel dir
#   scripts/debug-kernel.sh dir      print the kernel dir if it is built
#   scripts/debug-kernel.sh config   only write and check linux/.config
#
# The kernel dir ($XNC_CACHE/debug-<linux-source version>, debug-rt-... for
# a real-time one, default
# XNC_CACHE /var/cache/xfrm_nocache, outside the repo) is what XNC_KERNEL
# (or vm.sh --kernel) takes:
#   linux/                  the source tree, built in place: the KDIR
#                           modules build against (make -C linux M=...)
#   root/boot/vmlinuz-<v>   the image; root/lib/modules/<v>: its modules
#   kernelrelease           <v>, e.g. 6.1.192-xnc-debug, 6.12.118-xnc-debug,
#                           6.12.118-xnc-debug-rt
#   cmdline                 kernel parameters vm.sh adds for this kernel
#   config.frag             the fragments of tests/debug/ merged, as asked;
#                           build.log (merge_config.sh's output), build-time
#
# Built once per machine: skipped when the image and modules exist and were
# built from the same linux-source version, compiler and options (.stamp).
# The build runs at nice 19 with make -j2 so that it does not starve a VM
# running next to it.

set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
XNC_CACHE=${XNC_CACHE:-/var/cache/xfrm_nocache}

die() { echo "debug-kernel.sh: $*" >&2; exit 1; }
msg() { echo "debug-kernel.sh: $*" >&2; }

# the kernel line (XNC_KLINE, make's KERNEL: 6.1, the default, or 6.12),
# its flavor (rt or none) and its source package; a debug kernel already
# selected (XNC_KERNEL) is not what is being built
kline=$(env -u XNC_KERNEL "$here/kernel.sh" line) || exit 1
flavor=$(env -u XNC_KERNEL "$here/kernel.sh" flavor)
srcpkg=$(env -u XNC_KERNEL "$here/kernel.sh" srcpkg)
s=$(env -u XNC_KERNEL "$here/kernel.sh" source) || exit 1
read -r TARBALL srcver <<<"$s"
[ "$flavor:$kline" != rt:6.1 ] ||
	die "no real-time debug kernel on 6.1: PREEMPT_RT is not upstream in 6.1, and Debian's patch set for it (debian/patches-rt of the linux source package) is not in linux-source-6.1; the 6.12-rt one is (KERNEL=6.12-rt)"
LOCALVERSION=-xnc-debug${flavor:+-$flavor}
dir=$XNC_CACHE/debug-${flavor:+$flavor-}$srcver
src=$dir/linux

# The options: one fragment per purpose under tests/debug/ (small, vm,
# tests, livepatch, checkers), then the preemption model (preempt or rt)
# and the line's own (6.1, 6.12), merged by the kernel's
# scripts/kconfig/merge_config.sh onto x86_64 defconfig (see configure).
fragdir=$(cd "$here/../tests/debug" && pwd)
frags=()
for f in small vm tests livepatch checkers "${flavor:-preempt}" "$kline"; do
	[ -f "$fragdir/$f.config" ] || die "no $fragdir/$f.config for $kline${flavor:+-$flavor}"
	frags+=("$fragdir/$f.config")
done

# Kernel parameters for this kernel, added by vm.sh after its own:
# warnings reach the console (KERN_WARNING, which lockdep and WARN() use;
# vm.sh asks for that too now, but this kernel must not depend on it),
# every KASAN report is printed, not just the first, and SLUB's full
# debugging (consistency checks, red zones, poison, alloc/free owners in
# /sys/kernel/slab/*/alloc_traces) is on for the caches of the objects the
# module creates or holds references on: bundles, states, routes, netns.
# 6.12 names the bundle and IPv4 route caches after their structs
# (KMEM_CACHE): xfrm_dst and rtable.
case $kline in
6.1) CMDLINE="loglevel=5 kasan_multi_shot slub_debug=FZPU,xfrm_dst_cache,xfrm_state,ip_dst_cache,ip6_dst_cache,net_namespace" ;;
*) CMDLINE="loglevel=5 kasan_multi_shot slub_debug=FZPU,xfrm_dst,xfrm_state,rtable,ip6_dst_cache,net_namespace" ;;
esac

want="source=$srcver cc=$(${CC:-gcc} --version | head -n1) frag=$(cat "${frags[@]}" | sha256sum | cut -c1-16) cmdline=$CMDLINE"

ready() {
	[ -f "$dir/.ready" ] && [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$want" ] &&
		[ -f "$dir/root/boot/vmlinuz-$(cat "$dir/kernelrelease" 2>/dev/null)" ] &&
		[ -d "$dir/root/lib/modules/$(cat "$dir/kernelrelease" 2>/dev/null)/kernel" ]
}

if [ "${1:-}" = dir ]; then
	ready || die "not built (run make debug-kernel)"
	echo "$dir"
	exit 0
fi
[ $# -eq 0 ] || [ "$1" = config ] || die "usage: $0 [dir|config]"

mkdir -p "$dir"
# Two builds at once must not share the tree.
exec 8>"$dir/.lock"
flock 8

if [ $# -eq 0 ] && ready; then
	msg "up to date: $(cat "$dir/kernelrelease") ($(cat "$dir/build-time" 2>/dev/null))"
	echo "$dir"
	exit 0
fi
rm -f "$dir/.ready"

# the source tree, extracted once per linux-source version
if [ ! -f "$src/Makefile" ] || [ "$(cat "$dir/.source" 2>/dev/null)" != "$srcver" ]; then
	[ -r "$TARBALL" ] || die "$TARBALL missing (run scripts/deps.sh)"
	msg "extracting $TARBALL"
	rm -rf "$src" "$dir"/.extract.*
	tmp=$(mktemp -d "$dir/.extract.XXXXXX")
	nice -n 19 tar -xJf "$TARBALL" -C "$tmp"
	mv "$tmp/$srcpkg" "$src"
	rmdir "$tmp"
	echo "$srcver" >"$dir/.source"
fi
# the headers the module is otherwise built against must be the same release
hdr=$(env -u XNC_KERNEL "$here/kernel.sh" kdir 2>/dev/null || true)
if [ -n "$hdr" ]; then
	kv() { make -s -C "$1" kernelversion 2>/dev/null; }
	[ "$(kv "$src")" = "$(kv "$hdr")" ] ||
		die "linux-source is $(kv "$src"), the headers are $(kv "$hdr"): update both"
fi

# --- configure ---
# merge_config.sh works in the current directory, on .config.  First the
# fragments alone into config.frag, strict (-s): one that sets an option
# another sets differently fails.  Then config.frag onto defconfig's
# .config, where =m does not demote a =y (-y), and Kconfig resolves the
# rest (alldefconfig).
log=$dir/build.log
: >"$log"
merge() { (cd "$src" && sh scripts/kconfig/merge_config.sh "$@") 2>&1 | tee -a "$log"; }
# it greps for each name: a comment naming one would pass for its value
! grep -n '^#.*CONFIG_' "${frags[@]}" | grep -v ' is not set$' >&2 ||
	die "a comment in tests/debug/ names an option"
make -C "$src" -s defconfig >>"$log" 2>&1 || die "make defconfig failed (see $log)"
out=$(KCONFIG_CONFIG=$dir/config.frag merge -m -s /dev/null "${frags[@]}") || {
	grep -A2 'redefined by' <<<"$out" >&2
	die "fragments of tests/debug/ disagree (see $log)"
}
out=$(merge -y .config "$dir/config.frag") || die "merge_config.sh failed (see $log)"
cfg=$src/.config

# merge_config.sh names every requested value that did not survive (unmet
# dependencies), defconfig's own too: one of ours fails the build, unless
# it is =m met by =y or "not set" met by an option gone with its parent
bad=$(awk '
	NR == FNR && /^CONFIG_/ { sub(/=.*/, ""); ours[$0] }
	NR == FNR && /^# CONFIG_.* is not set$/ { ours[$2] }
	NR == FNR { next }
	/^Value requested for / { name = $4 }
	/^Requested value:/ { sub(/^Requested value: */, ""); want = $0 }
	/^Actual value:/ {
		sub(/^Actual value: */, ""); got = $0
		if (!(name in ours) || (want == name "=m" && got == name "=y") ||
		    (want == "# " name " is not set" && got == ""))
			next
		printf " %s (wanted %s, got %s)", name, want, got == "" ? "not set" : got
	}' "$dir/config.frag" - <<<"$out")
[ -z "$bad" ] || die "merge_config.sh dropped or changed:$bad"

if [ "${1:-}" = config ]; then
	msg "$cfg: every option as asked"
	exit 0
fi

# --- build ---
msg "building in $src (nice 19, make -j2; log: $log)"
start=$(date +%s)
rm -f "$src/arch/x86/boot/bzImage"
nice -n 19 make -C "$src" -j2 all >>"$log" 2>&1 || {
	tail -n 30 "$log" >&2
	die "build failed (see $log)"
}
rel=$(cat "$src/include/config/kernel.release")
[ "$rel" = "$(make -s -C "$src" kernelversion)$LOCALVERSION" ] ||
	die "unexpected kernel release '$rel'"
rm -rf "$dir/root"
mkdir -p "$dir/root/boot"
nice -n 19 make -C "$src" INSTALL_MOD_PATH="$dir/root" modules_install >>"$log" 2>&1 || {
	tail -n 30 "$log" >&2
	die "modules_install failed (see $log)"
}
cp "$src/arch/x86/boot/bzImage" "$dir/root/boot/vmlinuz-$rel"
cp "$src/System.map" "$dir/root/boot/System.map-$rel"
cp "$cfg" "$dir/root/boot/config-$rel"
secs=$(($(date +%s) - start))
echo "$rel" >"$dir/kernelrelease"
echo "$CMDLINE" >"$dir/cmdline"
echo "$((secs / 60))m$((secs % 60))s" >"$dir/build-time"
echo "$want" >"$dir/.stamp"
touch "$dir/.ready"
msg "built $rel in $(cat "$dir/build-time")"
echo "$dir"
