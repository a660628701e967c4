//! The property/fuzz suite over the request parsers: store items, find arguments,
//! the query parser and cursors, then whole requests through the service on both backends.
//! Arbitrary and mutated input never panics and always gives either a valid result or a clear
//! refusal: a code, the field it names, a message and a hint (no empty field name in the text).
//! Bounded for CI; `CORTEX_FUZZ_CASES` / `CORTEX_FUZZ_SEED` run it longer or elsewhere.

use crate::common::Tools;
use crate::common::open_at;
use cortex_domain::item::{Refused, StoreRequest};
use cortex_domain::query::parse_query;
use cortex_domain::{FindRequest, ValidationError};
use cortex_service::ServiceError;
use cortex_service::response::ItemStatus;
use cortex_testdb::fuzz::{Rng, cases, check};
use cortex_testdb::{TestDb, per_backend};
use serde_json::{Value, json};

per_backend!(whole_requests_through_the_service_are_answered_or_refused_clearly);

fn assert_clear(e: &ValidationError, input: &Value) {
    let shown: String = input.to_string().chars().take(300).collect();
    assert!(!e.message.trim().is_empty() && !e.human_hint.trim().is_empty(), "{e:?} for {shown}");
    assert!(
        !e.message.contains("``") && !e.human_hint.contains("``"),
        "an empty field named: {e:?} for {shown}"
    );
}

const KINDS: &[&str] =
    &["section", "todo", "decision", "entity", "relation", "observation", "runbook", "adr"];

fn store_request(rng: &mut Rng) -> Value {
    let item = |rng: &mut Rng| {
        json!({
            "kind": rng.pick(KINDS),
            "content": rng.text(),
            "data": {"title": rng.text(), "status": "open", "component": "api", "rationale": "r",
                     "name": "billing", "entity_type": "service", "body": "b"},
            "scope": {"branch": "main", "service": rng.text()},
            "tags": [rng.text(), "ops"],
            "metadata": rng.json(3),
            "idempotency_key": rng.text(),
            "ttl": rng.pick(&["short", "default", "long", "permanent", "forever"]),
            "operation": rng.pick(&["upsert", "delete", "UPSERT"]),
            "dedupe": rng.chance(2),
        })
    };
    let items: Vec<Value> = (0..1 + rng.below(3)).map(|_| item(rng)).collect();
    let request = json!({ "items": items });
    if rng.chance(10) { rng.json(4) } else { rng.mutate(request) }
}

fn find_request(rng: &mut Rng) -> Value {
    let request = json!({
        "query": rng.text(),
        "mode": rng.pick(&["fast", "auto", "deep", "slow"]),
        "types": [rng.pick(KINDS)],
        "scope": {"project": "api"},
        "widen": rng.pick(&["branch", "project", "org", "all", "galaxy"]),
        "since": rng.pick(&["2026-01-01", "yesterday", "2026-13-45T00:00:00Z"]),
        "tags": [rng.text()],
        "status": rng.text(),
        "limit": rng.below(120),
        "max_content_chars": rng.below(30_000),
        "expand": rng.pick(&["none", "all", "children", "sideways"]),
        "depth": rng.below(5),
        "expand_limit": rng.below(120),
        "include_superseded": rng.chance(2),
    });
    if rng.chance(10) { rng.json(4) } else { rng.mutate(request) }
}

#[test]
fn store_requests_are_parsed_or_refused_clearly() {
    check("store requests", cases(), |rng| {
        let request = store_request(rng);
        match StoreRequest::from_json(&request) {
            Err(e) => {
                assert_clear(&e, &request);
                assert!(!e.field.is_empty(), "a request-level refusal names its field: {e:?}");
            }
            Ok(parsed) => {
                for (i, item) in parsed.items.iter().enumerate() {
                    if let Err(Refused { error: e, .. }) = item {
                        assert_clear(e, &request);
                        assert!(e.field.starts_with(&format!("items[{i}]")), "{e:?}");
                    }
                }
            }
        }
    });
}

#[test]
fn find_arguments_are_parsed_or_refused_clearly() {
    check("find arguments", cases(), |rng| {
        let request = find_request(rng);
        if let Err(e) = FindRequest::from_json(&request) {
            assert_clear(&e, &request);
            assert!(!e.field.is_empty(), "{e:?}");
        }
    });
}

#[test]
fn the_query_parser_takes_any_text() {
    check("query parser", cases(), |rng| {
        let text = rng.text();
        let parsed = parse_query(&text);
        for word in parsed.words() {
            assert!(!word.is_empty(), "an empty word from {text:?}");
        }
    });
}

#[test]
fn a_cursor_tampered_with_is_refused_or_names_a_page() {
    check("cursors", cases(), |rng| {
        let request = FindRequest::from_json(&json!({"query": "deploy redis", "limit": 5})).unwrap();
        let cursor = request.cursor_at(5 * (1 + rng.below(10)));
        let mut chars: Vec<char> = cursor.chars().collect();
        match rng.below(4) {
            0 => chars.truncate(rng.below(chars.len() + 1)),
            1 => {
                let at = rng.below(chars.len());
                chars[at] = rng.pick(&['A', '0', '-', '_', '=', '/', '+', 'é', '\0']);
            }
            2 => chars.extend(rng.text().chars()),
            _ => chars = rng.text().chars().collect(),
        }
        let tampered: String = chars.into_iter().collect();
        let args = json!({"query": "deploy redis", "limit": 5, "cursor": tampered});
        match FindRequest::from_json(&args) {
            Ok(next) => {
                assert!(next.offset <= cortex_domain::limits::MAX_LIMIT as usize * 1_000, "{}", next.offset)
            }
            Err(e) => {
                assert_clear(&e, &args);
                assert_eq!(e.field, "cursor", "{e:?}");
            }
        }
    });
}

/// Requests reach the real database: an internal error (SQL the engine refuses, a query
/// expression it cannot parse) is a defect, like a panic.
fn whole_requests_through_the_service_are_answered_or_refused_clearly(db: &TestDb) {
    let service = open_at(db, "main");
    service
        .store_args(&json!({"items": [
            {"kind": "section", "content": "deploy redis with the ops runbook", "tags": ["ops"]},
            {"kind": "todo", "content": "rotate the certificates"},
        ]}))
        .unwrap();
    check("service requests", (cases() / 10).max(50), |rng| {
        let request = store_request(rng);
        match service.store_args(&request) {
            Ok(out) => {
                for result in &out.results {
                    if result.status == ItemStatus::ValidationError {
                        let e = result.error.as_ref().expect("a validation error carries its error");
                        assert!(!e.human_hint.is_empty() && e.field.starts_with("items["), "{e:?}");
                    }
                }
            }
            Err(ServiceError::Invalid(e)) => assert_clear(&e, &request),
            Err(other) => panic!("store answered {other} for {request}"),
        }
        let request = find_request(rng);
        match service.find_args(&request) {
            Ok(_) => {}
            Err(ServiceError::Invalid(e)) => assert_clear(&e, &request),
            Err(other) => panic!("find answered {other} for {request}"),
        }
    });
}
