#!/bin/sh
# What workspace trust costs at the start of `neocode run` (issue 34): a whole one-delta turn
# against the scripted server (examples/wire_server.rs, Chat Completions), release build, in
# three workspaces — no .neocode/ at all, a typical .neocode/ (rules, two skills, a hooks.json
# whose only hook is on PreCompact, so no hook process runs) not trusted, and the same trusted —
# each timed with `perf stat -r RUNS`; then the file-system calls the check makes in the first
# one (strace: what touches .neocode, .claude, .mcp.json or trust.json).
#   cargo build --release --features testkit --bin neocode --example wire_server
#   scripts/trust-start-bench.sh [RUNS]
set -eu
RUNS=${1:-30}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$ROOT/target/release/neocode"
SRV="$ROOT/target/release/examples/wire_server"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home" "$work/plain" "$work/typical"
printf '[sandbox]\nmode = "off"\n' >"$work/home/config.toml"
t="$work/typical/.neocode"
mkdir -p "$t/skills/deploy" "$t/skills/review"
printf '{"hooks": {"PreCompact": [{"hooks": [{"type": "command", "command": "true"}]}]}}\n' >"$t/hooks.json"
printf 'allow = ["run_command(cargo test *)", "edit_file(src/**)"]\nask = ["run_command(git push *)"]\ndeny = ["read_file(.env)"]\n' >"$t/permissions.toml"
for s in deploy review; do
  printf -- '---\nname: %s\ndescription: How to %s.\n---\nA line of instructions.\n' "$s" "$s" >"$t/skills/$s/SKILL.md"
  printf '#!/bin/sh\necho ok\n' >"$t/skills/$s/run.sh"
done
fifo="$work/in"; mkfifo "$fifo"
"$SRV" chat $((RUNS * 4 + 20)) <"$fifo" >"$work/url" &
exec 9>"$fifo"
while [ ! -s "$work/url" ]; do sleep 0.05; done
url=$(head -n1 "$work/url")
timed() {
  dir=$1; shift
  (cd "$dir" && NEOCODE_HOME="$work/home" NEOCODE_BASE_URL="$url" NEOCODE_MODEL=scripted \
    NEOCODE_API_KEY=sk-bench perf stat -r "$RUNS" "$BIN" run "say ok" 2>&1 >/dev/null \
    | grep -E 'task-clock|elapsed')
}
echo "== no .neocode/"; timed "$work/plain"
echo "== typical .neocode/, not trusted"; timed "$work/typical"
(cd "$work/typical" && NEOCODE_HOME="$work/home" "$BIN" trust --yes >/dev/null)
echo "== typical .neocode/, trusted"; timed "$work/typical"
echo "== file-system calls of the check, no .neocode/"
(cd "$work/plain" && NEOCODE_HOME="$work/home" NEOCODE_BASE_URL="$url" NEOCODE_MODEL=scripted \
  NEOCODE_API_KEY=sk-bench strace -f -e trace=%file "$BIN" run "say ok" 2>&1 >/dev/null \
  | grep -E '\.neocode|\.claude|\.mcp\.json|trust\.json' | grep -v "$work/home" || true)
exec 9>&-
wait
