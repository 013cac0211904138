# SPDX-License-Identifier: GPL-2.0
#
# The xfrm_nocache_* samples of a Prometheus text exposition, one a line,
# "NAME{LABELS} VALUE", written so that they do not depend on who wrote
# them (xfrm-nocache-stats, or node_exporter re-encoding its textfile):
# le as whole nanoseconds ("+Inf" kept), values as whole numbers ("NaN"
# kept).  Used by tests/host/stats-prom.sh and tests/guest/t-22-prometheus.sh.
/^xfrm_nocache_/ {
	v = $NF
	s = substr($0, 1, length($0) - length(v) - 1)
	if (match(s, /le="[^"]*"/)) {
		le = substr(s, RSTART + 4, RLENGTH - 5)
		if (le != "+Inf")
			le = sprintf("%.0f", le * 1e9)
		s = substr(s, 1, RSTART - 1) "le=\"" le "\"" substr(s, RSTART + RLENGTH)
	}
	if (v != "NaN")
		v = sprintf("%.0f", v)
	print s, v
}
