//! `memory_store`'s one argument, `items`, defined like every other argument ([`ARGS`]): a
//! batch of 1 to [`MAX_BATCH_ITEMS`] items, each parsed on its own, so one bad item is one
//! refused result, not a refused call.

use super::ItemOp;
use super::args::{item_schema, parse_item};
use crate::args::shape::Shape;
use crate::args::{self, Arg, Field};
use crate::error::{ErrorCode, ValidationError, json_type_name, shown};
use crate::limits::MAX_BATCH_ITEMS;
use crate::tool::Tool;
use serde_json::{Map, Value, json};

/// Each item's own result: its operation, or why it was refused (a path under `items[i]`).
pub type ItemResults = Vec<Result<ItemOp, ValidationError>>;

const EXAMPLE: &str =
    "send {\"items\": [{\"kind\": \"section\", \"data\": {\"title\": \"...\", \"body\": \"...\"}}]}";

/// A batch of at most `max` items.
pub struct Batch {
    pub max: usize,
}

impl Shape for Batch {
    type Out = ItemResults;

    fn schema(&self) -> Map<String, Value> {
        let schema = json!({ "type": "array", "items": item_schema(), "minItems": 1, "maxItems": self.max });
        match schema {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    fn parse(&self, field: &str, value: &Value) -> Result<ItemResults, ValidationError> {
        let Value::Array(items) = value else {
            return Err(ValidationError::new(
                ErrorCode::WrongType,
                field,
                format!("`{field}` must be an array, got {}", json_type_name(value)),
                EXAMPLE,
            ));
        };
        if items.is_empty() {
            return Err(ValidationError::new(
                ErrorCode::Empty,
                field,
                format!("`{field}` is empty"),
                EXAMPLE,
            ));
        }
        if items.len() > self.max {
            return Err(ValidationError::new(
                ErrorCode::TooMany,
                field,
                format!("{} items sent; at most {} fit in one call", items.len(), self.max),
                format!("split the batch into calls of at most {} items", self.max),
            ));
        }
        Ok(items
            .iter()
            .enumerate()
            .map(|(i, item)| parse_item(item).map_err(|e| e.under(&format!("{field}[{i}]"))))
            .collect())
    }
}

pub const ITEMS: Field<Option<ItemResults>, Batch> =
    Field { name: "items", doc: None, shape: Batch { max: MAX_BATCH_ITEMS }, set: |d, v| *d = Some(v) };

/// Every argument `memory_store` takes.
pub static ARGS: [&dyn Arg<Option<ItemResults>>; 1] = [&ITEMS];

/// `memory_store`'s input schema.
pub fn store_schema() -> Value {
    json!({
        "additionalProperties": false,
        "required": ["items"],
        "type": "object",
        "properties": args::properties(&ARGS),
    })
}

/// Validates the request envelope (`items` present, an array, 1..=100) and each item.
/// The outer error is a request-level refusal; inner errors are per item, with paths like
/// `items[2].data.rationale`.
pub fn parse_store_request(value: &Value) -> Result<ItemResults, ValidationError> {
    let Value::Object(object) = value else {
        return Err(ValidationError::wrong_type("arguments", "an object with `items`", value));
    };
    let mut items = None;
    args::parse_object(&ARGS, object, &mut items, unknown)?;
    items.ok_or_else(|| ValidationError::missing(ITEMS.name, EXAMPLE))
}

fn unknown(key: &str) -> ValidationError {
    let key = shown(key);
    ValidationError::new(
        ErrorCode::UnknownField,
        key.clone(),
        format!("`{key}` is not a {} argument", Tool::Store),
        format!(
            "{} takes only `items`; per-item options (idempotency_key, ttl, dedupe, ...) go inside each item",
            Tool::Store
        ),
    )
}
