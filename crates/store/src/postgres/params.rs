//! Positional parameters built up alongside SQL text, so `$n` always matches its value.

use postgres::types::ToSql;

#[derive(Default)]
pub struct Params(Vec<Box<dyn ToSql + Sync + Send>>);

impl Params {
    /// Adds a value and returns its placeholder (`$n`).
    pub fn push(&mut self, value: impl ToSql + Sync + Send + 'static) -> String {
        self.0.push(Box::new(value));
        format!("${}", self.0.len())
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn as_refs(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.0.iter().map(|b| b.as_ref() as &(dyn ToSql + Sync)).collect()
    }
}
