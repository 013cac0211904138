#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rmmod while the module's trace events are in use, for each way of using
# them.  The events belong to the module (call->module), so:
#  - tracefs (an event enabled at the top level and in an instance):
#    enabling takes no module reference; rmmod goes ahead, and the kernel's
#    module-going handler switches the events off, removes them from every
#    instance and resets the ring buffers, so no record is left to be
#    formatted by the module's freed code.  Reading the buffers afterwards
#    must work, and a reload must give working events again.
#  - trace-cmd record: tracefs underneath, the same; it must stop cleanly
#    and its file must still be readable (the format was saved at start).
#  - perf record, and an event trigger (enable_event): each holds a module
#    reference; rmmod fails with EBUSY ("in use") and succeeds once it is
#    gone.
# perf takes about 30 s to start under TCG.  The console must stay clean
# throughout (the runner and vm.sh check).
# shellcheck disable=SC2119 # xnc_load: no insmod parameters here
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/diff-lib.sh"
T=/sys/kernel/tracing
E=$T/events/xfrm_nocache
I=$T/instances/xnc-t21
tmp=$XNC_OUT/t21
# perf.data in the guest's own file system: from 7.x on, perf's ring
# buffer pages cannot back a zero-copy 9p write (EFAULT, "Bad address")
ptmp=$(mktemp -d)
# shellcheck disable=SC2016 # expanded at exit
at_exit 'rm -rf "$ptmp"'
mkdir -p "$tmp"

pair
sa "a b" 10.0.0.1 10.0.0.2 0x100 transport
pol a src 10.0.0.1 dst 10.0.0.2 dir out tmpl proto esp mode transport
# N datagrams from a: N resolutions through the module while it is enabled
send() { ip netns exec a "$XSEND" -n "$1" 10.0.0.2 5000 >/dev/null; }
# module references: the enabled livepatch holds one itself
refcnt() { cat /sys/module/xfrm_nocache/refcnt; }
ev_count() { grep -c 'xnc_lookup: netns=' "$1" || true; }
# rmmod that must fail: its errno must be EBUSY (the module in use)
rmmod_busy() {
	local out
	out=$(rmmod xfrm_nocache 2>&1) && fail "rmmod succeeded while $1"
	echo "$out" | grep -q 'in use' || fail "rmmod while $1: '$out', want 'in use'"
	mod_loaded || fail "module gone after a failed rmmod ($1)"
	[ -d $E/xnc_lookup ] || fail "events gone after a failed rmmod ($1)"
}
rmmod_ok() {
	rmmod xfrm_nocache || fail "rmmod failed while $1"
	! mod_loaded || fail "module still loaded after rmmod ($1)"
	[ ! -d $E ] || fail "$E still there after rmmod ($1)"
}

# 1. tracefs: top level and an instance
xnc_load || fail "load failed"
r0=$(refcnt)
mkdir $I
echo >$T/trace
echo 1 >$E/xnc_lookup/enable
echo 1 >$E/xnc_flush/enable
echo 1 >$I/events/xfrm_nocache/xnc_lookup/enable
send 5
expect_ge "events in the top buffer" "$(ev_count $T/trace)" 5
expect_ge "events in the instance" "$(ev_count $I/trace)" 5
expect_eq "module references with events enabled in tracefs" "$(refcnt)" "$r0"
xnc_disable || fail "disable failed"
expect_eq "module references, disabled, events on in tracefs" "$(refcnt)" 0
rmmod_ok "enabled in tracefs"
[ ! -d $I/events/xfrm_nocache ] || fail "the instance still has the events"
cat $T/trace >"$tmp/trace.top" || fail "reading the top buffer failed"
cat $I/trace >"$tmp/trace.inst" || fail "reading the instance failed"
expect_eq "records left in the top buffer" "$(ev_count "$tmp/trace.top")" 0
expect_eq "records left in the instance" "$(ev_count "$tmp/trace.inst")" 0
grep -q '^xfrm_nocache:' $T/set_event && fail "set_event still lists our events"
rmdir $I
# reloaded: fresh events, which work
xnc_load || fail "reload failed"
[ "$(cat $E/xnc_lookup/enable)" = 0 ] || fail "reloaded event comes up enabled"
echo >$T/trace
echo 1 >$E/xnc_lookup/enable
send 3
echo 0 >$E/xnc_lookup/enable
expect_ge "events after a reload" "$(ev_count $T/trace)" 3
echo "tracefs: rmmod ok, events and records gone, reload traces"

# 2. trace-cmd record
rm -f "$tmp"/trace.dat*
trace-cmd record -e xfrm_nocache:xnc_lookup -o "$tmp/trace.dat" >"$tmp/tc.out" 2>&1 &
tc=$!
wait_for 30 grep -q 1 $E/xnc_lookup/enable || fail "trace-cmd did not enable the event"
send 400
sleep 2
xnc_disable || fail "disable failed"
expect_eq "module references, disabled, trace-cmd recording" "$(refcnt)" 0
rmmod_ok "trace-cmd recording"
kill -INT $tc
wait $tc || fail "trace-cmd record failed after rmmod: $(tail -n 3 "$tmp/tc.out")"
trace-cmd report -i "$tmp/trace.dat" >"$tmp/tc.report" 2>&1 ||
	fail "trace-cmd report failed: $(tail -n 3 "$tmp/tc.report")"
n=$(grep -c 'xnc_lookup:' "$tmp/tc.report" || true)
# user space names the outcome from the event's format (a number there)
expect_eq "trace-cmd records with their outcome named (result=Name)" \
	"$(grep -cE 'xnc_lookup:.* result=[A-Z][A-Za-z]+ ' "$tmp/tc.report" || true)" "$n"
echo "trace-cmd: rmmod ok, stopped cleanly, $n of 400 records saved before the unload"

# 3. perf record: its workload sends once perf's events are on, then
# waits, so perf stays attached
xnc_load || fail "load failed"
r0=$(refcnt)
rm -f "$tmp/sent"
perf record -e xfrm_nocache:xnc_lookup -a -o "$ptmp/perf.data" -- sh -c \
	"ip netns exec a '$XSEND' -n 5 10.0.0.2 5000 >/dev/null; touch '$tmp/sent'; exec sleep 600" \
	>"$tmp/perf.out" 2>&1 &
pf=$!
wait_for 180 test -e "$tmp/sent" || fail "perf's workload did not run: $(cat "$tmp/perf.out")"
[ "$(refcnt)" -gt "$r0" ] || fail "perf holds no module reference"
xnc_disable || fail "disable failed"
rmmod_busy "perf record is attached"
# perf exits with its workload's status (killed): its file is the check
pkill -INT -P $pf sleep
wait $pf || true
grep -q 'Captured and wrote' "$tmp/perf.out" || fail "perf record: $(tail -n 3 "$tmp/perf.out")"
perf script -i "$ptmp/perf.data" >"$tmp/perf.script" 2>/dev/null
n=$(grep -c 'xnc_lookup:' "$tmp/perf.script" || true)
expect_ge "perf samples of xnc_lookup" "$n" 5
expect_eq "perf samples with their outcome named (result=Name)" \
	"$(grep -cE 'xnc_lookup:.* result=[A-Z][A-Za-z]+ ' "$tmp/perf.script" || true)" "$n"
expect_ge "perf samples of the datagrams sent (result=Transformed)" \
	"$(grep -c 'xnc_lookup:.* result=Transformed ' "$tmp/perf.script" || true)" 5
expect_eq "module references after perf" "$(refcnt)" 0
rmmod_ok "perf gone"
echo "perf: rmmod refused (in use) while attached, ok after; $n samples"

# 4. an event trigger enabling our event
xnc_load || fail "load failed"
r0=$(refcnt)
echo 'enable_event:xfrm_nocache:xnc_lookup' >$T/events/sched/sched_switch/trigger ||
	fail "trigger refused"
expect_eq "module references with a trigger" "$(refcnt)" $((r0 + 1))
xnc_disable || fail "disable failed"
rmmod_busy "an event trigger refers to the event"
echo '!enable_event:xfrm_nocache:xnc_lookup' >$T/events/sched/sched_switch/trigger
# 7.x frees a removed trigger's data, and puts the module, from a worker
no_refs() { [ "$(refcnt)" = 0 ]; }
wait_for 10 no_refs || fail "module references after the trigger: $(refcnt), want 0"
rmmod_ok "the trigger gone"
echo "trigger: rmmod refused (in use) while set, ok after"
