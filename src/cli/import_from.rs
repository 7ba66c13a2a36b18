//! `neocode import --from claude-code|codex [PATH...]`: other agents' history into neocode
//! sessions, with a progress line on long imports and a summary at the end.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use super::args::ImportSource;
use super::common::{CmdResult, Failure};
use super::out::Out;
use crate::runtime::import::{self, Outcome, SourceTool};
use crate::runtime::{Location, Sessions};
use crate::sanitize;
use crate::session::WorkspacePaths;

#[derive(Default)]
struct Tally {
    imported: u64,
    updated: u64,
    unchanged: u64,
    failed: Vec<(PathBuf, String)>,
    refused: Vec<(String, String)>,
    malformed: u64,
    lossy: u64,
    unknown: u64,
    duplicates: u64,
    torn: u64,
    empty: u64,
}

/// Runs the import.
pub(super) fn run(
    loc: &Location,
    from: ImportSource,
    paths: &[PathBuf],
    all_workspaces: bool,
) -> CmdResult {
    let tool = match from {
        ImportSource::ClaudeCode => SourceTool::ClaudeCode,
        ImportSource::Codex => SourceTool::Codex,
    };
    let files = if paths.is_empty() {
        discovered(loc, tool, all_workspaces)?
    } else {
        named(paths)?
    };
    let mut tally = Tally::default();
    let todo = sorted(loc, tool, &files, all_workspaces, &mut tally)?;
    write(tool, todo, &mut tally)?;
    report(&tally)
}

/// The tool's transcripts for this workspace (or all), said on stderr with where they are.
fn discovered(
    loc: &Location,
    tool: SourceTool,
    all_workspaces: bool,
) -> Result<Vec<PathBuf>, Failure> {
    let Some(home) = import::tool_home(tool) else {
        return Err(Failure::usage(
            "cannot find the home folder (HOME is not set)",
        ));
    };
    let root = (!all_workspaces).then(|| loc.root());
    let files = import::discover(tool, &home, root);
    let scope = match root {
        Some(r) => format!("for {}", sanitize::line(&r.display().to_string())),
        None => "in all workspaces".to_string(),
    };
    eprintln!(
        "{} {} transcript{} {scope} under {}",
        files.len(),
        tool.as_str(),
        if files.len() == 1 { "" } else { "s" },
        sanitize::line(&home.display().to_string())
    );
    Ok(files)
}

/// The transcripts the user named: files, and the `.jsonl` files of folders, parents first.
fn named(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Failure> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            files.extend(import::jsonl_files(p));
        } else if p.is_file() {
            files.push(p.clone());
        } else {
            return Err(Failure::usage(format!(
                "{}: no such file or folder",
                sanitize::line(&p.display().to_string())
            )));
        }
    }
    import::order_parents_first(&mut files);
    Ok(files)
}

/// The cheap part: where each file goes, and whether it is unchanged since its last import
/// (size and mtime). Only the rest is to be read, grouped by workspace; what cannot be placed
/// or stamped is counted as failed.
fn sorted(
    loc: &Location,
    tool: SourceTool,
    files: &[PathBuf],
    all_workspaces: bool,
    tally: &mut Tally,
) -> Result<Vec<(Sessions, Vec<import::Todo>)>, Failure> {
    let mut workspaces: HashMap<PathBuf, Sessions> = HashMap::new();
    let mut todo: Vec<(Sessions, Vec<import::Todo>)> = Vec::new();
    let mut slot: HashMap<PathBuf, usize> = HashMap::new();
    for path in files {
        let target = if all_workspaces {
            let found = import::peek_cwd(tool, path)
                .ok_or_else(|| "records no working directory".to_string())
                .and_then(|cwd| {
                    WorkspacePaths::resolve(&loc.home, Path::new(&cwd))
                        .map_err(|e| format!("its directory is gone ({e})"))
                });
            match found {
                Ok(p) => p,
                Err(why) => {
                    tally.failed.push((path.clone(), why));
                    continue;
                }
            }
        } else {
            loc.paths.clone()
        };
        let sessions = match workspaces.get(&target.root) {
            Some(sessions) => sessions.clone(),
            None => {
                let l = Location {
                    home: loc.home.clone(),
                    paths: target.clone(),
                };
                let sessions = Sessions::open(&l)?;
                workspaces.insert(target.root.clone(), sessions.clone());
                sessions
            }
        };
        let stamp = match import::stamp(path) {
            Ok(s) => s,
            Err(e) => {
                tally
                    .failed
                    .push((path.clone(), format!("cannot read: {e}")));
                continue;
            }
        };
        if let Some(id) = import::expected_id(tool, path)
            && import::unchanged(&sessions, tool, &id, &stamp)?.is_some()
        {
            tally.unchanged += 1;
            continue;
        }
        let n = *slot.entry(target.root.clone()).or_insert_with(|| {
            todo.push((sessions, Vec::new()));
            todo.len() - 1
        });
        todo[n].1.push(import::Todo {
            path: path.clone(),
            stamp,
        });
    }
    Ok(todo)
}

/// Reads the files on a second thread and writes them one workspace after the other (each
/// in transactions of several files), with a progress line on a terminal when there are many.
fn write(
    tool: SourceTool,
    todo: Vec<(Sessions, Vec<import::Todo>)>,
    tally: &mut Tally,
) -> Result<(), Failure> {
    let total: usize = todo.iter().map(|(_, t)| t.len()).sum();
    let progress = std::io::stderr().is_terminal() && total > 20;
    let mut before = 0;
    for (sessions, files) in todo {
        let n = files.len();
        let r = import::import_files(&sessions, tool, files, import::BATCH_BYTES, |p| match p {
            import::Progress::Reading(i) => {
                if progress {
                    let mut e = std::io::stderr();
                    let _ = write!(e, "\rimporting {}/{total}", before + i);
                    let _ = e.flush();
                }
            }
            import::Progress::Done(done) => count(done, tally),
        });
        before += n;
        if let Err(e) = r {
            if progress {
                eprintln!();
            }
            return Err(e.into());
        }
    }
    if progress {
        eprintln!();
    }
    Ok(())
}

/// Counts what became of one file.
fn count(done: import::FileDone, tally: &mut Tally) {
    tally.malformed += done.stats.malformed;
    tally.lossy += done.stats.lossy;
    tally.unknown += done.stats.unknown;
    tally.duplicates += done.stats.duplicates;
    tally.torn += u64::from(done.stats.torn_tail);
    tally.empty += done.empty;
    match done.result {
        Ok(outcomes) => {
            for o in outcomes {
                match o {
                    Outcome::Imported(_) => tally.imported += 1,
                    Outcome::Updated(_) => tally.updated += 1,
                    Outcome::Unchanged(_) => tally.unchanged += 1,
                    Outcome::Refused(id, why) => tally.refused.push((id, why)),
                }
            }
        }
        Err(reason) => tally.failed.push((done.path, reason.to_string())),
    }
}

fn report(t: &Tally) -> CmdResult {
    let mut out = Out::stdout();
    let failed = t.failed.len() + t.refused.len();
    out.line(&format!(
        "imported {}, updated {}, skipped {} unchanged, failed {}",
        t.imported, t.updated, t.unchanged, failed
    ))?;
    let notes: Vec<String> = [
        (t.malformed, "malformed line(s) skipped"),
        (t.lossy, "line(s) with invalid UTF-8 read with replacements"),
        (t.unknown, "record(s) of unknown type skipped"),
        (t.duplicates, "re-appended record(s) dropped"),
        (t.empty, "transcript(s) without messages skipped"),
        (
            t.torn,
            "file(s) still being written, read to the last complete line",
        ),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    if !notes.is_empty() {
        out.line(&notes.join("; "))?;
    }
    let files = t
        .failed
        .iter()
        .map(|(p, why)| (p.display().to_string(), why));
    let sessions = t.refused.iter().map(|(id, why)| (id.clone(), why));
    for (what, why) in files.chain(sessions) {
        out.line(&format!(
            "failed: {}: {}",
            sanitize::line(&what),
            sanitize::line(why)
        ))?;
    }
    out.finish()?;
    if failed > 0 {
        return Err(Failure {
            code: 1,
            lines: vec![format!(
                "{failed} session(s) could not be imported (listed above)"
            )],
        });
    }
    Ok(())
}
