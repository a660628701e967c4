//! The 16 knowledge kinds and, in one table, the rules of each: its fields, which are
//! required, which values an enum field takes, where its title and status come from.
//!
//! Validation of `data` is driven by this table (see [`validate_data`]), so adding a field or
//! a kind is a change here and nowhere else.
//!
//! - [`table`]: the table itself, one entry per kind
//! - [`validate`]: checking `data` against a kind's entry

mod table;
mod validate;

pub use table::DECISION_STATUSES;
pub use validate::validate_data;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use table::SPECS;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Section,
    Runbook,
    Change,
    Issue,
    Decision,
    Todo,
    ReleaseNote,
    Ddl,
    PrContext,
    Entity,
    Relation,
    Observation,
    Incident,
    Release,
    Risk,
    Assumption,
}

impl Kind {
    pub const ALL: [Kind; 16] = [
        Kind::Section,
        Kind::Runbook,
        Kind::Change,
        Kind::Issue,
        Kind::Decision,
        Kind::Todo,
        Kind::ReleaseNote,
        Kind::Ddl,
        Kind::PrContext,
        Kind::Entity,
        Kind::Relation,
        Kind::Observation,
        Kind::Incident,
        Kind::Release,
        Kind::Risk,
        Kind::Assumption,
    ];

    pub fn as_str(self) -> &'static str {
        self.spec().name
    }

    /// Other names agents use for a kind, accepted wherever a kind is (and listed in the
    /// tools' schemas, so a client that validates arguments accepts them too).
    pub const ALIASES: [(&'static str, Kind); 5] = [
        ("adr", Kind::Decision),
        ("doc", Kind::Section),
        ("doc_section", Kind::Section),
        ("pr", Kind::PrContext),
        ("migration", Kind::Ddl),
    ];

    /// Parses a kind name or alias, in any case, with `-` for `_` (`ADR`, `pr-context`).
    pub fn parse(name: &str) -> Option<Kind> {
        let norm = name.trim().to_ascii_lowercase().replace('-', "_");
        Kind::ALL
            .into_iter()
            .find(|k| k.as_str() == norm)
            .or_else(|| Kind::ALIASES.iter().find(|(alias, _)| *alias == norm).map(|(_, k)| *k))
    }

    pub fn names() -> String {
        Kind::ALL.map(Kind::as_str).join(", ")
    }

    pub fn spec(self) -> &'static KindSpec {
        &SPECS[self as usize]
    }
}

impl std::fmt::Display for Kind {
    /// Honours width and alignment (`{:<12}`), so a kind lines up in a table.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// What one `data` field must hold.
#[derive(Debug, Clone, Copy)]
pub enum FieldType {
    /// A one-line text such as a title or a version (≤ 512 characters).
    Short,
    /// Free text (≤ 256 KiB).
    Text,
    /// One of the listed values, compared case-insensitively and stored lowercase.
    Enum(&'static [&'static str]),
    /// A whole number ≥ 1.
    PositiveInt,
    /// `YYYY-MM-DD` or an RFC 3339 timestamp.
    Date,
    /// A list of short texts.
    ShortList,
    /// A runbook's steps: `[{description, command?, expected_outcome?}]`.
    Steps,
    /// A UUID of another item.
    ItemId,
    /// Another item: a UUID string, or `{entity_type, name}` naming an entity.
    ItemRef,
}

#[derive(Debug)]
pub struct FieldSpec {
    pub name: &'static str,
    pub ty: FieldType,
    pub required: bool,
    /// Whether its text is part of the searchable body. A label kept as structured data (a
    /// commit's author and hash) is not: its words would match queries about anything else.
    pub searchable: bool,
}

/// How an item's title is derived from its `data`.
#[derive(Debug)]
pub enum TitleRule {
    /// The value of one field.
    Field(&'static str),
    /// The listed fields' values joined by a space.
    Join(&'static [&'static str]),
    /// The first field's value when it is set, else the listed fields' values joined.
    FieldOr(&'static str, &'static [&'static str]),
}

impl TitleRule {
    /// Whether `field` makes the title (so it is not repeated in the searchable body).
    pub fn uses(&self, field: &str) -> bool {
        match self {
            TitleRule::Field(f) => *f == field,
            TitleRule::Join(fields) => fields.contains(&field),
            TitleRule::FieldOr(f, fields) => *f == field || fields.contains(&field),
        }
    }
}

#[derive(Debug)]
pub struct KindSpec {
    pub name: &'static str,
    pub fields: &'static [FieldSpec],
    pub title: TitleRule,
    /// The field whose value is the item's filterable `status`, if the kind has one.
    pub status_field: Option<&'static str>,
    /// Whether the kind needs `data`: kinds whose identity is structured (an entity's name,
    /// a relation's ends) cannot be stored as free `content` alone.
    pub needs_data: bool,
}

/// The title of an item of this kind, from its validated `data`.
pub fn title_from_data(kind: Kind, data: &Map<String, Value>) -> Option<String> {
    let text_of = |field: &str| match data.get(field) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let joined = |fields: &[&str]| {
        let parts: Vec<String> = fields.iter().filter_map(|f| text_of(f)).collect();
        (!parts.is_empty()).then(|| parts.join(" "))
    };
    match &kind.spec().title {
        TitleRule::Field(field) => text_of(field),
        TitleRule::Join(fields) => joined(fields),
        TitleRule::FieldOr(field, fields) => {
            text_of(field).filter(|t| !t.trim().is_empty()).or_else(|| joined(fields))
        }
    }
}

/// The item's filterable status, from its validated `data`.
pub fn status_from_data(kind: Kind, data: &Map<String, Value>) -> Option<String> {
    let field = kind.spec().status_field?;
    data.get(field).and_then(Value::as_str).map(str::to_string)
}
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn specs_are_in_enum_order() {
        for kind in Kind::ALL {
            assert_eq!(Kind::parse(kind.as_str()), Some(kind));
        }
    }

    #[test]
    fn aliases_parse() {
        assert_eq!(Kind::parse("ADR"), Some(Kind::Decision));
        assert_eq!(Kind::parse("release-note"), Some(Kind::ReleaseNote));
        assert_eq!(Kind::parse("nope"), None);
    }

    #[test]
    fn titles_are_derived_per_kind() {
        let data = obj(json!({"version": "1.2.0", "release_type": "minor", "status": "released"}));
        assert_eq!(title_from_data(Kind::Release, &data).as_deref(), Some("1.2.0 minor"));
        assert_eq!(status_from_data(Kind::Release, &data).as_deref(), Some("released"));
        let pr = obj(json!({"pr_number": 7}));
        assert_eq!(title_from_data(Kind::PrContext, &pr), None);
        let change = obj(json!({"change_type": "bugfix", "subject_ref": "0123456789ab", "summary": "x"}));
        assert_eq!(title_from_data(Kind::Change, &change).as_deref(), Some("bugfix 0123456789ab"));
        let titled =
            obj(json!({"change_type": "bugfix", "subject_ref": "0123456789ab", "title": "Fix totals"}));
        assert_eq!(title_from_data(Kind::Change, &titled).as_deref(), Some("Fix totals"));
    }
}
