//! `neocode export` and `neocode import`: the lossless session file, and a readable markdown
//! transcript.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use super::args::ExportFormat;
use super::out::Out;
use super::{CmdResult, Failure, fmt, open_for_id};
use crate::runtime::export_md::{markdown, markdown_with};
use crate::runtime::{Location, Sessions};
use crate::sanitize;
use crate::session::file::{self, SessionFile};

/// Largest session file accepted by `import` (assets are inline, so allow plenty).
const MAX_IMPORT_BYTES: u64 = 1 << 30;

/// `neocode export`.
pub fn export(
    loc: &Location,
    key: &str,
    format: ExportFormat,
    output: Option<&Path>,
    (force, with_files): (bool, bool),
) -> CmdResult {
    let to_file = output.filter(|p| *p != Path::new("-"));
    if let Some(path) = to_file
        && !force
        && path.exists()
    {
        return Err(Failure::usage(format!(
            "{} already exists; choose another name or add --force to replace it",
            sanitize::line(&path.to_string_lossy())
        )));
    }
    if with_files && format != ExportFormat::Json {
        return Err(Failure::usage(
            "--with-files is for the JSON session file (--format json)",
        ));
    }
    let (sessions, id) = open_for_id(loc, key)?;
    let doc = sessions.export(&id)?;
    let mut text = match format {
        ExportFormat::Json if with_files => fmt::to_json(&file::WithFiles {
            doc: &doc,
            files: &sessions.export_files(&id)?,
        }),
        ExportFormat::Json => fmt::to_json(&doc),
        ExportFormat::Markdown => match to_file {
            Some(path) => {
                let links = write_images(&doc, path, force)?;
                markdown_with(&doc, &links)
            }
            None => markdown(&doc),
        },
    };
    text.push('\n');
    match to_file {
        Some(path) => write_file(path, text.as_bytes()),
        _ => {
            let mut out = Out::stdout();
            out.bytes(text.as_bytes())?;
            out.finish()
        }
    }
}

/// Writes next to `path` then renames, so a failed export never leaves half a file.
fn write_file(path: &Path, bytes: &[u8]) -> CmdResult {
    let shown = sanitize::line(&path.to_string_lossy()).into_owned();
    let name = path
        .file_name()
        .ok_or_else(|| Failure::usage(format!("{shown}: not a file name")))?;
    let tmp = path.with_file_name(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let res = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = res {
        let _ = std::fs::remove_file(&tmp);
        return Err(Failure::runtime(format!(
            "cannot write {shown}: {}",
            crate::session::io_error(&e)
        )));
    }
    Ok(())
}

/// `neocode import`: parse and validate everything before the workspace is touched.
pub fn import(loc: &Location, source: &Path, new_id: bool) -> CmdResult {
    let from_stdin = source == Path::new("-");
    let shown = if from_stdin {
        "standard input".to_string()
    } else {
        sanitize::line(&source.to_string_lossy()).into_owned()
    };
    let mut raw = Vec::new();
    let read = if from_stdin {
        std::io::stdin()
            .lock()
            .take(MAX_IMPORT_BYTES + 1)
            .read_to_end(&mut raw)
    } else {
        std::fs::File::open(source).and_then(|f| f.take(MAX_IMPORT_BYTES + 1).read_to_end(&mut raw))
    };
    read.map_err(|e| Failure::usage(format!("cannot read {shown}: {e}")))?;
    if raw.len() as u64 > MAX_IMPORT_BYTES {
        return Err(Failure::usage(format!(
            "{shown}: larger than {MAX_IMPORT_BYTES} bytes; not a session file"
        )));
    }
    let text = String::from_utf8(raw).map_err(|e| {
        Failure::usage(format!(
            "{shown}: not UTF-8 text (byte {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    let doc = file::parse(&text)
        .map_err(|e| Failure::usage(format!("{shown}: {}", sanitize::line(&e.to_string()))))?;
    let files = file::parse_files(&text)
        .map_err(|e| Failure::usage(format!("{shown}: {}", sanitize::line(&e.to_string()))))?;
    let sessions = Sessions::open(loc)?;
    let header = sessions.import_with_files(&doc, &files, new_id)?;
    let mut out = Out::stdout();
    out.line(&sanitize::line(&header.id))?;
    out.finish()
}

/// Writes the session's image assets next to the markdown file `path`, in `<stem>.images/`,
/// and returns each asset's link relative to the markdown file.
fn write_images(
    doc: &SessionFile,
    path: &Path,
    force: bool,
) -> Result<HashMap<String, String>, Failure> {
    use base64::Engine;
    let mut links = HashMap::new();
    let images: Vec<_> = doc
        .assets
        .iter()
        .filter(|a| a.mime_type.starts_with("image/"))
        .collect();
    if images.is_empty() {
        return Ok(links);
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "export".into());
    let dir_name = format!("{stem}.images");
    let dir = path.with_file_name(&dir_name);
    let shown = sanitize::line(&dir.to_string_lossy()).into_owned();
    std::fs::create_dir_all(&dir).map_err(|e| {
        Failure::runtime(format!(
            "cannot create {shown}: {}",
            crate::session::io_error(&e)
        ))
    })?;
    for a in images {
        let ext = match a.mime_type.as_str() {
            "image/png" => "png",
            "image/jpeg" => "jpg",
            "image/gif" => "gif",
            "image/webp" => "webp",
            "image/svg+xml" => "svg",
            _ => "img",
        };
        // Asset ids are checked on import, but a file name must never leave the folder.
        let safe: String =
            a.id.chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
        let name = format!("{safe}.{ext}");
        let file = dir.join(&name);
        if file.exists() && !force {
            return Err(Failure::usage(format!(
                "{} already exists; choose another name or add --force to replace it",
                sanitize::line(&file.to_string_lossy())
            )));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&a.data_base64)
            .map_err(|e| Failure::runtime(format!("asset {}: {e}", sanitize::line(&a.id))))?;
        write_file(&file, &bytes)?;
        links.insert(a.id.clone(), format!("{dir_name}/{name}"));
    }
    Ok(links)
}
