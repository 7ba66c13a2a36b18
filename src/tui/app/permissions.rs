//! `/permissions`: the dialog opens on the rules the agent read (`Msg::Rules`); ↑↓ choose a
//! rule, `d` revokes one of the session's own (the agent does it, then the list is read
//! again), Esc closes. The dialog's state is `tui::permissions`, its view
//! `views/permissions.rs`.

use crossterm::event::{KeyCode, KeyEvent};

use super::App;
use super::state::Overlay;
use crate::runtime::agent::RulesInForce;
use crate::tui::effect::{Effect, TurnEffect};
use crate::tui::permissions::{PermissionsDialog, Row};

impl App {
    /// The rules in force for `session_id` arrived: the dialog opens (or is refreshed) on
    /// them, keeping the selection's place.
    pub fn on_rules(
        &mut self,
        session_id: Option<String>,
        rules: Result<RulesInForce, crate::tui::error::Failure>,
    ) -> Vec<Effect> {
        let rules = match rules {
            Ok(r) => r,
            Err(e) => {
                self.fail(format!(
                    "Cannot read the permission rules: {}",
                    crate::sanitize::line(e.as_str())
                ));
                return Vec::new();
            }
        };
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let mut d = PermissionsDialog::new(
            session_id,
            &rules,
            std::path::Path::new(&self.paths.root),
            home.as_deref(),
        );
        if let Overlay::Permissions(old) = &self.overlay {
            // Read again after a revoke: the selection keeps its place, the status line
            // keeps saying what was revoked.
            while d.selected < old.selected.min(d.rows.len().saturating_sub(1)) {
                let before = d.selected;
                d.step(false);
                if d.selected == before {
                    break;
                }
            }
        } else {
            let n = d.count();
            self.say(format!(
                "{n} rule{} in force: ↑↓ choose, d revokes one of this session's, Esc closes.",
                if n == 1 { "" } else { "s" }
            ));
        }
        self.overlay = Overlay::Permissions(Box::new(d));
        Vec::new()
    }

    /// A key over the `/permissions` dialog.
    pub(super) fn permissions_key(
        &mut self,
        mut d: Box<PermissionsDialog>,
        key: KeyEvent,
    ) -> Vec<Effect> {
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => d.step(true),
            KeyCode::Down | KeyCode::Char('j') => d.step(false),
            KeyCode::Char('d') | KeyCode::Delete => return self.revoke_selected(d),
            _ => return Vec::new(),
        }
        self.overlay = Overlay::Permissions(d);
        Vec::new()
    }

    /// `d`: revokes the selected rule when it is one of the session's own.
    fn revoke_selected(&mut self, d: Box<PermissionsDialog>) -> Vec<Effect> {
        let grant = match d.selected_row() {
            Some(Row::Rule { grant: Some(g), .. }) => g.clone(),
            _ => {
                self.fail(
                    "Only this session's own rules are revoked here; edit the file named above the rule for the others.",
                );
                self.overlay = Overlay::Permissions(d);
                return Vec::new();
            }
        };
        let Some(id) = d.session_id.clone() else {
            self.overlay = Overlay::Permissions(d);
            return Vec::new();
        };
        if self.turn_active() {
            self.fail("Revoke: wait for the turn to end first (Esc cancels it).");
            self.overlay = Overlay::Permissions(d);
            return Vec::new();
        }
        self.say("Revoking…");
        self.overlay = Overlay::Permissions(d);
        vec![Effect::Turn(TurnEffect::RevokeGrant {
            session_id: id,
            grant,
        })]
    }
}
