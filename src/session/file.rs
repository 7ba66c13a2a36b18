//! The session file: one session as a single JSON document (format `neocode-session`,
//! version 2; version 1 is still read), lossless both ways, with validation naming the JSON
//! path of the first problem.
//!
//! Version 2 adds what imported history needs: cached-input, cache-write and reasoning token
//! counts, an `injected` flag and a `metadata` object per message, and per session the
//! sub-agent link (apart from the fork link) and the `source` it was imported from. A
//! version 1 file is a version 2 file without them.

mod doc;
mod export;
mod files;
mod prepare;
mod time;
mod validate;

pub use doc::*;
pub use export::export;
pub(crate) use files::{WithFiles, export_files, import_owned};
pub use prepare::import;
pub(crate) use prepare::prepare;
pub use time::rfc3339;
pub use validate::{parse, read, validate};
