//! The table of the 16 kinds: each kind's fields, title rule, status field and whether it
//! needs `data`. Indexed by `Kind as usize`.

use super::FieldType::*;
use super::{FieldSpec, FieldType, KindSpec, TitleRule};

const fn req(name: &'static str, ty: FieldType) -> FieldSpec {
    FieldSpec { name, ty, required: true, searchable: true }
}

const fn opt(name: &'static str, ty: FieldType) -> FieldSpec {
    FieldSpec { name, ty, required: false, searchable: true }
}

/// An optional label kept as structured data, out of the searchable body.
const fn label(name: &'static str, ty: FieldType) -> FieldSpec {
    FieldSpec { name, ty, required: false, searchable: false }
}

pub const DECISION_STATUSES: &[&str] = &["proposed", "accepted", "rejected", "deprecated", "superseded"];
const TODO_STATUSES: &[&str] = &["open", "in_progress", "blocked", "done", "cancelled"];
const PRIORITIES: &[&str] = &["low", "medium", "high", "critical"];
const ISSUE_STATUSES: &[&str] = &["open", "in_progress", "blocked", "resolved", "closed"];
const CHANGE_TYPES: &[&str] = &[
    "feature",
    "bugfix",
    "refactor",
    "config",
    "dependency",
    "schema",
    "docs",
    "performance",
    "security",
    "other",
];
const PR_STATUSES: &[&str] = &["draft", "open", "merged", "closed"];
const SEVERITIES: &[&str] = &["critical", "high", "medium", "low"];
const RESOLUTION_STATUSES: &[&str] = &["open", "investigating", "mitigated", "resolved", "closed"];
const RELEASE_TYPES: &[&str] = &["major", "minor", "patch", "hotfix", "prerelease"];
const RELEASE_STATUSES: &[&str] = &["planned", "in_progress", "released", "rolled_back", "cancelled"];
const RISK_CATEGORIES: &[&str] =
    &["technical", "security", "operational", "performance", "compliance", "schedule", "business"];
const RISK_STATUSES: &[&str] = &["open", "mitigating", "mitigated", "accepted", "closed"];
const VALIDATION_STATUSES: &[&str] = &["unvalidated", "validated", "invalidated", "needs_review"];

/// Indexed by `Kind as usize`: keep in the order of the enum.
pub(super) static SPECS: [KindSpec; 16] = [
    KindSpec {
        name: "section",
        fields: &[
            req("title", Short),
            opt("heading", Short),
            req("body", Text),
            opt("document", Short),
            opt("status", Enum(&["draft", "review", "approved", "archived"])),
            opt("approved_at", Date),
        ],
        title: TitleRule::Field("title"),
        status_field: Some("status"),
        needs_data: false,
    },
    KindSpec {
        name: "runbook",
        fields: &[
            req("title", Short),
            req("service", Short),
            req("steps", Steps),
            opt("triggers", ShortList),
            opt("last_verified_at", Date),
        ],
        title: TitleRule::Field("title"),
        status_field: None,
        needs_data: false,
    },
    KindSpec {
        name: "change",
        fields: &[
            req("change_type", Enum(CHANGE_TYPES)),
            req("subject_ref", Short),
            req("summary", Text),
            opt("title", Short),
            label("author", Short),
            label("commit", Short),
        ],
        title: TitleRule::FieldOr("title", &["change_type", "subject_ref"]),
        status_field: None,
        needs_data: false,
    },
    KindSpec {
        name: "issue",
        fields: &[
            req("tracker", Short),
            req("external_id", Short),
            req("title", Short),
            req("status", Enum(ISSUE_STATUSES)),
            opt("description", Text),
            opt("url", Short),
            opt("assignee", Short),
            opt("labels", ShortList),
        ],
        title: TitleRule::Field("title"),
        status_field: Some("status"),
        needs_data: true,
    },
    KindSpec {
        name: "decision",
        fields: &[
            req("component", Short),
            req("status", Enum(DECISION_STATUSES)),
            req("title", Short),
            req("rationale", Text),
            opt("alternatives_considered", ShortList),
            opt("consequences", Text),
            opt("supersedes", ItemId),
        ],
        title: TitleRule::Field("title"),
        status_field: Some("status"),
        needs_data: false,
    },
    KindSpec {
        name: "todo",
        fields: &[
            req("title", Short),
            req("status", Enum(TODO_STATUSES)),
            opt("priority", Enum(PRIORITIES)),
            opt("due_date", Date),
            opt("assignee", Short),
            opt("description", Text),
        ],
        title: TitleRule::Field("title"),
        status_field: Some("status"),
        needs_data: false,
    },
    KindSpec {
        name: "release_note",
        fields: &[
            req("version", Short),
            req("summary", Text),
            opt("highlights", ShortList),
            opt("breaking_changes", ShortList),
        ],
        title: TitleRule::Join(&["version"]),
        status_field: None,
        needs_data: false,
    },
    KindSpec {
        name: "ddl",
        fields: &[
            req("migration_id", Short),
            req("ddl_text", Text),
            opt("checksum", Short),
            opt("description", Text),
        ],
        title: TitleRule::Field("migration_id"),
        status_field: None,
        needs_data: true,
    },
    KindSpec {
        name: "pr_context",
        fields: &[
            req("pr_number", PositiveInt),
            req("title", Short),
            req("status", Enum(PR_STATUSES)),
            req("base_branch", Short),
            req("head_branch", Short),
            opt("merged_at", Date),
            opt("author", Short),
            opt("description", Text),
        ],
        title: TitleRule::Field("title"),
        status_field: Some("status"),
        needs_data: true,
    },
    KindSpec {
        name: "entity",
        fields: &[req("entity_type", Short), req("name", Short), opt("description", Text)],
        title: TitleRule::Field("name"),
        status_field: None,
        needs_data: true,
    },
    KindSpec {
        name: "relation",
        fields: &[
            req("from", ItemRef),
            req("to", ItemRef),
            req("relation_type", Short),
            opt("description", Text),
        ],
        title: TitleRule::Field("relation_type"),
        status_field: None,
        needs_data: true,
    },
    KindSpec {
        name: "observation",
        fields: &[req("entity", ItemRef), req("text", Text)],
        title: TitleRule::Field("text"),
        status_field: None,
        needs_data: true,
    },
    KindSpec {
        name: "incident",
        fields: &[
            req("title", Short),
            req("severity", Enum(SEVERITIES)),
            req("impact", Text),
            req("resolution_status", Enum(RESOLUTION_STATUSES)),
            opt("root_cause", Text),
            opt("timeline", Text),
            opt("started_at", Date),
            opt("resolved_at", Date),
        ],
        title: TitleRule::Field("title"),
        status_field: Some("resolution_status"),
        needs_data: false,
    },
    KindSpec {
        name: "release",
        fields: &[
            req("version", Short),
            req("release_type", Enum(RELEASE_TYPES)),
            req("status", Enum(RELEASE_STATUSES)),
            opt("released_at", Date),
            opt("notes", Text),
        ],
        title: TitleRule::Join(&["version", "release_type"]),
        status_field: Some("status"),
        needs_data: false,
    },
    KindSpec {
        name: "risk",
        fields: &[
            req("title", Short),
            req("category", Enum(RISK_CATEGORIES)),
            req("risk_level", Enum(PRIORITIES)),
            req("status", Enum(RISK_STATUSES)),
            opt("mitigation", Text),
            opt("owner", Short),
        ],
        title: TitleRule::Field("title"),
        status_field: Some("status"),
        needs_data: false,
    },
    KindSpec {
        name: "assumption",
        fields: &[
            req("title", Short),
            req("description", Text),
            req("validation_status", Enum(VALIDATION_STATUSES)),
            opt("validated_at", Date),
        ],
        title: TitleRule::Field("title"),
        status_field: Some("validation_status"),
        needs_data: false,
    },
];
