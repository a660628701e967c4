use super::*;

pub(crate) const NYGARD_FIRST: &str = "# 1. Record architecture decisions

Date: 2016-02-12

## Status

Accepted

## Context

We need to record the architectural decisions made on this project.

## Decision

We will use Architecture Decision Records, as described by Michael Nygard.

## Consequences

See Michael Nygard's article, linked above. For a lightweight ADR toolset, see Nat Pryce's _adr-tools_.
";

pub(crate) const NYGARD_SUPERSEDED: &str = "# 2. Use MySQL for orders

Date: 2016-02-13

## Status

Superseded by [3. Use PostgreSQL for orders](0003-use-postgresql-for-orders.md)

## Context

Orders need a relational store.

## Decision

We will use MySQL.

## Consequences

Ops knows MySQL.
";

pub(crate) const NYGARD_SUPERSEDING: &str = "# 3. Use PostgreSQL for orders

Date: 2016-03-01

## Status

Accepted

Supersedes [2. Use MySQL for orders](0002-use-mysql-for-orders.md)

## Context

MySQL's JSON support fell short for order line items.

## Decision

We will use PostgreSQL 16 for the orders service.

## Consequences

A migration of the existing orders.
";

pub(crate) const MADR_3: &str = "---
status: accepted
date: 2022-08-04
deciders: Oliver Kopp, Olaf Zimmermann
consulted:
  - Stefan
---
# Use Markdown Any Decision Records

## Context and Problem Statement

We want to record any decisions made in this project.
Which format and structure should these records follow?

## Considered Options

* [MADR](https://adr.github.io/madr/) 3.0.0 – The Markdown Any Decision Records
* [Michael Nygard's template](http://thinkrelevance.com/blog/2011/11/15/documenting-architecture-decisions) – The first incarnation of the term \"ADR\"
* Formless – No conventions for file format and structure

## Decision Outcome

Chosen option: \"MADR 3.0.0\", because it is lean and fits our development style.

### Consequences

* Good, because decisions are recorded in a well-known form
* Bad, because the team has to learn it

## Pros and Cons of the Options

### MADR 3.0.0

* Good, because it is lean

### Formless

* Bad, because no one finds anything

## More Information

The decision will be revisited in a year.
";

const MADR_2: &str = "# Use Plain JUnit5 for TDD

* Status: superseded by [ADR-0005](0005-use-assertj.md)
* Deciders: Oliver Kopp
* Date: 2017-12-13

## Context and Problem Statement

How to write readable test assertions?

## Considered Options

* Plain JUnit5
* Hamcrest

## Decision Outcome

Chosen option: \"Plain JUnit5\", because it comes out best.
";

#[test]
fn an_adr_tools_record_reads_its_parts() {
    assert!(looks_like_decision(NYGARD_FIRST));
    let d = parse_decision("0001-record-architecture-decisions.md", NYGARD_FIRST);
    assert_eq!(d.title, "Record architecture decisions");
    assert_eq!((d.status, d.status_as_written.as_str()), ("accepted", "Accepted"));
    assert_eq!(d.date.as_deref(), Some("2016-02-12"));
    assert!(d.rationale.starts_with("## Context\n\nWe need to record"), "{}", d.rationale);
    assert!(d.rationale.contains("## Decision\n\nWe will use Architecture Decision Records"));
    assert!(!d.rationale.contains("Accepted") && !d.rationale.contains("Nat Pryce"));
    assert!(d.consequences.as_deref().unwrap().contains("Nat Pryce"));
    assert!(d.links.is_empty());
    let data = d.data("orders");
    assert_eq!(data["component"], "orders");
    assert_eq!(data["status"], "accepted");
    assert!(data.get("alternatives_considered").is_none());
}

#[test]
fn supersede_lines_become_links_both_ways() {
    let old = parse_decision("0002-use-mysql-for-orders.md", NYGARD_SUPERSEDED);
    assert_eq!(old.status, "superseded");
    assert_eq!(
        old.links,
        [SupersedeLink {
            direction: Direction::SupersededBy,
            target: LinkTarget::Path("0003-use-postgresql-for-orders.md".into())
        }]
    );
    let new = parse_decision("0003-use-postgresql-for-orders.md", NYGARD_SUPERSEDING);
    assert_eq!(new.status, "accepted", "the first line of the status is the status");
    assert_eq!(
        new.links,
        [SupersedeLink {
            direction: Direction::Supersedes,
            target: LinkTarget::Path("0002-use-mysql-for-orders.md".into())
        }]
    );
    let by_number = parse_decision("x.md", "# X\n\n## Status\n\nSuperseded by ADR-0012\n\n## Context\n\nc\n");
    assert_eq!(by_number.links[0].target, LinkTarget::Number(12));
}

#[test]
fn a_madr_record_with_front_matter() {
    assert!(looks_like_decision(MADR_3));
    let d = parse_decision("0001-use-markdown-any-decision-records.md", MADR_3);
    assert_eq!(d.title, "Use Markdown Any Decision Records");
    assert_eq!(d.status, "accepted");
    assert_eq!(d.date.as_deref(), Some("2022-08-04"));
    assert_eq!(d.deciders, ["Oliver Kopp", "Olaf Zimmermann"]);
    assert_eq!(d.alternatives.len(), 3);
    assert!(d.alternatives[0].starts_with("MADR 3.0.0"), "{:?}", d.alternatives);
    assert!(d.rationale.contains("Which format and structure"));
    assert!(d.rationale.contains("Chosen option: \"MADR 3.0.0\""));
    assert!(d.rationale.contains("no one finds anything"), "pros and cons are the why");
    let consequences = d.consequences.unwrap();
    assert!(consequences.contains("Good, because decisions are recorded"));
    assert!(consequences.contains("revisited in a year"));
    let meta = parse_decision("x.md", MADR_3).metadata();
    assert_eq!(meta["deciders"], serde_json::json!(["Oliver Kopp", "Olaf Zimmermann"]));
}

#[test]
fn a_madr_2_record_with_status_lines() {
    assert!(looks_like_decision(MADR_2));
    let d = parse_decision("0004-use-plain-junit5.md", MADR_2);
    assert_eq!(d.title, "Use Plain JUnit5 for TDD");
    assert_eq!((d.status, d.date.as_deref()), ("superseded", Some("2017-12-13")));
    assert_eq!(d.deciders, ["Oliver Kopp"]);
    assert_eq!(
        d.links[0],
        SupersedeLink {
            direction: Direction::SupersededBy,
            target: LinkTarget::Path("0005-use-assertj.md".into())
        }
    );
}

#[test]
fn statuses_map_onto_ours() {
    let cases = [
        ("Accepted", "accepted"),
        ("**Accepted**", "accepted"),
        ("proposed", "proposed"),
        ("Draft", "proposed"),
        ("On hold", "proposed"),
        ("Rejected", "rejected"),
        ("Deprecated", "deprecated"),
        ("superseded by [ADR-0005](0005-example.md)", "superseded"),
        ("Superseded", "superseded"),
        ("", "proposed"),
        ("something else", "proposed"),
        ("✅ Accepted", "accepted"),
        ("❌ Rejected", "rejected"),
        ("⌛️ Superseded [0019](0019-use-bash-go-as-core-languages.md)", "superseded"),
        ("🤔 Proposed", "proposed"),
        ("accepted; supersedes ADR-0045", "accepted"),
        ("on hold", "proposed"),
    ];
    for (written, ours) in cases {
        assert_eq!(decision_status(written), ours, "{written}");
    }
}

#[test]
fn titles_lose_their_numbers() {
    for (heading, title) in [
        ("1. Record architecture decisions", "Record architecture decisions"),
        ("ADR-0002: Use X", "Use X"),
        ("ADR 7 - Use Y", "Use Y"),
        ("0003 Use Z", "Use Z"),
        ("[4] Keep it", "Keep it"),
        ("3D rendering in the browser", "3D rendering in the browser"),
        ("Use Kafka", "Use Kafka"),
    ] {
        assert_eq!(strip_number(heading), title, "{heading}");
    }
    assert_eq!(adr_number("0007-use-x.md"), Some(7));
    assert_eq!(adr_number("adr-012-use-y.md"), Some(12));
    assert_eq!(adr_number("use-z.md"), None);
    let untitled =
        parse_decision("0009-cache-in-redis.md", "## Status\n\nAccepted\n\n## Context\n\nSpeed.\n");
    assert_eq!(untitled.title, "cache in redis");
}

#[test]
fn plain_documents_are_not_decisions() {
    assert!(!looks_like_decision("# Deploying\n\n## Status\n\nGreen.\n\n## Steps\n\nRun it.\n"));
    assert!(!looks_like_decision("---\nstatus: draft\n---\n# Blog post\n\nText.\n"));
    assert!(!looks_like_decision("# Notes\n\nWe decided things.\n"));
}

#[test]
fn a_link_target_reads_as_a_person_names_it() {
    assert_eq!(LinkTarget::Path("0003-use-postgresql.md".into()).to_string(), "0003-use-postgresql.md");
    assert_eq!(LinkTarget::Number(2).to_string(), "decision record 2");
}

#[test]
fn statuses_as_teams_write_them() {
    let cases = [
        ("# A\n\n**Status:** Accepted\n\n## Context\n\nc\n", "accepted", "Accepted"),
        ("# A\n\n- **Status**: Rejected\n\n## Context\n\nc\n", "rejected", "Rejected"),
        (
            "# A\n\n| Field | Value |\n|---|---|\n| **Status** | Deprecated |\n\n## Decision\n\nd\n",
            "deprecated",
            "Deprecated",
        ),
        (
            "# A\n\n![Status: accepted](https://img.shields.io/badge/status-accepted-green)\n\n## Context\n\nc\n",
            "accepted",
            "accepted",
        ),
        ("# A\n\n## Status\n\n| Status | Proposed |\n|---|---|\n\n## Context\n\nc\n", "proposed", "Proposed"),
        (
            "---\nstatus: on hold\n---\n# A\n\n## Context and Problem Statement\n\nc\n\n## Decision Outcome\n\nd\n",
            "proposed",
            "on hold",
        ),
        (
            "---\nparent: Decisions\nnav_order: 3\n---\n# A\n\n## Context and Problem Statement\n\nc\n\n## Considered Options\n\n* x\n",
            "proposed",
            "",
        ),
    ];
    for (text, status, written) in cases {
        assert!(looks_like_decision(text), "{text}");
        let d = parse_decision("0001-a.md", text);
        assert_eq!((d.status, d.status_as_written.as_str()), (status, written), "{text}");
    }
}

#[test]
fn supersede_links_in_front_matter_phrases_and_emoji_statuses() {
    let newer = parse_decision(
        "0057-a.md",
        "---\nstatus: \"accepted; supersedes ADR-0045\"\n---\n# A\n\n## Context and Problem Statement\n\nc\n",
    );
    assert_eq!(newer.status, "accepted");
    assert_eq!(
        newer.links,
        [SupersedeLink { direction: Direction::Supersedes, target: LinkTarget::Number(45) }]
    );
    let older = parse_decision("0045-b.md", "---\nstatus: \"superseded by ADR-0057\"\n---\n# B\n");
    assert_eq!(
        older.links,
        [SupersedeLink { direction: Direction::SupersededBy, target: LinkTarget::Number(57) }]
    );
    let emoji = parse_decision(
        "0004-c.md",
        "# 4. C\n\nDate: 2020-11-19\n\n## Status\n\n⌛️ Superseded [0019](0019-use-bash-go-as-core-languages.md)\n\n## Context\n\nc\n",
    );
    assert_eq!(emoji.status, "superseded");
    assert_eq!(
        emoji.links,
        [SupersedeLink {
            direction: Direction::SupersededBy,
            target: LinkTarget::Path("0019-use-bash-go-as-core-languages.md".into())
        }]
    );
    assert_eq!(emoji.occurred_at(), crate::sources::dates::date_ms("2020-11-19"));
    let keyed = parse_decision("0002-d.md", "---\nsuperseded-by: 0003-e.md\n---\n# D\n");
    assert_eq!(keyed.links[0].target, LinkTarget::Path("0003-e.md".into()));
    let prose = parse_decision(
        "0005-f.md",
        "# F\n\n## Context\n\nThis supersedes nothing we know of, said ADR-0001.\n",
    );
    assert!(prose.links.is_empty(), "{:?}", prose.links);
}

#[test]
fn a_y_statement_is_a_decision() {
    let text = "# Session storage\n\nIn the context of the checkout service, facing lost carts on restarts, we decided for PostgreSQL and neglected Redis and Memcached, to achieve durable sessions, accepting slower reads.\n";
    assert!(looks_like_decision(text));
    let d = parse_decision("session-storage.md", text);
    assert_eq!(d.title, "Session storage");
    assert_eq!(d.alternatives, ["Redis", "Memcached"]);
    assert_eq!(d.status, "proposed");
    assert!(d.rationale.contains("we decided for PostgreSQL"));
    assert!(!looks_like_decision("# Notes\n\nIn the context of testing we decided nothing.\n"));
}

#[test]
fn a_date_from_a_log4brains_file_name() {
    let d = parse_decision(
        "20201016-use-the-slug.md",
        "# Use the slug\n\n## Context and Problem Statement\n\nc\n",
    );
    assert_eq!(d.date.as_deref(), Some("2020-10-16"));
    let dated = parse_decision("x.md", "# X\n\n- Date: 2020-10-16\n\n## Context\n\nc\n");
    assert_eq!(dated.date.as_deref(), Some("2020-10-16"));
}
