//! The session briefing (`cortex context`, the MCP prompt `context`, the resource
//! `cortex://context`): what an agent starting work should know of this project's memory, as
//! compact Markdown within a token budget. Which items make each section is decided here; the
//! service only reads them.
//!
//! Each item is one line with its full id, so the agent can read it whole with `ids`. The
//! current branch's items come first in each section. What does not fit is counted, with the
//! find that lists it: nothing is dropped silently.

use crate::kind::Kind;

/// One section: its heading and the kinds and statuses it gathers (no status = any).
pub struct Section {
    pub heading: &'static str,
    pub wanted: &'static [(Kind, &'static [&'static str])],
}

/// The sections, in the order an agent needs them.
pub const SECTIONS: [Section; 4] = [
    Section { heading: "Decisions in force", wanted: &[(Kind::Decision, &["accepted"])] },
    Section {
        heading: "Open issues and todos",
        wanted: &[
            (Kind::Issue, &["open", "in_progress", "blocked"]),
            (Kind::Todo, &["open", "in_progress", "blocked"]),
        ],
    },
    Section {
        heading: "Active incidents and risks",
        wanted: &[
            (Kind::Incident, &["open", "investigating", "mitigated"]),
            (Kind::Risk, &["open", "mitigating"]),
        ],
    },
    Section {
        heading: "Recent changes and releases",
        wanted: &[(Kind::Change, &[]), (Kind::Release, &[]), (Kind::ReleaseNote, &[])],
    },
];

/// Lines a section shows at most, however much budget is left: a briefing is an overview.
pub const MAX_LINES_PER_SECTION: usize = 12;
/// The default budget, in tokens (counted as characters / 3, as every budget here).
pub const DEFAULT_BUDGET_TOKENS: usize = 1_500;
/// Characters of a title on its line.
const TITLE_CHARS: usize = 90;

/// An item as the briefing shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: String,
    pub kind: Kind,
    pub title: String,
    pub status: Option<String>,
    /// The item's branch, when it is not the caller's.
    pub other_branch: Option<String>,
    /// When what it records happened (`occurred_at`), else when it was last written: newest
    /// first.
    pub at: i64,
    /// Said after the title, never cut: `may be out of date: src/auth.rs changed in 3 commits`.
    pub note: Option<String>,
}

/// The briefing for `place` (e.g. `acme/api @ main`): `found[i]` holds the items of
/// `SECTIONS[i]`, in any order.
/// Who the briefing is for: `org/project @ branch`; the org alone when the caller stands in no
/// project (an org-wide API key without `X-Cortex-Project`), saying how to choose one.
pub fn place(org: Option<&str>, project: Option<&str>, branch: Option<&str>) -> String {
    let branch = branch.unwrap_or("?");
    match (org, project) {
        (Some(org), Some(project)) => format!("{org}/{project} @ {branch}"),
        (Some(org), None) => format!(
            "org {org} @ {branch} (no project chosen: send the header `X-Cortex-Project: <project>`, or set CORTEX_PROJECT, to brief one project)"
        ),
        (None, project) => format!("{}/{} @ {branch}", "?", project.unwrap_or("?")),
    }
}

pub fn render(place: &str, mut found: Vec<Vec<Entry>>, budget_tokens: usize) -> String {
    let budget = budget_tokens.saturating_mul(3);
    let mut out = format!("# Project memory: {place}\n");
    if found.iter().all(Vec::is_empty) {
        out.push_str(
            "Nothing stored yet for this project: store decisions, issues and runbooks with memory_store.\n",
        );
        return out;
    }
    for (section, entries) in SECTIONS.iter().zip(found.iter_mut()) {
        if entries.is_empty() {
            continue;
        }
        // The caller's branch first, then the newest; ties the newest stored first (ids are
        // UUIDv7), so the order never depends on how the reads came back.
        entries.sort_by(|a, b| {
            a.other_branch
                .is_some()
                .cmp(&b.other_branch.is_some())
                .then(b.at.cmp(&a.at))
                .then(b.id.cmp(&a.id))
        });
        let heading = format!("\n## {}\n", section.heading);
        if out.len() + heading.len() > budget {
            out.push_str(&format!(
                "\n(+{} more in {}: {})\n",
                entries.len(),
                section.heading,
                find_for(section)
            ));
            continue;
        }
        out.push_str(&heading);
        let mut shown = 0;
        for entry in entries.iter() {
            let line = line_of(entry);
            // Room is kept for the line that says what was left out.
            if shown == MAX_LINES_PER_SECTION || out.len() + line.len() + 120 > budget {
                break;
            }
            out.push_str(&line);
            shown += 1;
        }
        if shown < entries.len() {
            out.push_str(&format!("- (+{} more: {})\n", entries.len() - shown, find_for(section)));
        }
    }
    out
}

fn line_of(entry: &Entry) -> String {
    let title: String = entry.title.chars().take(TITLE_CHARS).collect();
    let cut = if entry.title.chars().count() > TITLE_CHARS { "…" } else { "" };
    let status = entry.status.as_deref().map(|s| format!(", {s}")).unwrap_or_default();
    let branch = entry.other_branch.as_deref().map(|b| format!(" (branch {b})")).unwrap_or_default();
    let note = entry.note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
    format!("- [{}{status}] {title}{cut}{branch}{note} · {}\n", entry.kind.as_str(), entry.id)
}

/// The `memory_find` arguments that list a section whole.
fn find_for(section: &Section) -> String {
    let kinds: Vec<String> = section.wanted.iter().map(|(k, _)| format!("\"{}\"", k.as_str())).collect();
    format!("memory_find {{\"types\": [{}]}}", kinds.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: Kind, title: &str, status: Option<&str>, branch: Option<&str>, at: i64) -> Entry {
        Entry {
            id: format!("01a2000{at}-0000-7000-8000-000000000000"),
            kind,
            title: title.into(),
            status: status.map(str::to_string),
            other_branch: branch.map(str::to_string),
            at,
            note: None,
        }
    }

    #[test]
    fn sections_list_the_callers_branch_first_then_the_newest_with_ids() {
        let decisions = vec![
            entry(Kind::Decision, "Old one", Some("accepted"), None, 1),
            entry(Kind::Decision, "Feature branch one", Some("accepted"), Some("feature-x"), 9),
            entry(Kind::Decision, "New one", Some("accepted"), None, 5),
        ];
        let text = render("acme/api @ main", vec![decisions, vec![], vec![], vec![]], DEFAULT_BUDGET_TOKENS);
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("- ")).collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].contains("New one") && lines[1].contains("Old one"), "{text}");
        assert!(lines[2].contains("(branch feature-x)"));
        assert!(lines[0].ends_with("· 01a20005-0000-7000-8000-000000000000"));
        assert!(
            text.starts_with("# Project memory: acme/api @ main") && text.contains("## Decisions in force")
        );
        assert!(!text.contains("Open issues"), "empty sections are left out");
    }

    #[test]
    fn the_budget_holds_and_what_it_cuts_is_counted_with_the_find_that_lists_it() {
        let todos: Vec<Entry> = (0..200)
            .map(|i| entry(Kind::Todo, &format!("todo number {i} {}", "x".repeat(60)), Some("open"), None, i))
            .collect();
        let text = render("acme/api @ main", vec![vec![], todos, vec![], vec![]], 300);
        assert!(text.len() <= 900, "{} characters for a 300-token budget", text.len());
        assert!(text.contains("more: memory_find"), "{text}");
        let more: usize = text.split("(+").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
        let shown = text.lines().filter(|l| l.starts_with("- [")).count();
        assert_eq!(shown + more, 200, "every item is shown or counted");
    }

    #[test]
    fn a_note_follows_a_long_title_whole() {
        let mut stale = entry(Kind::Decision, &"a long title ".repeat(10), Some("accepted"), None, 1);
        stale.note = Some("may be out of date: src/auth.rs changed in 3 commits".into());
        let text =
            render("acme/api @ main", vec![vec![stale], vec![], vec![], vec![]], DEFAULT_BUDGET_TOKENS);
        assert!(text.contains("… (may be out of date: src/auth.rs changed in 3 commits) · 01a2"), "{text}");
    }

    #[test]
    fn an_empty_memory_says_so_in_one_line() {
        let text = render("acme/api @ main", vec![vec![], vec![], vec![], vec![]], DEFAULT_BUDGET_TOKENS);
        assert_eq!(text.lines().count(), 2);
    }

    #[test]
    fn a_caller_in_no_project_is_briefed_on_its_org_and_told_how_to_choose_one() {
        assert_eq!(place(Some("acme"), Some("api"), Some("main")), "acme/api @ main");
        let org_wide = place(Some("acme"), None, Some("main"));
        assert!(org_wide.starts_with("org acme @ main (no project chosen"), "{org_wide}");
        assert!(org_wide.contains("X-Cortex-Project") && !org_wide.contains('?'), "{org_wide}");
    }
}
