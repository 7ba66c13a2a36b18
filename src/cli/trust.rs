//! `neocode trust`: what the workspace declares (each hook, rule and skill, every file with
//! its hash) and whether it is trusted; `--yes` trusts it as it is, `--revoke` forgets it.

use clap::Args;
use serde::Serialize;

use super::common::{CmdResult, Failure};
use super::out::Out;
use crate::runtime::Location;
use crate::runtime::trust::{self, Review, TRUST_FLAG, TrustState};
use crate::sanitize;

/// Help text of `neocode trust`.
const TRUST_HELP: &str = "\
Examples:
  neocode trust              what this workspace declares, and whether it is trusted
  neocode trust --yes        trust it as it is now (a later change asks again)
  neocode trust --revoke     forget it
  neocode trust --json

Until a workspace is trusted, its hooks do not run, its allow rules are not used (its deny and
ask rules are) and its skills are not offered. The record is <home>/trust.json.";

/// Arguments of `neocode trust`.
#[derive(Debug, Clone, Args)]
#[command(after_help = TRUST_HELP)]
pub struct TrustArgs {
    /// Trust the workspace as it is now: the hash of every file it declares is recorded,
    /// and a file added, removed or changed later asks again.
    #[arg(long, conflicts_with = "revoke")]
    pub yes: bool,
    /// Forget that the workspace is trusted.
    #[arg(long)]
    pub revoke: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct JsonFile<'a> {
    path: &'a str,
    sha256: &'a str,
    size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    link: Option<String>,
}

#[derive(Serialize)]
struct JsonReview<'a> {
    root: String,
    state: &'static str,
    uses_workspace: bool,
    headline: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    trusted_at_ms: Option<i64>,
    hooks: Vec<serde_json::Value>,
    rules: Vec<serde_json::Value>,
    skills: Vec<serde_json::Value>,
    other: &'a [String],
    problems: Vec<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    changes: Option<serde_json::Value>,
    files: Vec<JsonFile<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    folder: Option<&'a str>,
    record: String,
}

fn json_of<'a>(r: &'a Review, loc: &Location) -> JsonReview<'a> {
    use serde_json::json;
    let d = &r.declared;
    JsonReview {
        root: r.root.display().to_string(),
        state: r.state.code(),
        uses_workspace: r.state.uses_workspace(),
        headline: r.headline(),
        trusted_at_ms: match &r.state {
            TrustState::Trusted { trusted_at_ms } => Some(*trusted_at_ms),
            TrustState::Changed(c) => Some(c.trusted_at_ms),
            _ => None,
        },
        hooks: d
            .hooks
            .iter()
            .map(|h| json!({"event": h.event.name(), "matcher": h.matcher, "command": h.command}))
            .collect(),
        rules: d
            .rules
            .iter()
            .map(|x| json!({"list": x.list.key(), "rule": x.text, "line": x.line}))
            .collect(),
        skills: d
            .skills
            .iter()
            .map(|s| json!({"name": s.name, "file": s.file}))
            .collect(),
        other: &d.other,
        problems: d
            .problems
            .iter()
            .map(|(f, why)| json!({"file": f, "reason": why}))
            .collect(),
        changes: match &r.state {
            TrustState::Changed(c) => Some(json!({
                "added": c.added, "removed": c.removed, "modified": c.modified,
                "new_entries": c.new_entries,
            })),
            _ => None,
        },
        files: r
            .files
            .iter()
            .map(|f| JsonFile {
                path: &f.path,
                sha256: &f.sha256,
                size: f.size,
                link: f.link.as_ref().map(|l| l.display().to_string()),
            })
            .collect(),
        folder: r.folder.as_deref(),
        record: trust::record::path(&loc.home).display().to_string(),
    }
}

/// Runs `neocode trust`.
pub(super) fn run(loc: &Location, args: &TrustArgs) -> CmdResult {
    let mut out = Out::stdout();
    let failed =
        |e: trust::TrustError| Failure::runtime(sanitize::line(&e.to_string()).into_owned());
    let review = if args.revoke {
        let had = trust::revoke(&loc.home, loc.root()).map_err(failed)?;
        if !args.json {
            out.line(if had {
                "forgot that this workspace is trusted: its hooks, allow rules and skills are not used from now on"
            } else {
                "this workspace was not trusted; nothing to forget"
            })?;
        }
        trust::review(&loc.home, loc.root())
    } else if args.yes {
        let r = trust::trust(&loc.home, loc.root()).map_err(failed)?;
        if !args.json {
            out.line(&format!(
                "trusted {} as it is now ({}); a file added, removed or changed asks again",
                sanitize::line(&r.root.display().to_string()),
                if r.files.is_empty() {
                    "it declares nothing yet".to_string()
                } else {
                    r.declared.summary()
                }
            ))?;
        }
        r
    } else {
        trust::review(&loc.home, loc.root())
    };
    if args.json {
        out.line(&super::fmt::to_json(&json_of(&review, loc)))?;
        return out.finish();
    }
    if args.yes || args.revoke {
        return out.finish();
    }
    print_review(&mut out, &review)?;
    out.finish()
}

fn print_review(out: &mut Out, r: &Review) -> CmdResult {
    let l = |s: &str| sanitize::line(s).into_owned();
    out.line(&format!("workspace  {}", l(&r.root.display().to_string())))?;
    out.line(&l(&r.headline()))?;
    for s in r.sections() {
        out.line("")?;
        let title = if s.danger {
            out.paint("1;33", &l(&s.title))
        } else {
            out.paint("1", &l(&s.title))
        };
        out.line(&title)?;
        for item in &s.items {
            out.line(&format!("  {}", l(item)))?;
        }
    }
    if !r.files.is_empty() {
        out.line("")?;
        out.line(&out.paint("1", "Files (SHA-256)"))?;
        for f in &r.files {
            let link = f
                .link
                .as_ref()
                .map(|t| format!("  -> {}", l(&t.display().to_string())))
                .unwrap_or_default();
            out.line(&format!(
                "  {}  {:>8} B  {}{link}",
                &f.sha256[..f.sha256.len().min(12)],
                f.size,
                l(&f.path)
            ))?;
        }
    }
    match &r.state {
        TrustState::Untrusted { .. } | TrustState::Changed(_) => {
            out.line("")?;
            out.line(&format!(
                "Trust it as it is with `neocode trust --yes` (or start neocode with {TRUST_FLAG})."
            ))?;
        }
        TrustState::Trusted { .. } => {
            out.line("")?;
            out.line("Forget it with `neocode trust --revoke`.")?;
        }
        TrustState::NothingDeclared | TrustState::Unreviewable(_) => {}
    }
    Ok(())
}
