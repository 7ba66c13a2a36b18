//! The TUI's app as the tests open it: no colour, no session to resume (callers override
//! fields with `..options(..)`).

use std::path::Path;

use neocode::tui::app::AppOptions;
use neocode::tui::theme::Theme;

/// Options for an app on the workspace `root` (also the workdir new sessions record), writing
/// exports to `export_dir`, drawn at `size`, with its clock at `now_ms`.
pub fn options(root: &str, export_dir: &Path, size: (u16, u16), now_ms: i64) -> AppOptions {
    AppOptions {
        theme: Theme::new(false),
        export_dir: export_dir.to_path_buf(),
        workdir: root.to_string(),
        root: root.to_string(),
        size,
        now_ms,
        resume: None,
    }
}
