//! `neocode doctor`'s provider probe: four small calls to the configured provider, whichever
//! API it speaks (Chat Completions, Responses, Anthropic Messages) — a text reply, a tool turn
//! (with reasoning when the API and model give it), the turn's follow-up, which repeats
//! the tool turn's prompt and so should hit the provider's cache, and a reply under the API's
//! structured-output option — and, per feature, what the
//! endpoint really does (supported / not seen / not applicable) and what neocode does about
//! what is missing.

use crate::runtime::CancelFlag;
use crate::runtime::config::{Api, ConfigError, Settings};
use crate::runtime::provider::{
    Anthropic, ChatMessage, ChatRequest, Completion, ErrorKind, OpenAi, Provider, ProviderError,
    Reasoning, Responses, StreamEvent, ToolDef,
};
use crate::sanitize;

/// Prompt tokens the tool turn's system text aims at: above the smallest prompt a provider
/// caches (1,024 tokens at OpenAI and for most Claude models, 4,096 for a few).
const CACHEABLE_TOKENS: u64 = 4_200;

/// The cache key the tool turn and its follow-up share (Responses' `prompt_cache_key`).
const CACHE_KEY: &str = "neocode-doctor-probe";

/// Times the tool turn is sent again, smaller, when the server says it overflows its window.
const OVERFLOW_RETRIES: usize = 2;

/// Writes the probe's report to `out`; false when a call failed.
pub(super) fn probe_provider(s: &Settings, out: &mut String) -> bool {
    out.push('\n');
    let mut report = Report { out };
    report.raw(format!(
        "Provider probe (four small calls, api = {}; --no-probe skips them)",
        s.api.as_str()
    ));
    let mut provider = match build(s) {
        Ok(p) => p,
        Err(e) => {
            report.row("FAILED", e.to_string());
            return false;
        }
    };
    let chat = s.api == Api::Chat;
    let text = match call(provider.as_mut(), &text_request()) {
        Ok(p) => p,
        Err(e) => {
            report.row("FAILED", format!("a plain streamed call: {e}"));
            return false;
        }
    };
    if chat {
        report.row("streamed text", text.streamed_words());
    }
    report.row(
        "streaming usage",
        if text.completion.usage_estimated {
            "not seen: neocode counts the tokens itself (an estimate, marked estimated); budgets and auto-compaction use the estimate".into()
        } else {
            "supported".into()
        },
    );
    let (tool_req, tool) = match tool_turn(provider.as_mut(), s) {
        Ok(sent) => sent,
        Err(e) => match plain_system(s, &e) {
            Some((p, sent)) => {
                report.row("system prompt", format!(
                    "refused as text blocks ({e}); accepted as plain text: set system_as_text = true in [provider] (or the profile) of {} (the system prompt then carries no cache breakpoint)",
                    s.path.display()
                ));
                provider = p;
                sent
            }
            None => {
                report.row(
                    "FAILED",
                    format!("a streamed call with a tool: {}", words(&e, s)),
                );
                return false;
            }
        },
    };
    if chat {
        report.row(
            "streamed tool calls",
            match &tool.unstreamed {
                Some(_) => "not seen: requests with tools are sent without streaming (replies arrive whole, text is not shown as it comes)".into(),
                None => "supported".into(),
            },
        );
    }
    tool_rows(&mut report, &tool.completion);
    let follow = follow_up(&tool_req, &tool.completion);
    let third = call(provider.as_mut(), &follow);
    let reasoned = !reasoning_of(&tool.completion).is_empty();
    let thinking_off = s.api == Api::Anthropic && s.thinking_budget == 0;
    let reasoning = match (&third, reasoned) {
        _ if thinking_off => "not applicable: thinking is off (thinking_budget = 0 in config.toml); set a budget to have Claude think, and neocode replays its signed thinking".into(),
        (Ok(_), true) => "supported: the tool turn's reasoning was sent back with its result and the server accepted it; neocode stores it and replays it in the turn and after a resume".into(),
        (Err(_), true) => "FAILED: the server refused the reasoning sent back (below); resumed tool turns will fail the same way".into(),
        (_, false) => format!(
            "not seen: no reasoning came with the tool turn; nothing to replay{}",
            match s.api {
                Api::Chat => " (a reasoning model behind this server streams reasoning_content)",
                Api::Responses => " (set reasoning_effort in config.toml for a reasoning model)",
                Api::Anthropic => "",
            }
        ),
    };
    report.row("reasoning round trip", reasoning);
    let third = match third {
        Ok(p) => p,
        Err(e) => {
            report.row(
                "FAILED",
                format!("the tool turn's follow-up: {}", words(&e, s)),
            );
            return false;
        }
    };
    report.row("prompt caching", caching_words(&third.completion));
    report.row(
        "structured output",
        structured_words(call(provider.as_mut(), &schema_request())),
    );
    // What the server told, also by an overflow of the probe's own.
    let told = provider.context_window();
    report.row("context window", window_words(told, s));
    true
}

/// The smaller of the server's window and the configured one (`context_window`).
fn window_of(provider: &mut dyn Provider, s: &Settings) -> Option<u64> {
    let configured = s.context_window_known.then_some(s.context_window);
    match (provider.context_window(), configured) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The tool turn, its prompt sized to the window (a quarter of it at most); when the server
/// says the prompt overflows, sent again sized to the window the overflow told (else half
/// as long), up to [`OVERFLOW_RETRIES`] times. The request that was answered, and its answer.
fn tool_turn(
    provider: &mut dyn Provider,
    s: &Settings,
) -> Result<(ChatRequest, Probed), ProviderError> {
    let mut tokens = probe_tokens(window_of(provider, s));
    let mut tries = 0;
    loop {
        let mut req = tool_request(tokens);
        // As a turn's first call does with `tool_choice = "required"`.
        req.require_tool = s.first_call_requires_tool;
        match call(provider, &req) {
            Ok(p) => return Ok((req, p)),
            Err(e) if e.kind == ErrorKind::ContextOverflow && tries < OVERFLOW_RETRIES => {
                tries += 1;
                let fits = probe_tokens(window_of(provider, s));
                tokens = if fits < tokens { fits } else { tokens / 2 };
            }
            Err(e) => return Err(e),
        }
    }
}

/// A failed probe call in words. An overflow is said in the probe's terms: there is no
/// session to compact, only a window to set.
fn words(e: &ProviderError, s: &Settings) -> String {
    if e.kind != ErrorKind::ContextOverflow {
        return e.to_string();
    }
    let set = if s.context_window_known {
        format!(
            "context_window = {} in {} is larger than the server's window; set it to the server's",
            s.context_window,
            s.path.display()
        )
    } else {
        format!(
            "set context_window in {} to the server's window, and doctor sizes its probe to it",
            s.path.display()
        )
    };
    format!("the probe's prompt does not fit the server's context window even cut short; {set}")
}

/// The report's lines: a label column, then what was found.
struct Report<'a> {
    out: &'a mut String,
}

impl Report<'_> {
    fn raw(&mut self, s: String) {
        self.out.push_str(&sanitize::line(&s));
        self.out.push('\n');
    }

    fn row(&mut self, label: &str, what: String) {
        self.raw(format!("  {label:<22}{what}"));
    }
}

/// The rows the tool turn answers: did the model call the tool, and twice in one reply.
fn tool_rows(report: &mut Report<'_>, c: &Completion) {
    let calls = c.tool_calls.len();
    report.row(
        "tool calls",
        if calls > 0 {
            "supported".into()
        } else {
            "not seen: the model answered without calling the offered tool; neocode's tools need a model that calls them (pick another model, or use it for chat only)".into()
        },
    );
    report.row(
        "parallel tool calls",
        match calls {
            0 => "not applicable: no tool call came back".into(),
            1 => "not seen: one call per reply; neocode runs each reply's calls and asks again, so a task takes more round trips (nothing breaks)".into(),
            n => format!("supported ({n} calls in one reply; neocode runs them in order and sends every result back)"),
        },
    );
}

/// Prompt caching in words, from the follow-up's usage.
fn caching_words(c: &Completion) -> String {
    let read = c.detail.cached_input_tokens;
    if read > 0 {
        return format!(
            "supported ({read} prompt tokens of the repeat read from the cache; cost and the Usage tab count them at the cached price)"
        );
    }
    if c.usage_estimated {
        return "not seen: the server reports no usage, so no cache reads either; neocode counts every prompt token in full".into();
    }
    "not seen: the repeat of the tool turn's prompt read nothing from a cache; every request pays the full prompt price (neocode's cost figures count it so)".into()
}

/// Why the configured provider could not be built.
#[derive(Debug, thiserror::Error)]
enum BuildError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

/// The configured provider, as a turn builds it.
fn build(s: &Settings) -> Result<Box<dyn Provider>, BuildError> {
    Ok(match s.api {
        Api::Chat => Box::new(OpenAi::new(s.openai()?)?),
        Api::Responses => Box::new(Responses::new(s.wire()?)?),
        Api::Anthropic => Box::new(Anthropic::new(s.wire()?)?),
    })
}

/// What one probe call showed.
struct Probed {
    /// The server could not stream it: why, as the provider said (it was asked again whole).
    unstreamed: Option<String>,
    completion: Completion,
}

impl Probed {
    fn streamed_words(&self) -> String {
        match &self.unstreamed {
            None => "supported".into(),
            Some(why) => format!("not seen: {why}"),
        }
    }
}

/// Sends `req`, noting whether the provider had to ask for it unstreamed.
fn call(provider: &mut dyn Provider, req: &ChatRequest) -> Result<Probed, ProviderError> {
    let mut unstreamed = None;
    let cancel = CancelFlag::default();
    let completion = provider.stream(req, &cancel, &mut |e| {
        if let StreamEvent::NotStreamed(why) = e {
            unstreamed = Some(why);
        }
    })?;
    Ok(Probed {
        unstreamed,
        completion,
    })
}

/// The tool turn again with the system prompt as plain text, when the server refused it as
/// Anthropic's text blocks with a shape error (a gateway passing blocks on as content lists
/// that its upstream refuses): the provider that worked and the turn, or `None`.
fn plain_system(
    s: &Settings,
    e: &ProviderError,
) -> Option<(Box<dyn Provider>, (ChatRequest, Probed))> {
    let shape = matches!(e.kind, ErrorKind::BadRequest | ErrorKind::Server);
    if s.api != Api::Anthropic || s.system_as_text || !shape {
        return None;
    }
    let mut plain = s.clone();
    plain.system_as_text = true;
    let mut p = build(&plain).ok()?;
    let sent = tool_turn(p.as_mut(), &plain).ok()?;
    Some((p, sent))
}

/// A small reply under the structured-output option (`run --output-schema`).
fn schema_request() -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::user_text(
            "Reply with a JSON object whose field ok is true.",
        )],
        output_schema: Some(serde_json::json!({"type": "object",
            "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})),
        ..ChatRequest::default()
    }
}

/// The structured-output call in words.
fn structured_words(r: Result<Probed, ProviderError>) -> String {
    match r {
        Ok(_) => {
            "supported: --output-schema sends the schema as the API's structured-output option"
                .into()
        }
        Err(e) if matches!(e.kind, ErrorKind::BadRequest | ErrorKind::Server) => format!(
            "refused ({e}): --output-schema still works (the schema is in the prompt and neocode validates the answer); the option is dropped after the first refusal, said once"
        ),
        Err(e) => format!("not checked: {e}"),
    }
}

fn text_request() -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::user_text("Reply with the word ok.")],
        ..ChatRequest::default()
    }
}

/// Prompt tokens of the tool turn's system text for `window`: long enough to be cached,
/// and a quarter of the window at most.
fn probe_tokens(window: Option<u64>) -> u64 {
    window.map_or(CACHEABLE_TOKENS, |w| (w / 4).min(CACHEABLE_TOKENS))
}

/// The tool turn: one tool, asked for twice in one reply, under a system text of about
/// `tokens` tokens.
fn tool_request(tokens: u64) -> ChatRequest {
    let line = "This is neocode doctor's provider probe; the text only makes the prompt long enough for a prompt cache.\n";
    // About 4 characters a token.
    let times = usize::try_from(tokens * 4 / line.len() as u64)
        .unwrap_or(1)
        .max(1);
    ChatRequest {
        system: line.repeat(times),
        messages: vec![ChatMessage::user_text(
            "Call the echo tool twice in one reply, in parallel: once with the text ok and once with the text yes.",
        )],
        tools: vec![ToolDef::new(
            "echo",
            "Echo a text.",
            serde_json::json!({"type": "object",
                "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        )],
        cache_key: CACHE_KEY.into(),
        output_schema: None,
        require_tool: false,
    }
}

/// The reasoning `c` carries, as a turn stores it.
fn reasoning_of(c: &Completion) -> Vec<Reasoning> {
    if !c.reasoning_items.is_empty() {
        c.reasoning_items.clone()
    } else if c.reasoning.is_empty() {
        Vec::new()
    } else {
        vec![Reasoning::text(c.reasoning.clone())]
    }
}

/// The tool turn's next request: its reply (reasoning included) and a result for each call;
/// without calls, the same request again. Either way its prompt starts with the tool turn's.
fn follow_up(req: &ChatRequest, c: &Completion) -> ChatRequest {
    let mut next = req.clone();
    if c.tool_calls.is_empty() {
        return next;
    }
    next.messages.push(ChatMessage::Assistant {
        text: c.text.clone(),
        reasoning: reasoning_of(c),
        tool_calls: c.tool_calls.clone(),
    });
    for t in &c.tool_calls {
        next.messages.push(ChatMessage::ToolResult {
            call_id: t.id.clone(),
            text: "ok".into(),
            is_error: false,
        });
    }
    next
}

/// The window in words: the server's, the configured one, or neither (and what to set). A
/// turn uses the smaller of the two when both are known.
fn window_words(told: Option<u64>, s: &Settings) -> String {
    let set = s.context_window;
    match told {
        Some(w) if s.context_window_known && set > w => format!(
            "{w} tokens (told by the server); context_window = {set} in config.toml is larger, so neocode uses {w}"
        ),
        Some(w) if s.context_window_known && set < w => format!(
            "{w} tokens (told by the server); neocode keeps context_window = {set} from config.toml"
        ),
        Some(w) => format!("{w} tokens (told by the server; the gauge and compaction use it)"),
        None if s.context_window_known => {
            format!("not told by the server; context_window = {set} from config.toml is used")
        }
        None => "not told by the server: set context_window in config.toml to the server's window (until then the gauge says \"window unknown\" and compaction cannot plan)".into(),
    }
}
