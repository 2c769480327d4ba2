#!/usr/bin/env bash
# Builds libfuse's passthrough_ll example (libfuse3-dev's examples, with cc) into OUT: the
# FUSE baseline of bench/real-fio.sh and `folio fs bench`, built the same way for both.
#
# Usage: bench/build-passthrough-ll.sh OUT
# Exit 2 (one line on stderr) when cc, pkg-config or libfuse3-dev's example is missing.
set -euo pipefail

die() { echo "build-passthrough-ll.sh: $*" >&2; exit 2; }
[ $# -eq 1 ] || die "usage: build-passthrough-ll.sh OUT"
EXAMPLES=/usr/share/doc/libfuse3-dev/examples
command -v cc >/dev/null || die "no C compiler (apt-get install build-essential)"
command -v pkg-config >/dev/null || die "pkg-config is not installed (apt-get install pkg-config)"
[ -f "$EXAMPLES/passthrough_ll.c" ] || die "$EXAMPLES/passthrough_ll.c: install libfuse3-dev"
# shellcheck disable=SC2046
cc -O2 -w $(pkg-config --cflags fuse3) "$EXAMPLES/passthrough_ll.c" -o "$1" \
  $(pkg-config --libs fuse3)
