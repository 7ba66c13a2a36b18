//! Tab in the editor: completing a slash command, a `/plan` option or an `@path` from the
//! workspace's files.

use super::Editor;
use crate::runtime::extensions::commands::CustomCommands;
use crate::sanitize;
use crate::tui::conversation::commands::{PLAN_OPTIONS, at_word, matching_all};
use crate::tui::seam::{Ask, Ctx};
use crate::tui::worker::Request;

impl Editor {
    /// Tab in the editor: completes a slash command or an `@path`; true when it did
    /// something. The first `@` completion asks the worker for the workspace's files.
    pub(crate) fn complete(
        &mut self,
        custom: &CustomCommands,
        ctx: &mut Ctx<'_>,
    ) -> Option<Vec<Ask>> {
        if at_word(&self.composer.text()).is_some() {
            if self.files.is_none() {
                ctx.say("Listing the workspace's files…");
                return Some(vec![Ask::Request(Request::Files)]);
            }
            self.complete_path(ctx);
            return Some(Vec::new());
        }
        if self.complete_plan_option(ctx) {
            return Some(Vec::new());
        }
        self.complete_slash(custom).then(Vec::new)
    }

    /// Completes a `/plan` option being typed at the end of the editor (`/plan --w` → `/plan
    /// --width `).
    fn complete_plan_option(&mut self, ctx: &mut Ctx<'_>) -> bool {
        let text = self.composer.text();
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
                self.composer.set_text(&format!("{head}{one} "));
            }
            [] => ctx.fail("/plan takes --width N and --retry-failed"),
            many => ctx.say(format!("/plan options: {}", many.join(" "))),
        }
        true
    }

    /// Completes the `@word` at the end of the editor from the workspace's files: a single
    /// match is taken whole, several extend to what they share and are listed.
    pub(crate) fn complete_path(&mut self, ctx: &mut Ctx<'_>) {
        let text = self.composer.text();
        let Some(word) = at_word(&text) else {
            return;
        };
        let Some(files) = &self.files else {
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
                self.path_matches.clear();
                ctx.say(format!("No file matches @{}", sanitize::line(word)));
            }
            [one] => {
                self.path_matches.clear();
                let new = format!("{head}{one} ");
                self.composer.set_text(&new);
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
                    self.composer.set_text(&new);
                }
                self.path_matches = many.iter().take(8).cloned().collect();
            }
        }
    }

    fn complete_slash(&mut self, custom: &CustomCommands) -> bool {
        let text = self.composer.text();
        let m = matching_all(&text, custom);
        match m.as_slice() {
            [] => false,
            [one] => {
                let arg = if one.1.is_empty() { "" } else { " " };
                self.composer.set_text(&format!("{}{arg}", one.0));
                true
            }
            many => {
                // The longest prefix all matches share.
                let first = many[0].0.as_str();
                let mut n = first.len();
                for c in many.iter().skip(1) {
                    // In bytes, at a character boundary (a custom name may be any text).
                    n = n.min(
                        first
                            .char_indices()
                            .zip(c.0.chars())
                            .take_while(|((_, a), b)| a == b)
                            .last()
                            .map_or(0, |((i, a), _)| i + a.len_utf8()),
                    );
                }
                if n > text.trim_start().len()
                    && let Some(shared) = first.get(..n)
                {
                    self.composer.set_text(shared);
                }
                true
            }
        }
    }
}
