//! The project picker of the pages that list memory: every project and branch within the
//! viewer's reach that holds items (the store's list, already cut to the key's bound), "all
//! projects", or where the viewer stands. The choice travels in the URL as `in`; a value that
//! names no place in reach is refused, never searched.

use cortex_domain::Scope;
use cortex_domain::scope::ScopeLevel;
use cortex_store::Place;

/// The `in` value of "every project in reach".
pub const ALL: &str = "all";

/// Where a page looks.
#[derive(Debug, Clone, PartialEq)]
pub enum Picked {
    /// Where the viewer stands (a key's default project, the server's inferred one).
    Standing,
    /// Every project in reach.
    All,
    /// One project (every branch) or one branch.
    At(Scope),
}

impl Picked {
    /// Whether an item (or a change) of `scope` lies where this picks: `Standing` and `All`
    /// take everything in reach.
    pub fn holds(&self, scope: &Scope) -> bool {
        match self {
            Picked::Standing | Picked::All => true,
            Picked::At(at) => {
                at.org == scope.org
                    && at.project == scope.project
                    && (at.branch.is_none() || at.branch == scope.branch)
            }
        }
    }

    /// What a find is given: an explicit scope, and the level to widen to when the form named
    /// none.
    pub fn scope_and_widen(&self) -> (Option<Scope>, Option<ScopeLevel>) {
        match self {
            Picked::Standing => (None, None),
            Picked::All => (None, Some(ScopeLevel::All)),
            Picked::At(scope) if scope.branch.is_some() => (Some(scope.clone()), Some(ScopeLevel::Branch)),
            Picked::At(scope) => (Some(scope.clone()), Some(ScopeLevel::Project)),
        }
    }
}

/// One option of the picker.
pub struct Choice {
    pub value: String,
    pub label: String,
    pub on: bool,
}

/// A place's `in` value: its org, project and branch joined by `/`, those it has.
fn value_of(scope: &Scope) -> String {
    [&scope.org, &scope.project, &scope.branch].into_iter().flatten().cloned().collect::<Vec<_>>().join("/")
}

/// The projects (each with all its branches) and branches of `places`, with item counts.
fn options(places: &[Place]) -> Vec<(Scope, i64)> {
    let mut out: Vec<(Scope, i64)> = Vec::new();
    for place in places {
        let project = Scope { branch: None, ..place.scope.clone() };
        match out.iter_mut().rev().find(|(s, _)| *s == project) {
            Some((_, n)) => *n += place.items,
            None => out.push((project, place.items)),
        }
        if place.scope.branch.is_some() {
            out.push((place.scope.clone(), place.items));
        }
    }
    out
}

/// A filter field of a page's form the page refuses; the message names the field and the form
/// it takes, and the page shows it beside the form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("in: “{0}” is no project or branch holding items you can see")]
    Place(String),
    #[error("day: “{0}” is not a date; use YYYY-MM-DD, e.g. 2026-11-22")]
    Day(String),
}

/// What `value` (the `in` field) picks; `local`: a keyless local user, whose pages look at
/// every project unless told otherwise.
pub fn pick(places: &[Place], value: &str, local: bool) -> Result<Picked, Refused> {
    match value {
        "" if local => Ok(Picked::All),
        "" | "here" => Ok(Picked::Standing),
        ALL => Ok(Picked::All),
        value => options(places)
            .into_iter()
            .find(|(scope, _)| value_of(scope) == value)
            .map(|(scope, _)| Picked::At(scope))
            .ok_or_else(|| Refused::Place(value.to_string())),
    }
}

/// The picker's options, `picked` selected; `standing` (where the viewer stands) offers
/// "where you stand" first.
pub fn choices(places: &[Place], picked: &Picked, standing: Option<&str>) -> Vec<Choice> {
    let mut out = Vec::new();
    if let Some(standing) = standing {
        let label = format!("where you stand ({standing})");
        out.push(Choice { value: "here".into(), label, on: *picked == Picked::Standing });
    }
    out.push(Choice { value: ALL.into(), label: "all projects".into(), on: *picked == Picked::All });
    for (scope, items) in options(places) {
        let label = match &scope.branch {
            Some(branch) => {
                format!("\u{a0}\u{a0}{} @ {branch} ({items})", scope.project.as_deref().unwrap_or("-"))
            }
            None => format!("{} ({items})", value_of(&scope)),
        };
        let on = *picked == Picked::At(scope.clone());
        out.push(Choice { value: value_of(&scope), label, on });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places() -> Vec<Place> {
        vec![
            Place::of("acme".into(), "api".into(), "main".into(), 3),
            Place::of("acme".into(), "api".into(), "feature".into(), 2),
            Place::of("acme".into(), "web".into(), String::new(), 1),
        ]
    }

    #[test]
    fn projects_and_branches_are_offered_and_picked_by_value() {
        let values: Vec<String> =
            choices(&places(), &Picked::Standing, Some("acme/api")).into_iter().map(|c| c.value).collect();
        assert_eq!(values, ["here", "all", "acme/api", "acme/api/main", "acme/api/feature", "acme/web"]);
        let api = pick(&places(), "acme/api", false).unwrap();
        assert_eq!(api.scope_and_widen().1, Some(ScopeLevel::Project));
        assert_eq!(choices(&places(), &api, None).iter().find(|c| c.on).unwrap().label, "acme/api (5)");
        let Picked::At(branch) = pick(&places(), "acme/api/feature", false).unwrap() else { panic!() };
        assert_eq!(branch.branch.as_deref(), Some("feature"));
        let at =
            |project: &str, branch: &str| Place::of("acme".into(), project.into(), branch.into(), 1).scope;
        assert!(api.holds(&at("api", "feature")) && !api.holds(&at("web", "")));
        assert!(Picked::At(branch).holds(&at("api", "feature")));
        assert!(!pick(&places(), "acme/api/main", false).unwrap().holds(&at("api", "feature")));
    }

    #[test]
    fn a_local_user_looks_everywhere_and_an_unknown_place_is_refused() {
        assert_eq!(pick(&places(), "", true), Ok(Picked::All));
        assert_eq!(pick(&places(), "", false), Ok(Picked::Standing));
        assert_eq!(pick(&places(), "here", true), Ok(Picked::Standing));
        let refused = pick(&places(), "globex/secret", false).unwrap_err();
        assert_eq!(refused, Refused::Place("globex/secret".into()));
        assert!(refused.to_string().starts_with("in: “globex/secret”"), "{refused}");
    }
}
