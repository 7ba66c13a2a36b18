//! The terminal guard: raw mode, alternate screen, mouse capture and bracketed paste, restored
//! on drop and from a panic hook before the panic message prints.

use std::io::{self, Stdout, Write};

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use crossterm::{cursor, execute};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

/// Owns the terminal while the TUI runs.
pub(crate) struct Guard {
    /// The ratatui terminal.
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
}

/// Puts the terminal back: idempotent, safe to call from a panic hook.
pub(crate) fn restore() {
    let _ = disable_raw_mode();
    let mut out = io::stdout();
    let _ = execute!(
        out,
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = out.flush();
}

impl Guard {
    /// Enters raw mode and the alternate screen and installs the panic hook.
    pub(crate) fn enter() -> anyhow::Result<Guard> {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            prev(info);
            // A panic on any thread ends the TUI: the loop cannot go on in a restored
            // terminal, and every acknowledged write is already committed.
            std::process::exit(101);
        }));
        enable_raw_mode()
            .map_err(|e| anyhow::anyhow!("cannot put the terminal in raw mode: {e}"))?;
        let mut out = io::stdout();
        if let Err(e) = execute!(
            out,
            EnterAlternateScreen,
            EnableMouseCapture,
            EnableBracketedPaste
        ) {
            restore();
            anyhow::bail!("cannot set up the terminal: {e}");
        }
        let terminal = match Terminal::new(CrosstermBackend::new(out)) {
            Ok(t) => t,
            Err(e) => {
                restore();
                anyhow::bail!("cannot set up the terminal: {e}");
            }
        };
        Ok(Guard { terminal })
    }
}

impl Guard {
    /// Hands the terminal to another program (`$EDITOR`): the screen and modes as they were
    /// before the TUI.
    pub(crate) fn suspend(&self) {
        restore();
    }

    /// Takes the terminal back after [`Guard::suspend`]; the next frame is drawn whole.
    pub(crate) fn resume(&mut self) -> anyhow::Result<()> {
        enable_raw_mode()
            .map_err(|e| anyhow::anyhow!("cannot put the terminal in raw mode: {e}"))?;
        execute!(
            io::stdout(),
            EnterAlternateScreen,
            EnableMouseCapture,
            EnableBracketedPaste
        )
        .map_err(|e| anyhow::anyhow!("cannot set up the terminal: {e}"))?;
        // A new terminal (no cursor query, which a terminal may not answer): its first
        // frame is drawn whole.
        self.terminal = Terminal::new(CrosstermBackend::new(io::stdout()))
            .map_err(|e| anyhow::anyhow!("cannot redraw the terminal: {e}"))?;
        Ok(())
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}
