#!/usr/bin/env bash
# Measures a big workspace with the release binary: search (warm, cold), --list (time, peak
# memory) and the TUI in a pty (start -> rows, `/` filter, End, memory). Builds the workspace
# first when DIR has none: A (10,000 sessions, 1.1 M messages) by default, B with
# `SESSIONS=100000 MESSAGES=10000000 scripts/bench-big.sh /tmp/neocode-b` (~4 GB).
# Usage: scripts/bench-big.sh [DIR]  (default /tmp/neocode-big)
set -euo pipefail
dir=${1:-/tmp/neocode-big}
cd "$(dirname "$0")/.."
cargo build --release --bin neocode --example bench_big
[ -d "$dir/home" ] || scripts/big-workspace.sh "$dir"
target/release/examples/bench_big --home "$dir/home" --workdir "$dir/work" \
  --bin target/release/neocode --runs "${RUNS:-5}"
