//! The syntax bash and a POSIX `sh` (dash, busybox ash) read differently: what
//! [`super::lex::bashisms`] finds, and what `run_command` says when it refuses a line where
//! only `sh` exists.

/// Syntax that bash and a POSIX `sh` (dash) read differently, or that dash refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bashism {
    /// `&>file`, `&>>file`, `2&>file`: bash sends both outputs to the file; dash runs what is
    /// before `&` in the background and the rest as another command.
    AmpRedirect,
    /// `>&file`: bash writes both outputs to the file; dash refuses it.
    DupToFile,
    /// `<<-`: tab-stripped here-docs.
    HeredocDash,
    /// `<<<` here-strings.
    HereString,
    /// `|&`.
    PipeBoth,
    /// `<( … )` and `>( … )`.
    ProcessSubstitution,
    /// `$'…'` and `$"…"`.
    DollarQuote,
    /// `{a,b}` and `{1..3}`.
    BraceExpansion,
    /// `[[ … ]]`, `(( … ))` and `function`.
    Keyword,
}

impl Bashism {
    /// What it is, and what to write instead, for the refusal.
    pub(crate) fn explain(self) -> &'static str {
        match self {
            Bashism::AmpRedirect => {
                "`&>` (bash: both outputs to a file; sh: runs the command in the background, then the rest as another command); write `>file 2>&1`"
            }
            Bashism::DupToFile => "`>&file` (bash: both outputs to a file); write `>file 2>&1`",
            Bashism::HeredocDash => "a `<<-` here-doc; write `<<` without indenting the body",
            Bashism::HereString => "a `<<<` here-string; use `printf '%s\\n' … |`",
            Bashism::PipeBoth => "`|&`; write `2>&1 |`",
            Bashism::ProcessSubstitution => "a process substitution `<( … )`",
            Bashism::DollarQuote => "a `$'…'` or `$\"…\"` string",
            Bashism::BraceExpansion => "a brace expansion `{a,b}`",
            Bashism::Keyword => "`[[`, `((` or `function`",
        }
    }
}
