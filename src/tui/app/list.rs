//! The session list's transitions are the browse screen's own (`tui::browse`): the router
//! hands it the screen shown and carries out what it asks back.

use super::App;
use crate::tui::browse::Browse;
use crate::tui::effect::Effect;
use crate::tui::screen::Screen;
use crate::tui::seam::Ask;

impl App {
    /// Runs a browse transition (it sees the screen shown) and carries out what it asks.
    pub(super) fn with_browse(
        &mut self,
        f: impl FnOnce(&mut Browse, Screen) -> Vec<Ask>,
    ) -> Vec<Effect> {
        let asks = f(&mut self.browse, self.screen);
        self.carry_all(asks)
    }

    /// Reads the window again (something changed), from its first row, with the total.
    pub(super) fn reload_list(&mut self) -> Vec<Effect> {
        self.with_browse(|b, _| b.reload_list())
    }

    /// The first page: after this app wrote a session (it is the newest now) or resumed one.
    pub(super) fn reload_top(&mut self) -> Vec<Effect> {
        self.with_browse(|b, _| b.reload_top())
    }

    /// Removes the filter and its matches.
    pub(super) fn clear_filter(&mut self) -> Vec<Effect> {
        self.with_browse(|b, _| b.clear_filter())
    }

    pub(super) fn move_list(&mut self, delta: i64) -> Vec<Effect> {
        self.with_browse(|b, _| b.move_list(delta))
    }

    /// Makes the detail pane follow the list selection.
    pub(super) fn sync_detail(&mut self) -> Vec<Effect> {
        self.with_browse(|b, _| b.sync_detail())
    }

    /// Shows another session in the detail pane.
    pub(super) fn open_detail(&mut self, id: &str) -> Vec<Effect> {
        self.with_browse(|b, _| b.open_detail(id))
    }

    pub(super) fn refresh_detail(&mut self) -> Vec<Effect> {
        self.with_browse(|b, _| b.refresh_detail())
    }
}
