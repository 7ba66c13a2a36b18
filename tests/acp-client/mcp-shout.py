#!/usr/bin/env python3
"""A tiny MCP server over stdio (newline-delimited JSON-RPC) for the `neocode acp` tests: an
editor passes it in `mcpServers`; its one tool, `shout`, answers the text in capitals after
the SHOUT_PREFIX its environment was given (so the test sees the env arrive)."""

import json
import os
import sys


def reply(msg_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


TOOL = {
    "name": "shout",
    "description": "Repeat the text in capitals.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
    "annotations": {"readOnlyHint": True},
}

for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    msg = json.loads(line)
    method, msg_id = msg.get("method"), msg.get("id")
    if msg_id is None:
        continue  # notifications (initialized, cancelled)
    params = msg.get("params") or {}
    if method == "initialize":
        reply(msg_id, {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "shout", "version": "1.0.0"},
        })
    elif method == "tools/list":
        reply(msg_id, {"tools": [TOOL]})
    elif method == "tools/call":
        text = (params.get("arguments") or {}).get("text", "")
        out = os.environ.get("SHOUT_PREFIX", "") + text.upper()
        reply(msg_id, {"content": [{"type": "text", "text": out}], "isError": False})
    elif method == "ping":
        reply(msg_id, {})
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id,
                                     "error": {"code": -32601, "message": "unknown method"}}) + "\n")
        sys.stdout.flush()
