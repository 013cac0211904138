#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's own tools/testing/selftests/net/xfrm_policy.sh (taken from
# Debian's linux-source-<line> at test time, see scripts/selftests.sh) with the
# module loaded: policy resolution with exceptions, overlapping block
# policies, hash-threshold rebuilds and random insertion order, checked by
# pings whose ipsec-ness an iptables -m policy counter shows.  Passes when
# all 18 checks pass (as on stock), the livepatch stayed enabled and the
# pings went through xnc_xfrm_lookup_with_ifid (kprobe hit count).
#
#   ns1 --- ns3 ===ESP tunnel=== ns4 --- ns2
#   10.0.1.2  10.0.3.1      10.0.3.10   10.0.2.2
suite=xfrm_policy want_pass=18 want_skip=0 want_hits=1
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/selftest-lib.sh"
