//! Test support shared by every crate's tests: a fresh, empty database of each backend, the
//! `per_backend!` macro that runs one test body against all of them, and raw SQL
//! ([`TestDb::execute_raw`]) for tests that check what the database itself refuses or keeps —
//! outside the product's store contract on purpose.
//!
//! PostgreSQL tests need a server: `CORTEX_TEST_DATABASE_URL` names it (the test command,
//! `scripts/test`, starts a throw-away one with `scripts/postgres`). Each test gets its own
//! database, created from that URL and dropped when the test ends. Without the variable a
//! PostgreSQL test fails with a message saying how to run it: a backend is never skipped
//! silently.

pub mod fuzz;
pub mod git;
mod interleave;

pub use interleave::Interleaved;

use cortex_store::{DbTarget, PoolConfig, Store};
use std::path::PathBuf;
use std::sync::Arc;

/// The variable naming the PostgreSQL server the tests use.
pub const DATABASE_URL_VAR: &str = "CORTEX_TEST_DATABASE_URL";

/// Set (to anything but empty) when that URL names a pooler in transaction mode in front of the
/// server (`scripts/test` runs the store's suite through PgBouncer so).
pub const POOLED_VAR: &str = "CORTEX_TEST_POOLED";

/// Whether the tests' PostgreSQL connections go through a pooler: a server connection then
/// serves several of the test's connections, and is not one of them.
pub fn pooled() -> bool {
    std::env::var(POOLED_VAR).is_ok_and(|v| !v.trim().is_empty())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// One fresh database; dropping it removes it (the temp folder, or `DROP DATABASE`).
pub struct TestDb {
    backend: Backend,
    target: DbTarget,
    _keep: Keep,
}

/// Held only for what its `Drop` does.
#[allow(dead_code)]
enum Keep {
    Folder(tempfile::TempDir),
    Database(Dropper),
}

impl TestDb {
    pub fn new(backend: Backend) -> TestDb {
        match backend {
            Backend::Sqlite => TestDb::sqlite(),
            Backend::Postgres => TestDb::postgres(),
        }
    }

    pub fn sqlite() -> TestDb {
        let dir = tempfile::tempdir().expect("a temp folder for the test database");
        let target = DbTarget::Sqlite(dir.path().join("memory.db"));
        TestDb { backend: Backend::Sqlite, target, _keep: Keep::Folder(dir) }
    }

    pub fn postgres() -> TestDb {
        let server = server_url();
        let name = format!("cortex_t_{}", uuid::Uuid::now_v7().simple());
        admin(&server)
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("cannot create a test database on {DATABASE_URL_VAR}: {e}"));
        let url = with_database(&server, &name);
        let target = DbTarget::Postgres { url, read_url: None, pool: PoolConfig { size: 4 } };
        TestDb { backend: Backend::Postgres, target, _keep: Keep::Database(Dropper { server, name }) }
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// What `--db` would be given to reach this database.
    pub fn target(&self) -> &DbTarget {
        &self.target
    }

    /// The `--db` / `CORTEX_DB` text for this database.
    pub fn db_arg(&self) -> String {
        match &self.target {
            DbTarget::Sqlite(path) => path.display().to_string(),
            DbTarget::Postgres { url, .. } => url.clone(),
        }
    }

    /// The SQLite file, for tests about files; `None` on PostgreSQL.
    pub fn sqlite_path(&self) -> Option<PathBuf> {
        match &self.target {
            DbTarget::Sqlite(path) => Some(path.clone()),
            DbTarget::Postgres { .. } => None,
        }
    }

    /// Opens a new handle on the database, as another process would.
    pub fn open(&self) -> Arc<dyn Store> {
        cortex_store::open(&self.target)
            .unwrap_or_else(|e| panic!("opening the {:?} test store: {e}", self.backend))
    }
}

impl TestDb {
    /// Runs raw SQL on its own connection, outside every rule of the service, and returns the
    /// rows it changed; `Err` carries the database's message (for tests of what it refuses).
    /// A `String` on purpose: the tests compare the words either backend's database used.
    pub fn execute_raw(&self, sql: &str) -> Result<u64, String> {
        match &self.target {
            DbTarget::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path).map_err(|e| e.to_string())?;
                conn.busy_timeout(std::time::Duration::from_secs(10)).map_err(|e| e.to_string())?;
                // Raw SQL as Cortex's own connections run it: the audit triggers need the
                // chain's hash function (a tool without it cannot change items at all).
                cortex_store::sqlite::register_functions(&conn).map_err(|e| e.to_string())?;
                conn.execute(sql, []).map(|n| n as u64).map_err(|e| e.to_string())
            }
            DbTarget::Postgres { url, .. } => {
                admin(url).execute_typed(sql, &[]).map_err(|e| match e.as_db_error() {
                    Some(db) => format!("{e}: {}", db.message()),
                    None => e.to_string(),
                })
            }
        }
    }
}

/// The database's write lock, held from a connection of its own until dropped: every writing
/// transaction of the store waits for it (SQLite: `BEGIN IMMEDIATE`, each writer up to its
/// busy timeout; PostgreSQL: `LOCK TABLE items IN EXCLUSIVE MODE`, which still lets reads
/// through). For tests of what the server does while its writes are stuck in the database.
pub struct WritesBlocked {
    // Held only for what dropping it does: the connection's open transaction ends.
    _held: Held,
}

#[allow(dead_code)]
enum Held {
    Sqlite(rusqlite::Connection),
    Postgres(Box<postgres::Client>),
}

impl TestDb {
    pub fn block_writes(&self) -> WritesBlocked {
        let held = match &self.target {
            DbTarget::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path).expect("a connection to the test file");
                conn.execute_batch("BEGIN IMMEDIATE").expect("the write lock of the test file");
                Held::Sqlite(conn)
            }
            DbTarget::Postgres { url, .. } => {
                let mut client = admin(url);
                client
                    .batch_execute("BEGIN; LOCK TABLE items IN EXCLUSIVE MODE")
                    .expect("an exclusive lock on the test database's items");
                Held::Postgres(Box::new(client))
            }
        };
        WritesBlocked { _held: held }
    }

    /// PostgreSQL: how many of this database's sessions wait for a lock now (the writers
    /// [`TestDb::block_writes`] stopped, each holding its pooled connection); `None` on SQLite,
    /// whose waiting writers hold no connection of a pool.
    pub fn sessions_waiting_on_locks(&self) -> Option<i64> {
        let DbTarget::Postgres { url, .. } = &self.target else { return None };
        let row = admin(url)
            .query_typed_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                 AND wait_event_type = 'Lock'",
                &[],
            )
            .expect("pg_stat_activity of the test database");
        Some(row.get(0))
    }
}

struct Dropper {
    server: String,
    name: String,
}

impl Drop for Dropper {
    fn drop(&mut self) {
        // FORCE: a pool of the test may still hold connections.
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        if let Err(e) = admin(&self.server).batch_execute(&sql) {
            eprintln!("could not drop the test database {}: {e}", self.name);
        }
    }
}

fn server_url() -> String {
    match std::env::var(DATABASE_URL_VAR) {
        Ok(url) if !url.trim().is_empty() => url.trim().to_string(),
        _ => panic!(
            "{DATABASE_URL_VAR} is not set: the PostgreSQL half of this test needs a server. \
             Run the whole suite with `scripts/test` (it starts one), or start one with \
             `export {DATABASE_URL_VAR}=$(scripts/postgres start)`."
        ),
    }
}

fn admin(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls)
        .unwrap_or_else(|e| panic!("cannot connect to {DATABASE_URL_VAR}: {e}"))
}

/// `url` with its database name replaced by `name` (query parameters kept).
pub fn with_database(url: &str, name: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((head, query)) => (head, Some(query)),
        None => (url, None),
    };
    let (scheme, rest) = head.split_once("://").unwrap_or(("postgres", head));
    let authority = rest.split_once('/').map_or(rest, |(authority, _)| authority);
    let mut out = format!("{scheme}://{authority}/{name}");
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// Runs each listed test function (taking `&TestDb`) once per backend, as
/// `<test>::sqlite` and `<test>::postgres`.
#[macro_export]
macro_rules! per_backend {
    ($($test:ident),* $(,)?) => {
        $(
            mod $test {
                #[test]
                fn sqlite() {
                    super::$test(&$crate::TestDb::sqlite());
                }
                #[test]
                fn postgres() {
                    super::$test(&$crate::TestDb::postgres());
                }
            }
        )*
    };
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn the_database_name_is_replaced_and_the_rest_kept() {
        assert_eq!(
            with_database("postgres://u:p@h:5/db?sslmode=disable", "t"),
            "postgres://u:p@h:5/t?sslmode=disable"
        );
        assert_eq!(with_database("postgres://u@h:5", "t"), "postgres://u@h:5/t");
    }
}
