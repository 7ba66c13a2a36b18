//! Trusting a workspace and forgetting it: the [`Review`] the user decides on, recording it
//! (both records: `trust.json` and the folder trust), revoking it, and refreshing it after
//! neocode's own write of a settings file ([`OwnWrite`]).

use std::path::{Path, PathBuf};

use super::admit::Admission;
use super::error::TrustError;
use super::record;
use super::review::{self, Declared, TrustState};
use super::scan::{self, DeclaredFile, canonical};
use crate::runtime::tools::sandbox::trust as folder;

/// Everything to show before the user decides: where the workspace stands, what it declares
/// entry by entry, every file with its hash, and whether it is a folder that needs folder
/// trust too.
#[derive(Debug, Clone)]
pub struct Review {
    /// The workspace root (canonical).
    pub root: PathBuf,
    pub state: TrustState,
    pub declared: Declared,
    /// Every declared file, sorted.
    pub files: Vec<DeclaredFile>,
    /// Why commands need folder trust here (`/`, the home folder), if they do.
    pub folder: Option<String>,
    /// Whether the folder trust is recorded.
    pub folder_trusted: bool,
}

impl Review {
    /// Whether the user should be asked: something is declared and not trusted as it is.
    pub fn needs_answer(&self) -> bool {
        !self.state.uses_workspace()
    }
}

/// Reviews `root`: its state and everything it declares.
pub fn review(home: &Path, root: &Path) -> Review {
    review_of(home, &Admission::check(home, root))
}

/// The review of an admission already made.
pub fn review_of(home: &Path, a: &Admission) -> Review {
    Review {
        root: a.root().to_path_buf(),
        state: a.state.clone(),
        declared: a.declared(),
        files: a.scan().files.clone(),
        folder: folder::needs_trust(a.root()),
        folder_trusted: folder::is_trusted(home, a.root()),
    }
}

/// Records that the user trusts `root` as it is now (every declared file's hash), and the
/// folder trust of a workspace at `/` or the home folder. Returns the review after.
pub fn trust(home: &Path, root: &Path) -> Result<Review, TrustError> {
    let root = canonical(root);
    let scan = scan::scan(home, &root)?;
    record_trust(home, &root, &scan)
}

fn record_trust(home: &Path, root: &Path, scan: &scan::Scan) -> Result<Review, TrustError> {
    let key = record::key(root)?;
    let entry = review::trusted_now(scan, root);
    record::update(home, |r| {
        r.workspaces.insert(key, entry);
    })?;
    folder::trust(home, root).map_err(|e| TrustError::write(&home.join(folder::TRUST_FILE), &e))?;
    Ok(review(home, root))
}

/// [`trust`], for the answer to a review the user saw: recorded only when the files are
/// still exactly those of `shown` (else [`TrustError::ChangedMeanwhile`]).
pub fn trust_as_shown(home: &Path, shown: &Review) -> Result<Review, TrustError> {
    let scan = scan::scan(home, &shown.root)?;
    if scan.files != shown.files {
        return Err(TrustError::ChangedMeanwhile);
    }
    record_trust(home, &shown.root, &scan)
}

/// Forgets that the user trusted `root` (both records). Whether it was trusted.
pub fn revoke(home: &Path, root: &Path) -> Result<bool, TrustError> {
    let root = canonical(root);
    let key = record::key(&root)?;
    let mut had = false;
    if record::path(home).exists() {
        record::update(home, |r| had = r.workspaces.remove(&key).is_some())?;
    }
    let had_folder = folder::revoke(home, &root)
        .map_err(|e| TrustError::write(&home.join(folder::TRUST_FILE), &e))?;
    Ok(had || had_folder)
}

/// A settings file of the workspace that neocode writes at the user's request ("always" for
/// this workspace, `hooks import`): taken before the write, [`OwnWrite::done`] after it
/// refreshes the record when the workspace was trusted (or declared nothing) before, so the
/// user is not asked about their own change. Only that file may have changed in between;
/// anything else that did is left for the user to review.
#[derive(Debug)]
pub struct OwnWrite {
    home: PathBuf,
    root: PathBuf,
    before: Option<scan::Scan>,
}

impl OwnWrite {
    /// Looks at the workspace before the write.
    pub(crate) fn begin(home: &Path, root: &Path) -> OwnWrite {
        let a = Admission::check(home, root);
        let before = a.uses_workspace().then(|| a.scan().clone());
        OwnWrite {
            home: home.to_path_buf(),
            root: a.root().to_path_buf(),
            before,
        }
    }

    /// Whether the workspace was trusted (or declared nothing) before the write.
    pub(crate) fn was_trusted(&self) -> bool {
        self.before.is_some()
    }

    /// After writing `written` (relative, `.neocode/permissions.toml`): records the trust
    /// anew when the workspace was trusted before and nothing else changed. Whether it did.
    pub(crate) fn done(self, written: &str) -> Result<bool, TrustError> {
        self.done_all(&[written])
    }

    /// [`OwnWrite::done`] after writing several files (`hooks import` writes the hooks and
    /// the rules).
    pub(crate) fn done_all(self, written: &[&str]) -> Result<bool, TrustError> {
        let Some(before) = self.before else {
            return Ok(false);
        };
        let now = scan::scan(&self.home, &self.root)?;
        let same = |a: &scan::Scan, b: &scan::Scan| {
            let others = |s: &scan::Scan| {
                s.files
                    .iter()
                    .filter(|f| !written.contains(&f.path.as_str()))
                    .map(|f| (f.path.clone(), f.sha256.clone()))
                    .collect::<Vec<_>>()
            };
            others(a) == others(b)
        };
        if !same(&before, &now) {
            return Ok(false);
        }
        let key = record::key(&self.root)?;
        let entry = review::trusted_now(&now, &self.root);
        record::update(&self.home, |r| {
            r.workspaces.insert(key, entry);
        })?;
        Ok(true)
    }
}
