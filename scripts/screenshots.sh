#!/usr/bin/env bash
# Regenerates screenshots/*.png from the real binary running `neocode demo` in tmux (120x35):
# tmux capture-pane -e (with colours) -> aha (HTML) -> headless Chromium (PNG).
# Needs: tmux, aha, chromium (apt-get install -y tmux aha chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
out=screenshots
mkdir -p "$out"
for tool in tmux aha; do
  command -v "$tool" >/dev/null || { echo "screenshots.sh: $tool is not installed" >&2; exit 1; }
done
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$chrome" ] || { echo "screenshots.sh: chromium is not installed" >&2; exit 1; }

cargo build --release --quiet
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
bin=$target_dir/release/neocode
sess=neocode-shots-$$
tmp=$(mktemp -d)
cleanup() { tmux kill-session -t "$sess" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

keys() { tmux send-keys -t "$sess" "$@"; sleep 0.5; }

# Waits (up to 30 s) until the pane shows the text $1; fails the script with what it saw.
wait_for() {
  for _ in $(seq 300); do
    tmux capture-pane -t "$sess" -p 2>/dev/null | grep -qF -- "$1" && return 0
    sleep 0.1
  done
  echo "screenshots.sh: the screen never showed: $1" >&2
  tmux capture-pane -t "$sess" -p >&2 2>/dev/null || true
  exit 1
}

# Ctrl-C until the program has quit: its tmux session (and, when it was the last one, the tmux
# server) ends with it, so nothing after the quit may talk to that session.
quit() {
  for _ in $(seq 20); do
    tmux has-session -t "$sess" 2>/dev/null || return 0
    tmux send-keys -t "$sess" C-c 2>/dev/null || true
    sleep 0.5
  done
  tmux kill-session -t "$sess" 2>/dev/null || true
}

shot() {
  local name=$1
  tmux capture-pane -t "$sess" -e -p > "$tmp/$name.ansi"
  {
    echo '<!DOCTYPE html><html><head><meta charset="utf-8"><style>'
    echo 'body{margin:0;background:#1e1e2e;color:#d8dee9}'
    echo 'pre{margin:0;padding:12px;font-family:"DejaVu Sans Mono","Liberation Mono",monospace;font-size:14px;line-height:1.22}'
    echo '</style></head><body><pre>'
    aha --no-header --black < "$tmp/$name.ansi"
    echo '</pre></body></html>'
  } > "$tmp/$name.html"
  "$chrome" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run \
    --user-data-dir="$tmp/chrome" --hide-scrollbars \
    --screenshot="$PWD/$out/$name.png" --window-size=1040,640 \
    "file://$tmp/$name.html" >/dev/null 2>&1
  echo "wrote $out/$name.png"
}

tmux new-session -d -s "$sess" -x 120 -y 35 "TERM=xterm-256color $bin demo"
wait_for "13 sessions"
sleep 0.5

# The list in activity order, on the oldest session: the bug fix (its fork, marked ↳, is
# higher up: it was active later).
keys G
shot list

# Its transcript, focused, scrolled to the failing tool call and expanded.
keys Tab j j j j j j Space
shot transcript

# The plan DAG of the migration session.
keys Tab k
keys ']'
shot plan

# Usage with budget gauges.
keys ']'
shot usage

# Full-text search.
keys '[' '['
keys s
tmux send-keys -t "$sess" -l 'redis'
sleep 0.8
shot search
keys Escape

# The demo model at work (in process, scripted): a real turn on the demo workspace, its
# read_file done and its edit_file waiting for approval with the diff.
keys n
wait_for "demo model — scripted, no network"
tmux send-keys -t "$sess" -l 'fix the bug'
keys Enter
wait_for "Allow?"
sleep 0.3
shot demo-agent
# Approve the edit and the test run, then Esc Esc: the rewind dialog, its preview the diff
# that puts greet.sh back.
keys y
wait_for "sh test.sh  · waiting for approval"
# A card takes its answer only after a quiet moment (typing cannot answer it).
sleep 1.2
keys y
wait_for "try /plan"
# The turn over (its key bar back), then the two Escs within half a second.
wait_for "Esc back"
sleep 0.5
tmux send-keys -t "$sess" Escape
sleep 0.15
tmux send-keys -t "$sess" Escape
wait_for "Rewind to before"
sleep 0.3
shot rewind
keys Escape
quit

# The live conversation: a scripted model on 127.0.0.1 streams an answer, then asks to edit.
cargo build --release --quiet --example scripted_model
"$target_dir/release/examples/scripted_model" > "$tmp/url" &
model_pid=$!
trap 'kill $model_pid 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 50); do [ -s "$tmp/url" ] && break; sleep 0.1; done
ws=$tmp/ws; mkdir -p "$ws/src"
cat > "$ws/src/config.rs" <<'RS'
fn load(doc: &Doc) -> Result<Config, ConfigError> {
    let url = doc["database"]["url"].as_str().unwrap();
    Ok(Config { url })
}
RS
# The scripted server tells no window: the config names one, as a user of such a server would.
mkdir -m 700 -p "$tmp/home"
printf '[provider]\ncontext_window = 32000\n' > "$tmp/home/config.toml"
tmux kill-session -t "$sess" 2>/dev/null || true
tmux new-session -d -s "$sess" -x 120 -y 35 \
  "cd $ws && TERM=xterm-256color NEOCODE_HOME=$tmp/home NEOCODE_BASE_URL=$(cat "$tmp/url") NEOCODE_MODEL=scripted $bin"
wait_for "0 sessions"
keys n
wait_for "scripted"
tmux send-keys -t "$sess" -l 'Why does an empty config.toml panic?'
keys Enter
# Part way through the streamed answer (120 pieces, 25 ms apart).
wait_for "reads"
sleep 0.8
shot live-streaming
wait_for "Done in"
tmux send-keys -t "$sess" -l 'Fix it'
keys Enter
wait_for "Allow?"
sleep 0.3
shot live-approval
sleep 0.5
keys y
wait_for "which key is missing"
quit
