//! `memory_store`'s one argument, `items`, defined like every other argument ([`ARGS`]): a
//! batch of 1 to [`MAX_BATCH_ITEMS`] items, each parsed on its own, so one bad item is one
//! refused result, not a refused call; and the request the batch becomes, [`StoreRequest`],
//! which the CLI, the web UI and the harness also build from typed items.

use super::ItemOp;
use super::args::{item_schema, parse_item};
use crate::args::shape::Shape;
use crate::args::{self, Arg, Field};
use crate::error::{ErrorCode, ValidationError, json_type_name, shown};
use crate::kind::Kind;
use crate::limits::MAX_BATCH_ITEMS;
use crate::tool::Tool;
use serde_json::{Map, Value, json};

/// An item of a batch that was refused before any check of the store: why (a path under
/// `items[i]`), and the kind it named, which its result repeats.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub kind: Option<Kind>,
    pub error: ValidationError,
}

/// One item of a request: its operation, or why it was refused.
pub type Entry = Result<ItemOp, Refused>;

/// A `memory_store` request: every item in the order sent, each one an operation or its own
/// refusal (which becomes that item's `validation_error` result; the others are written).
#[derive(Debug, Clone, PartialEq)]
pub struct StoreRequest {
    pub items: Vec<Entry>,
}

impl StoreRequest {
    /// Parses the tool's arguments (the MCP edge). An `Err` refuses the whole call (no
    /// `items`, not an array, empty, too many, an unknown argument); a bad item is only its
    /// own refusal, with a path like `items[2].data.rationale`.
    pub fn from_json(value: &Value) -> Result<StoreRequest, ValidationError> {
        let Value::Object(object) = value else {
            return Err(ValidationError::wrong_type("arguments", "an object with `items`", value));
        };
        let mut items = None;
        args::parse_object(&ARGS, object, &mut items, unknown)?;
        let items = items.ok_or_else(|| ValidationError::missing(ITEMS.name, EXAMPLE))?;
        Ok(StoreRequest { items })
    }

    /// Parses items sent as JSON (an export, a file `cortex store` reads), as `items` would be.
    pub fn from_items(items: &[Value]) -> Result<StoreRequest, ValidationError> {
        check_count(ITEMS.name, items.len(), MAX_BATCH_ITEMS)?;
        Ok(StoreRequest { items: parse_items(ITEMS.name, items) })
    }

    /// A request of items built in the process; a refused one's path is put under `items[i]`.
    pub fn new(items: impl IntoIterator<Item = Entry>) -> StoreRequest {
        let items = items
            .into_iter()
            .enumerate()
            .map(|(i, item)| {
                item.map_err(|Refused { kind, error }| Refused {
                    kind,
                    error: error.under(&format!("{}[{i}]", ITEMS.name)),
                })
            })
            .collect();
        StoreRequest { items }
    }

    /// A request of operations built in the process.
    pub fn of(ops: impl IntoIterator<Item = ItemOp>) -> StoreRequest {
        StoreRequest { items: ops.into_iter().map(Ok).collect() }
    }

    /// Refuses what the parse refuses of the batch itself: no item, or more than fit in a call.
    pub fn check(&self) -> Result<(), ValidationError> {
        check_count(ITEMS.name, self.items.len(), MAX_BATCH_ITEMS)
    }
}

const EXAMPLE: &str =
    "send {\"items\": [{\"kind\": \"section\", \"data\": {\"title\": \"...\", \"body\": \"...\"}}]}";

/// A batch of at most `max` items.
pub struct Batch {
    pub max: usize,
}

impl Shape for Batch {
    type Out = Vec<Entry>;

    fn schema(&self) -> Map<String, Value> {
        let schema = json!({ "type": "array", "items": item_schema(), "minItems": 1, "maxItems": self.max });
        match schema {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    fn parse(&self, field: &str, value: &Value) -> Result<Vec<Entry>, ValidationError> {
        let Value::Array(items) = value else {
            return Err(ValidationError::new(
                ErrorCode::WrongType,
                field,
                format!("`{field}` must be an array, got {}", json_type_name(value)),
                EXAMPLE,
            ));
        };
        check_count(field, items.len(), self.max)?;
        Ok(parse_items(field, items))
    }
}

/// 1 to `max` items.
fn check_count(field: &str, count: usize, max: usize) -> Result<(), ValidationError> {
    if count == 0 {
        return Err(ValidationError::new(ErrorCode::Empty, field, format!("`{field}` is empty"), EXAMPLE));
    }
    if count > max {
        return Err(ValidationError::new(
            ErrorCode::TooMany,
            field,
            format!("{count} items sent; at most {max} fit in one call"),
            format!("split the batch into calls of at most {max} items"),
        ));
    }
    Ok(())
}

/// Each item parsed on its own; a refusal names the kind the item asked for, when it is one.
fn parse_items(field: &str, items: &[Value]) -> Vec<Entry> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            parse_item(item).map_err(|e| Refused {
                kind: item.get("kind").and_then(Value::as_str).and_then(Kind::parse),
                error: e.under(&format!("{field}[{i}]")),
            })
        })
        .collect()
}

pub const ITEMS: Field<Option<Vec<Entry>>, Batch> =
    Field { name: "items", doc: None, shape: Batch { max: MAX_BATCH_ITEMS }, set: |d, v| *d = Some(v) };

/// Every argument `memory_store` takes.
pub static ARGS: [&dyn Arg<Option<Vec<Entry>>>; 1] = [&ITEMS];

/// `memory_store`'s input schema.
pub fn store_schema() -> Value {
    json!({
        "additionalProperties": false,
        "required": ["items"],
        "type": "object",
        "properties": args::properties(&ARGS),
    })
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
