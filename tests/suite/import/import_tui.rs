//! Imported sessions in the TUI: marked in the list, sub-agents under their parent, the
//! source in Info, and the transcript read like a native one.

use crate::support::Env;
use std::path::Path;

use crate::support::tui::options;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use neocode::runtime::import::{self, SourceTool};
use neocode::tui::app::{App, run_inline};
use neocode::tui::views;

#[test]
fn imported_sessions_are_marked_and_sub_agents_carry_the_lineage_mark() {
    let env = Env::new();
    let loc = env.location();
    let rt = env.sessions();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/import/claude-code");
    // The sub-agent first: its link holds before the parent arrives.
    let mut files = import::jsonl_files(&dir);
    files.reverse();
    for f in files {
        for doc in import::convert(SourceTool::ClaudeCode, &f)
            .unwrap()
            .sessions
        {
            import::apply(&rt, doc).unwrap();
        }
    }
    let root = loc.root().display().to_string();
    let (mut app, jobs) = App::new(options(&root, env.tmp.path(), (120, 30), 1_800_000_000_000));
    run_inline(&mut app, &rt, jobs);
    let s = views::draw_to_text(&app);
    let parent = s
        .lines()
        .position(|l| l.contains("CC Work on bead"))
        .unwrap_or_else(|| panic!("{s}"));
    let child = s
        .lines()
        .position(|l| l.contains("↳ CC Very thorough"))
        .unwrap_or_else(|| panic!("{s}"));
    // Rows keep activity order (issue 8); the sub-agent carries the lineage mark.
    assert_ne!(child, parent, "{s}");

    // Info names the source.
    for _ in 0..5 {
        if app
            .browse
            .list
            .current()
            .is_some_and(|c| c.id == "4d5611e5-241a-462a-8d15-5122611a9569")
        {
            break;
        }
        let jobs = app.on_key(KeyEvent::new(KeyCode::Char('j'), KeyModifiers::NONE));
        run_inline(&mut app, &rt, jobs);
    }
    let jobs = app.on_key(KeyEvent::new(KeyCode::Char('['), KeyModifiers::NONE));
    run_inline(&mut app, &rt, jobs);
    let s = views::draw_to_text(&app);
    assert!(s.contains("from claude-code 2.1.39"), "{s}");
}
