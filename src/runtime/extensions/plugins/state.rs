//! `<home>/plugins.toml`: the plugins installed, where each came from and whether the user
//! enabled it. Written whole to a temporary file renamed over the old one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::manifest::PluginError;

/// One installed plugin's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// Its parts are used (hooks and servers run); false until the user says so.
    pub enabled: bool,
    /// The path or git URL it was added from.
    pub source: String,
}

/// The record of every installed plugin, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct State {
    #[serde(default)]
    pub plugins: BTreeMap<String, Entry>,
}

impl State {
    pub(crate) fn file(home: &Path) -> PathBuf {
        home.join("plugins.toml")
    }

    /// The record (empty when there is no file).
    pub(crate) fn load(home: &Path) -> Result<State, PluginError> {
        let file = State::file(home);
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(State::default()),
            Err(e) => return Err(PluginError::file(&file, crate::session::io_error(&e))),
        };
        toml::from_str(&text).map_err(|e| {
            let first = e.to_string().lines().next().unwrap_or("").to_string();
            PluginError::file(&file, format!("not a plugins record: {first}"))
        })
    }

    /// Writes the record: a temporary file beside it, renamed over it.
    pub(crate) fn save(&self, home: &Path) -> Result<(), PluginError> {
        let file = State::file(home);
        let text = toml::to_string(self).map_err(|e| PluginError::file(&file, e.to_string()))?;
        let tmp = home.join(format!(".plugins.toml.{}.tmp", std::process::id()));
        let io = |e: std::io::Error| PluginError::file(&file, crate::session::io_error(&e));
        std::fs::create_dir_all(home).map_err(io)?;
        std::fs::write(&tmp, text).map_err(io)?;
        std::fs::rename(&tmp, &file).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io(e)
        })
    }

    /// Sets whether `name` is enabled; false when it is not installed.
    pub(crate) fn set_enabled(&mut self, name: &str, enabled: bool) -> bool {
        match self.plugins.get_mut(name) {
            Some(e) => {
                e.enabled = enabled;
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_round_trips_and_a_bad_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(State::load(dir.path()).unwrap(), State::default());
        let mut s = State::default();
        s.plugins.insert(
            "kit".into(),
            Entry {
                enabled: false,
                source: "/x".into(),
            },
        );
        assert!(s.set_enabled("kit", true));
        assert!(!s.set_enabled("other", true));
        s.save(dir.path()).unwrap();
        assert_eq!(State::load(dir.path()).unwrap(), s);
        std::fs::write(State::file(dir.path()), "plugins = 3").unwrap();
        let e = State::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("plugins.toml: not a plugins record"), "{e}");
    }
}
