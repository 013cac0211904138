#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The ipsec tests of the kernel's own tools/testing/selftests/net/rtnetlink.sh
# (taken from Debian's linux-source-<line> at test time, see
# scripts/selftests.sh) with the module loaded: kci_test_ipsec (add, list,
# count, get, delete SAs and policies, and the 20 lines "ip xfrm monitor"
# must print for them) and kci_test_ipsec_offload (SAs offloaded to a
# netdevsim device, 3 pings through them that the driver must count).
# 6.12's rtnetlink.sh runs only these two with -t; 6.1's has no -t option:
# selftests.sh sources its functions and calls only these two.  Debian's
# kernel has CONFIG_NETDEVSIM unset; the netdevsim that scripts/netdevsim.sh
# builds on the host is loaded from the path tests/run.sh left in
# $XNC_OUT/netdevsim.path.  Passes when both checks pass (as on stock), the
# livepatch stayed enabled and the offload pings went through
# xnc_xfrm_lookup_with_ifid (kprobe hit count).  Without scripts/netdevsim.sh in
# the tree, kci_test_ipsec_offload must skip (as it does on stock).
#
#   init netns: test-dummy0 192.168.123.1 (SAs/policies to 192.168.123.2)
#               netdevsim port 192.168.123.3 ==offloaded ESP==> .4
. "$(dirname "$0")/lib.sh"
suite=rtnetlink-ipsec want_pass=2 want_skip=0 want_hits=1
if [ ! -e "$XNC_TOP/scripts/netdevsim.sh" ]; then
	want_pass=1 want_skip=1 want_hits=0
	echo "# no scripts/netdevsim.sh: kci_test_ipsec_offload is expected to skip"
elif [ ! -s "$XNC_OUT/netdevsim.path" ]; then
	fail "no netdevsim: scripts/netdevsim.sh failed on the host (see netdevsim.log)"
fi

. "$(dirname "$0")/selftest-lib.sh"
