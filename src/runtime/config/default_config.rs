//! The commented default `config.toml`.

/// The default config file, written on first use. Everything is commented or a default, so
/// the file documents itself.
pub(crate) const DEFAULT_CONFIG: &str = r#"# neocode settings. The environment overrides this file, flags override both:
#   NEOCODE_BASE_URL   OpenAI-compatible base URL ending in /v1
#   NEOCODE_MODEL      model name
#   NEOCODE_API        chat | responses | anthropic (the wire API; see api below)
#   NEOCODE_API_KEY    API key (else api_key_env, api_key_command, then OPENAI_API_KEY, or
#                      ANTHROPIC_API_KEY for api = "anthropic"). Keys are never written here.
#
# OpenAI:            base_url = "https://api.openai.com/v1"   model = "gpt-4o-mini"
# Ollama (local):    base_url = "http://localhost:11434/v1"   model = "qwen2.5-coder:7b"
# llama.cpp server:  base_url = "http://localhost:8080/v1"    model = "local"

[provider]
# chat: Chat Completions (OpenAI-compatible servers); responses: OpenAI Responses (reasoning
# models, reasoning kept across turns); anthropic: Anthropic Messages (thinking, caching).
# api = "chat"
# base_url = "https://api.openai.com/v1"
# model = "gpt-4o-mini"
# api_key_env = "MY_KEY_VARIABLE"      # read the key from this variable
# api_key_command = "pass show openai"  # or from this command's output (run once per process)
# reasoning_effort = "medium"          # responses (reasoning.effort), chat (reasoning_effort)
# thinking_budget = 4000               # anthropic: extended thinking budget in tokens (0: off)
# system_as_text = true                # anthropic: system prompt as plain text, no cache blocks
# tool_choice = "required"             # the first model call of each prompt must call a tool
# max_output_tokens = 16000            # anthropic: max_tokens of a reply
# The model's context window in tokens; past compact_at of it the transcript is compacted.
# Unset: a server that says its window (llama.cpp's /props, vLLM's /v1/models, an overflow
# error) is believed, 128000 is assumed otherwise, and the TUI's gauge says "window unknown".
# context_window = 128000
compact_at = 0.8
# Longest reply in tokens (sent as max_tokens); unset: the server's default. A reply cut
# there is kept marked incomplete and the turn pauses (reason `reply_cut`).
# max_tokens = 4096
connect_timeout_secs = 10
# Longest silence while waiting for the reply (local models can be slow to start).
idle_timeout_secs = 300
# 429 and 5xx answers are retried this often, with backoff (Retry-After honoured).
max_retries = 3
retry_backoff_ms = 500

# Named profiles with the keys of [provider], chosen by --provider NAME or NEOCODE_PROVIDER
# (keys a profile leaves out come from [provider]):
# [providers.claude]
# api = "anthropic"
# model = "claude-sonnet-4-5"
# thinking_budget = 4000

[limits]
# What one prompt (a `neocode run`, a message in the TUI, a resume) may spend before the
# session pauses (exit 3); 0 = no cap. A --max-tool-calls / --max-turns flag replaces the
# cap of its kind for that run.
max_tool_calls_per_prompt = 200
max_turns_per_prompt = 100
# Budgets per session (restored on resume; only an explicit flag raises them).
# max_turns = 50
# max_tool_calls = 200
# max_input_tokens = 2000000
# max_output_tokens = 200000
# max_wall_secs = 3600
# max_cost_usd = 5.0   (counts model calls that have a price, see [prices])

# Prices in dollars per million tokens, over the built-in ones (OpenAI and Anthropic list
# prices checked 2026-12, by model family). A model without a price shows tokens only.
# [prices."my-model"]
# input = 1.0
# cached_input = 0.1
# cache_write = 1.25
# output = 5.0

[approval]
# ask: edits and commands ask; auto-edit: edits run, commands ask; never-ask: nothing asks.
policy = "ask"

[sandbox]
# workspace-write | read-only | off
mode = "workspace-write"
network = false
# Environment variables passed to commands although their names look secret.
env_allow = []
# Behave as if the kernel had no Landlock (every command then asks).
simulate_unavailable = false
# Behave as if user namespaces were refused: the weaker fallback box (every command asks).
simulate_no_userns = false

[tools]
command_timeout_secs = 120
output_cap_bytes = 30000

# The web_fetch tool (docs/SECURITY.md): it asks under `ask` and `auto-edit`, reaches only
# public addresses unless a host is named here, and reads at most max_bytes in timeout_secs.
# Rules narrow it: [permissions] allow = ["web_fetch(domain:docs.rs)"].
# [web_fetch]
# allow_hosts = ["intranet.example"]
# max_bytes = 5242880
# timeout_secs = 30

# Sub-agents the model starts with its `task` tool (docs/subagents.md): how many of one
# reply's calls run at once; whether a `worktree: true` one's git worktree stays after it
# completed (a failed or cancelled one's always stays).
[agents]
max_parallel = 3
keep_worktrees = false

# MCP servers (stdio or streamable HTTP), in the shape Codex uses. Tools appear as
# mcp__NAME__TOOL; a stdio server gets only `env` plus PATH, HOME and a few locale variables.
# [mcp_servers.everything]
# command = "npx"
# args = ["-y", "@modelcontextprotocol/server-everything"]
# env = { EXAMPLE_TOKEN = "..." }
# enabled_tools = ["echo", "add"]
# startup_timeout_sec = 20
# tool_timeout_sec = 60
# A remote server over streamable HTTP: `url` instead of `command`; the token is read from
# the environment (or `bearer_token_command`) when it connects, never stored.
# [mcp_servers.tracker]
# url = "https://mcp.example.com/mcp"
# bearer_token_env = "TRACKER_TOKEN"
# headers = { X-Team = "core" }

# Language servers: diagnostics after every edit, navigation tools (`neocode lsp list`).
# [lsp]
# enabled = true
# diagnostics_wait_ms = 3000
# start_timeout_ms = 15000
# [lsp.servers.pyright]
# command = "pyright-langserver"
# args = ["--stdio"]
"#;
