//! Secrets on the write paths beside an item's texts, and secrets already stored, on every
//! backend: tags and object keys are screened as texts are; `cortex import` redacts (or, under
//! `refuse`, refuses) what the file holds before anything is written; `cortex secrets scan`
//! lists items stored with secrets (below the scanner: `CORTEX_SECRETS=off`) and `--redact`
//! rewrites them as audited updates. Each checks the rows, the lexical index (a find by the
//! secret), the audit trail and, on SQLite, the database file's bytes.

use crate::common::{Tools, id_of};
use crate::secrets::{Secrets, hits, kept, open, store};
use cortex_domain::Scope;
use cortex_service::response::ItemStatus;
use cortex_service::settings::SecretsMode;
use cortex_service::transfer::ItemLine;
use cortex_testdb::{TestDb, per_backend};
use serde_json::json;

per_backend!(
    tags_and_object_keys_are_redacted_before_anything_keeps_them,
    import_redacts_the_files_secrets_or_refuses_the_file,
    secrets_scan_lists_stored_secrets_and_redact_rewrites_them,
    ingest_of_records_and_commits_redacts_and_a_second_run_writes_nothing,
    secrets_scan_never_overwrites_an_edit_made_while_it_ran,
);

/// The item of the paths: secrets in its content, a tag, an object key of its metadata and
/// its source's claimed actor.
fn item(secrets: &Secrets) -> serde_json::Value {
    let mut item = unclaimed(secrets);
    item["source"] = json!({"actor": format!("bot with {}", secrets.github)});
    item
}

/// The item without the claimed actor: a claim is written into the audit trail with the
/// insert, and the trail is never rewritten (an item stored with its secrets under
/// `CORTEX_SECRETS=off` keeps its claim there).
fn unclaimed(secrets: &Secrets) -> serde_json::Value {
    json!({"kind": "todo", "content": format!("Rotate the deploy credentials\n{}", secrets.text()),
        "tags": ["deploy", secrets.github.clone(), secrets.aws_id.clone()],
        "metadata": {"tokens": {secrets.slack.clone(): "the bot's"}, "owner": "ops"}})
}

/// Whether the SQLite file (and its write-ahead log) holds `needle`'s bytes; `false` on
/// PostgreSQL, whose files are the server's.
fn in_file(db: &TestDb, needle: &str) -> bool {
    let Some(path) = db.sqlite_path() else { return false };
    let mut wal = path.clone().into_os_string();
    wal.push("-wal");
    [path, wal.into()]
        .iter()
        .filter_map(|p| std::fs::read(p).ok())
        .any(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
}

fn assert_nowhere(db: &TestDb, s: &cortex_service::MemoryService, secrets: &Secrets) {
    let kept = kept(db, s);
    for needle in secrets.needles() {
        assert!(!kept.contains(&needle), "{needle} is kept in clear");
        assert_eq!(hits(s, &needle), 0, "a find by a secret ({needle}) finds nothing");
        assert!(!in_file(db, &needle), "the database file holds {needle}");
    }
    for tag in [&secrets.github, &secrets.aws_id] {
        assert!(
            !kept.to_lowercase().contains(&tag.to_lowercase()),
            "the tag's token ({tag}) is kept in some case"
        );
    }
}

fn tags_and_object_keys_are_redacted_before_anything_keeps_them(db: &TestDb) {
    let s = open(db, SecretsMode::Redact);
    let secrets = Secrets::new();
    let r = store(&s, json!([item(&secrets)]));
    assert_eq!(r.results[0].status, ItemStatus::Inserted, "{r:?}");
    let fields: Vec<(&str, &str)> =
        r.results[0].redacted.iter().map(|f| (f.field.as_str(), f.rule.as_str())).collect();
    for expected in [
        ("tags[1]", "github-pat"),
        ("tags[2]", "aws-access-token"),
        ("metadata.tokens.[redacted:slack-bot-token]", "slack-bot-token"),
        ("source.actor", "github-pat"),
        ("content", "password-in-url"),
    ] {
        assert!(fields.contains(&expected), "{expected:?} not in {fields:?}");
    }
    assert_nowhere(db, &s, &secrets);
    let got = s.find_args(&json!({"ids": [id_of(&r, 0)]})).unwrap();
    let hit = serde_json::to_value(&got.hits[0]).unwrap();
    assert_eq!(
        hit["tags"],
        json!(["deploy", "[redacted:github-pat]", "[redacted:aws-access-token]"]),
        "{hit}"
    );
    assert_eq!(hit["metadata"]["tokens"], json!({"[redacted:slack-bot-token]": "the bot's"}));

    // Under `refuse`, a secret in a tag or a key refuses the item, naming where.
    let refusing = open(db, SecretsMode::Refuse);
    let r = store(
        &refusing,
        json!([{"kind": "todo", "content": "tagged", "tags": [secrets.github.clone()]},
               {"kind": "todo", "content": "keyed", "metadata": {secrets.slack.clone(): 1}}]),
    );
    assert_eq!(r.results[0].error.as_ref().unwrap().field, "items[0].tags[0]");
    assert_eq!(r.results[1].error.as_ref().unwrap().field, "items[1].metadata.[redacted:slack-bot-token]");
}

/// The items of a store that kept the secrets as given, as an export file's lines.
fn exported_with_secrets(backend: cortex_testdb::Backend, secrets: &Secrets) -> (TestDb, Vec<ItemLine>) {
    let source = TestDb::new(backend);
    let off = open(&source, SecretsMode::Off);
    store(&off, json!([item(secrets), {"kind": "todo", "content": "renew the certificates"}]));
    let lines = off.transfer().export_page(None, 100).unwrap();
    assert!(
        serde_json::to_string(&lines.iter().map(|l| &l.content).collect::<Vec<_>>())
            .unwrap()
            .contains(&secrets.github)
    );
    (source, lines)
}

fn import_redacts_the_files_secrets_or_refuses_the_file(db: &TestDb) {
    let secrets = Secrets::new();
    let (_source, lines) = exported_with_secrets(db.backend(), &secrets);
    let ids: Vec<uuid::Uuid> = lines.iter().map(|l| l.id).collect();

    // Refused: nothing of the batch is written, the item and field named.
    let refusing = open(db, SecretsMode::Refuse);
    let refusal = refusing.transfer().refusal(&lines[0]).expect("the line holds secrets");
    assert!(refusal.field.starts_with(&format!("item {}: ", lines[0].id)), "{}", refusal.field);
    assert!(!refusal.message.contains(&secrets.github));
    let copy = |l: &ItemLine| serde_json::from_value(serde_json::to_value(l).unwrap()).unwrap();
    let err = refusing.transfer().import_batch(lines.iter().map(copy).collect()).unwrap_err();
    assert!(matches!(err, cortex_service::ServiceError::Invalid(_)), "{err:?}");
    assert_eq!(refusing.transfer().count_present(&ids).unwrap(), 0);

    let s = open(db, SecretsMode::Redact);
    let written = s.transfer().import_batch(lines.iter().map(copy).collect()).unwrap();
    assert_eq!((written.imported, written.present), (2, 0));
    assert_eq!(written.redacted.len(), 1, "only the item holding secrets: {:?}", written.redacted);
    assert_eq!(written.redacted[0].0, lines[0].id);
    let fields: Vec<&str> = written.redacted[0].1.iter().map(|f| f.field.as_str()).collect();
    for field in ["content", "tags[1]", "metadata.tokens.[redacted:slack-bot-token]", "source.actor"] {
        assert!(fields.contains(&field), "{field} not in {fields:?}");
    }
    assert_nowhere(db, &s, &secrets);
    assert_eq!(hits(&s, "deploy credentials"), 1, "the rest of the text is kept and found");
    let trail = s.audit().records(Some(lines[0].id), None, 10).unwrap();
    assert_eq!(trail[0].operation, "import");
    assert_ne!(
        trail[0].hash_after.as_deref(),
        Some(lines[0].content_hash.as_str()),
        "the hash is of the redacted text"
    );
}

fn secrets_scan_lists_stored_secrets_and_redact_rewrites_them(db: &TestDb) {
    let secrets = Secrets::new();
    let off = open(db, SecretsMode::Off);
    let r = store(
        &off,
        json!([unclaimed(&secrets), {"kind": "todo", "content": "renew the certificates"},
               {"kind": "todo", "content": format!("old bot token {}", secrets.slack)},
               {"kind": "decision", "data": {"component": "ci", "status": "accepted",
                "title": "Deploy from CI", "rationale": format!("the CI pushes with {}", secrets.github)}}]),
    );
    let (held, deleted, accepted) = (id_of(&r, 0), id_of(&r, 2), id_of(&r, 3));
    off.store_args(&json!({"items": [{"operation": "delete", "id": deleted}]})).unwrap();
    assert!(in_file(db, &secrets.github) || db.sqlite_path().is_none());

    let s = open(db, SecretsMode::Redact);
    let elsewhere = Scope { org: Some("another-org".into()), ..Scope::default() };
    let none = s.secrets().scan(&elsewhere, false).unwrap();
    assert_eq!((none.scanned, none.items.len()), (0, 0), "another org's scan sees none of acme's items");

    let listed = s.secrets().scan(&Scope::default(), false).unwrap();
    assert_eq!(listed.scanned, 4);
    let found: Vec<(String, bool, bool)> =
        listed.items.iter().map(|i| (i.id.to_string(), i.deleted, i.redacted)).collect();
    assert_eq!(
        found,
        [(held.clone(), false, false), (deleted.clone(), true, false), (accepted.clone(), false, false)]
    );
    let report = serde_json::to_string(&listed).unwrap();
    for needle in secrets.needles() {
        assert!(!report.contains(&needle), "the scan's report shows {needle}");
    }
    assert!(
        report.contains("\"rule\":\"github-pat\"") && report.contains("\"field\":\"tags[1]\""),
        "{report}"
    );
    assert_eq!(hits(&s, &secrets.github), 2, "listing changes nothing");

    let redacted = s.secrets().scan(&Scope::default(), true).unwrap();
    assert_eq!(redacted.redacted, 2);
    assert!(redacted.items[0].redacted && !redacted.items[1].redacted && redacted.items[2].redacted);
    // An accepted decision's governed text loses its secret in place, and stays accepted.
    let decision = s.find_args(&json!({"ids": [accepted], "detail": "full"})).unwrap();
    let decision = serde_json::to_value(&decision.hits[0]).unwrap().to_string();
    assert!(
        decision.contains("the CI pushes with [redacted:github-pat]") && decision.contains("accepted"),
        "{decision}"
    );
    assert_eq!(hits(&s, &secrets.github), 0);
    assert_eq!(hits(&s, "rotate"), 1, "the rest of the text is kept and found");
    let trail = s.audit().records(Some(held.parse().unwrap()), None, 10).unwrap();
    let ops: Vec<&str> = trail.iter().map(|r| r.operation.as_str()).collect();
    assert_eq!(ops.len(), 2, "{ops:?}");
    let update = trail.iter().find(|r| r.operation == "update").expect("an audited update");
    assert_eq!(update.via.as_deref(), Some("cortex secrets scan"));
    assert!(update.hash_before.is_some() && update.hash_after != update.hash_before);
    let again = s.secrets().scan(&Scope::default(), false).unwrap();
    assert_eq!(again.items.len(), 1, "only the deleted item is left: {:?}", again.items);
    assert!(s.audit().verify(&Default::default()).unwrap().ok, "the chain holds");

    // The live item's secrets are gone from the rows, the index and the trail; SQLite keeps
    // the freed pages until VACUUM (what docs/CLI.md tells to run).
    s.store_args(&json!({"items": [{"operation": "restore", "id": deleted}]})).unwrap();
    let purge = s.secrets().scan(&Scope::default(), true).unwrap();
    assert_eq!(purge.redacted, 1, "the restored item is redacted too");
    vacuum(db);
    assert_nowhere(db, &s, &secrets);
}

/// What docs/CLI.md tells to run after a redaction on SQLite, for its file to lose the freed
/// pages' old text; nothing on PostgreSQL (whose files the test does not read).
fn vacuum(db: &TestDb) {
    if db.sqlite_path().is_some() {
        db.execute_raw("PRAGMA wal_checkpoint(TRUNCATE)").ok();
        db.execute_raw("VACUUM").unwrap();
        db.execute_raw("PRAGMA wal_checkpoint(TRUNCATE)").ok();
    }
}

/// A real decision record (`tests/fixtures/ingest`) with a credential pasted into it, and a
/// commit whose message carries one: both reach the store redacted, and a second run finds
/// the redacted items current (nothing written).
fn ingest_of_records_and_commits_redacts_and_a_second_run_writes_nothing(db: &TestDb) {
    use cortex_testdb::git::{commit, git};
    let secrets = Secrets::new();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../../tests/fixtures/ingest/ministryofjustice+modernisation-platform/architecture-decision-record/0005-use-github-actions.md",
    );
    let record = std::fs::read_to_string(fixture).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let adr = dir.path().join("adr");
    std::fs::create_dir(&adr).unwrap();
    std::fs::write(
        adr.join("0005-use-github-actions.md"),
        format!(
            "{record}\nThe workflow pushes with {} and deploys with\n{}\n",
            secrets.github,
            secrets.text()
        ),
    )
    .unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    commit(&repo, "a.txt", &format!("fix(ci): rotate the bot token\n\nThe old one was {}.", secrets.slack));

    let s = open(db, SecretsMode::Redact);
    let files = s.ingest().files(std::slice::from_ref(&adr), false, &|_, _| {}).unwrap();
    assert!(files.refused.is_empty(), "{files:?}");
    let commits =
        s.ingest().commits(&repo, &cortex_service::ingest::Selection::default(), false, &|_, _| {}).unwrap();
    assert_eq!(commits.kinds["change"].inserted, 1, "{commits:?}");
    assert_nowhere(db, &s, &secrets);
    assert_eq!(hits(&s, "GitHub Actions"), 1, "the record is kept and found");

    let trail_before = s.audit().records(None, None, 1000).unwrap().len();
    s.ingest().files(&[adr], false, &|_, _| {}).unwrap();
    s.ingest().commits(&repo, &cortex_service::ingest::Selection::default(), false, &|_, _| {}).unwrap();
    assert_eq!(
        s.audit().records(None, None, 1000).unwrap().len(),
        trail_before,
        "a second run writes nothing"
    );
}

/// Another process edits an item between the scan's read and its rewrite: the rewrite finds
/// the item changed, reads it again, and redacts the edited text (the edit is kept).
fn secrets_scan_never_overwrites_an_edit_made_while_it_ran(db: &TestDb) {
    use cortex_service::scope_inference::InferredScope;
    use cortex_service::semantic::EmbedderChoice;
    let secrets = Secrets::new();
    let off = open(db, SecretsMode::Off);
    let r = store(&off, json!([{"kind": "todo", "content": format!("push with {}", secrets.github)}]));
    let id = id_of(&r, 0);
    let store_between = cortex_testdb::Interleaved::new(db.open());
    let config = cortex_service::Config::new(
        db.target().clone(),
        InferredScope::fixed("acme", "api", "main"),
        EmbedderChoice::None,
    );
    let scanning = cortex_service::MemoryService::with_store(store_between.clone(), &config);
    let edit = json!({"items": [{"kind": "todo", "id": id,
        "content": format!("push with {} from the release job", secrets.github)}]});
    store_between.before_next_write(move || {
        let r = off.store_args(&edit).unwrap();
        assert_eq!(r.results[0].status, ItemStatus::Updated, "{r:?}");
    });
    let report = scanning.secrets().scan(&Scope::default(), true).unwrap();
    assert!(store_between.step_ran());
    assert_eq!(report.redacted, 1, "{report:?}");
    let s = open(db, SecretsMode::Redact);
    let hit = &s.find_args(&json!({"ids": [id]})).unwrap().hits[0];
    assert_eq!(
        hit.title, "push with [redacted:github-pat] from the release job",
        "the edit is kept, redacted"
    );
    vacuum(db);
    assert_nowhere(db, &s, &secrets);
}
