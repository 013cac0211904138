#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Loads that must be refused, cleanly: a kernel lacking a required symbol
# (simulated with the test-only extra_symbol parameter) fails with ENOENT and
# a message naming it, leaving no module and no livepatch behind; a second
# copy is refused while the first keeps working.
. "$(dirname "$0")/lib.sh"

out=$(insmod "$XNC_KO" extra_symbol=xnc_no_such_symbol 2>&1) && fail "load with a missing symbol succeeded"
echo "insmod: $out"
mod_loaded && fail "module loaded despite a missing symbol"
[ -e $LP ] && fail "livepatch registered despite a missing symbol"
dmesg | grep -q "required kernel symbol 'xnc_no_such_symbol' not found" ||
	fail "no message naming the missing symbol"
dmesg | grep -q "refusing to load" || fail "no refusal message"

# a GCC clone is not the function it is named after
insmod "$XNC_KO" extra_symbol=xfrm_expand_policies 2>/dev/null && fail "accepted a symbol whose only copy is a .constprop clone"
mod_loaded && fail "module loaded after refusing a clone"

xnc_load || fail "normal load failed"
insmod "$XNC_KO" 2>/dev/null && fail "a second copy loaded"
expect_eq "first copy still enabled" "$(cat $LP/enabled)" 1
xnc_unload || fail "unload failed"
echo "missing symbol and clone refused by name; second copy refused"
