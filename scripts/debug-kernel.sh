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
#   config.frag             the options asked for; build.log, build-time
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
TARBALL=${XNC_KSRC_TARBALL:-$(env -u XNC_KERNEL "$here/kernel.sh" source)}
srcver=$(dpkg-query -W -f='${Version}' "$srcpkg" 2>/dev/null || true)
[ -n "$srcver" ] || die "$srcpkg is not installed (run scripts/deps.sh)"
[ "$flavor:$kline" != rt:6.1 ] ||
	die "no real-time debug kernel on 6.1: PREEMPT_RT is not upstream in 6.1, and Debian's patch set for it (debian/patches-rt of the linux source package) is not in linux-source-6.1; the 6.12-rt one is (KERNEL=6.12-rt)"
LOCALVERSION=-xnc-debug${flavor:+-$flavor}
dir=$XNC_CACHE/debug-${flavor:+$flavor-}$srcver
src=$dir/linux

# The options, applied with scripts/config on top of x86_64 defconfig, then
# "make olddefconfig"; every line is checked in the result afterwards.
# NAME=y|m|n|number|"string"; =m is also satisfied by =y.  A line
# "L:TEXT" is TEXT on kernel line L only (6.1: or 6.12:), for what differs
# between the lines; "rt:TEXT" on a real-time kernel only, "nort:TEXT" on
# any other; every other line is for all.
frag() {
	frag_lines | awk -v l="$kline:" -v f="${flavor:-nort}:" '
		index($0, l) == 1 { print substr($0, length(l) + 1); next }
		index($0, f) == 1 { print substr($0, length(f) + 1); next }
		!/^([0-9][0-9.]*|rt|nort):/'
}
frag_lines() {
	cat <<'EOF'
# --- smaller and quicker to build: hardware the VM does not have ---
CONFIG_WERROR=n
CONFIG_DRM=n
CONFIG_AGP=n
CONFIG_FB=n
CONFIG_SOUND=n
CONFIG_USB_SUPPORT=n
CONFIG_HID=n
CONFIG_INPUT_JOYSTICK=n
CONFIG_INPUT_TABLET=n
CONFIG_INPUT_TOUCHSCREEN=n
CONFIG_INPUT_MISC=n
CONFIG_WIRELESS=n
CONFIG_CFG80211=n
CONFIG_MAC80211=n
CONFIG_RFKILL=n
CONFIG_WLAN=n
CONFIG_ETHERNET=n
CONFIG_VIRTIO_NET=n
CONFIG_NETCONSOLE=n
CONFIG_IP_PNP=n
CONFIG_NFS_FS=n
CONFIG_EXT4_FS=n
CONFIG_ISO9660_FS=n
CONFIG_MSDOS_FS=n
CONFIG_VFAT_FS=n
CONFIG_QUOTA=n
CONFIG_ATA=n
CONFIG_SCSI=n
CONFIG_MD=n
CONFIG_SECURITY_SELINUX=n
CONFIG_AUDIT=n
CONFIG_EFI=n
CONFIG_HIBERNATION=n
CONFIG_KEXEC=n
CONFIG_CRASH_DUMP=n
CONFIG_PCCARD=n
CONFIG_MACINTOSH_DRIVERS=n
CONFIG_X86_PLATFORM_DEVICES=n
CONFIG_NETLABEL=n
CONFIG_INTEL_IOMMU=n
CONFIG_AMD_IOMMU=n
CONFIG_WATCHDOG=n
CONFIG_I2C=n
CONFIG_VIRTIO_INPUT=n
CONFIG_NUMA=n
CONFIG_NR_CPUS=8
CONFIG_HZ_1000=n
CONFIG_HZ_250=y
CONFIG_DEBUG_INFO_NONE=y
CONFIG_MODULE_SIG=n
CONFIG_MODVERSIONS=n
nort:CONFIG_LOCALVERSION="-xnc-debug"
rt:CONFIG_LOCALVERSION="-xnc-debug-rt"
CONFIG_LOCALVERSION_AUTO=n
CONFIG_IKCONFIG=y
CONFIG_IKCONFIG_PROC=y
# --- what vm.sh needs: built in, so the initramfs loads nothing ---
CONFIG_PCI=y
CONFIG_VIRTIO_MENU=y
CONFIG_VIRTIO_PCI=y
CONFIG_NET_9P=y
CONFIG_NET_9P_VIRTIO=y
CONFIG_9P_FS=y
CONFIG_9P_FS_POSIX_ACL=n
CONFIG_OVERLAY_FS=y
CONFIG_TMPFS=y
CONFIG_DEVTMPFS=y
CONFIG_BLK_DEV_INITRD=y
CONFIG_RD_GZIP=y
CONFIG_SERIAL_8250=y
CONFIG_SERIAL_8250_CONSOLE=y
CONFIG_MAGIC_SYSRQ=y
CONFIG_ACPI=y
CONFIG_NAMESPACES=y
CONFIG_NET_NS=y
CONFIG_USER_NS=y
CONFIG_UTS_NS=y
CONFIG_IPC_NS=y
CONFIG_PID_NS=y
CONFIG_DEBUG_FS=y
CONFIG_DEBUG_FS_ALLOW_ALL=y
# --- what the tests use; xfrm as in Debian's kernel (XFRM built in: the
# module patches vmlinux) ---
CONFIG_UNIX=y
CONFIG_PACKET=y
CONFIG_INET=y
CONFIG_IPV6=y
CONFIG_IPV6_MULTIPLE_TABLES=y
CONFIG_IPV6_SUBTREES=y
CONFIG_IPV6_MIP6=y
CONFIG_IP_ADVANCED_ROUTER=y
CONFIG_IP_MULTIPLE_TABLES=y
CONFIG_XFRM=y
CONFIG_XFRM_USER=m
CONFIG_XFRM_USER_COMPAT=n
CONFIG_XFRM_INTERFACE=m
CONFIG_XFRM_SUB_POLICY=y
CONFIG_XFRM_MIGRATE=y
CONFIG_XFRM_STATISTICS=y
CONFIG_XFRM_OFFLOAD=y
CONFIG_NET_KEY=m
CONFIG_NET_KEY_MIGRATE=y
CONFIG_INET_AH=m
CONFIG_INET_ESP=m
CONFIG_INET_ESP_OFFLOAD=m
CONFIG_INET_ESPINTCP=n
CONFIG_INET_IPCOMP=m
CONFIG_INET_XFRM_TUNNEL=m
CONFIG_INET6_AH=m
CONFIG_INET6_ESP=m
CONFIG_INET6_ESP_OFFLOAD=m
CONFIG_INET6_ESPINTCP=n
CONFIG_INET6_IPCOMP=m
CONFIG_INET6_XFRM_TUNNEL=m
CONFIG_NET_IPVTI=m
CONFIG_IPV6_VTI=m
CONFIG_SECURITY=y
CONFIG_SECURITY_NETWORK=y
CONFIG_SECURITY_NETWORK_XFRM=y
CONFIG_VETH=m
CONFIG_DUMMY=m
CONFIG_NET_L3_MASTER_DEV=y
CONFIG_NET_VRF=m
CONFIG_NET_PKTGEN=m
CONFIG_NETFILTER=y
CONFIG_NETFILTER_ADVANCED=y
CONFIG_NETFILTER_XTABLES=y
CONFIG_NETFILTER_XT_MATCH_POLICY=m
CONFIG_IP_NF_IPTABLES=m
CONFIG_IP_NF_FILTER=m
CONFIG_IP6_NF_IPTABLES=m
CONFIG_IP6_NF_FILTER=m
# Debian's iptables is iptables-nft: xt matches go through nft_compat
CONFIG_NF_TABLES=m
CONFIG_NF_TABLES_INET=y
CONFIG_NF_TABLES_IPV4=y
CONFIG_NF_TABLES_IPV6=y
CONFIG_NFT_COMPAT=m
CONFIG_NFT_XFRM=m
# vrf-xfrm-tests.sh: "ip vrf exec" binds its command to the VRF with a
# cgroup BPF program; half of its cases put netem on the VRF device
CONFIG_CGROUP_BPF=y
CONFIG_NET_SCHED=y
CONFIG_NET_SCH_NETEM=m
# netdevsim: scripts/netdevsim.sh builds its own (patched) copy out of
# tree; =m here makes Kconfig pull in everything it needs
CONFIG_NETDEVSIM=m
CONFIG_NET_DEVLINK=y
CONFIG_PSAMPLE=m
CONFIG_BPF_SYSCALL=y
# ESP algorithms of the tests and of the kernel's ipsec.c selftest
CONFIG_CRYPTO_AES=y
CONFIG_CRYPTO_CBC=y
CONFIG_CRYPTO_ECB=y
CONFIG_CRYPTO_HMAC=y
CONFIG_CRYPTO_SHA1=y
CONFIG_CRYPTO_SHA256=y
CONFIG_CRYPTO_MD5=y
CONFIG_CRYPTO_SHA512=m
CONFIG_CRYPTO_NULL=m
CONFIG_CRYPTO_GCM=m
CONFIG_CRYPTO_GHASH=m
CONFIG_CRYPTO_CCM=m
CONFIG_CRYPTO_CTR=m
CONFIG_CRYPTO_CHACHA20POLY1305=m
CONFIG_CRYPTO_ECHAINIV=m
CONFIG_CRYPTO_SEQIV=m
CONFIG_CRYPTO_DES=m
CONFIG_CRYPTO_CAST5=m
CONFIG_CRYPTO_SERPENT=m
CONFIG_CRYPTO_CAMELLIA=m
CONFIG_CRYPTO_TWOFISH=m
CONFIG_CRYPTO_BLOWFISH=m
CONFIG_CRYPTO_RMD160=m
CONFIG_CRYPTO_XCBC=m
CONFIG_CRYPTO_CMAC=m
CONFIG_CRYPTO_DEFLATE=m
6.1:# --- livepatch and what the module uses to find symbols; no IBT (the
6.1:# module calls static functions through pointers) ---
6.12:# --- livepatch and what the module uses to find symbols; IBT as in
6.12:# Debian's 6.12 (CONFIG_X86_KERNEL_IBT=y, off in Debian's 6.1): the module
6.12:# must load on such a kernel.  qemu's TCG does not enforce IBT, but the
6.12:# kernel still seals (overwrites) the ENDBR of every function objtool
6.12:# found no address taken of, at boot, as on Debian's 6.12 ---
CONFIG_MODULES=y
CONFIG_MODULE_UNLOAD=y
CONFIG_KALLSYMS=y
CONFIG_KALLSYMS_ALL=y
CONFIG_FTRACE=y
CONFIG_FUNCTION_TRACER=y
CONFIG_DYNAMIC_FTRACE=y
CONFIG_DYNAMIC_FTRACE_WITH_REGS=y
CONFIG_TRACING=y
CONFIG_LIVEPATCH=y
CONFIG_KPROBES=y
CONFIG_KPROBE_EVENTS=y
6.1:CONFIG_X86_KERNEL_IBT=n
6.12:CONFIG_X86_KERNEL_IBT=y
# Frame pointers, not ORC (Debian's): KASAN saves a stack trace at every
# slab allocation and free, kmemleak at every allocation, and walking ORC
# tables for those was 38% of the guest's busy time in fork+exec (perf,
# cpu-clock).  objtool still validates the stack frames, so livepatch keeps
# its reliable stack traces and switches tasks as on Debian's kernel.
CONFIG_UNWINDER_FRAME_POINTER=y
CONFIG_STACK_VALIDATION=y
CONFIG_HAVE_RELIABLE_STACKTRACE=y
# --- the point of it all ---
CONFIG_DEBUG_KERNEL=y
CONFIG_KASAN=y
CONFIG_KASAN_GENERIC=y
CONFIG_KASAN_INLINE=y
CONFIG_KFENCE=n
CONFIG_PROVE_LOCKING=y
CONFIG_PROVE_RCU=y
CONFIG_LOCKDEP_BITS=17
CONFIG_LOCKDEP_CHAINS_BITS=18
CONFIG_LOCKDEP_STACK_TRACE_BITS=20
# full preemption finds more than Debian's voluntary one; on a real-time
# kernel, PREEMPT_RT as Debian's -rt flavor has it
nort:CONFIG_PREEMPT=y
nort:CONFIG_PREEMPT_DYNAMIC=y
rt:CONFIG_EXPERT=y
rt:CONFIG_PREEMPT_RT=y
CONFIG_DEBUG_PREEMPT=y
CONFIG_DEBUG_ATOMIC_SLEEP=y
CONFIG_DEBUG_OBJECTS=y
CONFIG_DEBUG_OBJECTS_FREE=y
CONFIG_DEBUG_OBJECTS_TIMERS=y
CONFIG_DEBUG_OBJECTS_WORK=y
CONFIG_DEBUG_OBJECTS_RCU_HEAD=y
CONFIG_DEBUG_LIST=y
CONFIG_DEBUG_NET=y
CONFIG_NET_DEV_REFCNT_TRACKER=y
CONFIG_NET_NS_REFCNT_TRACKER=y
# on from boot; no background scans: check-debug scans at the end
CONFIG_DEBUG_KMEMLEAK=y
CONFIG_DEBUG_KMEMLEAK_DEFAULT_OFF=n
CONFIG_DEBUG_KMEMLEAK_AUTO_SCAN=n
# SLUB debugging compiled in, switched on per cache by the command line
# below: KASAN already red-zones, quarantines and records the stacks of
# every slab object, and SLUB's own checks on every cache on top of that
# made fork+exec 1.55 times slower again (310 ms against 200 ms, Debian's
# kernel 19 ms), which the shell-driven tests pay thousands of times.
CONFIG_SLUB=y
CONFIG_SLUB_DEBUG=y
CONFIG_SLUB_DEBUG_ON=n
# everything runs several times slower under TCG with all of the above
CONFIG_RCU_CPU_STALL_TIMEOUT=60
EOF
}

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

want="source=$srcver cc=$(${CC:-gcc} --version | head -n1) frag=$(frag | sha256sum | cut -c1-16) cmdline=$CMDLINE"

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
frag >"$dir/config.frag"
log=$dir/build.log
: >"$log"
make -C "$src" -s defconfig >>"$log" 2>&1 || die "make defconfig failed (see $log)"
cfg=$src/.config
while IFS='=' read -r name val; do
	case $name in '' | '#'*) continue ;; esac
	name=${name#CONFIG_}
	case $val in
	y) "$src/scripts/config" --file "$cfg" --enable "$name" ;;
	# =m unless something already has it built in
	m) grep -qx "CONFIG_$name=y" "$cfg" ||
		"$src/scripts/config" --file "$cfg" --module "$name" ;;
	n) "$src/scripts/config" --file "$cfg" --disable "$name" ;;
	\"*) val=${val#\"}; "$src/scripts/config" --file "$cfg" --set-str "$name" "${val%\"}" ;;
	*) "$src/scripts/config" --file "$cfg" --set-val "$name" "$val" ;;
	esac
done <"$dir/config.frag"
make -C "$src" -s olddefconfig >>"$log" 2>&1 || die "make olddefconfig failed (see $log)"

# olddefconfig silently drops what has unmet dependencies: check each one
bad=
while IFS='=' read -r name val; do
	case $name in '' | '#'*) continue ;; esac
	got=$(sed -n "s/^$name=//p" "$cfg")
	case $val in
	n) [ -z "$got" ] || [ "$got" = n ] && continue ;;
	m) [ "$got" = m ] || [ "$got" = y ] && continue ;;
	*) [ "$got" = "$val" ] && continue ;;
	esac
	bad="$bad $name (wanted $val, got ${got:-not set})"
done <"$dir/config.frag"
[ -z "$bad" ] || die "make olddefconfig dropped or changed:$bad"

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
