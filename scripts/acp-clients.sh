#!/usr/bin/env bash
# Installs the ACP clients the acp tests drive (npm `acpx` and the official TypeScript SDK,
# exact versions) into ~/.cache/neocode-ci/acp-clients and prints that folder.
# When npm is missing or cannot reach its registry it says so on stderr, prints nothing on
# stdout and exits 0: the tests that need the clients then skip loudly.
# `--installed` never installs: it prints the folder only when these versions are already
# there (the tests call it so, and never reach beyond 127.0.0.1; CI installs first).
set -euo pipefail

ACPX_VERSION=0.19.1
SDK_VERSION=2.4.0
DIR="${NEOCODE_ACP_CLIENTS:-$HOME/.cache/neocode-ci/acp-clients}"

skip() {
    echo "acp-clients: $1; the ACP client tests will skip" >&2
    exit 0
}

command -v npm >/dev/null 2>&1 || skip "npm is not installed"
command -v node >/dev/null 2>&1 || skip "node is not installed"

stamp="$DIR/.installed-acpx-$ACPX_VERSION-sdk-$SDK_VERSION"
if [ "${1:-}" = "--installed" ] && [ ! -f "$stamp" ]; then
    skip "acpx $ACPX_VERSION and the SDK $SDK_VERSION are not installed (run scripts/acp-clients.sh)"
fi
if [ ! -f "$stamp" ]; then
    timeout 60 npm view "acpx@$ACPX_VERSION" version >/dev/null 2>&1 \
        || skip "npm cannot reach its registry (npm view acpx@$ACPX_VERSION failed)"
    mkdir -p "$DIR"
    [ -f "$DIR/package.json" ] || echo '{"name":"neocode-acp-clients","private":true}' >"$DIR/package.json"
    timeout 600 npm install --prefix "$DIR" --no-audit --no-fund --save-exact \
        "acpx@$ACPX_VERSION" "@agentclientprotocol/sdk@$SDK_VERSION" >&2 \
        || skip "npm install failed"
    touch "$stamp"
fi
echo "$DIR"
