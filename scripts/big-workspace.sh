#!/usr/bin/env bash
# Builds the benchmark workspaces: 10,000 sessions holding 1,000,000 messages in all, plus one
# session of 100,000 messages. Usage: scripts/big-workspace.sh [DIR]  (default /tmp/neocode-big)
# Then: NEOCODE_HOME=DIR/home target/release/neocode --workdir DIR/work --list
set -euo pipefail
dir=${1:-/tmp/neocode-big}
cd "$(dirname "$0")/.."
cargo build --release --example populate
rm -rf "$dir"
mkdir -p "$dir/work"
target/release/examples/populate --home "$dir/home" --workdir "$dir/work" \
  --sessions "${SESSIONS:-10000}" --messages "${MESSAGES:-1000000}" --long "${LONG:-100000}"
echo "NEOCODE_HOME=$dir/home target/release/neocode --workdir $dir/work"
