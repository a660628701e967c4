//! The columns of `items` that a stored item is read from and written to, defined once for
//! both backends. Each backend reads a row by [`Col::at`] and writes one value per [`Col`]
//! with an exhaustive `match` (`sqlite/row.rs`, `sqlite/write.rs`, `postgres/row.rs`,
//! `postgres/write.rs`), so a column added here fails to compile until both backends read and
//! write it; the SQL stays plain text, generated from this list. The columns a row holds for
//! the database's own use (`natural_key`, `link_from`, `link_to`, PostgreSQL's `embedding`) are
//! written after these, by each backend.
//!
//! Adding a column: a migration per backend (`migrations/{sqlite,postgres}`), a line here, a
//! field of `Record` or `StoredItem` (`model.rs`), its arm in the four backend files, and the
//! transfer format's line (`service/src/transfer/format.rs`, which destructures the record).

/// Declares [`Col`] and the SQL lists it is read and written with, from one list of
/// `Variant = "column"` pairs in row order.
macro_rules! item_columns {
    ($first:ident = $first_name:literal $(, $col:ident = $name:literal)* $(,)?) => {
        /// One column of `items` as a stored item is read and written; declared in row order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Col {
            $first,
            $($col),*
        }

        impl Col {
            /// Every column, in row order.
            pub const ALL: [Col; COLUMN_COUNT] = [Col::$first $(, Col::$col)*];
        }

        /// The columns [`Col::at`] reads, in order, prefixed with the table alias `i`.
        pub const COLUMNS: &str = concat!("i.", $first_name $(, ", i.", $name)*);

        /// The same columns without an alias: the start of an insert's column list.
        pub const NAMES: &str = concat!($first_name $(, ", ", $name)*);

        /// How many columns a stored item is read from.
        pub const COLUMN_COUNT: usize = [$first_name $(, $name)*].len();
    };
}

// The seven scope columns stay together, `org` first: `scope_at` reads them from `Col::Org`.
item_columns! {
    Id = "id",
    Kind = "kind",
    Org = "org",
    Project = "project",
    Branch = "branch",
    Service = "service",
    Sprint = "sprint",
    Tenant = "tenant",
    Environment = "environment",
    Title = "title",
    Body = "body",
    Content = "content",
    Data = "data",
    Metadata = "metadata",
    Source = "source",
    Tags = "tags",
    Status = "status",
    ContentHash = "content_hash",
    IdempotencyKey = "idempotency_key",
    Ttl = "ttl",
    CreatedAt = "created_at",
    UpdatedAt = "updated_at",
    ExpiresAt = "expires_at",
    DeletedAt = "deleted_at",
    SupersededBy = "superseded_by",
    OccurredAt = "occurred_at",
    GovernedSince = "governed_since",
    Author = "author",
}

impl Col {
    /// The column's position in a row read with [`COLUMNS`].
    pub const fn at(self) -> usize {
        self as usize
    }
}

/// `INSERT INTO items (<every column>, <extra>) VALUES (<values>)`, with `<extra>` the
/// backend's own columns written after them and placeholders numbered from 1 after `mark`
/// (`$` for PostgreSQL, `?` for SQLite). `value` turns a column's placeholder into the
/// expression written for it (a default the backend computes, say), or returns it as is.
pub fn insert_sql(extra: &[&str], mark: char, value: impl Fn(Col, String) -> String) -> String {
    let columns = Col::ALL.iter().enumerate().map(|(i, &col)| value(col, format!("{mark}{}", i + 1)));
    let extras = (COLUMN_COUNT + 1..=COLUMN_COUNT + extra.len()).map(|n| format!("{mark}{n}"));
    let values: Vec<String> = columns.chain(extras).collect();
    let extra: String = extra.iter().map(|name| format!(", {name}")).collect();
    format!("INSERT INTO items ({NAMES}{extra}) VALUES ({})", values.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lists_follow_the_declared_order() {
        assert_eq!(Col::ALL.len(), COLUMN_COUNT);
        assert!(Col::ALL.iter().enumerate().all(|(i, col)| col.at() == i));
        assert!(COLUMNS.starts_with("i.id, i.kind, i.org"));
        assert!(COLUMNS.ends_with("i.governed_since, i.author"));
        assert_eq!(COLUMNS.split(", ").count(), COLUMN_COUNT);
        assert_eq!(
            insert_sql(&["natural_key"], '?', |_, value| value),
            format!("INSERT INTO items ({NAMES}, natural_key) VALUES (?1, {}, ?29)", {
                (2..=28).map(|n| format!("?{n}")).collect::<Vec<_>>().join(", ")
            })
        );
        let defaulted = insert_sql(&[], '$', |col, value| match col {
            Col::Author => format!("coalesce({value}, 'x')"),
            _ => value,
        });
        assert!(defaulted.ends_with("$27, coalesce($28, 'x'))"), "{defaulted}");
    }
}
