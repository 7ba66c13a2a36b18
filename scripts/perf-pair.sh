#!/usr/bin/env bash
# Paired whole-process timings of the merge-base with main ("old") and the working tree
# ("new"), run interleaved on the same workloads (examples/perf_pair.rs): `--list` of 10,000
# and 100,000 sessions (and the SQLite shell on the same columns), a one-delta `run` turn per
# wire API, a 10,000-delta turn, 20 `run_command` round trips, a 50-turn session and the TUI
# while a reply streams. Prints a markdown table of each side's min / median / max and the
# new / old ratios taken pair by pair. Never a pass/fail: read the ratios.
#
# Usage: scripts/perf-pair.sh [BASE] [-- PERF_PAIR_ARGS...]
#   BASE  the commit to compare with (default: `git merge-base HEAD main`)
#   e.g.  RUNS=20 scripts/perf-pair.sh -- --only list10k,turn-chat
# Env:    RUNS (pairs per workload, default 10), PERF_PAIR_DIR (what is kept between runs: the
#         base's sources, target folder and binary, the workspaces; default
#         ~/.cache/neocode-perf-pair).
#
# Both binaries are built the same way (`cargo build --release --bin neocode`, no test
# features), the base from `git archive` of BASE into its own folder with its own
# CARGO_TARGET_DIR (built once per commit). The workspaces come from the working tree's
# `populate --spread-days` (sessions spread over months, as a user's list is) and are built
# once. Needs only what the build needs; `sqlite3`, when installed, adds its reference row.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
base=main
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
	base=$1
	shift
fi
[ "${1:-}" = "--" ] && shift
if [ "$base" = main ]; then
	base=$(git merge-base HEAD main)
fi
base=$(git rev-parse --verify "$base^{commit}")
cache=${PERF_PAIR_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/neocode-perf-pair}
mkdir -p "$cache"
say() { echo "perf-pair: $*" >&2; }

# The base, built once per commit.
old=$cache/bin-$base/neocode
if [ ! -x "$old" ]; then
	src=$cache/base-src
	rm -rf "$src"
	mkdir -p "$src"
	say "building the base $base (release) in $src"
	git archive "$base" | tar -x -C "$src"
	(cd "$src" && CARGO_TARGET_DIR=$cache/target-base cargo build --release --quiet --bin neocode)
	mkdir -p "$cache/bin-$base"
	cp "$cache/target-base/release/neocode" "$old"
fi

# The working tree: the binary as shipped, then the harness and the workspace builder (they
# need the test features, hence a second build of the library).
target=${CARGO_TARGET_DIR:-$root/target}
say "building the working tree (release)"
cargo build --release --quiet --bin neocode
mkdir -p "$cache/bin-work"
cp "$target/release/neocode" "$cache/bin-work/neocode"
cargo build --release --quiet --example perf_pair --example populate

# The workspaces: sessions spread over months, built once.
workspace() {
	local dir=$1 sessions=$2 messages=$3 days=$4
	[ -d "$dir/home/projects" ] && return 0
	say "building $dir ($sessions sessions; once)"
	rm -rf "$dir"
	mkdir -p "$dir/work"
	"$target/release/examples/populate" --home "$dir/home" --workdir "$dir/work" \
		--sessions "$sessions" --messages "$messages" --spread-days "$days" >/dev/null
}
workspace "$cache/ws-10k" 10000 20000 120
workspace "$cache/ws-100k" 100000 100000 365

sqlite=()
if command -v sqlite3 >/dev/null; then
	sqlite=(--sqlite "$(command -v sqlite3)")
fi
dirty=""
git diff --quiet HEAD -- || dirty=" with uncommitted changes"
echo "$(date -u '+%Y-%m-%d %H:%M UTC'): old = $(git log -1 --format='%h %s' "$base" | cut -c1-60)"
echo "new = the working tree at $(git log -1 --format='%h' HEAD)$dirty"
"$target/release/examples/perf_pair" --old "$old" --new "$cache/bin-work/neocode" \
	--runs "${RUNS:-10}" --list10k "$cache/ws-10k" --list100k "$cache/ws-100k" \
	"${sqlite[@]}" "$@"
