//! Slash commands typed in the conversation's editor (routed here; the commands live by group in
//! `slash_agent` and `slash_session`), and the budgets `/limits` and the status line show.

use super::Conversation;
use super::commands::COMMANDS;
use super::limits::limits_text;
use crate::runtime::extensions::commands;
use crate::sanitize;
use crate::tui::action::Action;
use crate::tui::dialog::Overlay;
use crate::tui::seam::{Ask, Ctx};

impl Conversation {
    /// Runs a slash command.
    pub(super) fn slash(&mut self, line: &str, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        let (cmd, arg) = match line.split_once(char::is_whitespace) {
            Some((c, a)) => (c, a.trim()),
            None => (line, ""),
        };
        let open = ctx.open_id();
        match cmd {
            "/help" => {
                *ctx.overlay = Overlay::Help(0);
                Vec::new()
            }
            "/new" => vec![Ask::Act(Action::New)],
            "/fork" => vec![Ask::Act(Action::Fork)],
            // The transcript search (Ctrl-F), with its query typed when one is given.
            "/find" if arg.is_empty() => vec![Ask::Act(Action::Find)],
            "/find" => vec![Ask::Find(arg.to_string())],
            "/resume" => vec![Ask::Act(Action::ResumePicker)],
            "/rename" => Conversation::slash_rename(open, arg, ctx),
            "/undo" => self.slash_undo(open, ctx),
            "/compact" => self.slash_compact(open, ctx),
            "/model" => self.slash_model(open, arg, ctx),
            "/provider" => self.slash_provider(open, arg, ctx),
            "/approve" if arg == "network" => self.slash_allow_network(open, ctx),
            "/permissions" => {
                ctx.say("Reading the permission rules…");
                vec![Ask::Effect(crate::tui::effect::Effect::Turn(
                    crate::tui::effect::TurnEffect::Permissions {
                        session_id: open.filter(|_| !self.draft),
                    },
                ))]
            }
            "/skill" => self.slash_skill(open, arg, ctx),
            "/approve" => self.slash_approve(arg, ctx),
            "/attach" => {
                if arg.is_empty() {
                    return ctx.refuse("/attach needs a path: /attach screenshot.png");
                }
                self.attach(arg, ctx);
                Vec::new()
            }
            "/paste" => {
                self.paste_image(ctx);
                Vec::new()
            }
            "/plan" => self.slash_plan(arg, ctx),
            "/limits" => {
                let text = limits_text(ctx.detail());
                ctx.say(text);
                Vec::new()
            }
            _ => self.slash_prompt(cmd, arg, ctx),
        }
    }

    /// `/init` and the custom commands: the prompt they expand to is sent as the message
    /// (the transcript shows that prompt, what the model reads); anything else is unknown.
    fn slash_prompt(&mut self, cmd: &str, arg: &str, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        let name = cmd.strip_prefix('/').unwrap_or(cmd);
        let (prompt, from) = if name == commands::INIT {
            (commands::init_prompt(arg), None)
        } else if let Some(c) = self.custom.get(name) {
            (c.expand(arg), Some(c.path.display().to_string()))
        } else {
            let mut known: Vec<String> = COMMANDS.iter().map(|c| c.0.to_string()).collect();
            known.extend(self.custom.names());
            ctx.fail(format!(
                "Unknown command {}; try {}",
                sanitize::line(cmd),
                sanitize::line(&known.join(" "))
            ));
            return Vec::new();
        };
        if let Some(why) = self.send_blocked(ctx.detail()) {
            return ctx.refuse(why);
        }
        let asks = self.send(prompt, ctx);
        if let Some(path) = from {
            ctx.say(format!(
                "Sent {} as its prompt from {}.",
                sanitize::line(cmd),
                sanitize::line(&path)
            ));
        }
        asks
    }

    /// Adds an image to the next message (relative paths are from the current directory).
    pub(crate) fn attach(&mut self, path: &str, ctx: &mut Ctx<'_>) {
        let p = std::path::Path::new(path);
        let full = if p.is_absolute() {
            p.to_path_buf()
        } else {
            ctx.cwd.join(p)
        };
        if crate::tui::worker::image_mime(&full).is_none() {
            ctx.fail(format!(
                "{} is not an image neocode can send (png, jpeg, gif, webp)",
                sanitize::line(path)
            ));
            return;
        }
        let n = self.editor.attach(full);
        ctx.say(format!(
            "Attached {} ({n} image{} with the next message).",
            sanitize::line(path),
            if n == 1 { "" } else { "s" }
        ));
    }
}

impl Conversation {
    /// Ctrl-V and `/paste`: the clipboard's image (read with `wl-paste` or `xclip`) is saved
    /// and attached to the next message, as `/attach` does.
    pub(crate) fn paste_image(&mut self, ctx: &mut Ctx<'_>) {
        let saved = crate::tui::clipboard::paste_image()
            .and_then(|bytes| crate::tui::clipboard::save_pasted(&bytes).map(|p| (p, bytes.len())));
        match saved {
            Ok((path, len)) => {
                let n = self.editor.attach(path);
                ctx.say(format!(
                    "Pasted a PNG image from the clipboard ({}; {n} image{} with the next message).",
                    super::picker::size_text(len as u64),
                    if n == 1 { "" } else { "s" }
                ));
            }
            Err(e) => ctx.fail(e),
        }
    }
}
