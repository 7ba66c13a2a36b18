#!/bin/sh
# Whole-process time of a one-delta `neocode run` turn against a scripted server on
# 127.0.0.1, per wire API (chat, responses, anthropic), release build:
#   cargo build --release --features testkit --bin neocode --example wire_server
#   scripts/wire-turn-bench.sh [RUNS]
# Each API gets its own server (examples/wire_server.rs) and a fresh NEOCODE_HOME; every run
# is a new session in it. Timed with /usr/bin/time by default; set TIMER to another command
# prefix that takes the command after it (e.g. a harness printing min/median/max).
set -eu
RUNS=${1:-20}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$ROOT/target/release/neocode"
SRV="$ROOT/target/release/examples/wire_server"
for api in chat responses anthropic; do
  work=$(mktemp -d)
  mkdir -p "$work/home" "$work/ws"
  fifo="$work/in"; mkfifo "$fifo"
  # The server runs until its standard input (the fifo) closes.
  "$SRV" "$api" $((RUNS * 2 + 20)) <"$fifo" >"$work/url" &
  exec 9>"$fifo"
  while [ ! -s "$work/url" ]; do sleep 0.05; done
  url=$(head -n1 "$work/url")
  echo "== $api ($url)"
  cd "$work/ws"
  if [ -n "${TIMER:-}" ]; then
    NEOCODE_HOME="$work/home" NEOCODE_BASE_URL="$url" NEOCODE_MODEL=scripted \
      NEOCODE_API="$api" NEOCODE_API_KEY=sk-bench $TIMER "$BIN" run "say ok"
  else
    i=0
    while [ "$i" -lt "$RUNS" ]; do
      NEOCODE_HOME="$work/home" NEOCODE_BASE_URL="$url" NEOCODE_MODEL=scripted \
        NEOCODE_API="$api" NEOCODE_API_KEY=sk-bench /usr/bin/time -f "%e s %M KiB" \
        "$BIN" run "say ok" >/dev/null
      i=$((i + 1))
    done
  fi
  cd "$ROOT"
  exec 9>&-
  wait
  rm -rf "$work"
done
