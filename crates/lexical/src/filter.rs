//! The shared filter rule (`cortex_store::Filters::clauses`) tested on an index segment's fast
//! fields. Each [`Clause`] compiles once per segment into a test on numbers: string values
//! become the segment's term ordinals, so the test of a candidate reads a few columns and
//! compares integers. The match over `Clause` is exhaustive, so a new condition cannot be
//! forgotten here; `tests/agreement.rs` holds the index to the store's own answers.

use crate::LexicalError;
use crate::schema::scope_column;
use cortex_domain::find::Author;
use cortex_store::{Clause, Filters};
use tantivy::columnar::{Column, StrColumn};
use tantivy::{DocId, SegmentReader};

/// One compiled clause.
enum Test {
    /// The doc's value of a single-valued string column is one of `ords`, or it has none and
    /// `or_unset` (an unset scope field is `''` to the rule).
    OneOf {
        column: Option<StrColumn>,
        ords: Vec<u64>,
        or_unset: bool,
    },
    /// The doc holds every one of `ords` (tags).
    AllOf {
        column: StrColumn,
        ords: Vec<u64>,
    },
    /// The doc's branch is `own`, or one of `merged` with the doc created by then (ordinals of
    /// the segment's branch column; an unset branch is `''`, which `own_unset` says).
    BranchWithMerged {
        column: Option<StrColumn>,
        own: Option<u64>,
        own_unset: bool,
        merged: Vec<(u64, i64)>,
        created: Column<i64>,
    },
    AtLeast(Column<i64>, i64),
    Below(Column<i64>, i64),
    Above(Column<i64>, i64),
    Zero(Column<u64>),
}

/// The filters of one search, compiled for one segment.
pub(crate) struct SegmentFilter {
    tests: Vec<Test>,
    /// No doc of the segment can pass (a value the filters need occurs nowhere in it).
    nothing: bool,
}

impl SegmentFilter {
    pub(crate) fn compile(segment: &SegmentReader, filters: &Filters) -> Result<SegmentFilter, LexicalError> {
        let fast = segment.fast_fields();
        let mut tests = Vec::new();
        let mut nothing = false;
        for clause in filters.clauses() {
            let test = match clause {
                // Deleted items are removed from the index.
                Clause::Live => continue,
                Clause::NotSuperseded => Test::Zero(fast.u64("superseded")?),
                Clause::NotExpiredAt(now) => Test::Above(fast.i64("expires_at")?, now),
                Clause::KindIn(kinds) => {
                    let values: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
                    one_of(fast.str("kind")?, &values)?
                }
                Clause::ScopeEquals(field, value) => one_of(fast.str(&scope_column(field))?, &[value])?,
                Clause::ScopeIn(field, values) => {
                    let values: Vec<&str> = values.iter().map(String::as_str).collect();
                    one_of(fast.str(&scope_column(field))?, &values)?
                }
                Clause::BranchWithMerged(branch, merged) => {
                    let column = fast.str(&scope_column("branch"))?;
                    let ord = |value: &str| -> Result<Option<u64>, LexicalError> {
                        match &column {
                            Some(c) if !value.is_empty() => Ok(c.dictionary().term_ord(value.as_bytes())?),
                            _ => Ok(None),
                        }
                    };
                    let own = ord(branch)?;
                    let mut known = Vec::new();
                    for m in merged {
                        if let Some(o) = ord(&m.branch)? {
                            known.push((o, m.until));
                        }
                    }
                    if own.is_none() && !branch.is_empty() && known.is_empty() {
                        nothing = true;
                    }
                    Test::BranchWithMerged {
                        column,
                        own,
                        own_unset: branch.is_empty(),
                        merged: known,
                        created: fast.i64("created_at")?,
                    }
                }
                Clause::UpdatedSince(t) => Test::AtLeast(fast.i64("updated_at")?, t),
                Clause::UpdatedBefore(t) => Test::Below(fast.i64("updated_at")?, t),
                Clause::StatusIs(status) => one_of(fast.str("status")?, &[status])?,
                Clause::AuthorIs(Author::Principal(p)) => one_of(fast.str("author")?, &[p.as_str()])?,
                Clause::AuthorIs(Author::Agent(a)) => one_of(fast.str("agent")?, &[a.as_str()])?,
                Clause::HasTags(tags) => match fast.str("tags")? {
                    None => {
                        nothing = true;
                        continue;
                    }
                    Some(column) => {
                        let mut ords = Vec::with_capacity(tags.len());
                        for tag in tags {
                            match column.dictionary().term_ord(tag.as_bytes())? {
                                Some(ord) => ords.push(ord),
                                None => nothing = true,
                            }
                        }
                        Test::AllOf { column, ords }
                    }
                },
            };
            if let Test::OneOf { ords, or_unset: false, .. } = &test
                && ords.is_empty()
            {
                nothing = true;
            }
            tests.push(test);
        }
        Ok(SegmentFilter { tests, nothing })
    }

    pub(crate) fn passes_nothing(&self) -> bool {
        self.nothing
    }

    pub(crate) fn admits(&self, doc: DocId) -> bool {
        self.tests.iter().all(|test| match test {
            Test::OneOf { column, ords, or_unset } => {
                match column.as_ref().and_then(|c| c.term_ords(doc).next()) {
                    Some(ord) => ords.contains(&ord),
                    None => *or_unset,
                }
            }
            Test::AllOf { column, ords } => {
                let held: Vec<u64> = column.term_ords(doc).collect();
                ords.iter().all(|o| held.contains(o))
            }
            Test::BranchWithMerged { column, own, own_unset, merged, created } => {
                match column.as_ref().and_then(|c| c.term_ords(doc).next()) {
                    None => *own_unset,
                    Some(ord) if Some(ord) == *own => true,
                    Some(ord) => {
                        let at = created.first(doc).unwrap_or(i64::MAX);
                        merged.iter().any(|(o, until)| *o == ord && at <= *until)
                    }
                }
            }
            Test::AtLeast(column, t) => column.first(doc).is_some_and(|v| v >= *t),
            Test::Below(column, t) => column.first(doc).is_some_and(|v| v < *t),
            Test::Above(column, t) => column.first(doc).is_none_or(|v| v > *t),
            Test::Zero(column) => column.first(doc).unwrap_or(0) == 0,
        })
    }
}

/// A test that the doc's value is one of `values` (`''` standing for unset).
fn one_of(column: Option<StrColumn>, values: &[&str]) -> Result<Test, LexicalError> {
    let or_unset = values.iter().any(|v| v.is_empty());
    let mut ords = Vec::new();
    if let Some(column) = &column {
        for value in values.iter().filter(|v| !v.is_empty()) {
            if let Some(ord) = column.dictionary().term_ord(value.as_bytes())? {
                ords.push(ord);
            }
        }
    }
    Ok(Test::OneOf { column, ords, or_unset })
}
