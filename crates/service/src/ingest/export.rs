//! `cortex export --markdown`: the live items of one scope, rendered as Markdown files by
//! `cortex_domain::sources::export` (the form, and how ingest reads it back, are there).

use super::Ingest;
use crate::Result;
use cortex_domain::Scope;
use cortex_domain::sources::export::{ExportFile, ExportItem, render};
use cortex_store::Filters;

/// How many items one export reads at most.
const EXPORTED_AT_MOST: usize = 1_000_000;

impl Ingest<'_> {
    /// The live items (superseded ones too, not expired ones) of `scope`'s org, project and
    /// branch as named there, else of this project, as Markdown files.
    pub fn export_markdown(&self, scope: &Scope) -> Result<Vec<ExportFile>> {
        let inferred = &self.service.inferred.scope;
        let mut filters = Filters {
            include_superseded: true,
            include_expired: false,
            now: self.service.now()?,
            ..Filters::default()
        };
        let fields = [
            ("org", scope.org.as_ref().or(inferred.org.as_ref())),
            ("project", scope.project.as_ref().or(inferred.project.as_ref())),
            ("branch", scope.branch.as_ref()),
        ];
        for (field, value) in fields {
            // An unset org or project is its own scope (stored as ''), not "any".
            match (field, value) {
                (_, Some(value)) => filters.scope_equals.push((field, value.clone())),
                ("branch", None) => {}
                (_, None) => filters.scope_equals.push((field, String::new())),
            }
        }
        let items = self.service.view.recent(&filters, EXPORTED_AT_MOST)?;
        let items: Vec<ExportItem> = items
            .into_iter()
            .map(|item| {
                let r = item.record;
                ExportItem {
                    id: r.id,
                    kind: r.kind,
                    data: r.data.as_object().cloned().unwrap_or_default(),
                    content: r.content,
                    tags: r.tags,
                    metadata: r.metadata,
                    created_at: r.created_at,
                    superseded_by: item.superseded_by,
                }
            })
            .collect();
        Ok(render(&items))
    }
}
