use thiserror::Error;

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// What can go wrong inside a store. These are not the caller's fault; the service logs them
/// and reports an internal error.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("postgres: {}", postgres_message(.0))]
    Postgres(#[from] postgres::Error),
    #[error("postgres connection pool: {0}")]
    Pool(#[from] r2d2::Error),
    /// The database server lacks something Cortex needs; `fix` says how to add it.
    #[error("{what}: {fix}")]
    Unsupported { what: String, fix: String },
    #[error("cannot open the database at {path}: {reason}")]
    Open { path: String, reason: String },
    /// The database server cannot be reached, or does not take connections yet (starting,
    /// recovering): worth trying again, unlike a refusal of the URL's user or database.
    #[error("cannot reach the database at {path}: {reason}")]
    Unreachable { path: String, reason: String },
    #[error(
        "migration {version} ({name}) was changed after it was applied (checksum {recorded} in the database, {expected} in this build); refusing to start. Restore the original migration or use a build that matches this database"
    )]
    MigrationChanged { version: i64, name: String, recorded: String, expected: String },
    #[error(
        "the database is at schema version {found}, newer than this build knows ({known}); upgrade cortex"
    )]
    SchemaTooNew { found: i64, known: i64 },
    #[error("corrupt row: {0}")]
    Corrupt(String),
    #[error(
        "the database at {path} is open read-only (this process may not write the file or its folder): finds, stats, export, audit and doctor work; storing, deleting and purging need write access"
    )]
    ReadOnly { path: String },
    #[error(
        "the database at {path} is at schema version {found} and this build needs {known}: migrating needs write access, so open it once as a user who may write the file and its folder"
    )]
    NeedsMigration { path: String, found: i64, known: i64 },
    /// An item a batch was checked against changed before the batch could be written (another
    /// writer got there first): nothing was written.
    #[error(
        "item {id} changed while this write was being checked against it (another writer got there first); nothing was written: read it again and retry"
    )]
    Conflict { id: uuid::Uuid },
}

/// The server's own words (message, detail, hint) where there are some: `postgres::Error`
/// alone displays only "db error".
fn postgres_message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut text = db.message().to_string();
            if let Some(detail) = db.detail() {
                text.push_str(&format!(" ({detail})"));
            }
            if let Some(hint) = db.hint() {
                text.push_str(&format!("; hint: {hint}"));
            }
            text
        }
        None => e.to_string(),
    }
}
