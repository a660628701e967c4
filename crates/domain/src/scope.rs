//! Scope: where an item belongs (org / project / branch, plus optional service, sprint,
//! tenant and environment), how a find's scope is resolved, and how near a hit's scope is.

use crate::error::{ErrorCode, ValidationError};
use crate::limits::MAX_SCOPE_VALUE_CHARS;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Scope {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub org: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sprint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
}

pub const SCOPE_FIELDS: [&str; 7] =
    ["org", "project", "branch", "service", "sprint", "tenant", "environment"];

impl Scope {
    /// Whether both are in the same org and project: the reach of idempotency keys, natural
    /// keys and graph references.
    pub fn same_project(&self, other: &Scope) -> bool {
        self.org == other.org && self.project == other.project
    }

    pub fn get(&self, field: &str) -> Option<&str> {
        match field {
            "org" => self.org.as_deref(),
            "project" => self.project.as_deref(),
            "branch" => self.branch.as_deref(),
            "service" => self.service.as_deref(),
            "sprint" => self.sprint.as_deref(),
            "tenant" => self.tenant.as_deref(),
            "environment" => self.environment.as_deref(),
            _ => None,
        }
    }

    /// Sets one field by name (one of [`SCOPE_FIELDS`]; any other name is ignored).
    pub fn set(&mut self, field: &str, value: String) {
        if let Some(slot) = self.slot(field) {
            *slot = Some(value);
        }
    }

    fn slot(&mut self, field: &str) -> Option<&mut Option<String>> {
        match field {
            "org" => Some(&mut self.org),
            "project" => Some(&mut self.project),
            "branch" => Some(&mut self.branch),
            "service" => Some(&mut self.service),
            "sprint" => Some(&mut self.sprint),
            "tenant" => Some(&mut self.tenant),
            "environment" => Some(&mut self.environment),
            _ => None,
        }
    }

    /// Parses a scope object. Field paths in errors are relative (`branch`).
    pub fn from_json(value: &Value) -> Result<Scope, ValidationError> {
        let Value::Object(map) = value else {
            return Err(ValidationError::wrong_type("", "an object like {\"branch\": \"main\"}", value));
        };
        let mut scope = Scope::default();
        for (key, v) in map {
            let Some(slot) = scope.slot(key) else {
                let key = crate::error::shown(key);
                return Err(ValidationError::new(
                    ErrorCode::UnknownField,
                    key.clone(),
                    format!("`{key}` is not a scope field"),
                    format!("scope fields are: {}", SCOPE_FIELDS.join(", ")),
                ));
            };
            if v.is_null() {
                continue;
            }
            let Value::String(text) = v else {
                return Err(ValidationError::wrong_type(key.clone(), "a string", v));
            };
            *slot = Some(check_value(key, text)?);
        }
        Ok(scope)
    }

    /// Checks a scope built in the process as [`Scope::from_json`] checks a sent one: each
    /// value set is 1–128 characters without control characters.
    pub fn check(&self) -> Result<(), ValidationError> {
        for field in SCOPE_FIELDS {
            if let Some(value) = self.get(field) {
                check_value(field, value)?;
            }
        }
        Ok(())
    }

    /// Fills every field this scope lacks from `fallback`.
    pub fn or(&self, fallback: &Scope) -> Scope {
        let mut out = self.clone();
        for field in SCOPE_FIELDS {
            if let Some(slot) = out.slot(field)
                && slot.is_none()
            {
                *slot = fallback.get(field).map(str::to_string);
            }
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        SCOPE_FIELDS.iter().all(|f| self.get(f).is_none())
    }
}

/// Checks one scope value (trimmed, 1–128 characters, no control characters): the rule for
/// requests and for the scope set in the environment alike.
pub fn check_value(field: &str, text: &str) -> Result<String, ValidationError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(ValidationError::new(
            ErrorCode::Empty,
            field,
            format!("scope `{field}` is empty"),
            format!("leave `{field}` out to use the server's inferred value"),
        ));
    }
    if text.chars().count() > MAX_SCOPE_VALUE_CHARS {
        return Err(ValidationError::new(
            ErrorCode::TooLong,
            field,
            format!("scope `{field}` is longer than {MAX_SCOPE_VALUE_CHARS} characters"),
            format!("use a short identifier for `{field}`, like a branch or project name"),
        ));
    }
    if text.chars().any(char::is_control) {
        return Err(ValidationError::new(
            ErrorCode::ControlCharacter,
            field,
            format!("scope `{field}` contains a control character"),
            "scope values are names: letters, digits and punctuation only, no newlines or tabs",
        ));
    }
    Ok(text.to_string())
}

/// How wide a find looks, from narrowest to widest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScopeLevel {
    Branch,
    Project,
    Org,
    All,
}

impl crate::args::Word for ScopeLevel {
    const ALL: &'static [ScopeLevel] =
        &[ScopeLevel::Branch, ScopeLevel::Project, ScopeLevel::Org, ScopeLevel::All];

    fn as_str(self) -> &'static str {
        ScopeLevel::as_str(self)
    }
}

impl ScopeLevel {
    pub fn parse(text: &str) -> Option<ScopeLevel> {
        match text.trim().to_ascii_lowercase().as_str() {
            "branch" => Some(ScopeLevel::Branch),
            "project" => Some(ScopeLevel::Project),
            "org" => Some(ScopeLevel::Org),
            "all" => Some(ScopeLevel::All),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ScopeLevel::Branch => "branch",
            ScopeLevel::Project => "project",
            ScopeLevel::Org => "org",
            ScopeLevel::All => "all",
        }
    }

    /// The next wider level, if any.
    pub fn wider(self) -> Option<ScopeLevel> {
        match self {
            ScopeLevel::Branch => Some(ScopeLevel::Project),
            ScopeLevel::Project => Some(ScopeLevel::Org),
            ScopeLevel::Org => Some(ScopeLevel::All),
            ScopeLevel::All => None,
        }
    }
}

/// The scope filter of one find: exact values per field; a field absent here is not filtered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeFilter {
    pub level: ScopeLevel,
    /// The caller's full position, against which `scope_match` and proximity are computed.
    pub caller: Scope,
    /// The fields to filter on, with their values.
    pub equals: Vec<(&'static str, String)>,
}

impl ScopeFilter {
    /// Resolves a find's scope. The caller stands at `inferred` overridden by `explicit`.
    /// Without `widen`, an explicit scope's deepest named field among org/project/branch
    /// sets the level (naming fewer fields widens); with none named, the level is `branch`.
    /// Optional fields (service, sprint, tenant, environment) filter only when named.
    pub fn resolve(inferred: &Scope, explicit: Option<&Scope>, widen: Option<ScopeLevel>) -> ScopeFilter {
        let caller = explicit.map_or_else(|| inferred.clone(), |e| e.or(inferred));
        let named_level = explicit.and_then(|e| {
            if e.branch.is_some() {
                Some(ScopeLevel::Branch)
            } else if e.project.is_some() {
                Some(ScopeLevel::Project)
            } else if e.org.is_some() {
                Some(ScopeLevel::Org)
            } else {
                None
            }
        });
        let level = widen.or(named_level).unwrap_or(ScopeLevel::Branch);
        let hierarchy: &[&'static str] = match level {
            ScopeLevel::Branch => &["org", "project", "branch"],
            ScopeLevel::Project => &["org", "project"],
            ScopeLevel::Org => &["org"],
            ScopeLevel::All => &[],
        };
        let mut equals = Vec::new();
        for field in hierarchy {
            if let Some(v) = caller.get(field) {
                equals.push((*field, v.to_string()));
            }
        }
        if let Some(e) = explicit {
            for field in ["service", "sprint", "tenant", "environment"] {
                if let Some(v) = e.get(field) {
                    equals.push((field, v.to_string()));
                }
            }
        }
        ScopeFilter { level, caller, equals }
    }

    /// The same filter at another level (for "N more hits in project scope" suggestions).
    pub fn at_level(&self, level: ScopeLevel) -> ScopeFilter {
        let optional: Vec<(&'static str, String)> = self
            .equals
            .iter()
            .filter(|(f, _)| !matches!(*f, "org" | "project" | "branch"))
            .cloned()
            .collect();
        let mut explicit = Scope::default();
        for (field, value) in &optional {
            if let Some(slot) = explicit.slot(field) {
                *slot = Some(value.clone());
            }
        }
        let mut filter = ScopeFilter::resolve(&self.caller, Some(&explicit), Some(level));
        filter.caller = self.caller.clone();
        filter
    }
}

/// How near a hit's scope is to the caller's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScopeMatch {
    Branch,
    Project,
    Org,
    Other,
}

impl ScopeMatch {
    pub fn between(caller: &Scope, item: &Scope) -> ScopeMatch {
        let same = |f: &str| caller.get(f).is_some() && caller.get(f) == item.get(f);
        if same("org") && same("project") && same("branch") {
            ScopeMatch::Branch
        } else if same("org") && same("project") {
            ScopeMatch::Project
        } else if same("org") {
            ScopeMatch::Org
        } else {
            ScopeMatch::Other
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn inferred() -> Scope {
        Scope {
            org: Some("acme".into()),
            project: Some("api".into()),
            branch: Some("main".into()),
            ..Scope::default()
        }
    }

    #[test]
    fn default_find_is_isolated_to_the_callers_branch() {
        let f = ScopeFilter::resolve(&inferred(), None, None);
        assert_eq!(f.level, ScopeLevel::Branch);
        assert_eq!(f.equals.len(), 3);
        assert!(f.equals.contains(&("branch", "main".to_string())));
    }

    #[test]
    fn naming_fewer_fields_widens() {
        let explicit = Scope::from_json(&json!({"project": "web"})).unwrap();
        let f = ScopeFilter::resolve(&inferred(), Some(&explicit), None);
        assert_eq!(f.level, ScopeLevel::Project);
        assert_eq!(f.equals, vec![("org", "acme".to_string()), ("project", "web".to_string())]);
    }

    #[test]
    fn naming_a_branch_moves_the_caller() {
        let explicit = Scope::from_json(&json!({"branch": "feature-a"})).unwrap();
        let f = ScopeFilter::resolve(&inferred(), Some(&explicit), None);
        assert_eq!(f.level, ScopeLevel::Branch);
        assert!(f.equals.contains(&("branch", "feature-a".to_string())));
        assert!(f.equals.contains(&("project", "api".to_string())));
    }

    #[test]
    fn widen_overrides_and_optional_fields_still_filter() {
        let explicit = Scope::from_json(&json!({"service": "billing"})).unwrap();
        let f = ScopeFilter::resolve(&inferred(), Some(&explicit), Some(ScopeLevel::All));
        assert_eq!(f.equals, vec![("service", "billing".to_string())]);
        let project = f.at_level(ScopeLevel::Project);
        assert_eq!(project.equals.len(), 3);
    }

    #[test]
    fn scope_match_levels() {
        let me = inferred();
        let mut other = me.clone();
        assert_eq!(ScopeMatch::between(&me, &other), ScopeMatch::Branch);
        other.branch = Some("dev".into());
        assert_eq!(ScopeMatch::between(&me, &other), ScopeMatch::Project);
        other.project = Some("web".into());
        assert_eq!(ScopeMatch::between(&me, &other), ScopeMatch::Org);
        other.org = Some("else".into());
        assert_eq!(ScopeMatch::between(&me, &other), ScopeMatch::Other);
    }

    #[test]
    fn bad_scope_values_are_refused() {
        let long = "x".repeat(200);
        let err = Scope::from_json(&json!({"branch": long})).unwrap_err();
        assert_eq!((err.field.as_str(), err.code), ("branch", ErrorCode::TooLong));
        let err = Scope::from_json(&json!({"org": "a\u{7}b"})).unwrap_err();
        assert_eq!(err.code, ErrorCode::ControlCharacter);
        let err = Scope::from_json(&json!({"team": "x"})).unwrap_err();
        assert_eq!(err.code, ErrorCode::UnknownField);
    }
}
