#!/usr/bin/env python3
"""One prompt round trip through `neocode acp` against `neocode run`, paired and interleaved.

    python3 scripts/acp-round-trip.py [--runs N] [--bin target/release/neocode]
        [--server target/release/examples/perf_pair]

Starts `perf_pair serve chat` (a scripted one-delta model on 127.0.0.1), then times whole
processes from spawn to exit, alternating which goes first: `neocode run "hi"`, and
`neocode acp` answering initialize, session/new and one session/prompt before stdin closes.
Each side has its own home and workspace. Prints min / median / max per side and the
acp / run ratio pair by pair (median).
"""
import argparse, json, os, statistics, subprocess, tempfile, time


def acp_turn(bin_, env, cwd):
    p = subprocess.Popen([bin_, "acp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         env=env, cwd=cwd, text=True)
    def call(i, method, params):
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                  "params": params}) + "\n")
        p.stdin.flush()
        while True:
            m = json.loads(p.stdout.readline())
            if m.get("id") == i and "method" not in m:
                if "error" in m:
                    raise SystemExit(f"acp error: {m}")
                return m["result"]
    call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    sid = call(2, "session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
    call(3, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]})
    p.stdin.close()
    if p.wait() != 0:
        raise SystemExit("neocode acp failed")


def run_turn(bin_, env, cwd):
    subprocess.run([bin_, "run", "hi"], env=env, cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--bin", default="target/release/neocode")
    ap.add_argument("--server", default="target/release/examples/perf_pair")
    a = ap.parse_args()
    a.bin, a.server = os.path.abspath(a.bin), os.path.abspath(a.server)
    srv = subprocess.Popen([a.server, "serve", "chat"], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    url = srv.stdout.readline().strip()
    work = tempfile.mkdtemp()
    sides = {}
    for name in ("run", "acp"):
        home, ws = os.path.join(work, name, "home"), os.path.join(work, name, "ws")
        os.makedirs(home); os.makedirs(ws)
        env = dict(os.environ, NEOCODE_HOME=home, NEOCODE_BASE_URL=url,
                   NEOCODE_MODEL="scripted", NEOCODE_API_KEY="sk-perf", NO_COLOR="1")
        sides[name] = (env, ws)
    fns = {"run": run_turn, "acp": acp_turn}
    times = {"run": [], "acp": []}
    for name in ("run", "acp"):  # one unrecorded run each
        fns[name](a.bin, *sides[name])
    for i in range(a.runs):
        order = ("run", "acp") if i % 2 == 0 else ("acp", "run")
        for name in order:
            t = time.perf_counter()
            fns[name](a.bin, *sides[name])
            times[name].append((time.perf_counter() - t) * 1000)
    srv.stdin.close(); srv.wait()
    for name in ("run", "acp"):
        t = sorted(times[name])
        print(f"{name}: min {t[0]:.1f} ms, median {statistics.median(t):.1f} ms, max {t[-1]:.1f} ms")
    ratios = [x / y for x, y in zip(times["acp"], times["run"])]
    print(f"acp / run, pair by pair: median {statistics.median(ratios):.2f} "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f}), {a.runs} pairs")


if __name__ == "__main__":
    main()
