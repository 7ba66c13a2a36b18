#!/usr/bin/env bash
# Installs the language servers the real-server tests use (issue 41) into a cache folder
# outside the repository: npm `pyright` and, when quick, `typescript-language-server` with
# `typescript`. Prints the folder whose `bin/` holds them (NEOCODE_LSP_DIR, default
# ~/.cache/neocode-ci/language-servers). Skips loudly, exit 0 and nothing printed on stdout,
# only when npm cannot reach its configured registry; any other failure fails.
set -euo pipefail
dir=${NEOCODE_LSP_DIR:-$HOME/.cache/neocode-ci/language-servers}
say() { echo "language-servers: $*" >&2; }
have() { [ -x "$dir/node_modules/.bin/pyright-langserver" ]; }
command -v npm >/dev/null || { say "SKIPPED: npm is not installed"; exit 0; }
if ! have; then
	# Reachability is asked of npm itself (its configured registry), never of a host named here.
	if ! timeout 60 npm view pyright version >/dev/null 2>&1; then
		say "SKIPPED: npm cannot reach its registry, so no language server was installed"
		exit 0
	fi
	mkdir -p "$dir"
	say "installing pyright, typescript-language-server and typescript into $dir"
	(cd "$dir" && npm install --silent --no-audit --no-fund --prefix "$dir" \
		pyright@1 typescript-language-server@4 typescript@5 >&2) ||
		{ say "FAIL: npm could not install the servers although its registry answers"; exit 1; }
	have || { say "FAIL: installed, but no pyright-langserver in $dir/node_modules/.bin"; exit 1; }
fi
echo "$dir/node_modules/.bin"
