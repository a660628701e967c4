//! One true positive and one near miss per rule. Every credential here is made up, built at
//! run time from a seeded generator, so no scanner (ours or a code host's) sees a real-looking
//! token in the source.

use super::*;

/// `n` characters of `alphabet`, the same for the same seed.
fn random(alphabet: &str, n: usize, seed: u64) -> String {
    let chars: Vec<char> = alphabet.chars().collect();
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            chars[((state >> 33) as usize) % chars.len()]
        })
        .collect()
}

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER32: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const HEX: &str = "0123456789abcdef";
const WORDISH: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";

/// The rules that found something in `text`.
fn rules_in(text: &str) -> Vec<&'static str> {
    scan(text).into_iter().map(|f| f.rule).collect()
}

/// `text` is found by `rule` alone, its secret `secret` replaced by the rule's marker.
fn found(rule: &str, text: &str, secret: &str) {
    let r = redact(text);
    assert_eq!(r.findings.iter().map(|f| f.rule).collect::<Vec<_>>(), [rule], "{text}");
    let f = &r.findings[0];
    assert_eq!(&text[f.start..f.end], secret, "the span is the secret");
    assert!(!r.text.contains(secret) && r.text.contains(&marker(rule)), "{}", r.text);
}

fn missed(text: &str) {
    assert_eq!(rules_in(text), Vec::<&str>::new(), "{text}");
}

#[test]
fn every_rule_compiles() {
    assert!(rules().len() >= 30);
    let mut ids: Vec<&str> = rules().iter().map(|r| r.spec.id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), rules().len(), "ids are unique: they are the markers' names");
}

#[test]
fn aws_access_key_id() {
    let id = format!("AKIA{}", random(UPPER32, 16, 1));
    found("aws-access-token", &format!("aws id {id} for the backup bucket"), &id);
    missed("the documented example AKIAIOSFODNN7EXAMPLE");
    missed(&format!("AKIA{}", random(UPPER32, 12, 1)));
}

#[test]
fn aws_secret_access_key() {
    let secret = random("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+", 40, 2);
    found("aws-secret-access-key", &format!("aws_secret_access_key = {secret}\n"), &secret);
    found("aws-secret-access-key", &format!("AWS_SECRET_KEY: \"{secret}\""), &secret);
    missed("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
    missed(&format!("aws region = {}", random(ALNUM, 40, 2)));
}

#[test]
fn gcp_api_key() {
    let key = format!("AIza{}", random(WORDISH, 35, 3));
    found("gcp-api-key", &format!("maps key {key} in the web app"), &key);
    missed(&format!("AIza{} is too short", random(WORDISH, 20, 3)));
}

#[test]
fn azure_ad_client_secret() {
    let secret = format!("{}8Q~{}", random(ALNUM, 3, 4), random(ALNUM, 34, 5));
    found("azure-ad-client-secret", &format!("client secret: {secret}"), &secret);
    missed(&format!("a version string 1Q~{} and more", random(ALNUM, 10, 5)));
}

#[test]
fn github_tokens() {
    for (rule, prefix, seed) in [
        ("github-pat", "ghp_", 6),
        ("github-oauth", "gho_", 7),
        ("github-app-token", "ghs_", 8),
        ("github-refresh-token", "ghr_", 9),
    ] {
        let token = format!("{prefix}{}", random(ALNUM, 36, seed));
        found(rule, &format!("the CI uses {token} to push"), &token);
        missed(&format!("{prefix}{}", random(ALNUM, 20, seed)));
    }
    let fine = format!("github_pat_{}", random("ABCDEFabcdef0123456789_", 82, 10));
    found("github-fine-grained-pat", &format!("token {fine}"), &fine);
    missed(&format!("github_pat_{}", random(ALNUM, 30, 10)));
}

#[test]
fn gitlab_tokens() {
    let pat = format!("glpat-{}", random(WORDISH, 20, 11));
    found("gitlab-pat", &format!("GITLAB_TOKEN {pat} "), &pat);
    missed("glpat-short");
    let routable = format!(
        "glpat-{}.01{}",
        random(WORDISH, 30, 12),
        random("abcdefghijklmnopqrstuvwxyz0123456789", 7, 12)
    );
    found("gitlab-pat-routable", &format!("{routable} "), &routable);
    let ptt = format!("glptt-{}", random(HEX, 40, 13));
    found("gitlab-ptt", &format!("trigger {ptt}"), &ptt);
    missed(&format!("glptt-{}", random(HEX, 20, 13)));
    let rrt = format!("GR1348941{}", random(WORDISH, 20, 14));
    found("gitlab-rrt", &format!("runner {rrt}"), &rrt);
    missed("GR1348941 on its own");
}

#[test]
fn slack_tokens() {
    let bot = format!(
        "xoxb-{}-{}-{}",
        random("0123456789", 11, 15),
        random("0123456789", 12, 16),
        random(ALNUM, 24, 17)
    );
    found("slack-bot-token", &format!("bot {bot}"), &bot);
    missed("xoxb-123-456-abc");
    let user = format!(
        "xoxp-{}-{}-{}-{}",
        random("0123456789", 11, 18),
        random("0123456789", 11, 19),
        random("0123456789", 12, 20),
        random(HEX, 32, 21)
    );
    found("slack-user-token", &format!("user {user}"), &user);
    missed("xoxp-12-34-56-ab");
    let app = format!(
        "xapp-1-A{}-{}-{}",
        random(UPPER32, 10, 22),
        random("0123456789", 13, 23),
        random(HEX, 64, 24)
    );
    found("slack-app-token", &app, &app);
    missed("xapp-a-b");
    let legacy = format!(
        "xoxs-{}-{}-{}-{}",
        random("0123456789", 10, 25),
        random("0123456789", 10, 26),
        random("0123456789", 12, 27),
        random(HEX, 40, 28)
    );
    found("slack-legacy-token", &legacy, &legacy);
    missed("xoxs-1-2");
    let hook = format!("https://hooks.slack.com/services/{}", random(ALNUM, 44, 29));
    found("slack-webhook-url", &format!("post to {hook} daily"), &hook);
    missed("see https://hooks.slack.com/services/ for the format");
}

#[test]
fn stripe_key() {
    let key = format!("sk_live_{}", random(ALNUM, 24, 30));
    found("stripe-access-token", &format!("STRIPE {key}\n"), &key);
    missed("sk_live_ is the prefix of live keys");
}

#[test]
fn model_provider_and_registry_tokens() {
    let openai = format!("sk-proj-{}T3BlbkFJ{}", random(WORDISH, 74, 31), random(WORDISH, 74, 32));
    found("openai-api-key", &format!("{openai} "), &openai);
    missed("sk-proj-short T3BlbkFJ");
    let anthropic = format!("sk-ant-api03-{}AA", random(WORDISH, 93, 33));
    found("anthropic-api-key", &format!("key {anthropic}\n"), &anthropic);
    missed("sk-ant-api03-tooshortAA");
    let npm = format!("npm_{}", random(ALNUM, 36, 34));
    found("npm-access-token", &format!("//registry.npmjs.org/:_authToken {npm}\n"), &npm);
    missed("npm_install is a script name");
    let pypi = format!("pypi-AgEIcHlwaS5vcmc{}", random(WORDISH, 60, 35));
    found("pypi-upload-token", &format!("password {pypi}"), &pypi);
    missed("pypi-AgEIcHlwaS5vcmc");
    let hf = format!("hf_{}", random("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", 34, 36));
    found("huggingface-access-token", &format!("HF {hf}\n"), &hf);
    missed("hf_transfer is a package");
    let sendgrid = format!("SG.{}", random(WORDISH, 66, 37));
    found("sendgrid-api-token", &format!("{sendgrid} "), &sendgrid);
    missed("SG.example");
    let digitalocean = format!("dop_v1_{}", random(HEX, 64, 38));
    found("digitalocean-pat", &format!("{digitalocean}\n"), &digitalocean);
    missed("dop_v1_abc");
    let age = format!("AGE-SECRET-KEY-1{}", random("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58, 39));
    found("age-secret-key", &age, &age);
    missed("AGE-SECRET-KEY-1 is how age keys start");
}

#[test]
fn private_key_block() {
    let body = random("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 200, 40);
    let block = format!("-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----");
    found("private-key", &format!("the deploy key:\n{block}\nkeep it safe"), &block);
    missed("-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----");
    missed("-----BEGIN PRIVATE KEY----- then nothing");
}

#[test]
fn jwt() {
    let token =
        format!("eyJ{}.eyJ{}.{}", random(ALNUM, 30, 41), random(ALNUM, 60, 42), random(WORDISH, 43, 43));
    found("jwt", &format!("Authorization: {token}\n"), &token);
    missed("eyJhbGciOi is how a JWT header starts");
}

#[test]
fn generic_high_entropy_value_next_to_a_secret_like_name() {
    let value = random(ALNUM, 32, 44);
    found("generic-api-key", &format!("datadog_api_key = \"{value}\"\n"), &value);
    missed("api_version = \"2024-10-01\"");
    missed("the key_name = \"primary-bucket-key\"");
    missed(&format!("token_endpoint = \"https://id.example.com/{}\"", "oauth2"));
}

#[test]
fn password_in_a_url() {
    found(
        "password-in-url",
        "DATABASE_URL=postgres://cortex:Tr0ub4dor&3x@db.internal:5432/memory",
        "Tr0ub4dor&3x",
    );
    found("password-in-url", "redis://:s3cr3t-pw@cache:6379/0", "s3cr3t-pw");
    missed("postgres://cortex:secret@db.internal:5432/memory");
    missed("postgres://cortex:${DB_PASSWORD}@db.internal/memory");
    missed("postgres://cortex:<password>@db.internal/memory");
    // The elision a document writes for a password it leaves out (docs/DEPLOY.md).
    missed("CORTEX_DB=postgres://cortex:…@pooler.internal:6432/memory");
    missed("`postgres://cortex:…@db1:5432,db2:5432/memory?target_session_attrs=read-write`");
    found("password-in-url", "postgres://cortex:…pw-2024!@db.internal/memory", "…pw-2024!");
    missed("mailto:someone@example.com and https://example.com/a:b@c");
    missed("postgres://u:p@h:5/db");
}

#[test]
fn password_and_secret_assignments() {
    found("password-assignment", "login with password=hunter2", "hunter2");
    found("password-assignment", "secret: 9f8e7d6c5b4a", "9f8e7d6c5b4a");
    missed("password=$DB_PASSWORD");
    missed("password: <your password>");
    missed("secret: changeme");
    missed("the password field is required");
    missed("`password=`/`secret:` assignments");
}

#[test]
fn private_spans_are_removed_whole_with_what_they_hold() {
    let token = format!("ghp_{}", random(ALNUM, 36, 45));
    let text = format!("keep this <private>not this {token}</private> and this");
    let r = redact(&text);
    assert_eq!(r.text, "keep this  and this");
    assert_eq!(r.findings.iter().map(|f| f.rule).collect::<Vec<_>>(), [PRIVATE]);
    assert_eq!(redact("before <PRIVATE>never closed").text, "before ");
    missed("`<private>…</private>` spans are never stored");
}

#[test]
fn overlapping_rules_name_one_span_and_plain_text_is_borrowed() {
    let token = format!("ghp_{}", random(ALNUM, 36, 46));
    let text = format!("password={token}");
    let r = redact(&text);
    assert_eq!(r.findings.len(), 1);
    assert_eq!(r.findings[0].rule, "github-pat", "the specific rule names it");
    assert_eq!(r.text, "password=[redacted:github-pat]");
    let plain = "Decided to keep sessions in Postgres; the API key rotation runs monthly.";
    assert!(matches!(redact(plain).text, Cow::Borrowed(_)));
    let (id, key) =
        (format!("AKIA{}", random(UPPER32, 16, 47)), format!("sk_live_{}", random(ALNUM, 24, 48)));
    let many = format!("a {id} b {key} c");
    let r = redact(&many);
    assert_eq!(r.text, "a [redacted:aws-access-token] b [redacted:stripe-access-token] c");
    assert!(r.findings.windows(2).all(|w| w[0].end <= w[1].start));
}

#[test]
fn spans_end_on_character_boundaries() {
    let text = "password=pä55wörd€€€ and more";
    let r = redact(text);
    assert_eq!(r.findings.len(), 1, "{r:?}");
    assert!(text.is_char_boundary(r.findings[0].start) && text.is_char_boundary(r.findings[0].end));
}

#[test]
fn entropy_is_bits_per_byte() {
    assert_eq!(entropy(b""), 0.0);
    assert_eq!(entropy(b"aaaa"), 0.0);
    assert!((entropy(b"abcd") - 2.0).abs() < 1e-9);
}

#[test]
fn an_items_texts_are_redacted_and_what_they_make_derived_again() {
    use crate::item::{ItemOp, parse_item};
    let token = format!("ghp_{}", random(ALNUM, 36, 49));
    let upsert = |value: serde_json::Value| match parse_item(&value).unwrap() {
        ItemOp::Upsert(item) => *item,
        other => panic!("{other:?}"),
    };
    let mut todo = upsert(serde_json::json!({"kind": "todo", "content": format!("push with {token}"),
        "metadata": {"notes": ["plain", format!("again {token}")]}}));
    let hash_before = todo.content_hash.clone();
    let found = redact_item(&mut todo);
    let fields: Vec<(&str, &str)> = found.iter().map(|f| (f.field.as_str(), f.rule)).collect();
    assert_eq!(fields, [("content", "github-pat"), ("metadata.notes[1]", "github-pat")]);
    assert_eq!(todo.title, "push with [redacted:github-pat]", "the title is made of the redacted text");
    assert!(!format!("{todo:?}").contains(&token));
    assert_ne!(todo.content_hash, hash_before, "the hash is of the text stored");

    let mut ddl = upsert(serde_json::json!({"kind": "ddl", "data": {"migration_id": "0007_roles",
        "ddl_text": "ALTER ROLE app PASSWORD 'x';\n-- password=Sup3rS3cret!"}}));
    redact_item(&mut ddl);
    let text = ddl.data["ddl_text"].as_str().unwrap().to_string();
    assert!(text.ends_with("password=[redacted:password-assignment]"), "{text}");
    let mut check = ddl.data.clone();
    check.remove("checksum");
    crate::natural_key::apply_ddl_checksum(&mut check).unwrap();
    assert_eq!(ddl.data["checksum"], check["checksum"], "the checksum is of the redacted text");

    let mut plain = upsert(serde_json::json!({"kind": "todo", "content": "rotate the keys monthly"}));
    let before = plain.clone();
    assert!(redact_item(&mut plain).is_empty());
    assert_eq!(plain, before);
}

#[test]
fn tags_and_object_keys_are_redacted_and_no_value_is_lost() {
    use super::{ItemTexts, redact_texts};
    let token = format!("ghp_{}", random(ALNUM, 36, 50));
    let other = format!("ghp_{}", random(ALNUM, 36, 51));
    let mut data = serde_json::Map::new();
    data.insert(token.clone(), serde_json::json!("first"));
    data.insert(other.clone(), serde_json::json!("second"));
    data.insert("api_key_name".into(), serde_json::json!("a key's name, not a key"));
    let mut tags =
        vec!["deploy".to_string(), token.to_lowercase(), other.clone(), "<private>me</private>".into()];
    let found = redact_texts(ItemTexts {
        content: None,
        data: Some(&mut data),
        metadata: None,
        source: None,
        tags: &mut tags,
    });
    let marker = "[redacted:github-pat]";
    assert_eq!(data.len(), 3, "two keys redacted alike stay two: {data:?}");
    assert_eq!(data[marker], "first");
    assert_eq!(data[&format!("{marker} (2)")], "second");
    assert_eq!(data["api_key_name"], "a key's name, not a key", "a secret-like name is no secret");
    assert_eq!(tags, ["deploy", marker], "redacted alike are one tag, a private one is gone");
    let fields: Vec<&str> = found.iter().map(|f| f.field.as_str()).collect();
    assert_eq!(
        fields,
        [&format!("data.{marker}"), &format!("data.{marker} (2)"), "tags[1]", "tags[2]", "tags[3]"]
    );
    assert!(!format!("{data:?}{tags:?}").contains(&token[4..]));
}
