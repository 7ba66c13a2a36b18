#!/usr/bin/env bash
# Installs the language servers the real-server tests use (issue 41) into a cache folder
# outside the repository: npm `pyright` and, when quick, `typescript-language-server` with
# `typescript`. Prints the folder whose `bin/` holds them (NEOCODE_LSP_DIR, default
# ~/.cache/neocode-ci/language-servers). Skips loudly, exit 0 and nothing printed on stdout,
# only when npm cannot reach its configured registry; any other failure fails.
# Before that it makes `clangd` available on PATH from Debian's packages (apt-get, as root);
# clangd never changes stdout and never fails the script: when it cannot be installed it is
# skipped loudly on stderr (the clangd tests look it up on PATH and skip without it).
set -euo pipefail
dir=${NEOCODE_LSP_DIR:-$HOME/.cache/neocode-ci/language-servers}
say() { echo "language-servers: $*" >&2; }
clangd_available() {
	command -v clangd >/dev/null && return 0
	command -v apt-get >/dev/null || { say "SKIPPED clangd: not installed and no apt-get"; return 0; }
	[ "$(id -u)" = 0 ] || { say "SKIPPED clangd: not installed and not root, so apt-get cannot install it"; return 0; }
	say "installing clangd with apt-get"
	# Reachability is asked of apt itself: an update that cannot fetch its lists skips.
	if ! timeout 300 apt-get update -qq >&2 2>&1; then
		say "SKIPPED clangd: apt-get cannot reach its archive"
		return 0
	fi
	if ! DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends clangd >&2 2>&1; then
		say "SKIPPED clangd: apt-get could not install it"
		return 0
	fi
	command -v clangd >/dev/null || say "SKIPPED clangd: installed, but no clangd on PATH"
	return 0
}
clangd_available || true
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
