#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot Debian's own kernel (the one matching the installed headers) of a
# kernel (XNC_KLINE: 6.1, the default, 6.12, 6.1-rt, 6.12-rt, or Debian
# 13's 13, 13-rt, 7.3; scripts/kernel.sh) under qemu (KVM when it can run
# a guest, TCG otherwise) and run one command inside it.
#
#   scripts/vm.sh [options] -- command [args...]
#
#   --timeout S   kill the VM after S seconds (default 900)
#   --log FILE    full console log (default $XNC_OUT/console.log)
#   --out DIR     host directory shared read-write at the same path in the
#                 guest, for results (default: a fresh mktemp dir)
#   --smp N       vCPUs (default 2)
#   --mem MB      guest memory (default 3072)
#   --icount      -icount shift=1 (deterministic guest time; for benchmarks;
#                 always TCG)
#   --accel A     kvm, tcg, or auto (default; XNC_ACCEL): KVM when /dev/kvm
#                 can really run a guest (probed: a device node alone is not
#                 enough, e.g. in a VM without nested VMX), TCG otherwise
#   --probe-accel print the accelerator a run would use ("kvm", or "tcg"
#                 and why not KVM) and exit, without booting
#   --tcg MODE    multi: one host thread per vCPU; single: one host thread
#                 runs every vCPU in turn; auto (default): multi with qemu
#                 10 or later, single with an older qemu (see below)
#   --append STR  extra kernel command line
#   --kline K     the kernel: 6.1, 6.12, 6.1-rt, 6.12-rt, 13, 13-rt or 7.3
#                 (the same as XNC_KLINE=K)
#   --kernel DIR  boot the kernel scripts/debug-kernel.sh built in DIR (the
#                 same as XNC_KERNEL=DIR): its image, its modules, and the
#                 parameters in DIR/cmdline; by default, Debian's kernel
#
# The guest sees this machine's root file system read-only over virtio-9p
# with a tmpfs overlay on top, so every host binary (ip, strongSwan, iperf3)
# and the build tree are there, at the same paths.  Debian's modules for the
# guest kernel are bind-mounted on /lib/modules.
#
# Debian 13's kernels run on a Debian 13 userland instead: the trixie root
# (scripts/trixie-root.sh, its guest packages installed) is the lower
# layer, and of this machine's files only this repository, the cache
# ($XNC_CACHE: images, netdevsim, selftests), the current directory and
# the --out directory are there, at the same paths, each with a tmpfs
# overlay of its own.
#
# Exit status: the command's, or 124 on timeout, or 125 when the console
# shows a kernel splat (BUG, WARNING, Oops, refcount, leaked netdev refs,
# RCU stall, panic) even if the command itself succeeded.  A soft lockup
# panics the guest (its backtraces are on the console) and ends the run.

set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
timeout=900 smp=2 mem=3072 icount='' append='' log='' out='' tcg=auto
accel=${XNC_ACCEL:-auto} probe=

while [ $# -gt 0 ]; do
	case "$1" in
	--timeout) timeout=$2; shift 2 ;;
	--log) log=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--icount) icount=1; shift ;;
	--tcg) tcg=$2; shift 2 ;;
	--accel) accel=$2; shift 2 ;;
	--probe-accel) probe=1; shift ;;
	--append) append=$2; shift 2 ;;
	--kline) export XNC_KLINE=$2; shift 2 ;;
	--kernel) export XNC_KERNEL=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "vm.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ $# -gt 0 ] || [ -n "$probe" ] || { echo "vm.sh: no command given" >&2; exit 2; }
case $tcg in
auto|multi|single) ;;
*) echo "vm.sh: --tcg takes auto, multi or single, not '$tcg'" >&2; exit 2 ;;
esac
case $accel in
auto|kvm|tcg) ;;
*) echo "vm.sh: --accel (XNC_ACCEL) takes auto, kvm or tcg, not '$accel'" >&2; exit 2 ;;
esac

# KVM if it can run a guest: /dev/kvm may exist where no vCPU can be made
# (a VM without nested virtualisation: qemu then fails setting up the vCPU's
# MSRs).  The probe runs the firmware for a second; any error means TCG.
# Benchmarks (--icount) count instructions, which only TCG can do.
kvm_works() {
	if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
		kvm_why="no usable /dev/kvm"
		return 1
	fi
	local err
	# a failure, or anything on stderr, means no
	err=$( (sleep 1; echo quit) | timeout 20 qemu-system-x86_64 \
		-accel kvm -machine q35 -cpu host -smp 1 -m 64 -nodefaults \
		-display none -serial none -monitor stdio 2>&1 >/dev/null) && [ -z "$err" ] && return 0
	kvm_why="/dev/kvm cannot run a guest: $(echo "${err:-qemu failed}" | head -n1)"
	return 1
}
kvm_why=
if [ -n "$icount" ]; then
	[ "$accel" = kvm ] && { echo "vm.sh: --icount needs TCG, not KVM" >&2; exit 2; }
	accel=tcg
elif [ "$accel" = auto ]; then
	accel=tcg
	kvm_works && accel=kvm
elif [ "$accel" = kvm ] && ! kvm_works; then
	echo "vm.sh: --accel kvm: $kvm_why" >&2
	exit 2
fi
if [ -n "$probe" ]; then
	echo "$accel${kvm_why:+: $kvm_why}"
	exit 0
fi


# the kernel, checked before waiting for the lock
kline=$("$here/kernel.sh" name)
# the root file system the guest runs on (/ but for Debian 13's kernels)
groot=$("$here/kernel.sh" root)

# One qemu at a time on this 2-core machine: wait for any other run.
exec 9>/tmp/xnc-qemu.lock
flock 9

# A kernel of scripts/debug-kernel.sh: by absolute path (the guest mounts
# its modules from the same path), with its own parameters (loglevel, KASAN
# reporting).
kappend=
if [ -n "${XNC_KERNEL:-}" ]; then
	XNC_KERNEL=$(cd "$XNC_KERNEL" && pwd)
	kappend=" $(cat "$XNC_KERNEL/cmdline")"
fi
ver=$("$here/kernel.sh" version)
root=$("$here/kernel.sh" image)
out=${out:-$(mktemp -d /tmp/xnc-vm.XXXXXX)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
log=${log:-$out/console.log}
: >"$log"

work=$(mktemp -d /tmp/xnc-initrd.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The command to run, as a script on the host (the guest sees it over 9p),
# with those of the variables tests/guest/env lists that are set here, and
# nothing else of this environment: XNC_OUT, XNC_KVER, XNC_KLINE always.
(
	# (in this subshell only)
	export XNC_OUT=$out XNC_KVER=$ver XNC_KLINE=$kline
	echo '#!/bin/sh'
	printf 'cd %q\n' "$PWD"
	while read -r v _; do
		case $v in XNC_*) [ -z "${!v+x}" ] || printf 'export %s=%q\n' "$v" "${!v}" ;; esac
	done <"$here/../tests/guest/env"
	printf '%q ' "$@"
	echo
) >"$out/cmd.sh"
chmod +x "$out/cmd.sh"

# What of this machine a guest on the trixie root needs, at the same paths:
# shares, as init's commands (a tmpfs overlay each: writes stay in the guest)
shares=
if [ "$groot" != / ]; then
	cache=${XNC_CACHE:-/var/cache/xfrm_nocache}
	dirs=("$(cd "$here/.." && pwd)" "$cache")
	case $PWD in
	/ | "${dirs[0]}" | "${dirs[0]}"/* | "$cache" | "$cache"/*) ;;
	*) dirs+=("$PWD") ;;
	esac
	for i in "${!dirs[@]}"; do
		d=${dirs[i]}
		shares+="mkdir -p /upper/s$i/up /upper/s$i/work /newroot$d
mount -t overlay -o lowerdir=/lower$d,upperdir=/upper/s$i/up,workdir=/upper/s$i/work overlay /newroot$d || { echo XNC-INIT-FAIL share $d; poweroff -f; }
"
	done
fi

# --- initramfs: busybox + the few modules needed to reach the host root ---
ird=$work/root
mkdir -p "$ird"/{bin,dev,proc,sys,lower,upper,newroot,mods}
cp /bin/busybox "$ird/bin/busybox"
for m in virtio_pci 9pnet_virtio 9p overlay; do
	modprobe -d "$root" -S "$ver" --show-depends "$m" | awk '$1 == "insmod" { print $2 }'
done | awk '!seen[$0]++' >"$work/mods"
# (empty when they are built in, as in the debug kernel)
: >"$ird/mods/order"
# 6.12's modules are xz-compressed: busybox insmod would first hand the
# compressed file to the kernel ("Invalid ELF header magic" on the console)
# before unpacking it itself, so they go in unpacked
while read -r m; do
	b=$(basename "$m")
	case $b in
	*.ko.xz) xz -dc "$m" >"$ird/mods/${b%.xz}"; b=${b%.xz} ;;
	*.ko.zst) zstd -qdc "$m" >"$ird/mods/${b%.zst}"; b=${b%.zst} ;;
	*) cp "$m" "$ird/mods/" ;;
	esac
	echo "$b" >>"$ird/mods/order"
done <"$work/mods"

cat >"$ird/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in \$(cat /mods/order); do insmod /mods/\$m 2>/dev/null; done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot /lower || { echo XNC-INIT-FAIL 9p; poweroff -f; }
mount -t tmpfs -o size=75% tmpfs /upper
mkdir -p /upper/up /upper/work
mount -t overlay -o lowerdir=/lower${groot%/},upperdir=/upper/up,workdir=/upper/work overlay /newroot || { echo XNC-INIT-FAIL overlay; poweroff -f; }
$shares
mkdir -p /newroot/lib/modules/$ver /newroot$out
mount --bind /newroot$root/lib/modules/$ver /newroot/lib/modules/$ver
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 xncout /newroot$out || { echo XNC-INIT-FAIL out; poweroff -f; }
umount /proc /sys
exec switch_root /newroot /bin/sh $out/guest-init.sh
EOF
chmod +x "$ird/init"

# Runs as PID 1 in the real root: set up a sane system, run the command,
# report its status on the console, power off.
cat >"$out/guest-init.sh" <<'EOF'
#!/bin/sh
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mkdir -p /run/netns /var/run/netns /run/lock
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t configfs configfs /sys/kernel/config 2>/dev/null
hostname xnc-guest
ip link set lo up
echo 1 > /proc/sys/kernel/panic_on_oops
echo "XNC-GUEST-START $(uname -r)"
EOF
printf 'sh %q </dev/null\n' "$out/cmd.sh" >>"$out/guest-init.sh"
cat >>"$out/guest-init.sh" <<'EOF'
rc=$?
sync
echo "XNC-GUEST-EXIT $rc"
echo o > /proc/sysrq-trigger
# PID 1 must not exit: wait for the power-off to take effect
while :; do sleep 1; done
EOF

(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"

# A soft lockup never ends by itself: panic at once, with every CPU's
# backtrace on the console, instead of waiting for the timeout.
kappend="$kappend softlockup_panic=1 softlockup_all_cpu_backtrace=1"

# Multi-threaded TCG (a host thread per vCPU) is the fast mode, but qemu
# 7.2's (Debian bookworm's own) can let a vCPU go on running its old
# translation of kernel code that another vCPU has just rewritten.  Text
# patching (text_poke_bp: livepatch, ftrace, static keys, trace events)
# then hangs the guest when the patched code runs on the other vCPU
# meanwhile: that vCPU traps on the temporary int3, which memory no longer
# holds, the kernel backs up to re-execute the instruction, and the stale
# int3 traps again, forever (soft lockups at the patched function's first
# byte, whose bytes on the console are already the final ones).  Seen in
# about 1 of 4 runs of t-01-cycles, and when a trace event was switched off
# under load.  Toggling the sched trace events 600 times while both vCPUs
# switch tasks made no progress in 300 s there; with qemu 10 (from
# bookworm-backports, which scripts/deps.sh installs) it takes 8 s, and
# 12,000 times 142 s.  So multi-threaded TCG only with qemu 10 or later,
# the version tested; with an older one, one host thread runs the vCPUs in
# turn, so a translation never races a write (about 1.7 times slower).
if [ "$accel" = tcg ] && [ "$tcg" = auto ]; then
	qemu_major=$(qemu-system-x86_64 --version | sed -n '1s/.*version \([0-9]*\)\..*/\1/p')
	tcg=single
	[ "${qemu_major:-0}" -ge 10 ] && tcg=multi
	[ $tcg = multi ] || [ -n "$icount" ] ||
		echo "vm.sh: qemu ${qemu_major:-?} is older than 10: single-threaded TCG (slower; scripts/deps.sh installs a newer one)" >&2
fi
if [ "$accel" = kvm ]; then
	echo "vm.sh: accelerator: KVM" >&2
	qaccel=(-accel kvm -cpu host)
elif [ -n "$icount" ]; then
	echo "vm.sh: accelerator: TCG, -icount shift=1" >&2
	qaccel=(-accel tcg -icount shift=1 -cpu max)
else
	echo "vm.sh: accelerator: TCG ($tcg-threaded)${kvm_why:+; not KVM: $kvm_why}" >&2
	qaccel=(-accel "tcg,thread=$tcg" -cpu max)
fi

timeout --foreground -k 10 "$timeout" \
	qemu-system-x86_64 "${qaccel[@]}" -machine q35 -smp "$smp" -m "$mem" \
	-nographic -no-reboot -monitor none -serial stdio \
	-kernel "$root/boot/vmlinuz-$ver" -initrd "$work/initrd.gz" \
	-append "console=ttyS0 panic=-1 oops=panic loglevel=5 net.ifnames=0 mitigations=off$kappend $append" \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	-virtfs local,path="$out",mount_tag=xncout,security_model=none,multidevs=remap \
	-nic none </dev/null 2>&1 | tr -d '\r' | tee -a "$log" |
	if [ -n "${XNC_QUIET:-}" ]; then cat >/dev/null; else cat; fi || true

grc=$(sed -n 's/.*XNC-GUEST-EXIT \([0-9]*\).*/\1/p' "$log" | tail -n1)
splat="$(<"$here/../tests/splat.re")|XNC-INIT-FAIL"
if grep -aEn "$splat" "$log" >"$out/splats"; then
	echo "vm.sh: kernel splat on the console ($log):" >&2
	head -n 20 "$out/splats" >&2
	exit 125
fi
if [ -z "$grc" ]; then
	echo "vm.sh: guest did not report an exit status (timeout ${timeout}s or crash); console: $log" >&2
	exit 124
fi
exit "$grc"
