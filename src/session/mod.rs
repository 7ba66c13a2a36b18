//! The session layer: domain model, the workspace SQLite store, migrations, assets, plans and
//! the session file format. It is the only code in neocode that knows SQL, table names or the
//! file layout.

pub(crate) mod doctor;
pub(crate) mod error;
pub mod file;
mod list;
pub(crate) mod model;
pub(crate) mod plan;
mod schema;
pub mod search;
pub mod snapshot;
pub(crate) mod store;
pub(crate) mod workspace;

pub use error::{Result, StoreError, io_error};
pub use list::*;
pub use model::*;
pub use plan::{
    Plan, PlanCounts, PlanError, PlanProgress, Step, StepFailure, StepStatus, StepUpdate,
};
pub use schema::SCHEMA_VERSION;
pub use search::{SEARCH_CANDIDATES, SearchResults};
pub use snapshot::{
    CommandChange, FileChange, FileChangeRow, FileState, Image, Rewind, RewindFile, RewindState,
};
pub use store::imported::ImportedRecord;
pub use store::{
    Clock, NewSession, QueuedMessage, SessionOverview, StepConversation, Store, conversation_key,
    now_ms, validate_id,
};
pub use workspace::{
    HomeError, WorkspaceError, WorkspacePaths, home_dir, private_dir, private_file, workspace_hash,
    workspace_root,
};

#[doc(hidden)]
pub mod testing {
    //! For tests of the store itself: the migration list and the SQL functions a migration
    //! calls (registered on every connection the store opens).
    pub use super::schema::MIGRATIONS;
    pub use super::search::register_functions;
}
