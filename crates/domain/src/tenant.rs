//! Tenant bounds: how far the holder of an API key may reach. A key is bound to one org and,
//! optionally, to some of its projects. Every read and every write of such a caller stays
//! inside: an item outside is answered as if it did not exist (reads by id, updates, deletes,
//! `supersedes`, relation ends), and a write naming a scope outside is refused per item with
//! `forbidden_scope`. The local user (stdio, the CLI) owns the whole store and has no bound.

use crate::error::{ErrorCode, ValidationError};
use crate::scope::Scope;

/// The branch of a request that names none, as for the local user without git.
pub const DEFAULT_BRANCH: &str = "main";

/// A request header naming a project outside the key's bound: refused rather than answered
/// with nothing, so the agent learns which projects it may name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("X-Cortex-Project `{project}` is outside what this API key may reach ({reach})")]
pub struct ProjectOutsideBound {
    pub project: String,
    /// The projects the key may name, in words.
    pub reach: String,
}

/// The refusal as the message a caller that keeps only text reports (the service's
/// `Caller::for_key`).
impl From<ProjectOutsideBound> for String {
    fn from(e: ProjectOutsideBound) -> String {
        e.to_string()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    pub org: String,
    /// The projects the key may reach; empty: every project of the org.
    pub projects: Vec<String>,
}

impl Bound {
    /// Whether an item of this scope is inside the bound.
    pub fn admits(&self, scope: &Scope) -> bool {
        scope.org.as_deref() == Some(self.org.as_str()) && self.admits_project(scope.project.as_deref())
    }

    fn admits_project(&self, project: Option<&str>) -> bool {
        self.projects.is_empty() || project.is_some_and(|p| self.projects.iter().any(|q| q == p))
    }

    /// A write's scope, once defaults are filled, checked against the bound. `field` is the
    /// item's path to its scope (`items[2].scope`).
    pub fn check_write(&self, scope: &Scope, field: &str) -> Result<(), ValidationError> {
        if scope.org.as_deref() != Some(self.org.as_str()) {
            return Err(self.forbidden(&format!("{field}.org"), "org", scope.org.as_deref()));
        }
        let Some(project) = scope.project.as_deref() else {
            return Err(self.no_project(field));
        };
        if !self.admits_project(Some(project)) {
            return Err(self.forbidden(&format!("{field}.project"), "project", Some(project)));
        }
        Ok(())
    }

    /// A find's explicit scope checked against the bound: naming another org or project is
    /// refused rather than answered with nothing, so the agent learns why.
    pub fn check_read(&self, scope: &Scope) -> Result<(), ValidationError> {
        if let Some(org) = scope.org.as_deref()
            && org != self.org
        {
            return Err(self.forbidden("scope.org", "org", Some(org)));
        }
        if let Some(project) = scope.project.as_deref()
            && !self.admits_project(Some(project))
        {
            return Err(self.forbidden("scope.project", "project", Some(project)));
        }
        Ok(())
    }

    /// The scope a request stands at when it names none: the key's org; the project of the
    /// request's header, else the key's only project; the branch of the header, else `main`.
    /// A header naming a project outside the bound is refused.
    pub fn default_scope(
        &self,
        project: Option<&str>,
        branch: Option<&str>,
    ) -> Result<Scope, ProjectOutsideBound> {
        let project = match project {
            Some(p) if self.admits_project(Some(p)) => Some(p.to_string()),
            Some(p) => {
                return Err(ProjectOutsideBound { project: p.to_string(), reach: self.projects_text() });
            }
            None if self.projects.len() == 1 => Some(self.projects[0].clone()),
            None => None,
        };
        Ok(Scope {
            org: Some(self.org.clone()),
            project,
            branch: Some(branch.unwrap_or(DEFAULT_BRANCH).to_string()),
            ..Scope::default()
        })
    }

    fn forbidden(&self, field: &str, what: &str, value: Option<&str>) -> ValidationError {
        let value = value.unwrap_or("");
        ValidationError::new(
            ErrorCode::ForbiddenScope,
            field,
            format!("{what} `{value}` is outside what this API key may reach"),
            format!("use org `{}` and {}", self.org, self.projects_text()),
        )
    }

    /// A write that names no project, from a key that has no single one: which header or
    /// field would name it, and which projects it may name.
    fn no_project(&self, field: &str) -> ValidationError {
        let reach = match self.projects.as_slice() {
            [] => format!("every project of org `{}`", self.org),
            projects => format!("the projects {} of org `{}`", projects.join(", "), self.org),
        };
        ValidationError::new(
            ErrorCode::MissingField,
            format!("{field}.project"),
            format!(
                "no project: this API key reaches {reach} and stands in none, and neither the item nor the request named one"
            ),
            "send the HTTP header `X-Cortex-Project: <project>` with every request (in the MCP client's server config, beside the Authorization header), or give the item `\"scope\": {\"project\": \"<project>\"}`",
        )
    }

    fn projects_text(&self) -> String {
        if self.projects.is_empty() {
            "any of its projects".to_string()
        } else {
            format!("one of the projects {}", self.projects.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(org: &str, project: Option<&str>) -> Scope {
        Scope { org: Some(org.into()), project: project.map(Into::into), ..Scope::default() }
    }

    fn bound(projects: &[&str]) -> Bound {
        Bound { org: "acme".into(), projects: projects.iter().map(|p| p.to_string()).collect() }
    }

    #[test]
    fn a_bound_admits_its_org_and_projects_only() {
        let b = bound(&["api", "web"]);
        assert!(b.admits(&scope("acme", Some("api"))));
        assert!(!b.admits(&scope("acme", Some("ops"))));
        assert!(!b.admits(&scope("acme", None)));
        assert!(!b.admits(&scope("globex", Some("api"))));
        let whole_org = bound(&[]);
        assert!(whole_org.admits(&scope("acme", Some("ops"))));
        assert!(whole_org.admits(&scope("acme", None)));
        assert!(!whole_org.admits(&scope("globex", Some("api"))));
    }

    #[test]
    fn a_write_outside_is_forbidden_and_names_the_field() {
        let b = bound(&["api"]);
        let e = b.check_write(&scope("globex", Some("api")), "items[1].scope").unwrap_err();
        assert_eq!((e.code, e.field.as_str()), (ErrorCode::ForbiddenScope, "items[1].scope.org"));
        let e = b.check_write(&scope("acme", Some("web")), "items[0].scope").unwrap_err();
        assert_eq!((e.code, e.field.as_str()), (ErrorCode::ForbiddenScope, "items[0].scope.project"));
        let e = b.check_write(&scope("acme", None), "items[0].scope").unwrap_err();
        assert_eq!(e.code, ErrorCode::MissingField);
        assert!(e.human_hint.contains("X-Cortex-Project"));
        assert!(b.check_write(&scope("acme", Some("api")), "items[0].scope").is_ok());
    }

    #[test]
    fn a_read_naming_another_tenant_is_refused() {
        let b = bound(&["api"]);
        assert_eq!(b.check_read(&scope("globex", None)).unwrap_err().code, ErrorCode::ForbiddenScope);
        assert_eq!(b.check_read(&scope("acme", Some("web"))).unwrap_err().code, ErrorCode::ForbiddenScope);
        assert!(b.check_read(&Scope::default()).is_ok());
        assert!(b.check_read(&scope("acme", Some("api"))).is_ok());
    }

    #[test]
    fn the_default_scope_comes_from_the_key_and_the_headers() {
        let one = bound(&["api"]);
        let s = one.default_scope(None, None).unwrap();
        assert_eq!(
            (s.org.as_deref(), s.project.as_deref(), s.branch.as_deref()),
            (Some("acme"), Some("api"), Some("main"))
        );
        let two = bound(&["api", "web"]);
        assert_eq!(two.default_scope(None, Some("dev")).unwrap().project, None);
        assert_eq!(two.default_scope(Some("web"), None).unwrap().project.as_deref(), Some("web"));
        let refused = two.default_scope(Some("ops"), None).unwrap_err();
        assert_eq!(refused.project, "ops");
        assert_eq!(
            refused.to_string(),
            "X-Cortex-Project `ops` is outside what this API key may reach (one of the projects api, web)"
        );
    }
}
