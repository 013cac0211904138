#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the kernel's netdevsim (a simulated NIC with ESP offload) out of
# tree, from Debian's linux-source-<line> tarball (6.1, 6.12 or 7.3, XNC_KLINE:
# scripts/kernel.sh) against the headers of the kernel the tests boot.
# Debian does not ship it (CONFIG_NETDEVSIM is not set), and nothing of it
# is kept in this repository.
#
#   scripts/netdevsim.sh        build if needed, print the path of the .ko
#
# Cache: $XNC_CACHE/netdevsim-<kver>/netdevsim.ko (default XNC_CACHE
# /var/cache/xfrm_nocache), outside the repo.  Idempotent: rebuilt only
# when the kernel version or the linux-source package version changed.
# The guest sees the host root read-only, so it loads the module from the
# same path (tests/run.sh writes it to $XNC_OUT/netdevsim.path).  Its one
# module dependency is psample, on both lines (modinfo: "depends: psample").
# With XNC_KERNEL set, built for that debug kernel instead (kernel.sh).
# Debian 13's kernels (13, 13-rt, 7.3): built in the trixie root, from
# trixie's linux-source-6.12 or backports' linux-source-7.3
# (scripts/trixie-source.sh), fetched into the cache once.

set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
XNC_CACHE=${XNC_CACHE:-/var/cache/xfrm_nocache}

die() { echo "netdevsim.sh: $*" >&2; exit 1; }

kline=$("$here/kernel.sh" line) || exit 1
kver=$("$here/kernel.sh" version) || exit 1
kdir=$("$here/kernel.sh" kdir) || exit 1
# the root the build runs in (kernel.sh build), and kdir as seen there
groot=$("$here/kernel.sh" root)
bkdir=$("$here/kernel.sh" bkdir)
srcpkg=linux-source-$kline
# its source: fetched into the cache once for Debian 13's kernels
read -r TARBALL srcver <<<"$("$here/kernel.sh" source)"
[ -n "$srcver" ] || exit 1
[ -r "$TARBALL" ] || die "$TARBALL missing (run scripts/deps.sh)"
stamp="kver=$kver source=${srcver:-unknown} esp-features=toggleable carrier=unlinked-on"
# A debug kernel (XNC_KERNEL, scripts/debug-kernel.sh) may be rebuilt with
# other options under the same release: its .config is part of the stamp.
if [ -n "${XNC_KERNEL:-}" ]; then
	stamp="$stamp config=$(sha256sum "$kdir/.config" | cut -c1-16)"
fi

dir=$XNC_CACHE/netdevsim-$kver
ko=$dir/netdevsim.ko
mkdir -p "$dir"

# Two make checks at once must not build into the same place.
exec 8>"$dir/.lock"
flock 8

if [ -f "$ko" ] && [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$stamp" ]; then
	echo "$ko"
	exit 0
fi
rm -f "$ko" "$dir/.stamp"

# (where the build's root sees it)
case $groot in
/) tmp=$(mktemp -d "$dir/.build.XXXXXX") ;;
*) tmp=$(mktemp -d "$groot/var/tmp/xnc-netdevsim.XXXXXX") ;;
esac
trap 'rm -rf "$tmp"' EXIT
echo "netdevsim.sh: building netdevsim for $kver from $TARBALL" >&2
tar -xJf "$TARBALL" -C "$tmp" --strip-components=3 \
	"$srcpkg/drivers/net/netdevsim" ||
	die "no drivers/net/netdevsim in $TARBALL"

# One change, made here and checked: netdevsim sets its ESP offload
# features in dev->features only, so ethtool shows them "[fixed]" and
# "ethtool -K <dev> esp-hw-offload off" is refused.  Real offload NICs
# (ixgbe, mlx5) list them in hw_features too, and switching the feature off
# with SAs bound is the case the module's notifier exists for; so the port
# gets them in hw_features as well, like those drivers.  The same in 6.1
# and 6.12 (whose xfrm_dev_down still flushes only with NETIF_F_HW_ESP on).
nsim_ipsec=$tmp/netdevsim/ipsec.c
want='ns->netdev->features |= NSIM_ESP_FEATURES;'
grep -qF "$want" "$nsim_ipsec" || die "ipsec.c changed: no '$want'"
# (7.x's has them there already)
grep -qF 'ns->netdev->hw_features |= NSIM_ESP_FEATURES;' "$nsim_ipsec" ||
	sed -i "s/^\(\t\)\(ns->netdev->\)features |= NSIM_ESP_FEATURES;\$/&\n\1\2hw_features |= NSIM_ESP_FEATURES;/" \
	"$nsim_ipsec"
grep -qF 'ns->netdev->hw_features |= NSIM_ESP_FEATURES;' "$nsim_ipsec" ||
	die "could not make the ESP features toggleable in $nsim_ipsec"

# A second one, for 6.12, whose ports can be linked in pairs: nsim_stop()
# turns the carrier off and nsim_open() turns it on only with a running
# peer, so a port without one (all of ours) has no carrier after its first
# down/up, and its qdisc drops everything it would send (6.1's carrier is
# never off).  The tests down and up their ports and then send through
# them: a port without a peer gets its carrier back when opened.
nsim_netdev=$tmp/netdevsim/netdev.c
if grep -q 'netif_carrier_off(dev);' "$nsim_netdev"; then
	want=$'\tif (peer && netif_running(peer->netdev)) {'
	grep -qxF "$want" "$nsim_netdev" || die "netdev.c changed: no '$want'"
	awk -v want="$want" '
		{ print }
		$0 == want { inblk = 1; next }
		inblk && /^\t}$/ { print "\telse if (!peer)\n\t\tnetif_carrier_on(dev);"; inblk = 0 }
	' "$nsim_netdev" >"$nsim_netdev.new" && mv "$nsim_netdev.new" "$nsim_netdev"
	grep -qx '.else if (!peer)' "$nsim_netdev" ||
		die "could not give unlinked ports their carrier in $nsim_netdev"
fi

# Debian's 6.1-rt headers are not linux-source-6.1's tree: the real-time
# patch set brings 6.2's u64_stats rework, which dropped the _irq readers
# that 6.1's netdevsim still calls (on 64-bit they were the plain ones).
# Map them to the plain ones where the headers have no _irq variant.
# The header is in the tree itself (a debug kernel, a tree of one's own),
# behind "source" (a build directory made with O=), or in the directory
# whose Makefile Debian's per-flavour one includes (linux-headers-*-common).
u64h=
for d in "$kdir" "$kdir/source" \
	"${groot%/}$(sed -n 's|^include \(/.*\)/Makefile$|\1|p' "$kdir/Makefile" 2>/dev/null | head -n 1)"; do
	[ -n "$d" ] && [ -f "$d/include/linux/u64_stats_sync.h" ] &&
		{ u64h=$d/include/linux/u64_stats_sync.h; break; }
done
kcflags=
if [ -n "$u64h" ] && ! grep -q 'u64_stats_fetch_begin_irq' "$u64h" &&
	grep -q 'u64_stats_fetch_begin_irq' "$tmp/netdevsim/netdev.c"; then
	kcflags="-Du64_stats_fetch_begin_irq=u64_stats_fetch_begin"
	kcflags="$kcflags -Du64_stats_fetch_retry_irq=u64_stats_fetch_retry"
fi

# The headers' .config has CONFIG_NETDEVSIM unset; setting it on the command
# line is enough for its Makefile.  Everything else it wants is there and
# exported: CONFIG_XFRM_OFFLOAD=y (ipsec.c, the part we need),
# CONFIG_BPF_SYSCALL=y (bpf.c), CONFIG_PSAMPLE=m (psample.c), devlink and
# debugfs built in.  So the whole driver is built, nothing left out.
"$here/kernel.sh" build make -C "$bkdir" M="${tmp#"${groot%/}"}/netdevsim" CONFIG_NETDEVSIM=m \
	KCFLAGS="$kcflags" modules >"$tmp/build.log" 2>&1 || {
	tail -n 30 "$tmp/build.log" >&2
	die "build failed"
}
# modpost only warns about symbols the kernel does not export: refuse those,
# the module would not load.
if grep -E 'WARNING: modpost: .*undefined' "$tmp/build.log" >&2; then
	die "netdevsim needs symbols $kver does not export"
fi
cp "$tmp/netdevsim/netdevsim.ko" "$ko.tmp"
mv "$ko.tmp" "$ko"
echo "$stamp" >"$dir/.stamp"
echo "$ko"
