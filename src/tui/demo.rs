//! `neocode demo`: a throwaway home and workspace filled from the session files shipped in
//! `assets/demo/`, so a newcomer (and the screenshots) see a living app; the workspace holds
//! a tiny project ([`WORKSPACE_FILES`]) that the demo model's turns read, edit and test.

use std::path::PathBuf;

use crate::runtime::{Location, Sessions};
use crate::session::WorkspacePaths;
use crate::session::file::{self, SessionFile, rfc3339};

/// The shipped session files, in name order.
pub(crate) const FILES: &[(&str, &str)] = &[
    (
        "01-bugfix.json",
        include_str!("../../assets/demo/01-bugfix.json"),
    ),
    (
        "02-plan.json",
        include_str!("../../assets/demo/02-plan.json"),
    ),
    (
        "03-image.json",
        include_str!("../../assets/demo/03-image.json"),
    ),
    (
        "04-long.json",
        include_str!("../../assets/demo/04-long.json"),
    ),
    (
        "05-fork.json",
        include_str!("../../assets/demo/05-fork.json"),
    ),
    (
        "06-failed.json",
        include_str!("../../assets/demo/06-failed.json"),
    ),
    (
        "07-cancelled.json",
        include_str!("../../assets/demo/07-cancelled.json"),
    ),
    // A real plan run (tests/suite/agent/plan_run.rs `generate_plan_demo`): the plan session,
    // then its step conversations, imported after it as its children.
    (
        "08-plan-run.json",
        include_str!("../../assets/demo/08-plan-run.json"),
    ),
    (
        "08-plan-run-survey.json",
        include_str!("../../assets/demo/08-plan-run-survey.json"),
    ),
    (
        "08-plan-run-flag.json",
        include_str!("../../assets/demo/08-plan-run-flag.json"),
    ),
    (
        "08-plan-run-docs.json",
        include_str!("../../assets/demo/08-plan-run-docs.json"),
    ),
    (
        "08-plan-run-test.json",
        include_str!("../../assets/demo/08-plan-run-test.json"),
    ),
    (
        "08-plan-run-review.json",
        include_str!("../../assets/demo/08-plan-run-review.json"),
    ),
];

/// The demo workspace's project: a greeting script with a typo and its tests, which the demo
/// model (`runtime::provider::demo`) reads, fixes and runs.
pub(crate) const WORKSPACE_FILES: &[(&str, &str)] = &[
    (
        "README.md",
        "# greet\n\nA tiny demo project: `greet.sh NAME` prints a greeting, `sh test.sh` checks it.\n\n\
         The demo model (scripted, no network) works on these files with the real tools: ask it to\n\
         `fix the bug`, `run the tests` or `/plan make greet.sh greet politely`.\n",
    ),
    (
        "greet.sh",
        "#!/bin/sh\n# Prints a greeting for the name given (default: world).\nname=\"${1:-world}\"\n\
         echo \"Helo, $name!\"\n",
    ),
    (
        "test.sh",
        "#!/bin/sh\n# The tests of greet.sh: sh test.sh\nfail=0\ncheck() {\n\
         \x20   got=$(sh greet.sh \"$1\")\n\
         \x20   if [ \"$got\" = \"$2\" ]; then echo \"ok   greet '$1'\"; \
         else echo \"FAIL greet '$1': got '$got', want '$2'\"; fail=1; fi\n}\n\
         check \"\" \"Hello, world!\"\ncheck Ada \"Hello, Ada!\"\n\
         [ $fail = 0 ] && echo \"2 passed\"\nexit $fail\n",
    ),
];

/// The file in a demo's home that marks it as one: a kept demo reopened keeps its demo model.
const MARKER: &str = "DEMO";

/// Whether `home` is a demo's home (made by [`prepare`]).
pub(crate) fn is_demo_home(home: &std::path::Path) -> bool {
    home.join(MARKER).is_file()
}

/// A prepared demo: where its data lives. The folder is removed when this is dropped unless
/// `keep` is set.
#[derive(Debug)]
pub(crate) struct Demo {
    /// Home and workspace of the demo.
    pub location: Location,
    /// The throwaway folder holding both.
    pub dir: PathBuf,
    /// Leave the folder on disk when dropped.
    pub keep: bool,
}

impl Drop for Demo {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Creates the throwaway home + workspace under the system temp folder and imports every
/// shipped demo session.
pub(crate) fn prepare(keep: bool) -> anyhow::Result<Demo> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("neocode-demo-{}-{nanos:08x}", std::process::id()));
    let home = dir.join("home");
    let workspace = dir.join("workspace");
    std::fs::create_dir_all(&workspace)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", workspace.display()))?;
    // From here on the folder is removed again if anything fails.
    let demo = Demo {
        location: Location {
            paths: WorkspacePaths::resolve(&home, &workspace).map_err(anyhow::Error::msg)?,
            home,
        },
        dir,
        keep,
    };
    for (name, text) in WORKSPACE_FILES {
        let path = workspace.join(name);
        std::fs::write(&path, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    let sessions = Sessions::open(&demo.location)?;
    let marker = demo.location.home.join(MARKER);
    std::fs::write(
        &marker,
        "A neocode demo home: its conversations talk to the scripted demo model.\n",
    )
    .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", marker.display()))?;
    load_into(&sessions, crate::session::now_ms())?;
    Ok(demo)
}

/// Imports the shipped sessions into `sessions`, shifting every timestamp so the newest activity is
/// three minutes before `now_ms` (order kept); parents are imported before their forks.
/// Returns the imported ids.
pub fn load_into(sessions: &Sessions, now_ms: i64) -> anyhow::Result<Vec<String>> {
    let mut docs: Vec<SessionFile> = Vec::new();
    for (name, text) in FILES {
        docs.push(file::parse(text).map_err(|e| anyhow::anyhow!("demo file {name}: {e}"))?);
    }
    let ms = |s: &str| {
        chrono::DateTime::parse_from_rfc3339(s)
            .map(|d| d.timestamp_millis())
            .unwrap_or(0)
    };
    let newest = docs
        .iter()
        .map(|d| ms(&d.session.updated_at))
        .max()
        .unwrap_or(now_ms);
    let delta = now_ms - 3 * 60_000 - newest;
    let shift = |s: &mut String| *s = rfc3339(ms(s) + delta);
    for d in &mut docs {
        shift(&mut d.session.created_at);
        shift(&mut d.session.updated_at);
        for m in &mut d.messages {
            shift(&mut m.created_at);
        }
        for a in &mut d.assets {
            shift(&mut a.created_at);
        }
        if let Some(l) = d.session.ledger.as_mut()
            && let Some(t) = l.started_at_ms.as_mut()
        {
            *t += delta;
        }
    }
    // Parents before forks.
    docs.sort_by_key(|d| d.session.parent_id.is_some());
    let mut ids = Vec::new();
    for d in &docs {
        ids.push(sessions.import(d, false)?.id);
    }
    Ok(ids)
}
