# SPDX-License-Identifier: GPL-2.0
#
# Which of kmemleak's suspects are ours (tests/guest/runner.sh):
#   awk -f kmemleak-ours.awk STOCK-WINDOWS KMEMLEAK-REPORT
# prints "BAD STOCK": the suspects whose allocation backtrace names xfrm,
# dst or xnc_, or has an address that no longer resolves (a module since
# unloaded: this one, xnc_klp_other or netdevsim), split into those
# allocated outside and inside a window when a test ran the stock path
# (STOCK-WINDOWS: "first-jiffy last-jiffy ..." lines, lib.sh's
# stock_window).  Both report formats: 6.1 heads the backtrace
# "backtrace:" and prints each frame as "[<hash>] symbol"; 6.12 heads it
# "backtrace (crc N):" and prints the symbol alone.

FILENAME == ARGV[1] { w0[++nw] = $1; w1[nw] = $2; next }

function done(  i) {
	if (!hit)
		return
	for (i = 1; i <= nw; i++)
		if (j >= w0[i] && j <= w1[i]) {
			stock++
			return
		}
	bad++
}

/^unreferenced object/ { done(); hit = 0; bt = 0; j = -1; next }
/^ *comm .*jiffies [0-9]+/ { j = $NF + 0; next }
/^ *backtrace( \(crc [0-9a-f]+\))?:/ { bt = 1; next }
bt && (/xfrm|dst|xnc_/ || /\] 0x[0-9a-f]+$/ || /^ +0x[0-9a-f]+$/) { hit = 1 }
END { done(); print bad + 0, stock + 0 }
