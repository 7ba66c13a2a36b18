//! Slash commands typed in the conversation's editor (routed here; the commands live by group in
//! `slash_agent` and `slash_session`), and Tab completion of them.

use super::App;
use super::state::Overlay;
use crate::format;
use crate::sanitize;
use crate::tui::action::Action;
use crate::tui::conversation::commands::{COMMANDS, PLAN_OPTIONS, at_word, matching};
use crate::tui::effect::Effect;
use crate::tui::worker::Request;

impl App {
    /// Tab in the editor: completes a slash command or an `@path`; true when it did
    /// something. The first `@` completion asks the worker for the workspace's files.
    pub(super) fn complete(&mut self) -> Option<Vec<Effect>> {
        if at_word(&self.conv.composer.text()).is_some() {
            if self.conv.files.is_none() {
                self.say("Listing the workspace's files…");
                return Some(vec![self.ask(None, Request::Files)]);
            }
            self.complete_path();
            return Some(Vec::new());
        }
        if self.complete_plan_option() {
            return Some(Vec::new());
        }
        self.complete_slash().then(Vec::new)
    }

    /// Completes a `/plan` option being typed at the end of the editor (`/plan --w` → `/plan
    /// --width `).
    fn complete_plan_option(&mut self) -> bool {
        let text = self.conv.composer.text();
        let t = text.trim_start();
        if !t.starts_with("/plan ") || text.ends_with(char::is_whitespace) {
            return false;
        }
        let last = t.rsplit(char::is_whitespace).next().unwrap_or("");
        if !last.starts_with('-') {
            return false;
        }
        let m: Vec<&str> = PLAN_OPTIONS
            .iter()
            .copied()
            .filter(|o| o.starts_with(last))
            .collect();
        match m.as_slice() {
            [one] => {
                let head = &text[..text.len() - last.len()];
                self.conv.composer.set_text(&format!("{head}{one} "));
            }
            [] => self.fail("/plan takes --width N and --retry-failed"),
            many => self.say(format!("/plan options: {}", many.join(" "))),
        }
        true
    }

    /// Completes the `@word` at the end of the editor from the workspace's files: a single
    /// match is taken whole, several extend to what they share and are listed.
    pub(super) fn complete_path(&mut self) {
        let text = self.conv.composer.text();
        let Some(word) = at_word(&text) else {
            return;
        };
        let Some(files) = &self.conv.files else {
            return;
        };
        let mut m: Vec<String> = files
            .iter()
            .filter(|f| f.starts_with(word))
            .cloned()
            .collect();
        if m.is_empty() {
            let w = word.to_lowercase();
            m = files
                .iter()
                .filter(|f| f.to_lowercase().contains(&w))
                .cloned()
                .collect();
        }
        let head = &text[..text.len() - word.len()];
        match m.as_slice() {
            [] => {
                self.conv.path_matches.clear();
                self.say(format!("No file matches @{}", sanitize::line(word)));
            }
            [one] => {
                self.conv.path_matches.clear();
                let new = format!("{head}{one} ");
                self.conv.composer.set_text(&new);
            }
            many => {
                let first = many[0].as_str();
                let mut n = first.len();
                for c in many.iter().skip(1) {
                    n = n.min(
                        first
                            .char_indices()
                            .zip(c.chars())
                            .take_while(|((_, a), b)| a == b)
                            .last()
                            .map_or(0, |((i, a), _)| i + a.len_utf8()),
                    );
                }
                if n > word.len() && first.starts_with(word) {
                    let new = format!("{head}{}", &first[..n]);
                    self.conv.composer.set_text(&new);
                }
                self.conv.path_matches = many.iter().take(8).cloned().collect();
            }
        }
    }

    fn complete_slash(&mut self) -> bool {
        let text = self.conv.composer.text();
        let m = matching(&text);
        match m.as_slice() {
            [] => false,
            [one] => {
                let arg = if one.1.is_empty() { "" } else { " " };
                self.conv.composer.set_text(&format!("{}{arg}", one.0));
                true
            }
            many => {
                // The longest prefix all matches share.
                let first = many[0].0;
                let mut n = first.len();
                for c in many.iter().skip(1) {
                    n = n.min(
                        first
                            .chars()
                            .zip(c.0.chars())
                            .take_while(|(a, b)| a == b)
                            .count(),
                    );
                }
                if n > text.trim_start().len() {
                    self.conv.composer.set_text(&first[..n]);
                }
                true
            }
        }
    }

    /// Runs a slash command.
    pub(super) fn slash(&mut self, line: &str) -> Vec<Effect> {
        let (cmd, arg) = match line.split_once(char::is_whitespace) {
            Some((c, a)) => (c, a.trim()),
            None => (line, ""),
        };
        let open = self.browse.detail.as_ref().map(|d| d.id.clone());
        match cmd {
            "/help" => {
                self.overlay = Overlay::Help(0);
                Vec::new()
            }
            "/new" => self.act(Action::New),
            "/fork" => self.act(Action::Fork),
            "/rename" => self.slash_rename(open, arg),
            "/compact" => self.slash_compact(open),
            "/model" => self.slash_model(open, arg),
            "/approve" if arg == "network" => self.slash_allow_network(open),
            "/skill" => self.slash_skill(open, arg),
            "/approve" => self.slash_approve(arg),
            "/attach" => {
                if arg.is_empty() {
                    self.fail("/attach needs a path: /attach screenshot.png");
                    return Vec::new();
                }
                self.attach(arg);
                Vec::new()
            }
            "/plan" => self.slash_plan(arg),
            "/limits" => {
                let text = self.limits_text();
                self.say(text);
                Vec::new()
            }
            _ => {
                let known: Vec<&str> = COMMANDS.iter().map(|c| c.0).collect();
                self.fail(format!(
                    "Unknown command {}; try {}",
                    sanitize::line(cmd),
                    known.join(" ")
                ));
                Vec::new()
            }
        }
    }

    /// Adds an image to the next message (relative paths are from the current directory).
    pub(super) fn attach(&mut self, path: &str) {
        let p = std::path::Path::new(path);
        let full = if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.paths.export_dir.join(p)
        };
        if crate::tui::worker::image_mime(&full).is_none() {
            self.fail(format!(
                "{} is not an image neocode can send (png, jpeg, gif, webp)",
                sanitize::line(path)
            ));
            return;
        }
        self.conv.attachments.push(full);
        let n = self.conv.attachments.len();
        self.say(format!(
            "Attached {} ({n} image{} with the next message).",
            sanitize::line(path),
            if n == 1 { "" } else { "s" }
        ));
    }

    /// The session's budgets in one line: used / limit of each.
    pub fn limits_text(&self) -> String {
        let Some(l) = self
            .browse
            .detail
            .as_ref()
            .and_then(|d| d.header.as_ref())
            .and_then(|h| h.ledger.as_ref())
        else {
            return "No budgets yet: they are set when the first turn runs (config.toml [limits], neocode run --max-*).".into();
        };
        let limits = [
            l.limits.max_turns,
            l.limits.max_tool_calls,
            l.limits.max_input_tokens,
            l.limits.max_output_tokens,
        ];
        if limits.iter().all(Option::is_none) {
            // Usage alone must not read as a budget.
            return format!(
                "No budgets set (config.toml [limits], neocode run --max-*); used: turns {} · tool calls {} · input tokens {} · output tokens {}",
                l.usage.turns, l.usage.tool_calls, l.usage.input_tokens, l.usage.output_tokens
            );
        }
        let one = |name: &str, used: u64, max: Option<u64>| match max {
            Some(m) => format!("{name} {used}/{m}"),
            None => format!("{name} used {used} (no limit)"),
        };
        format!(
            "Budgets: {} · {} · {} · {}",
            one("turns", l.usage.turns, l.limits.max_turns),
            one("tool calls", l.usage.tool_calls, l.limits.max_tool_calls),
            one(
                "input tokens",
                l.usage.input_tokens,
                l.limits.max_input_tokens
            ),
            one(
                "output tokens",
                l.usage.output_tokens,
                l.limits.max_output_tokens
            ),
        )
    }

    /// The tightest budget left, in words (the status line), when any is set.
    pub fn budget_left(&self) -> Option<String> {
        let l = self
            .browse
            .detail
            .as_ref()?
            .header
            .as_ref()?
            .ledger
            .as_ref()?;
        let mut best: Option<(f64, String)> = None;
        for (name, used, max) in [
            ("turns", l.usage.turns, l.limits.max_turns),
            ("tool calls", l.usage.tool_calls, l.limits.max_tool_calls),
            ("in tok", l.usage.input_tokens, l.limits.max_input_tokens),
            ("out tok", l.usage.output_tokens, l.limits.max_output_tokens),
        ] {
            let Some(max) = max else { continue };
            let left = max.saturating_sub(used);
            let share = left as f64 / max.max(1) as f64;
            if best.as_ref().is_none_or(|b| share < b.0) {
                best = Some((share, format!("{} {name} left", format::compact(left))));
            }
        }
        best.map(|b| b.1)
    }
}
