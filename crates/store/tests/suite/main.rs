//! The store's integration tests, one binary (one link): the conformance suite every backend passes,
//! filters, the change log, corrupt rows and a database shared by several stores.

mod change_log;
mod conformance;
mod corrupt_rows;
mod database_clock;
mod filters;
mod governed;
mod item_author;
mod kept_statements;
mod readiness;
mod shared_database;
mod shared_limits;
mod shared_sessions;
