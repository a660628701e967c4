//! Renders a parsed query as a PostgreSQL `tsquery` expression. Every user word travels as a
//! bound parameter into `plainto_tsquery`/`phraseto_tsquery` (which accept any text), or into
//! `to_tsquery` only as a quoted lexeme with a prefix marker, so no user text can reach
//! tsquery syntax and fail to parse.

use super::params::Params;
use cortex_domain::query::{ParsedQuery, Term};

/// The text-search configuration of the `tsv` column: English stemming and stopwords.
pub const CONFIG: &str = "'english'";

/// A quoted tsquery lexeme: `'word'`, quotes and backslashes escaped.
fn lexeme(word: &str) -> String {
    format!("'{}'", word.replace('\\', "\\\\").replace('\'', "''"))
}

/// `((a && b)` (or `||` unless `all`) followed by `&& !!x` per exclusion`)`; `None` when there is
/// no positive term to match. Parameters are appended to `params`.
pub fn expression(query: &ParsedQuery, all: bool, params: &mut Params) -> Option<String> {
    if query.include.is_empty() {
        return None;
    }
    let positive: Vec<String> = query
        .include
        .iter()
        .map(|term| match term {
            Term::Word(w) => format!("plainto_tsquery({CONFIG}, {})", params.push(w.clone())),
            Term::Prefix(w) => format!("to_tsquery({CONFIG}, {})", params.push(format!("{}:*", lexeme(w)))),
            Term::Phrase(words) => {
                format!("phraseto_tsquery({CONFIG}, {})", params.push(words.join(" ")))
            }
        })
        .collect();
    let mut expr = format!("({})", positive.join(if all { " && " } else { " || " }));
    for word in &query.exclude {
        expr.push_str(&format!(" && !!plainto_tsquery({CONFIG}, {})", params.push(word.clone())));
    }
    // Whole in parentheses: `@@` and `&&` share one precedence level in PostgreSQL, so
    // `tsv @@ a && !!b` would otherwise parse as `(tsv @@ a) && !!b`.
    Some(format!("({expr})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cortex_domain::query::parse_query;

    #[test]
    fn renders_terms_as_parameters() {
        let q = parse_query(r#"redis "session store" deploy* -memcached"#);
        let mut params = Params::default();
        let expr = expression(&q, false, &mut params).unwrap();
        assert_eq!(
            expr,
            "((plainto_tsquery('english', $1) || phraseto_tsquery('english', $2) || to_tsquery('english', $3)) \
             && !!plainto_tsquery('english', $4))"
        );
        assert_eq!(params.len(), 4);
        assert_eq!(lexeme(r"it's\"), r"'it''s\\'");
        assert!(expression(&parse_query("🚀"), true, &mut Params::default()).is_none());
    }
}
