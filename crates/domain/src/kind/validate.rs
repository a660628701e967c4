//! Checking an item's `data` against its kind's entry of the table: unknown fields, required
//! fields, and each field's type (enum values, texts, dates, steps, item references).

use super::FieldType::*;
use super::{FieldSpec, Kind, KindSpec};
use crate::error::{ErrorCode, ValidationError, json_type_name};
use crate::limits::{MAX_DATA_TEXT_BYTES, MAX_SHORT_TEXT_CHARS};
use serde_json::{Map, Value};

/// Checks `data` against the kind's fields and returns it normalized (enum values
/// lowercased, text trimmed). Field paths in errors are relative (`title`, `steps[0].description`).
pub fn validate_data(kind: Kind, data: &Map<String, Value>) -> Result<Map<String, Value>, ValidationError> {
    let spec = kind.spec();
    for key in data.keys() {
        if !spec.fields.iter().any(|f| f.name == key) {
            let key = crate::error::shown(key);
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
                    format!("`{name}` of a {kind} cannot be `{}`", crate::error::shown(&text)),
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
                    format!("`{name}` is not a date: `{}`", crate::error::shown(&text)),
                    hint.to_string(),
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
                    let key = crate::error::shown(key);
                    return Err(ValidationError::new(
                        ErrorCode::UnknownField,
                        format!("{path}.{key}"),
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
                let extra = crate::error::shown(extra);
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
        format!("`{name}` is not an item id: `{}`", crate::error::shown(text)),
        "use the `id` a previous memory_store or memory_find returned (a UUID)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
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
    fn pr_number_must_be_positive() {
        let err = validate_data(
            Kind::PrContext,
            &obj(json!({"pr_number": 0, "title": "t", "status": "open", "base_branch": "main", "head_branch": "f"})),
        )
        .unwrap_err();
        assert_eq!(err.field, "pr_number");
    }
}
