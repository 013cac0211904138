# SPDX-License-Identifier: GPL-2.0
#
# xfrm_nocache: out-of-tree build, lint, and tests in a VM running Debian's
# own kernel.  See README.md.

# KERNEL=6.1 or KERNEL=6.12: that kernel line of Debian's (scripts/kernel.sh)
# for the build (its headers) and for the tests (XNC_KLINE); KERNEL=6.1-rt
# or 6.12-rt: its PREEMPT_RT flavor.  RT=1 is short for KERNEL=<line>-rt.
# KERNEL=13, 13-rt, 7.3: Debian 13's own 6.12 kernel, its -rt flavor, and
# trixie-backports' 7.3, built in the trixie root (scripts/trixie-root.sh).
ifeq ($(RT),1)
override KERNEL := $(patsubst %-rt,%,$(or $(KERNEL),6.1))-rt
endif
ifneq ($(KERNEL),)
ifneq ($(filter-out 6.1 6.12 6.1-rt 6.12-rt 13 13-rt 7.3,$(KERNEL))$(word 2,$(KERNEL)),)
$(error KERNEL must be 6.1, 6.12, 6.1-rt, 6.12-rt, 13, 13-rt or 7.3, not '$(KERNEL)')
endif
export XNC_KLINE := $(KERNEL)
# Debian 13's kernels build in the trixie root, which has their gcc-14 and
# kbuild (this machine cannot run them) and sees this tree at the same
# path: kbuild runs there (scripts/kernel.sh build), KDIR as seen there
ifneq ($(filter 13 13-rt 7.3,$(KERNEL)),)
KBUILD := scripts/kernel.sh build
KDIR ?= $(shell XNC_KLINE=$(KERNEL) scripts/kernel.sh bkdir 2>/dev/null)
endif
KDIR ?= $(shell XNC_KLINE=$(KERNEL) scripts/kernel.sh kdir 2>/dev/null)
endif

KVER_RUNNING := $(shell uname -r)
ifneq ($(wildcard /lib/modules/$(KVER_RUNNING)/build/Makefile),)
KDIR ?= /lib/modules/$(KVER_RUNNING)/build
else
# No build dir for the running kernel (a VM host without modules): use the
# Debian headers that linux-headers-amd64 points at.
KDIR ?= $(shell scripts/kernel.sh kdir 2>/dev/null)
endif

PWD := $(shell pwd)
MOD := xfrm_nocache.ko
SRCS := $(wildcard src/*.c src/*.h include/*.h) Kbuild scripts/klp-relocs.py
# the kernel the .ko was built for: another KDIR (KERNEL=) rebuilds it
KDIR_STAMP := .kdir.stamp
ifneq ($(KDIR),$(shell cat $(KDIR_STAMP) 2>/dev/null))
$(shell echo '$(KDIR)' >$(KDIR_STAMP))
endif

.PHONY: all module clean check demo install deps lint dkms-check deb help tools test-programs stats stress drift

all: module

module: $(MOD)

$(MOD): $(SRCS) $(KDIR_STAMP)
	@test -n "$(KDIR)" && $(KBUILD) test -d "$(KDIR)" || { \
		echo "no kernel build dir: install linux-headers (make deps) or set KDIR" >&2; exit 1; }
	$(KBUILD) $(MAKE) -C $(KDIR) M=$(PWD) modules
	python3 scripts/klp-relocs.py $@

# (the DKMS source tree, /usr/src/xfrm_nocache-<ver>, has no tests/)
clean:
	$(KBUILD) $(MAKE) -C $(KDIR) M=$(PWD) clean
	$(if $(wildcard tests/tools/klp-other/Kbuild),$(KBUILD) $(MAKE) -C $(KDIR) M=$(PWD)/tests/tools/klp-other clean)
	rm -rf tests/out $(TOOLS)

deps:
	scripts/deps.sh

install: $(MOD)
	$(MAKE) -C $(KDIR) M=$(PWD) INSTALL_MOD_DIR=updates modules_install
	depmod -a $(notdir $(KDIR:/build=))

# Zero findings from W=1, sparse, checkpatch --strict, and the BH check.
lint:
	scripts/lint.sh

TOOLS := tests/tools/xsend tests/tools/xstream tests/tools/xcost

tests/tools/%: tests/tools/%.c
	$(CC) -O2 -Wall -Wextra -o $@ $<

# the test programs alone (tests/run.sh builds them before any boot)
test-programs: $(TOOLS)

# Test only: a second livepatch of xfrm_lookup_with_ifid (t-02-refusals),
# and xnc_qchild, a kernel that releases queue bundle children (t-13)
KLP_OTHER := tests/tools/klp-other/xnc_klp_other.ko

$(KLP_OTHER): $(wildcard tests/tools/klp-other/*.c) tests/tools/klp-other/Kbuild
	@test -n "$(KDIR)" && $(KBUILD) test -d "$(KDIR)" || { \
		echo "no kernel build dir: install linux-headers (make deps) or set KDIR" >&2; exit 1; }
	$(KBUILD) $(MAKE) -C $(KDIR) M=$(PWD)/tests/tools/klp-other modules

tools: $(TOOLS) $(KLP_OTHER)

# Every test, in a VM booting Debian's kernel; prints "N passed, N failed".
# KERNEL=6.1, 6.12, 6.1-rt, 6.12-rt, 13, 13-rt or 7.3: everything on that
# kernel.  Without KERNEL, within CI's budget: everything on bookworm's 6.1
# but the package test (t-70); the module's own tests but the stress suite
# (t-00 to t-50 but t-30) on Debian 13's 6.12, a Debian 13 guest; on 7.3,
# the load, its refusals, the differential, observability and offload;
# the host tests against both bookworm lines (and lint in the trixie root
# for 13 and 7.3).  check-all: everything on all seven.  tests/run.sh
# builds the module for each.
CHECK_KLINES := $(if $(KERNEL),$(KERNEL),6.1=^(0|1|2|3|4|5|6) 13=^(0|1|2|4|5) 7.3=^(00|02|10|20|40))
check-run:
	XNC_KLINES='$(CHECK_KLINES)' $(if $(KERNEL),,XNC_HOST_KLINES='6.1 6.12') tests/run.sh

ALL_KLINES := 6.1 6.12 6.1-rt 6.12-rt 13 13-rt 7.3
check-all-run: check-bench
	XNC_KLINES='$(ALL_KLINES)' tests/run.sh

# The README's commands set a bare Debian machine up first (scripts/deps.sh:
# it says what it installs, and does nothing when all is there; for Debian
# 13's kernels the trixie root too), then run in a new make, which sees what
# was installed (the headers, KDIR).
check: export XNC_DEPS_KERNELS := $(if $(KERNEL),,13 7.3)
check-all: export XNC_DEPS_KERNELS := 6.1-rt 6.12-rt 13 13-rt 7.3
check check-all demo:
	@scripts/deps.sh
	@$(MAKE) --no-print-directory $@-run

.PHONY: check-all check-run check-all-run demo-run

# The stress suite (tests/guest/t-30-stress-*) with 60 s per scenario and
# at least 50 rounds of the namespace and module churns; make check runs
# it too, at 15 s per scenario.
stress: $(MOD)
	XNC_STRESS_SECS=60 XNC_STRESS_ROUNDS=50 tests/run.sh stress

# The kernel's xfrm selftests, stock vs. module, into docs/selftests.md;
# KERNEL=K (any line but 6.1): on K, into docs/selftests-K.md.
selftests-table: $(MOD)
	scripts/selftests-table.sh

.PHONY: selftests-table

# The benchmarks and their tooling live in bench/ (bench/README.md).
# Forwarded pps vs tunnel count: stock, module, per-CPU cache reference;
# then where a packet's instructions go (a perf profile by phase).  Not
# part of check; writes docs/bench.md, docs/bench.png and
# docs/bench-profile.png (~45 min); KERNEL=K (any line but 6.1): on K,
# docs/bench-K.md and its PNGs.  XNC_BENCH_PROFILE=only: the profile
# alone (~10 min), into the run's directory (docs/testing.md, Benchmark).
bench: $(MOD)
	bench/bench.sh

# What a NETDEV_DOWN costs with the module's notifier against stock: 10,000
# SAs, a veth and a netdevsim port with bound SAs; writes docs/notifier.md.
bench-notifier:
	bench/notifier.sh

# The module's lookup latency histogram under traffic, alone and with the
# control plane churning, per kernel (KERNEL=, the -rt ones too): rows of
# docs/latency.tsv, all of them in docs/latency.md (~10 min a kernel).
bench-latency:
	bench/latency.sh

# Local UDP and TCP without IPsec at 0, 1 and 10,000 policies: stock,
# idle, the livepatch redirect alone, module -> docs/local.md (~15 min)
bench-local:
	bench/local.sh

# The tests of the benchmark tooling (bench/tests/: the report, the
# profile's parser), on the host, no VM; "N passed, N failed".
check-bench:
	bench/tests/run.sh

.PHONY: bench bench-notifier bench-latency bench-local check-bench

# A kernel with KASAN, lockdep, PROVE_RCU, kmemleak and SLUB debugging,
# built once per machine and kernel line from linux-source-<line> (6.1, or
# KERNEL=6.12; KERNEL=6.12-rt or RT=1 KERNEL=6.12: on PREEMPT_RT) into the
# cache (long: see docs/testing.md, "Debug kernel").
debug-kernel:
	scripts/debug-kernel.sh

# The guest tests on that kernel, the module built against it: four parts,
# one boot and one kmemleak scan each; PART=1..4 for one of them, T=pattern
# as for check, KERNEL=6.12 on 6.12's.  Not part of check (hours).
check-debug:
	scripts/check-debug.sh

.PHONY: debug-kernel check-debug

demo-run: $(MOD)
	scripts/demo.sh

# counters and latency histogram of a running system (this machine); the
# Debian package installs the command as /usr/sbin/xfrm-nocache-stats
stats:
	scripts/xfrm-nocache-stats $(if $(NS),-n $(NS)) $(INTERVAL)

dkms-check:
	tests/host/dkms.sh

# The kernel source drift check, on the host: the kernel functions and
# variables the module copies, calls or reads, in the newest Debian source
# of each kernel line and in trixie's 6.12 (scripts/trixie-source.sh
# fetches it into the cache), against scripts/kernel.record; exit 1 with a
# diff on any change (scripts/drift.py update records the new sources).
drift:
	scripts/drift.py check --trixie

# The Debian package xfrm-nocache-dkms (debian/), built with dpkg-buildpackage
# in a copy of the tree under /tmp, checked by lintian (no errors), into
# dist/ (DIST=dir for another place).
deb:
	scripts/deb.sh $(DIST)

help:
	@echo "make [all]    build xfrm_nocache.ko against $(KDIR)"
	@echo "make deps     install build/test dependencies (Debian, apt)"
	@echo "make check    tests in a VM: all but the package's on 6.1, the module's own on 13 (Debian 13's 6.12), a part on 7.3"
	@echo "make check KERNEL=6.1|6.12|6.1-rt|6.12-rt  all tests on that kernel (RT=1: -rt)"
	@echo "make check KERNEL=13|13-rt|7.3  ... on Debian 13's kernel, -rt, backports' 7.3"
	@echo "make check-all  all tests on all seven kernels"
	@echo "make stress   the stress suite only, 60 s per scenario (check runs it at 15 s)"
	@echo "make selftests-table  kernel xfrm selftests, stock vs. module -> docs/selftests.md"
	@echo "              (KERNEL=6.12: docs/selftests-6.12.md)"
	@echo "make bench    forwarded pps vs tunnels, stock/module/pcpu-ref -> docs/bench.md"
	@echo "              (KERNEL=6.12: docs/bench-6.12.md)"
	@echo "make bench-notifier  cost of a link down, module vs stock -> docs/notifier.md"
	@echo "make bench-latency   lookup latency under traffic and churn -> docs/latency.md"
	@echo "make bench-local     cost to local UDP/TCP without IPsec -> docs/local.md"
	@echo "make check-bench     the tests of the benchmark tooling (bench/tests, host only)"
	@echo "make debug-kernel  build a KASAN/lockdep/kmemleak kernel for the VM (once, ~15 min)"
	@echo "make check-debug   the guest tests on it, in 4 parts (PART=n or T=pattern for one)"
	@echo "              (both: KERNEL=6.12 for 6.12's, KERNEL=6.12-rt for PREEMPT_RT)"
	@echo "make demo     boot the VM, load the module, show it working"
	@echo "make lint     W=1 + sparse + checkpatch --strict + shellcheck, zero findings"
	@echo "make drift    the kernel functions/variables the module uses vs scripts/kernel.record"
	@echo "              (6.1, 6.12, trixie's 6.12 and backports' 7.3 Debian sources; host only)"
	@echo "make install  install into /lib/modules/<ver>/updates"
	@echo "make deb      the Debian package xfrm-nocache-dkms (DKMS) -> dist/, lintian-clean"
