#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run checkpatch.pl from Debian's linux-source-6.1 (extracted once into the
# cache, never into the repo) on the given files.

set -euo pipefail
XNC_CACHE=${XNC_CACHE:-/var/cache/xfrm_nocache}
src=/usr/src/linux-source-6.1.tar.xz
dir=$XNC_CACHE/checkpatch
if [ ! -x "$dir/scripts/checkpatch.pl" ]; then
	[ -f "$src" ] || { echo "checkpatch.sh: $src missing (make deps)" >&2; exit 1; }
	mkdir -p "$dir"
	tar -xJf "$src" -C "$dir" --strip-components=1 \
		linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch
fi
exec perl "$dir/scripts/checkpatch.pl" --no-tree --strict --terse \
	--ignore SPDX_LICENSE_TAG -f "$@"
