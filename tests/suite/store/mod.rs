//! The store through the library and the real binary: commits, files, search, forks,
//! concurrency, crash and hostile input.

mod concurrency;
mod crash;
mod hostile;
mod store_basics;
mod store_commit;
mod store_concurrency;
mod store_files;
mod store_plan_fork;
mod store_search;
mod store_session_file;
