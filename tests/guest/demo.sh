#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of "make demo" (not a test: tests are t-*.sh).
. "$(dirname "$0")/lib.sh"
set -e
exec 2>&1
echo "=== demo start"
echo "kernel: $(uname -r)"
modprobe -q esp4; modprobe -q veth
ip netns add left; ip netns add right
ip link add vl netns left type veth peer name vr netns right
ip -n left addr add 192.0.2.1/24 dev vl; ip -n left link set vl up
ip -n right addr add 192.0.2.2/24 dev vr; ip -n right link set vr up
K=0x0102030405060708091011121314151617181920
for n in left right; do
	ip -n $n xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1001 \
		reqid 1 mode tunnel aead 'rfc4106(gcm(aes))' $K 128
	ip -n $n xfrm state add src 192.0.2.2 dst 192.0.2.1 proto esp spi 0x2001 \
		reqid 1 mode tunnel aead 'rfc4106(gcm(aes))' $K 128
done
ip -n left xfrm policy add src 192.0.2.1 dst 192.0.2.2 dir out \
	tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 1 mode tunnel
ip -n right xfrm policy add src 192.0.2.2 dst 192.0.2.1 dir out \
	tmpl src 192.0.2.2 dst 192.0.2.1 proto esp reqid 1 mode tunnel
ip -n right xfrm policy add src 192.0.2.1 dst 192.0.2.2 dir in \
	tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 1 mode tunnel
ip -n left xfrm policy add src 192.0.2.2 dst 192.0.2.1 dir in \
	tmpl src 192.0.2.2 dst 192.0.2.1 proto esp reqid 1 mode tunnel

echo; echo "\$ insmod xfrm_nocache.ko"
xnc_load
echo "\$ cat /sys/kernel/livepatch/xfrm_nocache/enabled"; cat $LP/enabled
echo "\$ ls /sys/kernel/livepatch/xfrm_nocache/vmlinux"; ls $LP/vmlinux
echo; echo "\$ ip netns exec left ping -c 5 192.0.2.2"
ip netns exec left ping -c 5 -i 0.2 192.0.2.2 | tail -n 2
echo; echo "\$ ip -n left -s xfrm state list spi 0x1001   (the tunnel SA)"
ip -n left -s xfrm state list spi 0x1001 | sed -n '1,2p;/lifetime current/,+1p'
echo; echo "\$ ip netns exec left cat /proc/net/xfrm_nocache"
ip netns exec left cat /proc/net/xfrm_nocache
echo; echo "\$ echo 0 > /sys/kernel/livepatch/xfrm_nocache/enabled; rmmod xfrm_nocache"
xnc_unload && echo "unloaded; stock path back: $(ip netns exec left ping -c 1 192.0.2.2 >/dev/null && echo ping ok)"
echo "=== demo end"
