//! One definition per tool argument: its name, the description a model reads, its JSON
//! shape with the limits of [`crate::limits`], and its parse into the typed request. The
//! tools' input schemas are generated from these definitions ([`object_schema`]), the
//! arguments are parsed by walking the same list ([`parse_object`]), and the CLI takes its
//! flags' help and choices from them — so an argument cannot be described one way and
//! parsed another.
//!
//! Why a small hand table rather than serde's `Deserialize` with schemars' `JsonSchema`
//! (rmcp's `Parameters<T>`): serde refuses a request with one message for the first field it
//! trips on, not a [`ValidationError`] naming the field with a `human_hint` that says how to
//! fix it (the e2e tests and the agents read those codes and hints), and schemars writes an
//! optional argument as `anyOf [T, null]` or `type [T, "null"]` and a closed word list behind
//! a `$ref`, which some model APIs refuse (Claude Code drops a tool whose schema has a
//! top-level `anyOf`, OpenAI's strict mode refuses `minLength`, Gemini reads no `$ref`). The
//! shapes here write only the portable subset: `type`, `enum` of strings, `items`,
//! `properties`, `additionalProperties: false`, `minimum`/`maximum`, `minItems`/`maxItems`.
//!
//! - [`shape`]: the JSON shapes an argument can take, each with its schema and its parse
//! - [`Word`]: a closed list of words (a mode, a detail level, …) and its enum

#[cfg(test)]
mod reference;
pub mod shape;

use crate::error::ValidationError;
use serde_json::{Map, Value};

pub use shape::Shape;

/// A closed set of values sent as words: the words are the schema's `enum` and the only
/// values the parse accepts (in any case, spaces around).
pub trait Word: Copy + 'static {
    const ALL: &'static [Self];
    fn as_str(self) -> &'static str;

    /// The value of a word as sent; `None` for another word.
    fn parse_word(text: &str) -> Option<Self> {
        let text = text.trim().to_ascii_lowercase();
        Self::ALL.iter().copied().find(|w| w.as_str() == text)
    }

    /// Every word, in order.
    fn words() -> Vec<&'static str> {
        Self::ALL.iter().map(|w| w.as_str()).collect()
    }

    /// "a, b or c", for a hint.
    fn listed() -> String {
        match Self::words().split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }
}

/// One argument of a tool that parses into `T` (the request being built).
pub struct Field<T, S: Shape> {
    pub name: &'static str,
    /// What the model reads about it (`None`: the name says it all).
    pub doc: Option<&'static str>,
    pub shape: S,
    /// Puts the parsed value into the request.
    pub set: fn(&mut T, S::Out),
}

/// An argument as the schema generator and the parser see it, whatever its shape.
pub trait Arg<T>: Sync {
    fn name(&self) -> &'static str;
    fn doc(&self) -> Option<&'static str>;
    /// Its schema: `description` first, then the shape's keywords.
    fn schema(&self) -> Value;
    /// Parses a value that is present and not null into `into`.
    fn apply(&self, value: &Value, into: &mut T) -> Result<(), ValidationError>;
}

impl<T, S: Shape + Sync> Arg<T> for Field<T, S> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn doc(&self) -> Option<&'static str> {
        self.doc
    }

    fn schema(&self) -> Value {
        let mut schema = Map::new();
        if let Some(doc) = self.doc {
            schema.insert("description".into(), Value::String(doc.into()));
        }
        schema.extend(self.shape.schema());
        Value::Object(schema)
    }

    fn apply(&self, value: &Value, into: &mut T) -> Result<(), ValidationError> {
        (self.set)(into, self.shape.parse(self.name, value)?);
        Ok(())
    }
}

/// The arguments of one tool (or of one item of a batch), in the order the schema lists them
/// and the parser reads them.
pub type Args<T> = [&'static dyn Arg<T>];

/// The names of `args`, in order.
pub fn names<T>(args: &Args<T>) -> Vec<&'static str> {
    args.iter().map(|a| a.name()).collect()
}

/// The definition named `name`.
pub fn find<T>(args: &Args<T>, name: &str) -> Option<&'static dyn Arg<T>> {
    args.iter().copied().find(|a| a.name() == name)
}

/// The `properties` of an object taking `args`, each generated from its definition.
pub fn properties<T>(args: &Args<T>) -> Map<String, Value> {
    args.iter().map(|a| (a.name().to_string(), a.schema())).collect()
}

/// The schema of a closed object taking `args` (a tool's input schema).
pub fn object_schema<T>(args: &Args<T>) -> Value {
    let mut schema = Map::new();
    schema.insert("properties".into(), Value::Object(properties(args)));
    schema.insert("additionalProperties".into(), Value::Bool(false));
    schema.insert("type".into(), Value::String("object".into()));
    Value::Object(schema)
}

/// Parses an object's entries into `into`, one definition per entry, in the definitions'
/// order; an absent or null entry keeps `into`'s default. A key no definition names is refused
/// with `unknown(key)` before anything is parsed.
pub fn parse_object<T>(
    args: &Args<T>,
    object: &Map<String, Value>,
    into: &mut T,
    unknown: impl Fn(&str) -> ValidationError,
) -> Result<(), ValidationError> {
    if let Some(key) = object.keys().find(|k| find(args, k).is_none()) {
        return Err(unknown(key));
    }
    for arg in args {
        match object.get(arg.name()) {
            None | Some(Value::Null) => {}
            Some(value) => arg.apply(value, into)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::find::Mode;

    #[test]
    fn words_list_and_parse_in_any_case() {
        assert_eq!(Mode::listed(), "fast, auto or deep");
        assert_eq!(Mode::parse_word(" DEEP "), Some(Mode::Deep));
        assert_eq!(Mode::parse_word("quick"), None);
    }
}
