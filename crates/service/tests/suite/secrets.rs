//! Credentials in a stored item's text (`CORTEX_SECRETS`), on every backend: by default each
//! is replaced by a marker before anything keeps the text — the item, the lexical index, the
//! audit trail — and the result says which fields held which; `refuse` refuses the item alone,
//! naming the field and the rule; `off` keeps the text as given. The credentials are the
//! scanner's own test material: made at run time from a seeded generator, so no scanner of a
//! code host sees a real-looking token in the source.

use crate::common::{Tools, id_of};
use cortex_service::response::{ItemStatus, StoreResponse};
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::settings::SecretsMode;
use cortex_service::{Config, MemoryService};
use cortex_testdb::{TestDb, per_backend};
use serde_json::{Value, json};

per_backend!(
    secrets_are_redacted_by_default_before_the_store_the_index_and_the_trail,
    refuse_refuses_the_item_naming_the_field_and_stores_the_rest,
    off_keeps_the_text_as_given,
);

/// `n` characters of `alphabet`, the same for the same seed (the scanner's tests' generator).
pub(crate) fn random(alphabet: &str, n: usize, seed: u64) -> String {
    let chars: Vec<char> = alphabet.chars().collect();
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            chars[((state >> 33) as usize) % chars.len()]
        })
        .collect()
}

pub(crate) const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER32: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const BASE64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The credentials of the probe: each secret's text (one line, what a find would be asked)
/// and the rule that names it.
pub(crate) struct Secrets {
    pub aws_id: String,
    pub aws_secret: String,
    pub github: String,
    pub slack: String,
    pub pem_body: String,
    pub password: &'static str,
}

impl Secrets {
    pub(crate) fn new() -> Secrets {
        Secrets {
            aws_id: format!("AKIA{}", random(UPPER32, 16, 1)),
            aws_secret: random("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 40, 2),
            github: format!("ghp_{}", random(ALNUM, 36, 6)),
            slack: format!(
                "xoxb-{}-{}-{}",
                random("0123456789", 11, 15),
                random("0123456789", 12, 16),
                random(ALNUM, 24, 17)
            ),
            pem_body: random(BASE64, 200, 40),
            password: "Tr0ub4dor&3x",
        }
    }

    /// A runbook-like text holding all of them.
    pub(crate) fn text(&self) -> String {
        format!(
            "Deploy notes.\naws id {}\naws_secret_access_key = {}\nthe CI pushes with {}\nthe bot posts with {}\n\
             -----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----\n\
             DATABASE_URL=postgres://cortex:{}@db.internal:5432/memory\nRotate monthly.",
            self.aws_id, self.aws_secret, self.github, self.slack, self.pem_body, self.password
        )
    }

    /// Each secret as a find would be asked for it (a PEM body by its first characters).
    pub(crate) fn needles(&self) -> Vec<String> {
        vec![
            self.aws_id.clone(),
            self.aws_secret.clone(),
            self.github.clone(),
            self.slack.clone(),
            self.pem_body[..60].to_string(),
            self.password.to_string(),
        ]
    }
}

const RULES: [&str; 6] = [
    "aws-access-token",
    "aws-secret-access-key",
    "github-pat",
    "slack-bot-token",
    "private-key",
    "password-in-url",
];

pub(crate) fn open(db: &TestDb, mode: SecretsMode) -> MemoryService {
    let scope = InferredScope::fixed("acme", "api", "main");
    let mut config = Config::new(db.target().clone(), scope, EmbedderChoice::None);
    config.secrets = mode;
    MemoryService::open(&config).unwrap()
}

pub(crate) fn store(s: &MemoryService, items: Value) -> StoreResponse {
    s.store_args(&json!({ "items": items })).unwrap()
}

pub(crate) fn hits(s: &MemoryService, query: &str) -> usize {
    s.find_args(&json!({"query": query})).unwrap().hits.len()
}

/// Everything the store keeps of every item, and the whole audit trail, as text.
pub(crate) fn kept(db: &TestDb, s: &MemoryService) -> String {
    let filters =
        cortex_store::Filters { include_superseded: true, include_expired: true, ..Default::default() };
    let items = db.open().recent(&filters, 1000).unwrap();
    let trail = s.audit().records(None, None, 1000).unwrap();
    format!("{items:?}\n{}", serde_json::to_string(&trail).unwrap())
}

fn secrets_are_redacted_by_default_before_the_store_the_index_and_the_trail(db: &TestDb) {
    let s = open(db, SecretsMode::Redact);
    let secrets = Secrets::new();
    let r = store(
        &s,
        json!([
            {"kind": "section", "data": {"title": "Deploy credentials", "body": secrets.text()},
             "metadata": {"note": format!("token {}", secrets.github)}},
            {"kind": "todo", "content": format!("rotate {} before Friday", secrets.github)},
        ]),
    );
    assert_eq!(r.results[0].status, ItemStatus::Inserted, "{r:?}");
    let mut rules: Vec<(&str, &str)> =
        r.results[0].redacted.iter().map(|f| (f.field.as_str(), f.rule.as_str())).collect();
    rules.sort();
    let mut expected: Vec<(&str, &str)> = RULES.iter().map(|rule| ("data.body", *rule)).collect();
    expected.push(("metadata.note", "github-pat"));
    expected.sort();
    assert_eq!(rules, expected);
    let todo = &r.results[1];
    assert_eq!(todo.status, ItemStatus::Inserted);
    assert_eq!(todo.redacted.len(), 1);
    assert_eq!((todo.redacted[0].field.as_str(), todo.redacted[0].rule.as_str()), ("content", "github-pat"));

    for needle in secrets.needles() {
        assert_eq!(hits(&s, &needle), 0, "a find by a secret ({needle}) finds nothing");
    }
    assert_eq!(hits(&s, "Deploy credentials"), 1, "the rest of the text is kept and found");
    let kept = kept(db, &s);
    for needle in secrets.needles() {
        assert!(!kept.contains(&needle), "{needle} is kept in clear");
    }
    assert!(kept.contains("[redacted:github-pat]") && kept.contains("[redacted:private-key]"));

    // An update is screened as an insert is.
    let id = id_of(&r, 0);
    let update = store(
        &s,
        json!([{"kind": "section", "id": id, "data": {"title": "Deploy credentials",
            "body": format!("now {}", secrets.slack)}}]),
    );
    assert_eq!(update.results[0].status, ItemStatus::Updated, "{update:?}");
    assert_eq!(update.results[0].redacted[0].rule, "slack-bot-token");
    assert!(!self::kept(db, &s).contains(&secrets.slack));
    // A text without secrets says nothing.
    let plain = store(&s, json!([{"kind": "todo", "content": "the API key rotation runs monthly"}]));
    assert!(plain.results[0].redacted.is_empty());
    assert!(!serde_json::to_string(&plain).unwrap().contains("redacted"), "the wire carries no empty list");
}

fn refuse_refuses_the_item_naming_the_field_and_stores_the_rest(db: &TestDb) {
    let s = open(db, SecretsMode::Refuse);
    let secrets = Secrets::new();
    let r = store(
        &s,
        json!([
            {"kind": "todo", "content": "rotate the deploy keys"},
            {"kind": "section", "data": {"title": "Deploy credentials", "body": secrets.text()}},
            {"kind": "todo", "content": format!("the bot token is {}", secrets.slack)},
            {"kind": "todo", "content": "renew the certificates"},
        ]),
    );
    let statuses: Vec<ItemStatus> = r.results.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [
            ItemStatus::Inserted,
            ItemStatus::ValidationError,
            ItemStatus::ValidationError,
            ItemStatus::Inserted
        ]
    );
    let body = r.results[1].error.as_ref().unwrap();
    assert_eq!(body.field, "items[1].data.body");
    assert!(body.message.contains("aws-access-token") && body.message.contains("5 more"), "{}", body.message);
    assert!(body.human_hint.contains("reference to where it lives"), "{}", body.human_hint);
    let slack = r.results[2].error.as_ref().unwrap();
    assert_eq!(slack.field, "items[2].content");
    assert!(slack.message.contains("slack-bot-token"), "{}", slack.message);
    assert_eq!(hits(&s, "deploy keys"), 1);
    assert_eq!(hits(&s, "certificates"), 1);
    let kept = kept(db, &s);
    for needle in secrets.needles() {
        assert!(!kept.contains(&needle), "{needle} is kept");
    }
}

fn off_keeps_the_text_as_given(db: &TestDb) {
    let s = open(db, SecretsMode::Off);
    let secrets = Secrets::new();
    let r = store(
        &s,
        json!([{"kind": "section", "data": {"title": "Deploy credentials", "body": secrets.text()}}]),
    );
    assert_eq!(r.results[0].status, ItemStatus::Inserted);
    assert!(r.results[0].redacted.is_empty());
    assert_eq!(hits(&s, &secrets.github), 1);
    assert!(kept(db, &s).contains(&secrets.github));
}
