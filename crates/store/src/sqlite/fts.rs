//! Renders a parsed query as an FTS5 MATCH expression. Every term is emitted as a quoted
//! string (quotes doubled), so no user text can reach FTS5's own syntax and fail to parse.

use cortex_domain::query::{ParsedQuery, Term};

fn quoted(word: &str) -> String {
    format!("\"{}\"", word.replace('"', "\"\""))
}

/// `"a" OR "b"* OR "c d"` (or with `AND` when `all` terms must match) followed by
/// `NOT "x"` per exclusion; `None` when there is no positive term to match.
pub fn match_expression(query: &ParsedQuery, all: bool) -> Option<String> {
    if query.include.is_empty() {
        return None;
    }
    let positive: Vec<String> = query
        .include
        .iter()
        .map(|term| match term {
            Term::Word(w) => quoted(w),
            Term::Prefix(w) => format!("{}*", quoted(w)),
            Term::Phrase(words) => quoted(&words.join(" ")),
        })
        .collect();
    let mut expr = format!("({})", positive.join(if all { " AND " } else { " OR " }));
    for word in &query.exclude {
        expr.push_str(" NOT ");
        expr.push_str(&quoted(word));
    }
    Some(expr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cortex_domain::query::parse_query;

    #[test]
    fn renders_terms_as_quoted_strings() {
        let q = parse_query(r#"redis "session store" deploy* -memcached"#);
        assert_eq!(
            match_expression(&q, false).unwrap(),
            r#"("redis" OR "session store" OR "deploy"*) NOT "memcached""#
        );
        assert_eq!(
            match_expression(&q, true).unwrap(),
            r#"("redis" AND "session store" AND "deploy"*) NOT "memcached""#
        );
        assert_eq!(match_expression(&parse_query("🚀"), false), None);
    }
}
