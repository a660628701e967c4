//! The JSON shapes a tool argument takes. Each writes its part of the input schema (in the
//! portable subset, see the module above) and parses a value that is present and not null,
//! refusing it with a [`ValidationError`] at the argument's name.

use super::Word;
use crate::error::{ErrorCode, ValidationError, json_type_name, shown};
use crate::kind::Kind;
use crate::scope::{SCOPE_FIELDS, Scope};
use serde_json::{Map, Value, json};
use uuid::Uuid;

/// How an argument looks on the wire: its schema and its parse.
pub trait Shape {
    type Out;
    /// The schema's keywords (the description is the argument's, added before them).
    fn schema(&self) -> Map<String, Value>;
    fn parse(&self, field: &str, value: &Value) -> Result<Self::Out, ValidationError>;
}

fn keywords(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// A string, trimmed and lowercased (a status, a cursor).
pub struct Text;

impl Shape for Text {
    type Out = String;

    fn schema(&self) -> Map<String, Value> {
        keywords(json!({ "type": "string" }))
    }

    fn parse(&self, field: &str, value: &Value) -> Result<String, ValidationError> {
        match value {
            Value::String(s) => Ok(Text::of(s)),
            other => Err(ValidationError::wrong_type(field, "a string", other)),
        }
    }
}

impl Text {
    /// The text as the argument keeps it.
    pub fn of(text: &str) -> String {
        text.trim().to_ascii_lowercase()
    }
}

/// A find's query, as sent, within the query's limits (`query::validate_query`).
pub struct Query;

impl Shape for Query {
    type Out = String;

    fn schema(&self) -> Map<String, Value> {
        Text.schema()
    }

    fn parse(&self, field: &str, value: &Value) -> Result<String, ValidationError> {
        match value {
            Value::String(q) => {
                crate::query::validate_query(q)?;
                Ok(q.clone())
            }
            other => Err(ValidationError::wrong_type(field, "a string", other)),
        }
    }
}

/// One word of a closed list; `hint` says what each means when the list alone does not.
pub struct Words<W: Word> {
    pub hint: Option<&'static str>,
    pub of: std::marker::PhantomData<W>,
}

impl<W: Word> Words<W> {
    /// The words of `W`, refused with the hint "use a, b or c".
    pub const fn plain() -> Words<W> {
        Words { hint: None, of: std::marker::PhantomData }
    }

    /// The words of `W`, refused with `hint`.
    pub const fn with_hint(hint: &'static str) -> Words<W> {
        Words { hint: Some(hint), of: std::marker::PhantomData }
    }
}

impl<W: Word> Shape for Words<W> {
    type Out = W;

    fn schema(&self) -> Map<String, Value> {
        keywords(json!({ "type": "string", "enum": W::words() }))
    }

    fn parse(&self, field: &str, value: &Value) -> Result<W, ValidationError> {
        let text = Text.parse(field, value)?;
        self.parse_str(field, &text)
    }
}

impl<W: Word> Words<W> {
    /// The word `text` names (a form's field, a flag), refused as a sent one is.
    pub fn parse_str(&self, field: &str, text: &str) -> Result<W, ValidationError> {
        let text = Text::of(text);
        W::parse_word(&text).ok_or_else(|| {
            let hint = match self.hint {
                Some(hint) => hint.to_string(),
                None => format!("use {}", W::listed()),
            };
            ValidationError::new(
                ErrorCode::InvalidValue,
                field,
                format!("`{field}` cannot be `{}`", shown(&text)),
                hint,
            )
        })
    }
}

/// A whole number from `min` to `max`; `default` is what an absent one means (the hint says
/// it; the request starts from it).
pub struct Int {
    pub min: i64,
    pub max: i64,
    pub default: i64,
}

impl Shape for Int {
    type Out = i64;

    fn schema(&self) -> Map<String, Value> {
        keywords(json!({ "type": "integer", "maximum": self.max, "minimum": self.min }))
    }

    fn parse(&self, field: &str, value: &Value) -> Result<i64, ValidationError> {
        let Int { min, max, .. } = *self;
        match value {
            Value::Number(n) => match n.as_i64() {
                Some(i) => self.check(field, i),
                None => Err(self.out_of_range(field, value)),
            },
            other => Err(ValidationError::new(
                ErrorCode::WrongType,
                field,
                format!("`{field}` must be a number, got {}", json_type_name(other)),
                format!("send `{field}` as a number between {min} and {max}, without quotes"),
            )),
        }
    }
}

impl Int {
    /// `value` when it is within the bounds, else the refusal the parse gives.
    pub fn check(&self, field: &str, value: i64) -> Result<i64, ValidationError> {
        if (self.min..=self.max).contains(&value) { Ok(value) } else { Err(self.out_of_range(field, value)) }
    }

    fn out_of_range(&self, field: &str, value: impl std::fmt::Display) -> ValidationError {
        let Int { min, max, default } = *self;
        ValidationError::new(
            ErrorCode::InvalidValue,
            field,
            format!("`{field}` must be a whole number from {min} to {max}, got {value}"),
            format!("send `{field}` as a number between {min} and {max} (default {default})"),
        )
    }
}

/// true or false.
pub struct Flag;

impl Shape for Flag {
    type Out = bool;

    fn schema(&self) -> Map<String, Value> {
        keywords(json!({ "type": "boolean" }))
    }

    fn parse(&self, field: &str, value: &Value) -> Result<bool, ValidationError> {
        match value {
            Value::Bool(b) => Ok(*b),
            other => Err(ValidationError::wrong_type(field, "true or false", other)),
        }
    }
}

/// A moment: an age like `7d` or an instant (`time::parse_moment`), resolved when used.
pub struct When;

impl Shape for When {
    type Out = crate::time::Moment;

    fn schema(&self) -> Map<String, Value> {
        Text.schema()
    }

    fn parse(&self, field: &str, value: &Value) -> Result<crate::time::Moment, ValidationError> {
        match value {
            Value::String(s) => self.parse_str(field, s),
            other => Err(ValidationError::wrong_type(field, "an age or a date string", other)),
        }
    }
}

impl When {
    /// The moment `text` names, refused as a sent one is.
    pub fn parse_str(&self, field: &str, text: &str) -> Result<crate::time::Moment, ValidationError> {
        crate::time::parse_moment(text).map_err(|hint| {
            ValidationError::new(
                ErrorCode::InvalidValue,
                field,
                format!("`{field}` is not an age or a date: `{}`", shown(text)),
                hint.to_string(),
            )
        })
    }
}

/// A list of at most `max` item ids.
pub struct Ids {
    pub max: usize,
}

impl Shape for Ids {
    type Out = Vec<Uuid>;

    fn schema(&self) -> Map<String, Value> {
        keywords(json!({ "type": "array", "items": { "type": "string" }, "maxItems": self.max }))
    }

    fn parse(&self, field: &str, value: &Value) -> Result<Vec<Uuid>, ValidationError> {
        let Value::Array(list) = value else {
            return Err(ValidationError::wrong_type(field, "an array of item ids", value));
        };
        self.check_count(field, list.len())?;
        list.iter()
            .enumerate()
            .map(|(i, v)| {
                let at = format!("{field}[{i}]");
                match v {
                    Value::String(s) => Uuid::parse_str(s.trim()).map_err(|_| {
                        ValidationError::new(
                            ErrorCode::InvalidValue,
                            at,
                            format!("`{}` is not an item id", shown(s)),
                            "use ids returned by memory_store or memory_find",
                        )
                    }),
                    other => Err(ValidationError::wrong_type(at, "a UUID string", other)),
                }
            })
            .collect()
    }
}

impl Ids {
    /// Refuses more than `max` ids.
    pub fn check_count(&self, field: &str, count: usize) -> Result<(), ValidationError> {
        if count > self.max {
            return Err(ValidationError::new(
                ErrorCode::TooMany,
                field,
                format!("{count} ids; at most {}", self.max),
                format!("fetch at most {} items per call", self.max),
            ));
        }
        Ok(())
    }
}

/// The schema of one kind's name: the kinds and their aliases (the server also takes them in
/// any case and with `-` for `_`).
fn kind_name_schema() -> Value {
    let names: Vec<&str> =
        Kind::ALL.iter().map(|k| k.as_str()).chain(Kind::ALIASES.iter().map(|(alias, _)| *alias)).collect();
    json!({ "type": "string", "enum": names })
}

fn parse_kind(field: String, name: &str) -> Result<Kind, ValidationError> {
    Kind::parse(name).ok_or_else(|| {
        ValidationError::new(
            ErrorCode::UnknownKind,
            field,
            format!("`{}` is not a knowledge kind", shown(name)),
            format!("use one of: {}", Kind::names()),
        )
    })
}

/// One kind's name.
pub struct KindName;

impl Shape for KindName {
    type Out = Kind;

    fn schema(&self) -> Map<String, Value> {
        keywords(kind_name_schema())
    }

    fn parse(&self, field: &str, value: &Value) -> Result<Kind, ValidationError> {
        match value {
            Value::String(name) => parse_kind(field.to_string(), name),
            other => Err(ValidationError::wrong_type(field, "a string", other)),
        }
    }
}

/// Kinds to keep: a list of kinds' names (one name alone is taken too), each once.
pub struct Kinds;

impl Shape for Kinds {
    type Out = Vec<Kind>;

    fn schema(&self) -> Map<String, Value> {
        keywords(json!({ "type": "array", "items": kind_name_schema() }))
    }

    fn parse(&self, field: &str, value: &Value) -> Result<Vec<Kind>, ValidationError> {
        let one;
        let list = match value {
            Value::Array(list) => list.as_slice(),
            Value::String(_) => {
                one = [value.clone()];
                &one[..]
            }
            other => return Err(ValidationError::wrong_type(field, "an array of kind names", other)),
        };
        let mut kinds = Vec::new();
        for (i, v) in list.iter().enumerate() {
            let at = format!("{field}[{i}]");
            let Value::String(name) = v else {
                return Err(ValidationError::wrong_type(at, "a kind name", v));
            };
            let kind = parse_kind(at, name)?;
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        Ok(kinds)
    }
}

impl Kinds {
    /// Kinds named one by one (a form's or a command line's repeated field), each once,
    /// refused as sent ones are.
    pub fn parse_strs<'a>(
        &self,
        field: &str,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Result<Vec<Kind>, ValidationError> {
        let mut kinds = Vec::new();
        for (i, name) in names.into_iter().enumerate() {
            let kind = parse_kind(format!("{field}[{i}]"), name)?;
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        Ok(kinds)
    }
}

/// Tags a hit must all carry: at most `max` (an item holds no more, so a longer list can
/// match nothing; refusing it also bounds the filter's SQL), trimmed and lowercased.
pub struct TagFilter {
    pub max: usize,
}

impl Shape for TagFilter {
    type Out = Vec<String>;

    fn schema(&self) -> Map<String, Value> {
        keywords(json!({ "type": "array", "items": { "type": "string" }, "maxItems": self.max }))
    }

    fn parse(&self, field: &str, value: &Value) -> Result<Vec<String>, ValidationError> {
        match value {
            Value::Array(list) => {
                self.check_count(field, list.len())?;
                list.iter()
                    .enumerate()
                    .map(|(i, t)| match t {
                        Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_lowercase()),
                        other => Err(ValidationError::wrong_type(
                            format!("{field}[{i}]"),
                            "a non-empty string",
                            other,
                        )),
                    })
                    .collect()
            }
            other => Err(ValidationError::wrong_type(field, "an array of strings", other)),
        }
    }
}

impl TagFilter {
    /// Refuses more tags than an item holds.
    pub fn check_count(&self, field: &str, count: usize) -> Result<(), ValidationError> {
        let max = self.max;
        if count > max {
            return Err(ValidationError::new(
                ErrorCode::TooMany,
                field,
                format!("{count} tags; at most {max}"),
                format!(
                    "a hit must carry every tag given and items hold at most {max}: pass the few tags that matter"
                ),
            ));
        }
        Ok(())
    }

    /// Tags given as text, as the parse keeps them: trimmed, lowercased, the empty ones
    /// left out.
    pub fn parse_strs<'a>(
        &self,
        field: &str,
        tags: impl IntoIterator<Item = &'a str>,
    ) -> Result<Vec<String>, ValidationError> {
        let tags: Vec<String> =
            tags.into_iter().map(|t| t.trim().to_lowercase()).filter(|t| !t.is_empty()).collect();
        self.check_count(field, tags.len())?;
        Ok(tags)
    }
}

/// A scope object (`Scope::from_json`): org, project, branch and the other scope fields.
pub struct ScopeObject;

impl Shape for ScopeObject {
    type Out = Scope;

    fn schema(&self) -> Map<String, Value> {
        let properties: Map<String, Value> =
            SCOPE_FIELDS.iter().map(|f| (f.to_string(), json!({ "type": "string" }))).collect();
        keywords(json!({ "type": "object", "properties": properties, "additionalProperties": false }))
    }

    fn parse(&self, field: &str, value: &Value) -> Result<Scope, ValidationError> {
        Scope::from_json(value).map_err(|e| e.under(field))
    }
}

/// A shape whose parse is its own function: an item's field whose rules live beside the
/// item's (its tags' limits, metadata's depth, …) and whose schema is one of the above.
pub struct Custom<O> {
    pub schema: fn() -> Value,
    pub parse: fn(&Value) -> Result<O, ValidationError>,
}

impl<O> Shape for Custom<O> {
    type Out = O;

    fn schema(&self) -> Map<String, Value> {
        keywords((self.schema)())
    }

    fn parse(&self, _field: &str, value: &Value) -> Result<O, ValidationError> {
        (self.parse)(value)
    }
}

/// Schemas for [`Custom`] shapes.
pub mod schemas {
    use super::*;

    pub fn string() -> Value {
        json!({ "type": "string" })
    }

    pub fn boolean() -> Value {
        json!({ "type": "boolean" })
    }

    /// Free-form JSON object (an item's `data`, checked per kind; its `metadata`).
    pub fn open_object() -> Value {
        json!({ "type": "object" })
    }

    pub fn strings() -> Value {
        json!({ "type": "array", "items": { "type": "string" } })
    }

    pub fn kind_name() -> Value {
        kind_name_schema()
    }

    pub fn scope() -> Value {
        Value::Object(ScopeObject.schema())
    }

    /// A closed object of string fields.
    pub fn closed_strings(fields: &[&str]) -> Value {
        let properties: Map<String, Value> =
            fields.iter().map(|f| (f.to_string(), json!({ "type": "string" }))).collect();
        json!({ "type": "object", "properties": properties, "additionalProperties": false })
    }

    pub fn words<W: Word>() -> Value {
        json!({ "type": "string", "enum": W::words() })
    }
}
