//! The 16 knowledge kinds and, in one table, the rules of each: its fields, which are
//! required, which values an enum field takes, where its title and status come from.
//!
//! Validation of `data` is driven by this table (see [`validate_data`]), so adding a field or
//! a kind is a change here and nowhere else.

use crate::error::{ErrorCode, ValidationError, json_type_name};
use crate::limits::{MAX_DATA_TEXT_BYTES, MAX_SHORT_TEXT_CHARS};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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

    /// Parses a kind name; accepts a few spellings agents use (`adr`, `release-note`).
    pub fn parse(name: &str) -> Option<Kind> {
        let norm = name.trim().to_ascii_lowercase().replace('-', "_");
        let alias = match norm.as_str() {
            "adr" => "decision",
            "doc" | "doc_section" => "section",
            "pr" => "pr_context",
            "migration" => "ddl",
            other => other,
        };
        Kind::ALL.into_iter().find(|k| k.as_str() == alias)
    }

    pub fn names() -> String {
        Kind::ALL.map(Kind::as_str).join(", ")
    }

    pub fn spec(self) -> &'static KindSpec {
        &SPECS[self as usize]
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
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
}

const fn req(name: &'static str, ty: FieldType) -> FieldSpec {
    FieldSpec { name, ty, required: true }
}

const fn opt(name: &'static str, ty: FieldType) -> FieldSpec {
    FieldSpec { name, ty, required: false }
}

/// How an item's title is derived from its `data`.
#[derive(Debug)]
pub enum TitleRule {
    /// The value of one field.
    Field(&'static str),
    /// The listed fields' values joined by a space.
    Join(&'static [&'static str]),
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

use FieldType::*;

pub const DECISION_STATUSES: &[&str] = &["proposed", "accepted", "rejected", "deprecated", "superseded"];
const TODO_STATUSES: &[&str] = &["open", "in_progress", "blocked", "done", "cancelled"];
const PRIORITIES: &[&str] = &["low", "medium", "high", "critical"];
const ISSUE_STATUSES: &[&str] = &["open", "in_progress", "blocked", "resolved", "closed"];
const CHANGE_TYPES: &[&str] = &[
    "feature",
    "bugfix",
    "refactor",
    "config",
    "dependency",
    "schema",
    "docs",
    "performance",
    "security",
    "other",
];
const PR_STATUSES: &[&str] = &["draft", "open", "merged", "closed"];
const SEVERITIES: &[&str] = &["critical", "high", "medium", "low"];
const RESOLUTION_STATUSES: &[&str] = &["open", "investigating", "mitigated", "resolved", "closed"];
const RELEASE_TYPES: &[&str] = &["major", "minor", "patch", "hotfix", "prerelease"];
const RELEASE_STATUSES: &[&str] = &["planned", "in_progress", "released", "rolled_back", "cancelled"];
const RISK_CATEGORIES: &[&str] =
    &["technical", "security", "operational", "performance", "compliance", "schedule", "business"];
const RISK_STATUSES: &[&str] = &["open", "mitigating", "mitigated", "accepted", "closed"];
const VALIDATION_STATUSES: &[&str] = &["unvalidated", "validated", "invalidated", "needs_review"];

/// Indexed by `Kind as usize`: keep in the order of the enum.
static SPECS: [KindSpec; 16] = [
    KindSpec {
        name: "section",
        fields: &[
            req("title", Short),
            opt("heading", Short),
            req("body", Text),
            opt("document", Short),
            opt("status", Enum(&["draft", "review", "approved", "archived"])),
            opt("approved_at", Date),
        ],
        title: TitleRule::Field("title"),
        status_field: Some("status"),
        needs_data: false,
    },
    KindSpec {
        name: "runbook",
        fields: &[
            req("title", Short),
            req("service", Short),
            req("steps", Steps),
            opt("triggers", ShortList),
            opt("last_verified_at", Date),
        ],
        title: TitleRule::Field("title"),
        status_field: None,
        needs_data: false,
    },
    KindSpec {
        name: "change",
        fields: &[
            req("change_type", Enum(CHANGE_TYPES)),
            req("subject_ref", Short),
            req("summary", Text),
            opt("author", Short),
            opt("commit", Short),
        ],
        title: TitleRule::Join(&["change_type", "subject_ref"]),
        status_field: None,
        needs_data: false,
    },
    KindSpec {
        name: "issue",
        fields: &[
            req("tracker", Short),
            req("external_id", Short),
            req("title", Short),
            req("status", Enum(ISSUE_STATUSES)),
            opt("description", Text),
            opt("url", Short),
            opt("assignee", Short),
            opt("labels", ShortList),
        ],
        title: TitleRule::Field("title"),
        status_field: Some("status"),
        needs_data: true,
    },
    KindSpec {
        name: "decision",
        fields: &[
            req("component", Short),
            req("status", Enum(DECISION_STATUSES)),
            req("title", Short),
            req("rationale", Text),
            opt("alternatives_considered", ShortList),
            opt("consequences", Text),
            opt("supersedes", ItemId),
        ],
        title: TitleRule::Field("title"),
        status_field: Some("status"),
        needs_data: false,
    },
    KindSpec {
        name: "todo",
        fields: &[
            req("title", Short),
            req("status", Enum(TODO_STATUSES)),
            opt("priority", Enum(PRIORITIES)),
            opt("due_date", Date),
            opt("assignee", Short),
            opt("description", Text),
        ],
        title: TitleRule::Field("title"),
        status_field: Some("status"),
        needs_data: false,
    },
    KindSpec {
        name: "release_note",
        fields: &[
            req("version", Short),
            req("summary", Text),
            opt("highlights", ShortList),
            opt("breaking_changes", ShortList),
        ],
        title: TitleRule::Join(&["version"]),
        status_field: None,
        needs_data: false,
    },
    KindSpec {
        name: "ddl",
        fields: &[
            req("migration_id", Short),
            req("ddl_text", Text),
            opt("checksum", Short),
            opt("description", Text),
        ],
        title: TitleRule::Field("migration_id"),
        status_field: None,
        needs_data: true,
    },
    KindSpec {
        name: "pr_context",
        fields: &[
            req("pr_number", PositiveInt),
            req("title", Short),
            req("status", Enum(PR_STATUSES)),
            req("base_branch", Short),
            req("head_branch", Short),
            opt("merged_at", Date),
            opt("author", Short),
            opt("description", Text),
        ],
        title: TitleRule::Field("title"),
        status_field: Some("status"),
        needs_data: true,
    },
    KindSpec {
        name: "entity",
        fields: &[req("entity_type", Short), req("name", Short), opt("description", Text)],
        title: TitleRule::Field("name"),
        status_field: None,
        needs_data: true,
    },
    KindSpec {
        name: "relation",
        fields: &[
            req("from", ItemRef),
            req("to", ItemRef),
            req("relation_type", Short),
            opt("description", Text),
        ],
        title: TitleRule::Field("relation_type"),
        status_field: None,
        needs_data: true,
    },
    KindSpec {
        name: "observation",
        fields: &[req("entity", ItemRef), req("text", Text)],
        title: TitleRule::Field("text"),
        status_field: None,
        needs_data: true,
    },
    KindSpec {
        name: "incident",
        fields: &[
            req("title", Short),
            req("severity", Enum(SEVERITIES)),
            req("impact", Text),
            req("resolution_status", Enum(RESOLUTION_STATUSES)),
            opt("root_cause", Text),
            opt("timeline", Text),
            opt("started_at", Date),
            opt("resolved_at", Date),
        ],
        title: TitleRule::Field("title"),
        status_field: Some("resolution_status"),
        needs_data: false,
    },
    KindSpec {
        name: "release",
        fields: &[
            req("version", Short),
            req("release_type", Enum(RELEASE_TYPES)),
            req("status", Enum(RELEASE_STATUSES)),
            opt("released_at", Date),
            opt("notes", Text),
        ],
        title: TitleRule::Join(&["version", "release_type"]),
        status_field: Some("status"),
        needs_data: false,
    },
    KindSpec {
        name: "risk",
        fields: &[
            req("title", Short),
            req("category", Enum(RISK_CATEGORIES)),
            req("risk_level", Enum(PRIORITIES)),
            req("status", Enum(RISK_STATUSES)),
            opt("mitigation", Text),
            opt("owner", Short),
        ],
        title: TitleRule::Field("title"),
        status_field: Some("status"),
        needs_data: false,
    },
    KindSpec {
        name: "assumption",
        fields: &[
            req("title", Short),
            req("description", Text),
            req("validation_status", Enum(VALIDATION_STATUSES)),
            opt("validated_at", Date),
        ],
        title: TitleRule::Field("title"),
        status_field: Some("validation_status"),
        needs_data: false,
    },
];

/// Checks `data` against the kind's fields and returns it normalized (enum values
/// lowercased, text trimmed). Field paths in errors are relative (`title`, `steps[0].description`).
pub fn validate_data(kind: Kind, data: &Map<String, Value>) -> Result<Map<String, Value>, ValidationError> {
    let spec = kind.spec();
    for key in data.keys() {
        if !spec.fields.iter().any(|f| f.name == key) {
            return Err(ValidationError::new(
                ErrorCode::UnknownField,
                key.clone(),
                format!("`{key}` is not a field of a {kind}"),
                format!("{kind} fields are: {}; put free-form extras in `metadata`", field_list(spec)),
            ));
        }
    }
    let mut out = Map::new();
    for field in spec.fields {
        match data.get(field.name) {
            None | Some(Value::Null) => {
                if field.required {
                    return Err(ValidationError::missing(
                        field.name,
                        format!("a {kind} needs: {}", required_list(spec)),
                    ));
                }
            }
            Some(value) => {
                let normalized = check_field(kind, field, value)?;
                out.insert(field.name.to_string(), normalized);
            }
        }
    }
    Ok(out)
}

fn field_list(spec: &KindSpec) -> String {
    spec.fields
        .iter()
        .map(|f| if f.required { f.name.to_string() } else { format!("{}?", f.name) })
        .collect::<Vec<_>>()
        .join(", ")
}

fn required_list(spec: &KindSpec) -> String {
    spec.fields.iter().filter(|f| f.required).map(|f| f.name).collect::<Vec<_>>().join(", ")
}

fn check_field(kind: Kind, field: &FieldSpec, value: &Value) -> Result<Value, ValidationError> {
    let name = field.name;
    match field.ty {
        Short => short_text(name, value).map(Value::String),
        Text => long_text(name, value).map(Value::String),
        Enum(allowed) => {
            let text = short_text(name, value)?.to_ascii_lowercase().replace([' ', '-'], "_");
            if allowed.contains(&text.as_str()) {
                Ok(Value::String(text))
            } else {
                Err(ValidationError::new(
                    ErrorCode::InvalidValue,
                    name,
                    format!("`{name}` of a {kind} cannot be `{text}`"),
                    format!("use one of: {}", allowed.join(", ")),
                ))
            }
        }
        PositiveInt => match value.as_i64() {
            Some(n) if n >= 1 => Ok(Value::from(n)),
            _ => Err(ValidationError::new(
                ErrorCode::InvalidValue,
                name,
                format!("`{name}` must be a whole number ≥ 1, got {value}"),
                format!("send `{name}` as a number, e.g. 42"),
            )),
        },
        Date => {
            let text = short_text(name, value)?;
            crate::time::parse_instant(&text).map_err(|hint| {
                ValidationError::new(
                    ErrorCode::InvalidValue,
                    name,
                    format!("`{name}` is not a date: `{text}`"),
                    hint,
                )
            })?;
            Ok(Value::String(text))
        }
        ShortList => {
            let Value::Array(list) = value else {
                return Err(ValidationError::wrong_type(name, "an array of strings", value));
            };
            let mut out = Vec::with_capacity(list.len());
            for (i, entry) in list.iter().enumerate() {
                out.push(Value::String(short_text(&format!("{name}[{i}]"), entry)?));
            }
            Ok(Value::Array(out))
        }
        Steps => check_steps(value),
        ItemId => {
            let text = short_text(name, value)?;
            uuid::Uuid::parse_str(&text).map_err(|_| not_a_uuid(name, &text))?;
            Ok(Value::String(text.to_ascii_lowercase()))
        }
        ItemRef => check_item_ref(name, value),
    }
}

fn short_text(name: &str, value: &Value) -> Result<String, ValidationError> {
    let Value::String(text) = value else {
        return Err(ValidationError::wrong_type(name, "a string", value));
    };
    let text = text.trim();
    if text.is_empty() {
        return Err(ValidationError::new(
            ErrorCode::Empty,
            name,
            format!("`{name}` is empty"),
            format!("give `{name}` a value, or leave it out if it is optional"),
        ));
    }
    if text.chars().count() > MAX_SHORT_TEXT_CHARS {
        return Err(ValidationError::new(
            ErrorCode::TooLong,
            name,
            format!("`{name}` is longer than {MAX_SHORT_TEXT_CHARS} characters"),
            format!("shorten `{name}`; long text belongs in a text field or `content`"),
        ));
    }
    crate::text::reject_nul(name, text)?;
    Ok(text.to_string())
}

fn long_text(name: &str, value: &Value) -> Result<String, ValidationError> {
    let Value::String(text) = value else {
        return Err(ValidationError::wrong_type(name, "a string", value));
    };
    if text.trim().is_empty() {
        return Err(ValidationError::new(
            ErrorCode::Empty,
            name,
            format!("`{name}` is empty"),
            format!("give `{name}` some text"),
        ));
    }
    if text.len() > MAX_DATA_TEXT_BYTES {
        return Err(ValidationError::new(
            ErrorCode::TooLarge,
            name,
            format!("`{name}` is {} bytes, over the {MAX_DATA_TEXT_BYTES}-byte limit", text.len()),
            "split the text into several items (for example one section per heading)",
        ));
    }
    crate::text::reject_nul(name, text)?;
    Ok(text.clone())
}

fn check_steps(value: &Value) -> Result<Value, ValidationError> {
    let Value::Array(steps) = value else {
        return Err(ValidationError::wrong_type(
            "steps",
            "an array of {description, command?, expected_outcome?}",
            value,
        ));
    };
    if steps.is_empty() {
        return Err(ValidationError::new(
            ErrorCode::Empty,
            "steps",
            "a runbook needs at least one step",
            "send steps as [{\"description\": \"...\", \"command\": \"...\"}]",
        ));
    }
    let mut out = Vec::with_capacity(steps.len());
    for (i, step) in steps.iter().enumerate() {
        let path = format!("steps[{i}]");
        let Value::Object(obj) = step else {
            return Err(ValidationError::wrong_type(
                path,
                "an object {description, command?, expected_outcome?}",
                step,
            ));
        };
        let mut clean = Map::new();
        for (key, v) in obj {
            let field_path = format!("{path}.{key}");
            match key.as_str() {
                "description" => clean.insert(key.clone(), Value::String(long_text(&field_path, v)?)),
                "command" | "expected_outcome" => {
                    clean.insert(key.clone(), Value::String(long_text(&field_path, v)?))
                }
                _ => {
                    return Err(ValidationError::new(
                        ErrorCode::UnknownField,
                        field_path,
                        format!("`{key}` is not a field of a runbook step"),
                        "a step has: description, command?, expected_outcome?",
                    ));
                }
            };
        }
        if !clean.contains_key("description") {
            return Err(ValidationError::missing(
                format!("{path}.description"),
                "every step needs a description of what to do",
            ));
        }
        out.push(Value::Object(clean));
    }
    Ok(Value::Array(out))
}

fn check_item_ref(name: &str, value: &Value) -> Result<Value, ValidationError> {
    match value {
        Value::String(text) => {
            let text = text.trim();
            uuid::Uuid::parse_str(text).map_err(|_| not_a_uuid(name, text))?;
            Ok(Value::String(text.to_ascii_lowercase()))
        }
        Value::Object(obj) => {
            let entity_type = obj.get("entity_type").ok_or_else(|| {
                ValidationError::missing(
                    format!("{name}.entity_type"),
                    "name an entity as {\"entity_type\": \"service\", \"name\": \"billing\"}",
                )
            })?;
            let entity_name = obj.get("name").ok_or_else(|| {
                ValidationError::missing(
                    format!("{name}.name"),
                    "name an entity as {\"entity_type\": \"service\", \"name\": \"billing\"}",
                )
            })?;
            if let Some(extra) = obj.keys().find(|k| *k != "entity_type" && *k != "name") {
                return Err(ValidationError::new(
                    ErrorCode::UnknownField,
                    format!("{name}.{extra}"),
                    format!("`{extra}` is not part of an entity reference"),
                    "an entity reference has exactly entity_type and name",
                ));
            }
            let mut out = Map::new();
            out.insert(
                "entity_type".into(),
                Value::String(short_text(&format!("{name}.entity_type"), entity_type)?),
            );
            out.insert("name".into(), Value::String(short_text(&format!("{name}.name"), entity_name)?));
            Ok(Value::Object(out))
        }
        other => Err(ValidationError::new(
            ErrorCode::WrongType,
            name,
            format!("`{name}` must be an item id or an entity reference, got {}", json_type_name(other)),
            "send a UUID string, or {\"entity_type\": \"service\", \"name\": \"billing\"}",
        )),
    }
}

fn not_a_uuid(name: &str, text: &str) -> ValidationError {
    ValidationError::new(
        ErrorCode::InvalidValue,
        name,
        format!("`{name}` is not an item id: `{text}`"),
        "use the `id` a previous memory_store or memory_find returned (a UUID)",
    )
}

/// The title of an item of this kind, from its validated `data`.
pub fn title_from_data(kind: Kind, data: &Map<String, Value>) -> Option<String> {
    let text_of = |field: &str| match data.get(field) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    match &kind.spec().title {
        TitleRule::Field(field) => text_of(field),
        TitleRule::Join(fields) => {
            let parts: Vec<String> = fields.iter().filter_map(|f| text_of(f)).collect();
            (!parts.is_empty()).then(|| parts.join(" "))
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
    fn decision_missing_rationale_names_the_field() {
        let err = validate_data(
            Kind::Decision,
            &obj(json!({"component": "db", "status": "accepted", "title": "Use PG"})),
        )
        .unwrap_err();
        assert_eq!(err.field, "rationale");
        assert_eq!(err.code, ErrorCode::MissingField);
        assert!(err.human_hint.contains("rationale"));
    }

    #[test]
    fn enum_values_are_normalized_and_checked() {
        let ok = validate_data(Kind::Todo, &obj(json!({"title": "x", "status": "In Progress"}))).unwrap();
        assert_eq!(ok["status"], "in_progress");
        let err = validate_data(Kind::Todo, &obj(json!({"title": "x", "status": "later"}))).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidValue);
        assert!(err.human_hint.contains("done"));
    }

    #[test]
    fn unknown_fields_are_refused_with_the_field_list() {
        let err = validate_data(
            Kind::Entity,
            &obj(json!({"entity_type": "service", "name": "a", "colour": "red"})),
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::UnknownField);
        assert_eq!(err.field, "colour");
        assert!(err.human_hint.contains("metadata"));
    }

    #[test]
    fn runbook_steps_are_checked_per_step() {
        let err = validate_data(
            Kind::Runbook,
            &obj(json!({"title": "t", "service": "s", "steps": [{"description": "a"}, {"command": "ls"}]})),
        )
        .unwrap_err();
        assert_eq!(err.field, "steps[1].description");
    }

    #[test]
    fn item_refs_accept_ids_and_entity_names() {
        let id = uuid::Uuid::now_v7().to_string();
        validate_data(
            Kind::Relation,
            &obj(
                json!({"from": id, "to": {"entity_type": "service", "name": "db"}, "relation_type": "uses"}),
            ),
        )
        .unwrap();
        let err =
            validate_data(Kind::Relation, &obj(json!({"from": "nope", "to": id, "relation_type": "uses"})))
                .unwrap_err();
        assert_eq!(err.field, "from");
    }

    #[test]
    fn titles_are_derived_per_kind() {
        let data = obj(json!({"version": "1.2.0", "release_type": "minor", "status": "released"}));
        assert_eq!(title_from_data(Kind::Release, &data).as_deref(), Some("1.2.0 minor"));
        assert_eq!(status_from_data(Kind::Release, &data).as_deref(), Some("released"));
        let pr = obj(json!({"pr_number": 7}));
        assert_eq!(title_from_data(Kind::PrContext, &pr), None);
    }

    #[test]
    fn pr_number_must_be_positive() {
        let err = validate_data(
            Kind::PrContext,
            &obj(json!({"pr_number": 0, "title": "t", "status": "open", "base_branch": "main", "head_branch": "f"})),
        )
        .unwrap_err();
        assert_eq!(err.field, "pr_number");
    }
}
