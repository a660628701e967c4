//! Possible contradictions at store time and over stored memory (`cortex doctor --conflicts`),
//! and the rule's precision measured on real decision records: five projects' records
//! (`tests/fixtures/ingest`, copied byte for byte) ingested as `cortex ingest` does, every pair
//! the rule flags judged by reading both records. A pair is a true one when the newer record
//! replaces, amends or decides again what the older decided (the records' own supersede and
//! amend links among them); one that only touches the same area is a false one.

use crate::common::Tools;
use crate::common::*;
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_testdb::{TestDb, per_backend};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

per_backend!(
    a_second_decision_for_the_same_component_names_the_first_and_how_to_supersede,
    precision_on_real_decision_records,
);

fn decision(component: &str, title: &str, rationale: &str) -> serde_json::Value {
    json!({"kind": "decision", "data": {"component": component, "status": "accepted", "title": title,
        "rationale": rationale}})
}

fn a_second_decision_for_the_same_component_names_the_first_and_how_to_supersede(db: &TestDb) {
    let m = memory(db, "main");
    let jwt =
        id_of(&m.store(json!([decision("auth", "Use JWT for sessions", "stateless, no session store")])), 0);
    let r = m.store(json!([decision("auth", "Use opaque session tokens", "revocable at logout")]));
    let result = &r.results[0];
    assert_eq!(result.status, cortex_service::response::ItemStatus::Inserted, "nothing is refused");
    assert_eq!(result.may_contradict.len(), 1, "{result:?}");
    assert_eq!(result.may_contradict[0].id, jwt);
    assert_eq!(result.may_contradict[0].why, "same component auth; titles share session");
    let new = result.id.clone().unwrap();
    let hint = result.hint.clone().unwrap();
    assert!(hint.contains(&format!("\"supersedes\": \"{jwt}\"")) && hint.contains(&new), "{hint}");
    // Another question of the component, or another branch, names nothing.
    let other = m.store(json!([decision("auth", "Hash passwords with argon2", "memory-hard")]));
    assert!(other.results[0].may_contradict.is_empty());
    let elsewhere =
        memory(db, "feature").store(json!([decision("auth", "Use signed cookies for sessions", "x")]));
    assert!(elsewhere.results[0].may_contradict.is_empty(), "another branch's decision is not in this scope");
    // Doing as the hint says replaces the first: the pair is gone from the check.
    let scan = m.service.contradictions().scan(None).unwrap();
    assert_eq!(scan.pairs.len(), 1, "{scan:?}");
    let replace = m.store(json!([{"operation": "delete", "id": new},
        {"kind": "decision", "supersedes": jwt, "data": {"component": "auth", "status": "accepted",
         "title": "Use opaque session tokens", "rationale": "revocable at logout"}}]));
    assert_eq!(replace.summary.inserted, 1, "{replace:?}");
    assert!(replace.results[1].may_contradict.is_empty(), "the decision it replaces is no longer in force");
    assert!(m.service.contradictions().scan(None).unwrap().pairs.is_empty());
}

/// The five projects' record folders, under `tests/fixtures/ingest`.
pub(crate) const SETS: [(&str, &str); 5] = [
    ("jabref", "JabRef+jabref/docs/decisions"),
    ("madr", "adr+madr/docs/decisions"),
    ("moj", "ministryofjustice+modernisation-platform/architecture-decision-record"),
    ("adr-tools", "npryce+adr-tools/doc/adr"),
    ("log4brains", "thomvaill+log4brains/docs/adr"),
];

/// Every pair the rule flags on the fixtures (with the statuses this build's ingest reads),
/// judged by reading both records: (project, newer file, older file, true pair?, why).
pub(crate) const JUDGED: &[(&str, &str, &str, bool, &str)] = &[
    (
        "jabref",
        "0065-download-url-input-files",
        "0057-allow-positional-input-file-argument",
        false,
        "extends the input argument to URLs, building on it",
    ),
    (
        "madr",
        "0004-write-own-toc-tool",
        "0003-provide-own-madr-tools",
        false,
        "a table-of-contents tool is another question than tooling to write records",
    ),
    (
        "madr",
        "0017-use-same-format-for-outcomes-and-options",
        "0016-outcome-before-detailed-pros-cons",
        false,
        "how consequences are written, not where pros and cons go",
    ),
    ("moj", "README", "README", false, "two sections of the folder's README"),
    (
        "moj",
        "0003-use-aws-sso",
        "0002-use-iam-federated-access",
        true,
        "AWS SSO chosen in favour of IAM federated access: the same question answered again",
    ),
    (
        "moj",
        "0019-use-bash-go-as-core-languages",
        "0004-use-bash-node-python-as-core-languages",
        true,
        "supersedes it (its own link)",
    ),
    (
        "moj",
        "0023-backup-strategy",
        "0022-patching-strategy",
        false,
        "backups and patching are two questions",
    ),
    (
        "adr-tools",
        "0008-use-iso-8601-format-for-dates",
        "0004-markdown-format",
        false,
        "the date format, not the records' format",
    ),
    ("adr-tools", "0009-help-scripts", "0005-help-comments", true, "amends it (its own link)"),
];

/// Pairs the records themselves link (supersedes, amends): found whenever both are in force.
const LINKED: &[(&str, &str, &str)] = &[
    ("jabref", "0057-allow-positional-input-file-argument", "0045-use-input-flag-always-for-input-files"),
    ("moj", "0019-use-bash-go-as-core-languages", "0004-use-bash-node-python-as-core-languages"),
    ("adr-tools", "0009-help-scripts", "0005-help-comments"),
    (
        "log4brains",
        "20201016-use-the-adr-slug-as-its-unique-id",
        "20200926-use-the-adr-number-as-its-unique-id",
    ),
];

fn precision_on_real_decision_records(db: &TestDb) {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/ingest");
    let mut flagged: Vec<(String, String, String)> = Vec::new();
    let mut in_force: Vec<(String, String)> = Vec::new();
    let mut compared = 0;
    for (project, folder) in SETS {
        let scope = InferredScope::fixed("acme", project, "main");
        let s = MemoryService::open(&Config::new(db.target().clone(), scope, EmbedderChoice::None)).unwrap();
        let report = s.ingest().files(&[fixtures.join(folder)], false, &|_, _| {}).unwrap();
        assert!(report.refused.is_empty(), "{report:?}");
        let records = records(&s);
        let paths: BTreeMap<&String, &String> = records.iter().map(|(id, (name, _))| (id, name)).collect();
        for (name, status) in records.values() {
            if cortex_domain::conflicts::in_force(cortex_domain::Kind::Decision, status.as_deref()) {
                in_force.push((project.to_string(), name.clone()));
            }
        }
        let scan = s.contradictions().scan(None).unwrap();
        compared += scan.compared;
        for pair in scan.pairs {
            flagged.push((project.to_string(), paths[&pair.newer.id].clone(), paths[&pair.older.id].clone()));
        }
    }
    let mut unjudged = Vec::new();
    let mut right = 0;
    for (project, newer, older) in &flagged {
        match JUDGED.iter().find(|j| j.0 == project && j.1 == newer && j.2 == older) {
            Some(j) => right += usize::from(j.3),
            None => unjudged.push(format!("{project}: {newer} ~ {older}")),
        }
    }
    assert!(
        unjudged.is_empty(),
        "pairs flagged but not judged ({compared} compared):\n{}",
        unjudged.join("\n")
    );
    let live = |project: &str, name: &str| in_force.iter().any(|(p, n)| p == project && n == name);
    let wanted: Vec<_> = LINKED.iter().filter(|l| live(l.0, l.1) && live(l.0, l.2)).collect();
    let found =
        wanted.iter().filter(|l| flagged.iter().any(|f| f.0 == l.0 && f.1 == l.1 && f.2 == l.2)).count();
    let precision = right as f64 / flagged.len().max(1) as f64;
    eprintln!(
        "conflicts on {compared} records: {} flagged, {right} true (precision {precision:.2}); {found} of the {} linked pairs in force found",
        flagged.len(),
        wanted.len()
    );
    // Two pairs are flagged on these records now that rejected and superseded records are out of
    // force: one true, one not. A floor this low says little; BENCHMARKS.md keeps the figures.
    assert!(precision >= 0.5, "precision {precision:.2}");
    assert_eq!(found, wanted.len(), "every linked pair in force is found");
}

/// Each ingested item's id → the file name it came from, and its status.
fn records(s: &MemoryService) -> BTreeMap<String, (String, Option<String>)> {
    let mut out = BTreeMap::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"types": ["decision", "section", "runbook"], "limit": 100, "detail": "full"});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let found = s.find_args(&args).unwrap();
        for h in found.hits {
            let path = h.metadata.as_ref().and_then(|m| m["ingest"]["path"].as_str()).unwrap_or_default();
            let name = path.rsplit('/').next().unwrap_or_default().trim_end_matches(".md").to_string();
            out.insert(h.id.to_string(), (name, h.status.clone()));
        }
        match found.next_cursor {
            Some(next) => cursor = Some(next),
            None => return out,
        }
    }
}
