//! A runbook's steps edited on its form and typed on the new-item form, in the lines the
//! item page shows them in: an unchanged edit gives back exactly what was stored, a change is
//! stored, and a command before any description is refused by `memory_store`'s own rule,
//! naming `steps[0].description`, with what was typed kept. A relation's ends are edited as
//! ids, each checked as a store checks it.

use super::assert_status;
use crate::test_support::{Signed, TestServer};
use crate::ui::steps::tests::runbook;
use axum::http::StatusCode;
use cortex_testdb::TestDb;
use serde_json::{Value, json};

fn store(server: &TestServer, item: Value) -> String {
    let request = cortex_domain::item::StoreRequest::from_json(&json!({ "items": [item] })).unwrap();
    let stored = server.service.memory_store().store(&request).unwrap();
    let result = stored.results.into_iter().next().unwrap();
    result.id.unwrap_or_else(|| panic!("not stored: {:?}", result.error)).to_string()
}

fn data_of(server: &TestServer, id: &str) -> Value {
    let find = cortex_domain::find::FindRequest::from_json(&json!({"ids": [id]})).unwrap();
    let answer = server.service.memory_find().find(&find).unwrap();
    answer.hits.first().and_then(|hit| hit.data.clone()).unwrap_or_else(|| panic!("{id} is not live"))
}

/// What a textarea or input named `name` holds on `page`, as the browser reads it.
fn field_value(page: &str, name: &str) -> String {
    let at = page.find(&format!("name=\"{name}\"")).unwrap_or_else(|| panic!("no {name} on {page}"));
    let rest = &page[at..];
    let raw = if rest.split_once('>').unwrap().0.contains("value=\"") {
        rest.split_once("value=\"").unwrap().1.split_once('"').unwrap().0
    } else {
        let inner = rest.split_once('>').unwrap().1;
        let inner = inner.strip_prefix('\n').unwrap_or(inner);
        inner.split_once("</textarea>").unwrap().0
    };
    [("&#60;", "<"), ("&#62;", ">"), ("&#34;", "\""), ("&#39;", "'"), ("&#38;", "&"), ("&amp;", "&")]
        .iter()
        .fold(raw.to_string(), |text, (entity, char)| text.replace(entity, char))
}

fn edit(
    server: &TestServer,
    signed: &Signed,
    id: &str,
    fields: &[(&str, &str)],
) -> crate::test_support::Answer {
    let mut sent = vec![("csrf", signed.csrf.as_str())];
    sent.extend_from_slice(fields);
    server.post_form(&format!("/items/{id}/edit"), Some(&signed.cookie), &sent)
}

#[test]
fn a_runbooks_steps_are_edited_in_lines_round_trip_and_a_command_first_is_refused() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let signed = server.sign_in(&server.key("writer", "write"));
    let id = store(
        &server,
        json!({"kind": "runbook", "scope": {"org": "acme", "project": "api", "branch": "main"},
            "data": {"title": "Restart a Kubernetes node", "service": "cluster", "steps": runbook()}}),
    );
    let form = server.get(&format!("/items/{id}/edit"), Some(&signed.cookie));
    assert_status(&form, StatusCode::OK);
    let steps = field_value(&form.text, "data.steps");
    assert!(
        steps.starts_with("Cordon and drain the node\n$ kubectl cordon node-1\n$ kubectl drain node-1"),
        "{steps}"
    );
    assert!(steps.contains("\nexpect: evicting pod … evicted\n\nRestart the kubelet\n"), "{steps}");
    assert!(form.text.contains("then its command on lines starting with"), "the hint says the format");

    // Saved unchanged (as a browser sends a textarea: CRLF), the steps are what was stored.
    let (title, service) = (field_value(&form.text, "data.title"), field_value(&form.text, "data.service"));
    let unchanged = steps.replace('\n', "\r\n");
    let answer = edit(
        &server,
        &signed,
        &id,
        &[("data.title", &title), ("data.service", &service), ("data.steps", &unchanged)],
    );
    assert!(answer.text.contains("Saved."), "{}: {}", answer.status, answer.text);
    assert_eq!(data_of(&server, &id)["steps"], runbook());

    // A step added is stored with its command and outcome, and the item page shows it.
    let added = format!(
        "{steps}\n\nTell the on-call channel\n$ ./notify --channel oncall \"node-1 is back\"\nexpect: a message in #oncall"
    );
    let answer = edit(&server, &signed, &id, &[("data.steps", &added)]);
    assert!(answer.text.contains("Saved."), "{}: {}", answer.status, answer.text);
    let stored = data_of(&server, &id)["steps"].clone();
    assert_eq!(stored.as_array().unwrap().len(), 5, "{stored}");
    assert_eq!(
        stored[4],
        json!({"description": "Tell the on-call channel", "command": "./notify --channel oncall \"node-1 is back\"",
            "expected_outcome": "a message in #oncall"})
    );
    let page = server.get(&format!("/items/{id}"), Some(&signed.cookie));
    assert!(
        page.text.contains(
            "<li>Tell the on-call channel<pre>./notify --channel oncall &#34;node-1 is back&#34;</pre>"
        ),
        "{}",
        page.text
    );

    // A command before any description: refused by memory_store's rule, naming the step, the
    // typed text kept, nothing changed.
    let typed = "$ kubectl delete node node-1\nRemove the node";
    let answer = edit(&server, &signed, &id, &[("data.steps", typed)]);
    assert_status(&answer, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(answer.text.contains("steps[0].description"), "{}", answer.text);
    assert!(answer.text.contains("every step needs a description"), "{}", answer.text);
    assert_eq!(field_value(&answer.text, "data.steps"), typed);
    assert_eq!(data_of(&server, &id)["steps"], stored, "nothing changed");
}

#[test]
fn a_new_runbook_takes_its_steps_in_lines_and_a_command_first_is_refused() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let signed = server.sign_in(&server.key("writer", "write"));
    let steps = "Rotate the key\n$ cortex keys create --name ci2 --org acme --role read\nexpect: a token, shown once\n\nRevoke the old one\n$ cortex keys revoke ci";
    let fields = |steps: &'static str| {
        [
            ("csrf", signed.csrf.clone()),
            ("kind", "runbook".to_string()),
            ("data.title", "Rotate the CI key".to_string()),
            ("data.service", "ci".to_string()),
            ("data.steps", steps.to_string()),
            ("scope.project", "api".to_string()),
            ("scope.branch", "main".to_string()),
        ]
    };
    let sent = fields(steps);
    let sent: Vec<(&str, &str)> = sent.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let answer = server.post_form("/new", Some(&signed.cookie), &sent);
    assert_status(&answer, StatusCode::SEE_OTHER);
    let id = answer.headers["location"].to_str().unwrap().trim_start_matches("/items/").to_string();
    assert_eq!(
        data_of(&server, &id)["steps"],
        json!([{"description": "Rotate the key", "command": "cortex keys create --name ci2 --org acme --role read",
                "expected_outcome": "a token, shown once"},
               {"description": "Revoke the old one", "command": "cortex keys revoke ci"}])
    );
    let sent = fields("expect: nothing\nRotate the key");
    let sent: Vec<(&str, &str)> = sent.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let answer = server.post_form("/new", Some(&signed.cookie), &sent);
    assert_status(&answer, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(answer.text.contains("steps[0].description"), "{}", answer.text);
    assert_eq!(field_value(&answer.text, "data.steps"), "expect: nothing\nRotate the key");
}

#[test]
fn a_relations_ends_are_edited_as_ids_and_checked_as_a_store_checks_them() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let signed = server.sign_in(&server.key("writer", "write"));
    let scope = json!({"org": "acme", "project": "api", "branch": "main"});
    let entity = |name: &str| {
        store(
            &server,
            json!({"kind": "entity", "scope": scope, "data": {"entity_type": "service", "name": name}}),
        )
    };
    let (api, db_service, cache) = (entity("api"), entity("postgres"), entity("redis"));
    let relation = store(
        &server,
        json!({"kind": "relation", "scope": scope, "data": {"from": api, "to": db_service, "relation_type": "depends_on"}}),
    );
    let form = server.get(&format!("/items/{relation}/edit"), Some(&signed.cookie));
    assert_eq!(field_value(&form.text, "data.to"), db_service);
    let answer = edit(&server, &signed, &relation, &[("data.to", &cache)]);
    assert!(answer.text.contains("Saved."), "{}: {}", answer.status, answer.text);
    assert_eq!(data_of(&server, &relation)["to"], json!(cache));
    // Another org's item is no item here: refused as a store refuses it.
    let other = server.item("globex", "Globex runbook", "Globex's own text.");
    let answer = edit(&server, &signed, &relation, &[("data.to", &other)]);
    assert_status(&answer, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(answer.text.contains("no live item has id"), "{}", answer.text);
    assert_eq!(field_value(&answer.text, "data.to"), other);
    assert_eq!(data_of(&server, &relation)["to"], json!(cache), "nothing changed");
}
