//! The trust record, `<home>/trust.json`: for each trusted workspace (by its canonical
//! root), when it was trusted, the SHA-256 of every file it declared then and the entries of
//! its settings files (to say which are new when they change). It lives under neocode's
//! home, which commands cannot see, never in a workspace.
//!
//! Written whole under a lock (`trust.lock`), to a temporary file (mode 0600) renamed over
//! the record, so a reader sees the old record or the new one. A record that does not parse,
//! or that someone else could have written (not the user's, or writable by group or others),
//! trusts nothing; the next write keeps it aside (`trust.json.damaged-<ms>`) and starts anew.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::TrustError;
use crate::session::workspace::{private_dir, private_file};

/// The record's file name under neocode's home.
pub(crate) const RECORD_FILE: &str = "trust.json";
const LOCK_FILE: &str = "trust.lock";
const VERSION: u32 = 1;

/// Every trusted workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Record {
    /// The format's version (1).
    pub version: u32,
    /// By canonical root path.
    #[serde(default)]
    pub workspaces: BTreeMap<String, TrustedWorkspace>,
}

/// One trusted workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TrustedWorkspace {
    /// When the user trusted it, ms since the epoch.
    pub trusted_at_ms: i64,
    /// SHA-256 (hex) of each declared file then, by its path relative to the root.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// The entries of its settings files then (`hooks.json`: `event matcher command`,
    /// `permissions.toml`: `list rule`), by file.
    #[serde(default)]
    pub entries: BTreeMap<String, Vec<String>>,
}

/// The record's path under `home`.
pub(crate) fn path(home: &Path) -> PathBuf {
    home.join(RECORD_FILE)
}

/// The key of `root` (canonical) in the record.
pub(crate) fn key(root: &Path) -> Result<String, TrustError> {
    match root.to_str() {
        Some(s) if !s.is_empty() => Ok(s.to_string()),
        _ => Err(TrustError::NotUtf8 {
            root: root.to_path_buf(),
        }),
    }
}

/// Reads the record (none yet: an empty one).
pub(crate) fn read(home: &Path) -> Result<Record, TrustError> {
    let file = path(home);
    let meta = match std::fs::metadata(&file) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Record::default()),
        Err(e) => return Err(TrustError::read(&file, &e)),
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me || meta.mode() & 0o022 != 0 {
        return Err(TrustError::Unsafe { path: file });
    }
    let text = std::fs::read_to_string(&file).map_err(|e| TrustError::read(&file, &e))?;
    let record: Record = serde_json::from_str(&text).map_err(|e| TrustError::Corrupt {
        path: file.clone(),
        message: e.to_string(),
    })?;
    if record.version != VERSION {
        return Err(TrustError::Corrupt {
            path: file,
            message: format!("version {} (this neocode reads {VERSION})", record.version),
        });
    }
    Ok(record)
}

/// Changes the record under its lock: reads it (a damaged one is kept aside and replaced by
/// an empty one), lets `change` edit it and writes it back atomically.
pub(crate) fn update(home: &Path, change: impl FnOnce(&mut Record)) -> Result<(), TrustError> {
    private_dir(home).map_err(|e| TrustError::write(home, &e))?;
    let lock_path = home.join(LOCK_FILE);
    let lock = private_file(&lock_path, false).map_err(|e| TrustError::write(&lock_path, &e))?;
    {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor this function owns; released when `lock` closes.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(TrustError::write(&lock_path, &e));
        }
    }
    let file = path(home);
    let mut record = match read(home) {
        Ok(r) => r,
        Err(TrustError::Corrupt { .. } | TrustError::Unsafe { .. }) => {
            let aside = home.join(format!(
                "{RECORD_FILE}.damaged-{}",
                crate::session::now_ms()
            ));
            std::fs::rename(&file, &aside).map_err(|e| TrustError::write(&file, &e))?;
            Record::default()
        }
        Err(e) => return Err(e),
    };
    record.version = VERSION;
    change(&mut record);
    let text = serde_json::to_string_pretty(&record).map_err(|e| TrustError::Write {
        path: file.clone(),
        message: e.to_string(),
    })?;
    let tmp = home.join(format!(".{RECORD_FILE}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let written = (|| {
        let mut f = private_file(&tmp, true)?;
        f.write_all(text.as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        std::fs::rename(&tmp, &file)?;
        if let Ok(d) = std::fs::File::open(home) {
            let _ = d.sync_all();
        }
        Ok::<(), std::io::Error>(())
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(TrustError::write(&file, &e));
    }
    drop(lock);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_record_round_trips_private_and_a_damaged_one_trusts_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        assert_eq!(read(&home).unwrap(), Record::default());
        update(&home, |r| {
            r.workspaces.insert(
                "/w".into(),
                TrustedWorkspace {
                    trusted_at_ms: 5,
                    ..TrustedWorkspace::default()
                },
            );
        })
        .unwrap();
        let mode = std::fs::metadata(path(&home)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(read(&home).unwrap().workspaces["/w"].trusted_at_ms, 5);

        std::fs::write(path(&home), "{not json").unwrap();
        assert!(matches!(read(&home), Err(TrustError::Corrupt { .. })));
        update(&home, |r| {
            r.workspaces
                .insert("/v".into(), TrustedWorkspace::default());
        })
        .unwrap();
        let r = read(&home).unwrap();
        assert!(r.workspaces.contains_key("/v") && !r.workspaces.contains_key("/w"));
        let kept = std::fs::read_dir(&home)
            .unwrap()
            .filter_map(Result::ok)
            .any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("trust.json.damaged-")
            });
        assert!(kept, "the damaged record is kept aside");

        std::fs::set_permissions(path(&home), std::fs::Permissions::from_mode(0o622)).unwrap();
        assert!(matches!(read(&home), Err(TrustError::Unsafe { .. })));
    }
}
