//! What the server must offer before Cortex touches it: PostgreSQL ≥ 18 (for `uuidv7()`), and
//! the `vector` (pgvector ≥ 0.8, for iterative index scans) and `pg_trgm` extensions. Each gap
//! is reported with how to close it.

use super::conn::{Conn, Sql};
use crate::{Result, StoreError};

const MIN_SERVER: i32 = 180_000;
/// `(extension, minimum version, how to install it on the server)`.
const EXTENSIONS: &[(&str, (u32, u32), &str)] = &[
    (
        "vector",
        (0, 8),
        "install pgvector ≥ 0.8 on the database server (Debian/Ubuntu: `apt install postgresql-18-pgvector`; others: https://github.com/pgvector/pgvector#installation)",
    ),
    (
        "pg_trgm",
        (1, 0),
        "install the PostgreSQL contrib modules on the database server (it ships with PostgreSQL)",
    ),
];

pub fn check(client: &mut Conn, label: &str) -> Result<()> {
    let version: String = client.query_one("SHOW server_version_num", &[])?.try_get(0)?;
    let version: i32 = version.trim().parse().unwrap_or(0);
    if version < MIN_SERVER {
        return Err(StoreError::Unsupported {
            what: format!("{label} runs PostgreSQL {}.{}", version / 10_000, version % 10_000),
            fix: "Cortex needs PostgreSQL 18 or newer: upgrade the server, or leave out --db to use the embedded SQLite store".into(),
        });
    }
    for (name, minimum, install) in EXTENSIONS {
        let row = client.query_opt(
            "SELECT default_version, installed_version FROM pg_available_extensions WHERE name = $1",
            &[name],
        )?;
        let Some(row) = row else {
            return Err(StoreError::Unsupported {
                what: format!("the server at {label} has no `{name}` extension"),
                fix: format!("{install}, then start cortex again"),
            });
        };
        let available: String = row.try_get(0)?;
        let installed: Option<String> = row.try_get(1)?;
        if installed.is_none() {
            client.batch_execute(&format!("CREATE EXTENSION IF NOT EXISTS {name}")).map_err(|e| {
                StoreError::Unsupported {
                    what: format!("cannot create the `{name}` extension in {label}: {}", db_message(&e)),
                    fix: format!("ask a superuser to run `CREATE EXTENSION {name};` in this database, then start cortex again"),
                }
            })?;
        }
        let version = installed.unwrap_or(available);
        if parse_version(&version) < *minimum {
            return Err(StoreError::Unsupported {
                what: format!(
                    "the `{name}` extension in {label} is version {version}, older than {}.{}",
                    minimum.0, minimum.1
                ),
                fix: format!("{install}, then run `ALTER EXTENSION {name} UPDATE;` in this database"),
            });
        }
    }
    Ok(())
}

fn db_message(e: &postgres::Error) -> String {
    e.as_db_error().map_or_else(|| e.to_string(), |db| db.message().to_string())
}

/// `"0.8.1"` → `(0, 8)`; unparsable parts read as 0.
fn parse_version(text: &str) -> (u32, u32) {
    let mut parts = text.split('.').map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    #[test]
    fn versions_compare_by_major_then_minor() {
        assert_eq!(super::parse_version("0.8.1"), (0, 8));
        assert!(super::parse_version("0.7.4") < (0, 8));
        assert!(super::parse_version("1.6") >= (1, 0));
    }
}
