#!/usr/bin/env bash
# Installs the MCP server the remote-MCP tests use (issue 39) into a cache folder outside the
# repository: npm `@modelcontextprotocol/server-everything`, the reference server, run by the
# tests in its streamable HTTP mode on 127.0.0.1. Prints the path of its `dist/index.js`
# (NEOCODE_MCP_DIR, default ~/.cache/neocode-ci/mcp-servers). Skips loudly, exit 0 and nothing
# printed on stdout, only when npm is missing or cannot reach its configured registry; any
# other failure fails.
set -euo pipefail
dir=${NEOCODE_MCP_DIR:-$HOME/.cache/neocode-ci/mcp-servers}
pkg=@modelcontextprotocol/server-everything
entry="$dir/node_modules/$pkg/dist/index.js"
say() { echo "mcp-servers: $*" >&2; }
command -v npm >/dev/null || { say "SKIPPED: npm is not installed"; exit 0; }
command -v node >/dev/null || { say "SKIPPED: node is not installed"; exit 0; }
if [ ! -f "$entry" ]; then
	# Reachability is asked of npm itself (its configured registry), never of a host named here.
	if ! timeout 60 npm view "$pkg" version >/dev/null 2>&1; then
		say "SKIPPED: npm cannot reach its registry, so no MCP server was installed"
		exit 0
	fi
	mkdir -p "$dir"
	say "installing $pkg into $dir"
	(cd "$dir" && npm install --silent --no-audit --no-fund --prefix "$dir" "$pkg@2026" >&2) ||
		{ say "FAIL: npm could not install $pkg although its registry answers"; exit 1; }
	[ -f "$entry" ] || { say "FAIL: installed, but no $entry"; exit 1; }
fi
echo "$entry"
