//! `neocode export` and `neocode import`: the lossless session file, and a readable markdown
//! transcript.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;

use super::args::ExportFormat;
use super::common::{CmdResult, Failure, open_for_id};
use super::fmt;
use super::out::Out;
use crate::runtime::export_md::{markdown, markdown_with};
use crate::runtime::{Location, Sessions};
use crate::sanitize;
use crate::session::file::{self, SessionFile};

/// `neocode export`.
pub(crate) fn export(
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

/// Reads at most `limit` bytes; more is an error, and `over` says so.
struct Limited<R> {
    inner: R,
    left: u64,
    over: std::rc::Rc<std::cell::Cell<bool>>,
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            // One byte more tells a file of exactly the limit from a larger one.
            let mut probe = [0u8; 1];
            if self.inner.read(&mut probe)? == 0 {
                return Ok(0);
            }
            self.over.set(true);
            return Err(std::io::Error::other("over the import size limit"));
        }
        let cap = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..cap])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// Checks that what passes is UTF-8 as it streams; the offset of the first byte that is not
/// goes to `bad` (and the read fails).
struct Utf8Checked<R> {
    inner: R,
    /// The start of a character split between two reads.
    carry: Vec<u8>,
    /// Bytes passed so far.
    offset: u64,
    bad: std::rc::Rc<std::cell::Cell<Option<u64>>>,
}

impl<R: Read> Utf8Checked<R> {
    fn fail(&self, at: u64) -> std::io::Error {
        self.bad.set(Some(at));
        std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8")
    }
}

impl<R: Read> Read for Utf8Checked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 {
            if !self.carry.is_empty() {
                return Err(self.fail(self.offset - self.carry.len() as u64));
            }
            return Ok(0);
        }
        let data = &buf[..n];
        let mut start = 0;
        if !self.carry.is_empty() {
            // Finish the character the last read cut.
            let width = match self.carry[0] {
                b if b >= 0xf0 => 4,
                b if b >= 0xe0 => 3,
                _ => 2,
            };
            let take = (width - self.carry.len()).min(n);
            self.carry.extend_from_slice(&data[..take]);
            start = take;
            if self.carry.len() == width {
                if std::str::from_utf8(&self.carry).is_err() {
                    return Err(self.fail(self.offset - (width - take) as u64));
                }
                self.carry.clear();
            }
        }
        if let Err(e) = std::str::from_utf8(&data[start..]) {
            let valid = start + e.valid_up_to();
            match e.error_len() {
                Some(_) => return Err(self.fail(self.offset + valid as u64)),
                None => self.carry.extend_from_slice(&data[valid..]),
            }
        }
        self.offset += n as u64;
        Ok(n)
    }
}

/// `neocode import`: parse and validate everything before the workspace is touched. The
/// file is read as a stream (never held as text), up to `max_mib` MiB.
pub(crate) fn import(loc: &Location, source: &Path, new_id: bool, max_mib: u64) -> CmdResult {
    let from_stdin = source == Path::new("-");
    let shown = if from_stdin {
        "standard input".to_string()
    } else {
        sanitize::line(&source.to_string_lossy()).into_owned()
    };
    let limit = max_mib.saturating_mul(1024 * 1024);
    let too_large = || {
        Failure::usage(format!(
            "{shown}: larger than the import limit of {max_mib} MiB; raise it with --max-size <MIB> if you trust the file"
        ))
    };
    let input: Box<dyn Read> = if from_stdin {
        Box::new(std::io::stdin().lock())
    } else {
        let f = std::fs::File::open(source).map_err(|e| {
            Failure::usage(format!(
                "cannot read {shown}: {}",
                crate::session::io_error(&e)
            ))
        })?;
        if f.metadata().is_ok_and(|m| m.len() > limit) {
            return Err(too_large());
        }
        Box::new(f)
    };
    let over = std::rc::Rc::new(std::cell::Cell::new(false));
    let bad = std::rc::Rc::new(std::cell::Cell::new(None));
    let reader = std::io::BufReader::with_capacity(
        1 << 20,
        Utf8Checked {
            inner: Limited {
                inner: input,
                left: limit,
                over: over.clone(),
            },
            carry: Vec::new(),
            offset: 0,
            bad: bad.clone(),
        },
    );
    let parsed = file::read(reader);
    if over.get() {
        return Err(too_large());
    }
    if let Some(at) = bad.get() {
        return Err(Failure::usage(format!(
            "{shown}: not UTF-8 text (byte {at})"
        )));
    }
    let (doc, files) = parsed
        .map_err(|e| Failure::usage(format!("{shown}: {}", sanitize::line(&e.to_string()))))?;
    let sessions = Sessions::open(loc)?;
    let (header, left_out) = sessions.import_file(doc, files, new_id)?;
    if !left_out.is_empty() {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "left out {} recorded file change(s) a rewind must never write:",
            left_out.len()
        );
        for l in &left_out {
            let _ = writeln!(err, "  {}", sanitize::line(l));
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out one byte per read, so every character is cut.
    struct Trickle(Vec<u8>, usize);

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.1 >= self.0.len() || buf.is_empty() {
                return Ok(0);
            }
            buf[0] = self.0[self.1];
            self.1 += 1;
            Ok(1)
        }
    }

    fn check(bytes: &[u8]) -> Result<Vec<u8>, Option<u64>> {
        let bad = std::rc::Rc::new(std::cell::Cell::new(None));
        let mut r = Utf8Checked {
            inner: Trickle(bytes.to_vec(), 0),
            carry: Vec::new(),
            offset: 0,
            bad: bad.clone(),
        };
        let mut out = Vec::new();
        r.read_to_end(&mut out).map_err(|_| bad.get())?;
        Ok(out)
    }

    #[test]
    fn utf8_is_checked_across_reads() {
        let text = "aé€😀z".as_bytes();
        assert_eq!(check(text), Ok(text.to_vec()));
        assert_eq!(check(b"ab\xffc"), Err(Some(2)));
        assert_eq!(check(b"a\xe2\x82"), Err(Some(1)));
        assert_eq!(check(b"a\xe2\x28\xa1"), Err(Some(1)));
    }
}
