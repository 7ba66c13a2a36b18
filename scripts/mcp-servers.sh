#!/usr/bin/env bash
# Installs the MCP servers the remote-MCP tests use (issue 39) into a cache folder outside the
# repository (NEOCODE_MCP_DIR, default ~/.cache/neocode-ci/mcp-servers) and prints the path of
# the one asked for:
#   (no argument)     npm `@modelcontextprotocol/server-everything`, the reference server, run
#                     by the tests in its streamable HTTP mode: its `dist/index.js`;
#   --oauth-example   the official MCP TypeScript SDK (`@modelcontextprotocol/sdk`), whose
#                     example server with `--oauth` runs a demo authorization server that
#                     approves at once: its `dist/esm/examples/server/simpleStreamableHttp.js`.
# Without an argument both are installed (CI runs it so). Skips loudly, exit 0 and nothing
# printed on stdout, only when npm is missing or cannot reach its configured registry; any
# other failure fails.
set -euo pipefail
dir=${NEOCODE_MCP_DIR:-$HOME/.cache/neocode-ci/mcp-servers}
say() { echo "mcp-servers: $*" >&2; }
command -v npm >/dev/null || { say "SKIPPED: npm is not installed"; exit 0; }
command -v node >/dev/null || { say "SKIPPED: node is not installed"; exit 0; }

# install PACKAGE VERSION ENTRY: installs PACKAGE@VERSION unless ENTRY exists; 1 when skipped.
install() {
	local pkg=$1 version=$2 entry=$3
	[ -f "$entry" ] && return 0
	# Reachability is asked of npm itself (its configured registry), never of a host named here.
	if ! timeout 60 npm view "$pkg" version >/dev/null 2>&1; then
		say "SKIPPED: npm cannot reach its registry, so $pkg was not installed"
		return 1
	fi
	mkdir -p "$dir"
	say "installing $pkg into $dir"
	(cd "$dir" && npm install --silent --no-audit --no-fund --prefix "$dir" "$pkg@$version" >&2) ||
		{ say "FAIL: npm could not install $pkg although its registry answers"; exit 1; }
	[ -f "$entry" ] || { say "FAIL: installed, but no $entry"; exit 1; }
}

everything="$dir/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
sdk="$dir/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js"
case "${1:-}" in
--oauth-example)
	install @modelcontextprotocol/sdk 1 "$sdk" || exit 0
	echo "$sdk"
	;;
"")
	install @modelcontextprotocol/server-everything 2026 "$everything" || exit 0
	install @modelcontextprotocol/sdk 1 "$sdk" || true
	echo "$everything"
	;;
*)
	say "usage: $0 [--oauth-example]"
	exit 2
	;;
esac
