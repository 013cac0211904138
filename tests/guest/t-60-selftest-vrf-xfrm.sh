#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's own tools/testing/selftests/net/vrf-xfrm-tests.sh (taken from
# Debian's linux-source-<line> at test time, see scripts/selftests.sh) with the
# module loaded: a VRF, an xfrm interface and policies with and without a
# netem qdisc on the VRF, IPv4 and IPv6.  Passes when all 14 of its checks
# pass (as on stock), the livepatch stayed enabled and the suite's traffic
# went through xnc_xfrm_lookup_with_ifid (kprobe hit count).
#
#   host1 [vrf red: eth0 192.168.1.1, xfrm0 10.0.1.1]
#     |  ESP tunnel, policies by address / by VRF / by xfrm if_id
#   host2 [eth0 192.168.1.2, xfrm0 10.0.1.2]
suite=vrf-xfrm want_pass=14 want_skip=0 want_hits=1
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/selftest-lib.sh"
