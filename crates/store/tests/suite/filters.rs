//! One filter rule: random filters over random items admit the same items through each
//! backend's SQL (a search and a count) as through `Filters::admits` over a plain scan of every
//! item. The items vary in every fact a filter tests — kind, each scope field set or unset,
//! status, tags, update time, end of life, superseded, deleted, the principal that wrote them
//! and the agent they claim — and the filters in every
//! field. Seeded, so a failure names the case and reruns the same.

use cortex_domain::dedupe;
use cortex_domain::find::Author;
use cortex_domain::graph::Cascade;
use cortex_domain::provenance::MergedBranch;
use cortex_domain::query::parse_query;
use cortex_domain::tenant::Bound;
use cortex_domain::{Kind, Scope};
use cortex_store::*;
use cortex_testdb::{TestDb, per_backend};
use serde_json::json;
use std::collections::BTreeSet;
use uuid::Uuid;

per_backend!(random_filters_admit_the_same_items_through_sql_as_through_admits);
per_backend!(a_filter_of_a_thousand_tags_is_answered_not_refused_by_the_sql_engine);

const NOW: i64 = 1_800_000_000_000;
const ITEMS: usize = 120;
const FILTERS: usize = 300;
const KINDS: [Kind; 3] = [Kind::Section, Kind::Runbook, Kind::Decision];
const ORGS: [Option<&str>; 2] = [Some("acme"), Some("other")];
const PROJECTS: [Option<&str>; 3] = [Some("api"), Some("web"), None];
const BRANCHES: [Option<&str>; 4] = [Some("main"), Some("dev"), Some("feature"), None];
const STATUSES: [Option<&str>; 3] = [Some("open"), Some("done"), None];
const TAGS: [&str; 3] = ["ops", "db", "ui"];
/// Writers' principals (one batch each; `None`: a writer not named).
const PRINCIPALS: [Option<&str>; 3] = [Some("key:acme/ci"), Some("local:dana"), None];
/// Claimed agents: a name, a principal's text claimed, and a number (not a name).
const AGENTS: [Option<&str>; 4] = [Some("claude"), Some("key:acme/ci"), Some("7"), None];

/// xorshift64*: small, deterministic, enough to spread cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len())]
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
    fn tags(&mut self) -> Vec<String> {
        TAGS.iter().filter(|_| self.chance(2)).map(|t| t.to_string()).collect()
    }
}

fn random_record(rng: &mut Rng, n: usize) -> Record {
    let scope = Scope {
        org: rng.pick(&ORGS).map(str::to_string),
        project: rng.pick(&PROJECTS).map(str::to_string),
        branch: rng.pick(&BRANCHES).map(str::to_string),
        ..Scope::default()
    };
    let (title, body) = (format!("item {n}"), format!("common words of item {n}"));
    let updated_at = NOW - 1_000 * rng.below(10) as i64;
    Record {
        id: Uuid::now_v7(),
        kind: rng.pick(&KINDS),
        scope,
        title: title.clone(),
        body: body.clone(),
        content: Some(body.clone()),
        data: json!({}),
        metadata: None,
        source: match rng.pick(&AGENTS) {
            Some("7") => Some(json!({"actor": 7})),
            Some(agent) => Some(json!({"actor": agent})),
            None => None,
        },
        tags: rng.tags(),
        status: rng.pick(&STATUSES).map(str::to_string),
        content_hash: cortex_domain::text::content_hash(&format!("{title}\n{body}")),
        idempotency_key: None,
        ttl: None,
        created_at: NOW - 1_000 * rng.below(10) as i64,
        updated_at,
        expires_at: match rng.below(3) {
            0 => None,
            1 => Some(NOW - 500),
            _ => Some(NOW + 500),
        },
        occurred_at: None,
        vector: None,
        chunks: Vec::new(),
    }
}

fn random_filters(rng: &mut Rng) -> Filters {
    let mut scope_equals = Vec::new();
    for (field, values) in [("org", &ORGS[..]), ("project", &PROJECTS[..]), ("branch", &BRANCHES[..])] {
        if rng.chance(2) {
            // An unset field is '' to a filter.
            scope_equals.push((field, rng.pick(values).unwrap_or("").to_string()));
        }
    }
    let kinds = KINDS.iter().copied().filter(|_| rng.chance(3)).collect();
    let instant = |rng: &mut Rng| NOW - 1_000 * rng.below(10) as i64;
    Filters {
        kinds,
        scope_equals,
        since: rng.chance(3).then(|| instant(rng)),
        until: rng.chance(3).then(|| instant(rng)),
        tags: if rng.chance(2) { rng.tags() } else { Vec::new() },
        status: match rng.below(4) {
            0 => Some("open".into()),
            1 => Some("never used".into()),
            _ => None,
        },
        author: match rng.below(6) {
            0 => rng.pick(&PRINCIPALS).map(|p| Author::Principal(p.into())),
            1 => rng.pick(&AGENTS).map(|a| Author::Agent(a.into())),
            _ => None,
        },
        now: NOW,
        include_superseded: rng.chance(3),
        include_expired: rng.chance(3),
        // An API key's bound: its org, and none, one or two of its projects.
        bound: rng.chance(3).then(|| Bound {
            org: rng.pick(&ORGS).unwrap_or("").to_string(),
            projects: PROJECTS.iter().flatten().filter(|_| rng.chance(2)).map(|p| p.to_string()).collect(),
        }),
        // Branches merged into the one named: each item of theirs seen up to a time.
        merged: {
            let mut merged = Vec::new();
            for branch in ["dev", "feature"] {
                if rng.chance(2) {
                    merged.push(MergedBranch { branch: branch.into(), until: instant(rng) });
                }
            }
            merged
        },
    }
}

fn random_filters_admit_the_same_items_through_sql_as_through_admits(db: &TestDb) {
    let store = db.open();
    let mut rng = Rng(0x5eed_f11e_0000_0001);
    let records: Vec<Record> = (0..ITEMS).map(|n| random_record(&mut rng, n)).collect();
    for (batch, principal) in records.chunks(ITEMS / PRINCIPALS.len()).zip(PRINCIPALS) {
        let ops: Vec<WriteOp> = batch
            .iter()
            .map(|r| WriteOp::Insert { record: r.clone(), checks: dedupe::INSERT_ANYWAY })
            .collect();
        let context = WriteContext { principal: principal.map(str::to_string), ..WriteContext::default() };
        let outcomes = store.write_batch_as(&ops, &context).unwrap();
        assert!(outcomes.iter().all(|o| matches!(o, WriteOutcome::Inserted { .. })));
    }
    // Some items replaced by others, some deleted (links kept: only facts matter here).
    let mut changes = Vec::new();
    for pair in records.chunks(2) {
        let [a, b] = pair else { continue };
        match rng.below(5) {
            0 => changes.push(WriteOp::Supersede { id: a.id, by: b.id, at: a.updated_at, status: None }),
            1 => changes.push(WriteOp::Delete {
                id: a.id,
                kind: None,
                at: a.updated_at,
                cascade: Cascade::KeepLinks,
            }),
            _ => {}
        }
    }
    store.write_batch(&changes).unwrap();
    let every = store.export_page(None, ITEMS * 2).unwrap();
    assert_eq!(every.len(), ITEMS);
    let facts: Vec<(Uuid, ItemFacts)> =
        every.iter().map(|e| (e.item.record.id, ItemFacts::of(&e.item))).collect();
    assert!(facts.iter().any(|(_, f)| f.deleted) && facts.iter().any(|(_, f)| f.superseded));
    for principal in PRINCIPALS {
        assert!(facts.iter().any(|(_, f)| f.author.as_deref() == principal), "written by {principal:?}");
    }

    let query = parse_query("common");
    let (mut some, mut none) = (0, 0);
    for case in 0..FILTERS {
        let filters = random_filters(&mut rng);
        let expected: BTreeSet<Uuid> =
            facts.iter().filter(|(_, f)| filters.admits(f)).map(|(id, _)| *id).collect();
        let lexical = LexicalQuery { query: query.clone(), combine: Combine::Any, filters, pool: ITEMS * 2 };
        let through_sql: BTreeSet<Uuid> =
            store.search_lexical(&lexical).unwrap().into_iter().map(|m| m.id).collect();
        assert_eq!(through_sql, expected, "case {case}: {:?}", lexical.filters);
        assert_eq!(store.count_lexical(&lexical, ITEMS * 2).unwrap(), expected.len(), "case {case}");
        if expected.is_empty() { none += 1 } else { some += 1 }
    }
    assert!(some > FILTERS / 4 && none > FILTERS / 20, "both outcomes exercised: {some} / {none}");
}

/// 1,000 tags once built an expression tree SQLite refused ("Expression tree
/// is too large"). Whatever list reaches the store, the filter is one condition of bounded size.
fn a_filter_of_a_thousand_tags_is_answered_not_refused_by_the_sql_engine(db: &TestDb) {
    let store = db.open();
    let mut rng = Rng(0x7a95);
    let mut record = random_record(&mut rng, 0);
    record.tags = vec!["ops".into(), "db".into()];
    let id = record.id;
    store.write_batch(&[WriteOp::Insert { record, checks: dedupe::INSERT_ANYWAY }]).unwrap();
    let search = |tags: Vec<String>| {
        let filters = Filters { tags, now: NOW, include_expired: true, ..Filters::default() };
        let lexical = LexicalQuery { query: parse_query("common"), combine: Combine::Any, filters, pool: 10 };
        let ids: Vec<Uuid> = store.search_lexical(&lexical).unwrap().into_iter().map(|m| m.id).collect();
        assert_eq!(store.count_lexical(&lexical, 10).unwrap(), ids.len());
        ids
    };
    let many: Vec<String> = (0..1_000).map(|i| format!("tag{i}")).collect();
    assert_eq!(search(many), Vec::<Uuid>::new());
    let repeated = vec!["ops".to_string(), "db".to_string(), "ops".to_string()];
    assert_eq!(search(repeated), vec![id], "every tag asked for, repeated or not");
    assert_eq!(search(vec!["ops".into(), "ui".into()]), Vec::<Uuid>::new(), "one tag missing");
}
