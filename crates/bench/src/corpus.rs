//! A deterministic synthetic corpus of engineering knowledge across kinds and scopes, for
//! benchmarks. Same seed, same items, on every machine.

use serde_json::{Value, json};

/// splitmix64: tiny, fast, and good enough to spread words around.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn pick<'a>(&mut self, list: &[&'a str]) -> &'a str {
        list[(self.next() % list.len() as u64) as usize]
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

pub const SERVICES: &[&str] = &[
    "billing",
    "auth",
    "gateway",
    "search",
    "payments",
    "notifications",
    "ledger",
    "inventory",
    "checkout",
    "profile",
    "scheduler",
    "ingest",
    "reporting",
    "catalog",
    "shipping",
    "analytics",
];
pub const TECH: &[&str] = &[
    "postgres",
    "redis",
    "kafka",
    "kubernetes",
    "terraform",
    "grpc",
    "graphql",
    "nginx",
    "envoy",
    "sqlite",
    "rabbitmq",
    "elasticsearch",
    "prometheus",
    "grafana",
    "opentelemetry",
    "vault",
    "docker",
    "helm",
    "s3",
    "cloudfront",
    "lambda",
    "celery",
    "tokio",
    "axum",
    "react",
    "webpack",
    "jwt",
    "oauth",
    "saml",
    "ldap",
];
const TOPICS: &[&str] = &[
    "latency",
    "timeout",
    "retry",
    "backoff",
    "migration",
    "schema",
    "index",
    "cache",
    "eviction",
    "sharding",
    "replication",
    "failover",
    "deadlock",
    "connection pool",
    "rate limit",
    "circuit breaker",
    "idempotency",
    "pagination",
    "serialization",
    "compression",
    "encryption",
    "rotation",
    "certificate",
    "memory leak",
    "throughput",
    "batching",
    "queue depth",
    "partition",
    "consumer lag",
    "cold start",
    "feature flag",
    "rollback",
    "canary",
    "blue green",
    "healthcheck",
    "readiness probe",
    "autoscaling",
    "quota",
    "audit log",
];
const VERBS: &[&str] = &[
    "increase",
    "reduce",
    "replace",
    "drop",
    "adopt",
    "split",
    "merge",
    "cache",
    "shard",
    "monitor",
    "pin",
    "upgrade",
    "downgrade",
    "document",
    "automate",
    "deprecate",
    "enable",
    "disable",
    "tune",
    "isolate",
];
const FILLER: &[&str] = &[
    "because the previous approach caused incidents under peak load",
    "after measuring p95 latency in staging for two weeks",
    "which keeps the on-call load manageable",
    "so that deploys stay reversible within minutes",
    "as agreed with the platform team in the weekly review",
    "to avoid data loss when a node restarts",
    "while keeping backwards compatibility for old clients",
    "since the vendor ends support next quarter",
    "because error budgets were exhausted twice this month",
    "and the runbook was updated to match",
];
pub const PROJECTS: &[&str] = &["api", "web", "mobile", "platform"];
pub const BRANCHES: &[&str] = &["main", "develop", "feature-auth", "feature-search", "release-2"];

fn sentence(rng: &mut Rng) -> String {
    format!(
        "We {} {} for the {} {} {}.",
        rng.pick(VERBS),
        rng.pick(TECH),
        rng.pick(SERVICES),
        rng.pick(TOPICS),
        rng.pick(FILLER)
    )
}

fn paragraph(rng: &mut Rng, sentences: usize) -> String {
    (0..sentences).map(|_| sentence(rng)).collect::<Vec<_>>().join(" ")
}

/// Item number `i` of the corpus: a kind-appropriate `data` object, a tag or two, and a scope
/// spread over 4 projects × 5 branches of org `acme` (half of all items on `main` of `api`).
pub fn item(i: usize, rng: &mut Rng) -> Value {
    let service = rng.pick(SERVICES);
    let tech = rng.pick(TECH);
    let topic = rng.pick(TOPICS);
    let unique = format!("ref{i:07}");
    let (kind, data) = match i % 8 {
        0 => (
            "decision",
            json!({
                "component": service, "status": "accepted",
                "title": format!("{} {tech} for {service} {topic} {unique}", rng.pick(VERBS)),
                "rationale": paragraph(rng, 3),
                "alternatives_considered": [format!("keep {}", rng.pick(TECH)), format!("adopt {}", rng.pick(TECH))],
            }),
        ),
        1 => (
            "section",
            json!({
                "title": format!("{service} {topic} guide {unique}"),
                "heading": "Overview",
                "body": paragraph(rng, 5),
            }),
        ),
        2 => (
            "runbook",
            json!({
                "title": format!("Recover {service} from {topic} {unique}"),
                "service": service,
                "steps": [
                    {"description": sentence(rng), "command": format!("kubectl rollout restart deploy/{service}")},
                    {"description": sentence(rng), "expected_outcome": format!("{tech} reports healthy")},
                ],
            }),
        ),
        3 => (
            "incident",
            json!({
                "title": format!("{service} {topic} outage {unique}"),
                "severity": rng.pick(&["critical", "high", "medium", "low"]),
                "impact": paragraph(rng, 2),
                "resolution_status": rng.pick(&["open", "mitigated", "resolved"]),
                "root_cause": sentence(rng),
            }),
        ),
        4 => (
            "todo",
            json!({
                "title": format!("{} {tech} {topic} in {service} {unique}", rng.pick(VERBS)),
                "status": rng.pick(&["open", "in_progress", "done"]),
                "priority": rng.pick(&["low", "medium", "high"]),
            }),
        ),
        5 => (
            "change",
            json!({
                "change_type": rng.pick(&["feature", "bugfix", "refactor", "config", "performance"]),
                "subject_ref": format!("{service}/{unique}"),
                "summary": paragraph(rng, 2),
            }),
        ),
        6 => (
            "issue",
            json!({
                "tracker": "github", "external_id": format!("{}", 1000 + i),
                "title": format!("{service} {topic} with {tech} {unique}"),
                "status": rng.pick(&["open", "in_progress", "resolved"]),
                "description": paragraph(rng, 2),
            }),
        ),
        _ => (
            "risk",
            json!({
                "title": format!("{tech} {topic} risk in {service} {unique}"),
                "category": rng.pick(&["technical", "security", "operational", "performance"]),
                "risk_level": rng.pick(&["low", "medium", "high"]),
                "status": "open",
                "mitigation": paragraph(rng, 2),
            }),
        ),
    };
    let (project, branch) =
        if rng.below(2) == 0 { ("api", "main") } else { (rng.pick(PROJECTS), rng.pick(BRANCHES)) };
    json!({
        "kind": kind,
        "data": data,
        "tags": [service, tech],
        "scope": {"org": "acme", "project": project, "branch": branch},
    })
}

/// Queries an agent would ask: two or three content words, some with a service or a tech.
pub fn query(rng: &mut Rng) -> String {
    match rng.below(4) {
        0 => format!("{} {}", rng.pick(TECH), rng.pick(TOPICS)),
        1 => format!("{} {} {}", rng.pick(SERVICES), rng.pick(TOPICS), rng.pick(TECH)),
        2 => format!("why {} {}", rng.pick(VERBS), rng.pick(TECH)),
        _ => format!("{} {}", rng.pick(SERVICES), rng.pick(TOPICS)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corpus_is_deterministic_and_valid() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for i in 0..64 {
            let item = item(i, &mut a);
            assert_eq!(item, super::item(i, &mut b));
            let parsed = cortex_domain::item::parse_item(&item);
            assert!(parsed.is_ok(), "item {i}: {parsed:?}");
        }
    }
}
