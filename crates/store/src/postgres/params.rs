//! Statement parameters with their PostgreSQL types, and positional parameters built up
//! alongside SQL text so `$n` always matches its value.
//!
//! Every statement goes to the server unnamed, with its parameters' types (see `conn.rs`), so
//! each parameter's type is stated here, from its Rust type, rather than asked of the server.
//! Vectors travel as `real[]`: pgvector's `vector` is an extension type whose id differs per
//! database, and the driver would ask the server for it with a statement of its own;
//! `real[]` casts to `vector` on assignment and with `::vector`.

use postgres::types::{ToSql, Type};

/// A value the store binds to a statement, with the type the server is told it has.
pub trait Param: ToSql + Sync {
    fn sql_type(&self) -> Type;
}

/// A Rust type with one PostgreSQL type.
pub trait Typed {
    const TYPE: Type;
}

/// A Rust type whose `Vec` or slice is one PostgreSQL array type.
pub trait Element {
    const ARRAY: Type;
}

impl<T: Typed + ToSql + Sync> Param for T {
    fn sql_type(&self) -> Type {
        T::TYPE
    }
}

macro_rules! typed {
    ($($rust:ty => $sql:ident),* $(,)?) => {
        $(impl Typed for $rust { const TYPE: Type = Type::$sql; })*
    };
}

typed!(
    bool => BOOL,
    i16 => INT2,
    i32 => INT4,
    i64 => INT8,
    f32 => FLOAT4,
    f64 => FLOAT8,
    str => TEXT,
    String => TEXT,
    uuid::Uuid => UUID,
    serde_json::Value => JSONB,
);

macro_rules! element {
    ($($rust:ty => $sql:ident),* $(,)?) => {
        $(impl Element for $rust { const ARRAY: Type = Type::$sql; })*
    };
}

element!(
    &str => TEXT_ARRAY,
    String => TEXT_ARRAY,
    uuid::Uuid => UUID_ARRAY,
    i64 => INT8_ARRAY,
    f32 => FLOAT4_ARRAY,
);

impl Typed for Vec<u8> {
    const TYPE: Type = Type::BYTEA;
}

impl<T: Typed + ?Sized> Typed for &T {
    const TYPE: Type = T::TYPE;
}

impl<T: Typed> Typed for Option<T> {
    const TYPE: Type = T::TYPE;
}

impl<T: Element> Typed for Vec<T> {
    const TYPE: Type = T::ARRAY;
}

impl<T: Element> Typed for [T] {
    const TYPE: Type = T::ARRAY;
}

/// Parameters as the driver takes them with their types.
pub fn typed<'a>(params: &[&'a dyn Param]) -> Vec<(&'a (dyn ToSql + Sync), Type)> {
    params.iter().map(|p| (*p as &(dyn ToSql + Sync), p.sql_type())).collect()
}

/// Parameters appended as SQL text is built.
#[derive(Default)]
pub struct Params(Vec<Box<dyn Param + Send>>);

impl Params {
    /// Adds a value and returns its placeholder (`$n`).
    pub fn push(&mut self, value: impl Param + Send + 'static) -> String {
        self.0.push(Box::new(value));
        format!("${}", self.0.len())
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn as_refs(&self) -> Vec<&dyn Param> {
        self.0.iter().map(|b| b.as_ref() as &dyn Param).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_parameter_states_the_type_of_its_rust_value() {
        let ids = vec![uuid::Uuid::nil()];
        let none: Option<Vec<uuid::Uuid>> = None;
        let text = "a";
        let params: [&dyn Param; 6] = [&1_i64, &text, &ids, &none, &ids.as_slice(), &Some(vec![0.5_f32])];
        let types: Vec<Type> = params.iter().map(|p| p.sql_type()).collect();
        assert_eq!(
            types,
            [
                Type::INT8,
                Type::TEXT,
                Type::UUID_ARRAY,
                Type::UUID_ARRAY,
                Type::UUID_ARRAY,
                Type::FLOAT4_ARRAY
            ]
        );
    }
}
