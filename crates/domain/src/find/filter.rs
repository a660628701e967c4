//! What a find keeps: its filters, one argument each, defined here once. A filter is a field
//! of [`FindFilter`] and its argument's definition below (name, description, shape — so the
//! input schema, the parse and docs/TOOLS.md follow it); everything else that must consider a
//! filter destructures [`FindFilter`], so a new field does not compile until it is handled:
//! the cursor's fingerprint (`cursor.rs`), the store's filter rule
//! (`cortex_store::Filters::with_find_filter`, rendered by every engine) and the hints of a
//! find with few hits ([`FindFilter::narrowing`]).

use super::args::{Draft, FindField};
use crate::args::Arg;
use crate::args::shape::{Custom, Flag, Kinds, TagFilter, Text, When, schemas};
use crate::error::{ErrorCode, ValidationError};
use crate::kind::Kind;
use crate::limits::MAX_TAGS;
use crate::time::Moment;
use serde_json::Value;

/// The filters of a find: which items may be hits. Every field at its default keeps
/// everything live, current and not expired.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FindFilter {
    /// Only these kinds (none: every kind).
    pub types: Vec<Kind>,
    /// Updated at or after this moment; an age stays an age, counted back from when the
    /// search runs, so every page of one search means the same thing.
    pub since: Option<Moment>,
    /// Updated before this moment.
    pub until: Option<Moment>,
    /// Every one of these tags, lowercased.
    pub tags: Vec<String>,
    /// The kind's status, as a word (`accepted`, `in_progress`).
    pub status: Option<String>,
    /// Who wrote the item's current version ([`Author`]).
    pub author: Option<Author>,
    /// Also items a newer item superseded (they carry `superseded_by`).
    pub include_superseded: bool,
    /// Also expired items (until a purge removes them).
    pub include_expired: bool,
}

pub const TYPES: FindField<Kinds> = FindField {
    name: "types",
    doc: Some("Kinds to keep. Without query or ids: the newest items of these kinds."),
    shape: Kinds,
    set: |d, v| d.filter().types = v,
};
pub const SINCE: FindField<When> = FindField {
    name: "since",
    doc: Some("Age (36h, 7d, 2w), RFC 3339 or YYYY-MM-DD, on updated time."),
    shape: When,
    set: |d, v| d.filter().since = Some(v),
};
pub const UNTIL: FindField<When> =
    FindField { name: "until", doc: None, shape: When, set: |d, v| d.filter().until = Some(v) };
pub const TAGS: FindField<TagFilter> = FindField {
    name: "tags",
    doc: Some("Hits must carry all of these."),
    shape: TagFilter { max: MAX_TAGS },
    set: |d, v| d.filter().tags = v,
};
pub const STATUS: FindField<Text> = FindField {
    name: "status",
    doc: Some("The kind's status, e.g. accepted, open."),
    shape: Text,
    set: |d, v| d.filter().status = Some(status_word(&v)),
};
pub const AUTHOR: FindField<Custom<Author>> = FindField {
    name: "author",
    doc: Some("Writer: principal (key:org/name, oauth:…, local:user) or claimed agent. Exact."),
    shape: Custom { schema: schemas::string, parse: Author::parse_json },
    set: |d, v| d.filter().author = Some(v),
};
pub const INCLUDE_SUPERSEDED: FindField<Flag> = FindField {
    name: "include_superseded",
    doc: Some("Also return items a newer item superseded."),
    shape: Flag,
    set: |d, v| d.filter().include_superseded = v,
};
pub const INCLUDE_EXPIRED: FindField<Flag> = FindField {
    name: "include_expired",
    doc: Some("Also return expired items not purged yet."),
    shape: Flag,
    set: |d, v| d.filter().include_expired = v,
};

/// Every filter's argument; each is listed in `memory_find`'s arguments too (a test holds it).
pub static FILTERS: [&dyn Arg<Draft>; 8] =
    [&TYPES, &SINCE, &UNTIL, &TAGS, &STATUS, &AUTHOR, &INCLUDE_SUPERSEDED, &INCLUDE_EXPIRED];

/// Who wrote an item, as a find names them. The server records the principal that wrote each
/// version (`cortex_domain::principal`'s text); the client may claim an agent (`source.actor`),
/// taken as sent. A text in a principal's form can only mean the recorded principal, so a
/// client cannot pass as one by claiming its name as its agent; any other text is an agent's
/// name. Both compare exactly (case and all).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Author {
    /// The principal recorded on the item's current version.
    Principal(String),
    /// The agent the writer of the current version claimed.
    Agent(String),
}

impl Author {
    /// `text`, trimmed, as the author it names; `None` when it is empty.
    pub fn parse(text: &str) -> Option<Author> {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        let principal = ["key:", "oauth:", "local:"].iter().any(|p| text.starts_with(p))
            || text == "local"
            || text.starts_with("local (");
        Some(if principal { Author::Principal(text.into()) } else { Author::Agent(text.into()) })
    }

    /// The text as the caller wrote it (trimmed).
    pub fn as_str(&self) -> &str {
        match self {
            Author::Principal(t) | Author::Agent(t) => t,
        }
    }

    /// `text` as the `author` argument: refused, naming the argument, when it is empty.
    pub fn parse_arg(text: &str) -> Result<Author, ValidationError> {
        Author::parse(text).ok_or_else(|| {
            ValidationError::new(
                ErrorCode::Empty,
                AUTHOR.name,
                "`author` is empty",
                "name a principal (key:<org>/<name>, oauth:<subject> at <issuer>, local:<user>) or an agent, \
                 or leave `author` out",
            )
        })
    }

    fn parse_json(value: &Value) -> Result<Author, ValidationError> {
        match value {
            Value::String(s) => Author::parse_arg(s),
            other => Err(ValidationError::wrong_type(AUTHOR.name, "a string", other)),
        }
    }
}

/// A status as filters compare it: trimmed, lowercase, words joined by `_` ("In progress" is
/// `in_progress`).
pub fn status_word(text: &str) -> String {
    text.trim().to_ascii_lowercase().replace([' ', '-'], "_")
}

impl FindFilter {
    /// Only items of these kinds.
    pub fn of_types(types: impl IntoIterator<Item = Kind>) -> FindFilter {
        FindFilter { types: types.into_iter().collect(), ..FindFilter::default() }
    }

    /// The filters that narrow a search beyond its kinds, by argument name, for a hint of
    /// what dropping them would find.
    pub fn narrowing(&self) -> Vec<&'static str> {
        let FindFilter {
            types: _,
            since,
            until,
            tags,
            status,
            author,
            include_superseded: _,
            include_expired: _,
        } = self;
        [
            (!tags.is_empty()).then_some(TAGS.name),
            status.is_some().then_some(STATUS.name),
            author.is_some().then_some(AUTHOR.name),
            since.is_some().then_some(SINCE.name),
            until.is_some().then_some(UNTIL.name),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// These filters without the [`narrowing`](Self::narrowing) ones.
    pub fn without_narrowing(&self) -> FindFilter {
        FindFilter { since: None, until: None, tags: Vec::new(), status: None, author: None, ..self.clone() }
    }

    /// The checks of a filter built in the process rather than parsed: the limits the
    /// arguments' parse applies.
    pub(super) fn check(&self) -> Result<(), ValidationError> {
        let FindFilter {
            types: _,
            since: _,
            until: _,
            tags,
            status,
            author,
            include_superseded: _,
            include_expired: _,
        } = self;
        TAGS.shape.check_count(TAGS.name, tags.len())?;
        if let Some(i) = tags.iter().position(|t| t.trim().is_empty()) {
            return Err(ValidationError::new(
                ErrorCode::Empty,
                format!("{}[{i}]", TAGS.name),
                "a tag to filter on is empty",
                "leave the empty tag out",
            ));
        }
        if status.as_deref().is_some_and(|s| s.trim().is_empty()) {
            return Err(ValidationError::new(
                ErrorCode::Empty,
                STATUS.name,
                "`status` is empty",
                "name a status of the kind, such as accepted or open, or leave `status` out",
            ));
        }
        if let Some(author) = author {
            Author::parse_arg(author.as_str())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::find::FindRequest;
    use crate::find::args::ARGS;
    use serde_json::json;

    /// Every filter field set, written out whole: a new field must be added here.
    fn every_filter_set() -> FindFilter {
        FindFilter {
            types: vec![Kind::Decision],
            since: Some(Moment::At(1)),
            until: Some(Moment::At(2)),
            tags: vec!["a".into()],
            status: Some("open".into()),
            author: Some(Author::Principal("key:acme/ci".into())),
            include_superseded: true,
            include_expired: true,
        }
    }

    #[test]
    fn every_filter_is_an_argument_of_memory_find() {
        let names = crate::args::names(&ARGS);
        for filter in &FILTERS {
            assert!(names.contains(&filter.name()), "`{}` is not in memory_find's ARGS", filter.name());
        }
    }

    #[test]
    fn every_filter_changes_the_fingerprint_alone() {
        let base = FindRequest::query("x");
        let all = every_filter_set();
        let each = [
            FindFilter { types: all.types.clone(), ..FindFilter::default() },
            FindFilter { since: all.since, ..FindFilter::default() },
            FindFilter { until: all.until, ..FindFilter::default() },
            FindFilter { tags: all.tags.clone(), ..FindFilter::default() },
            FindFilter { status: all.status.clone(), ..FindFilter::default() },
            FindFilter { author: all.author.clone(), ..FindFilter::default() },
            FindFilter { include_superseded: true, ..FindFilter::default() },
            FindFilter { include_expired: true, ..FindFilter::default() },
        ];
        assert_eq!(each.len(), FILTERS.len());
        for filter in each {
            let changed = FindRequest { filter: filter.clone(), ..base.clone() };
            assert_ne!(changed.fingerprint(), base.fingerprint(), "{filter:?}");
        }
    }

    #[test]
    fn the_parse_fills_every_filter() {
        let parsed = FindRequest::from_json(&json!({
            "query": "x", "types": ["decision"], "since": "1970-01-01T00:00:00.001Z",
            "until": "1970-01-01T00:00:00.002Z", "tags": [" A "], "status": "Open", "author": " key:acme/ci ",
            "include_superseded": true, "include_expired": true,
        }))
        .unwrap();
        assert_eq!(parsed.filter, every_filter_set());
    }

    #[test]
    fn the_narrowing_filters_are_named_as_their_arguments() {
        assert_eq!(every_filter_set().narrowing(), vec!["tags", "status", "author", "since", "until"]);
        assert!(every_filter_set().without_narrowing().narrowing().is_empty());
        assert_eq!(status_word(" In progress"), "in_progress");
    }

    #[test]
    fn an_author_in_a_principals_form_is_the_principal_else_an_agent() {
        assert_eq!(Author::parse(" key:acme/ci "), Some(Author::Principal("key:acme/ci".into())));
        assert_eq!(
            Author::parse("oauth:u-1 at https://id/"),
            Some(Author::Principal("oauth:u-1 at https://id/".into()))
        );
        assert_eq!(Author::parse("local:dana"), Some(Author::Principal("local:dana".into())));
        assert_eq!(
            Author::parse("local (loopback, no key)"),
            Some(Author::Principal("local (loopback, no key)".into()))
        );
        assert_eq!(Author::parse("Claude-Code"), Some(Author::Agent("Claude-Code".into())));
        assert_eq!(Author::parse("localhost-bot"), Some(Author::Agent("localhost-bot".into())));
        assert_eq!(Author::parse("  "), None);
        let empty = FindRequest::from_json(&json!({"query": "x", "author": " "})).unwrap_err();
        assert_eq!(empty.field, "author");
    }
}
