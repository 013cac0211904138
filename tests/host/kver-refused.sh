#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Building against a kernel outside 6.1.x, 6.12.x and 7.3.x stops at once with a
# message saying so: src/main.o is compiled against copies of Debian's 6.1
# headers whose generated linux/version.h says 5.10.0 (the file as 5.10
# writes it), 6.2.0, 6.13.0, 7.2.0, 7.4.0 and 8.3.0; the same copy with the real header
# compiles, so the refusal is the version and nothing else.  Only the one
# object is built: a few seconds.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
kdir=${KDIR:-$(XNC_KLINE=6.1 "$top/scripts/kernel.sh" kdir)}
tmp=$(mktemp -d /tmp/xnc-kver.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
msg="supports Linux 6.1.x, 6.12.x and 7.3.x only"

# the headers' build dir (small: the rest are absolute paths into -common),
# its relative symlinks made absolute
cp -a "$kdir" "$tmp/kdir"
find "$kdir" -maxdepth 1 -type l | while read -r l; do
	ln -sfn "$(readlink -f "$l")" "$tmp/kdir/$(basename "$l")"
done
vh=$tmp/kdir/include/generated/uapi/linux/version.h
cp "$vh" "$tmp/version.h.real"
mkdir -p "$tmp/mod"
cp -r "$top/Kbuild" "$top/src" "$top/include" "$tmp/mod/"

build() { # build src/main.o against the copy, output in $tmp/out
	rm -f "$tmp/mod/src/main.o"
	make -C "$tmp/kdir" M="$tmp/mod" src/main.o >"$tmp/out" 2>&1
}

cat >"$vh" <<'H'
#define LINUX_VERSION_CODE 330240
#define KERNEL_VERSION(a,b,c) (((a) << 16) + ((b) << 8) + ((c) > 255 ? 255 : (c)))
H
if build; then
	echo "built against 5.10 headers"; exit 1
fi
refused() { grep '#error' "$tmp/out" | grep -qF -- "$msg"; }
refused || { cat "$tmp/out"; echo "no version message building against 5.10"; exit 1; }
echo "5.10: $(grep -m1 -o "error: #error.*" "$tmp/out")"

for mp in 6.2 6.13 7.2 7.4 8.3; do
	mj=${mp%.*} pl=${mp#*.}
	sed -e "s/^#define LINUX_VERSION_CODE .*/#define LINUX_VERSION_CODE $(((mj << 16) + (pl << 8)))/" \
	    -e "s/^#define LINUX_VERSION_MAJOR .*/#define LINUX_VERSION_MAJOR $mj/" \
	    -e "s/^#define LINUX_VERSION_PATCHLEVEL .*/#define LINUX_VERSION_PATCHLEVEL $pl/" \
	    -e 's/^#define LINUX_VERSION_SUBLEVEL .*/#define LINUX_VERSION_SUBLEVEL 0/' \
	    "$tmp/version.h.real" >"$vh"
	if build; then
		echo "built against $mp headers"; exit 1
	fi
	refused || { cat "$tmp/out"; echo "no version message building against $mp"; exit 1; }
	echo "$mp: refused"
done

cp "$tmp/version.h.real" "$vh"
build || { cat "$tmp/out"; echo "the same copy with its real version.h does not build"; exit 1; }
echo "refused against 5.10, 6.2, 6.13, 7.2, 7.4 and 8.3 headers with the version message; $(sed -n 's/#define LINUX_VERSION_SUBLEVEL/6.1 sublevel/p' "$vh") builds"
