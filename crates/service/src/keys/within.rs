//! API keys managed by an admin key's holder (the web UI's admin page): the same calls
//! `cortex keys` makes, kept inside the admin's tenant bound. An admin bound to an org sees,
//! makes, revokes and restores only keys of that org (and, when the admin names projects, only keys
//! limited to some of them); a key outside is answered as one that does not exist. The local
//! user (no bound) manages every key. Called on the unbounded service: a bounded store sees no
//! keys at all.

use super::Keys;
use super::{CreatedKey, KeyInfo, KeySpec};
use crate::Result;
use cortex_domain::tenant::Bound;
use cortex_domain::{ErrorCode, ValidationError};

/// Whether a key of `org` limited to `projects` (empty: all) stays inside `bound`.
pub fn within(bound: Option<&Bound>, org: &str, projects: &[String]) -> bool {
    match bound {
        None => true,
        Some(b) => {
            org == b.org
                && (b.projects.is_empty()
                    || (!projects.is_empty() && projects.iter().all(|p| b.projects.contains(p))))
        }
    }
}

impl Keys<'_> {
    /// The keys `bound`'s admin manages, oldest first.
    pub fn list_within(&self, bound: Option<&Bound>) -> Result<Vec<KeyInfo>> {
        Ok(self.list()?.into_iter().filter(|k| within(bound, &k.org, &k.projects)).collect())
    }

    /// Makes a key for `bound`'s admin: refused, naming the field, when it would reach beyond
    /// the admin's own bound.
    pub fn create_within(&self, bound: Option<&Bound>, spec: &KeySpec) -> Result<CreatedKey> {
        let projects: Vec<String> = spec.projects.iter().map(|p| p.trim().to_string()).collect();
        if let Some(b) = bound
            && !within(bound, spec.org.trim(), &projects)
        {
            let (field, hint) = if spec.org.trim() != b.org {
                ("org", format!("an admin key of org `{}` makes keys of that org only", b.org))
            } else {
                ("projects", format!("name one or more of your key's projects: {}", b.projects.join(", ")))
            };
            return Err(ValidationError::new(
                ErrorCode::InvalidValue,
                field,
                "a key may not reach further than the admin key that makes it",
                hint,
            )
            .into());
        }
        self.create(spec)
    }

    /// Revokes a key `bound`'s admin manages: a bound admin's own org's key named `name` (the
    /// `org` given is not needed then, and another is not looked at), the local user's of `org`.
    /// One outside the admin's bound is refused as unknown.
    pub fn revoke_within(&self, bound: Option<&Bound>, org: Option<&str>, name: &str) -> Result<KeyInfo> {
        let org = self.managed(bound, org, name)?;
        self.revoke(org, name)
    }

    /// Undoes the revocation of a key `bound`'s admin manages, within the restore window: the
    /// same reach as [`Keys::revoke_within`], and a key outside it refused as unknown.
    pub fn restore_within(&self, bound: Option<&Bound>, org: Option<&str>, name: &str) -> Result<KeyInfo> {
        let org = self.managed(bound, org, name)?;
        self.restore(org, name)
    }

    /// The org to look for `name` in on behalf of `bound`'s admin (a bound admin's own, the
    /// local user's choice); for a bound admin, a key of that name outside the bound is refused
    /// exactly as a name no key has.
    fn managed<'a>(
        &self,
        bound: Option<&'a Bound>,
        org: Option<&'a str>,
        name: &str,
    ) -> Result<Option<&'a str>> {
        let org = match bound {
            Some(b) => Some(b.org.as_str()),
            None => org.map(str::trim).filter(|o| !o.is_empty()),
        };
        let known =
            self.list()?.into_iter().find(|k| k.name == name.trim() && org.is_none_or(|o| k.org == o));
        // For a bound admin, a key outside the bound and a name no key has answer alike, word
        // for word: the answer tells nothing of keys it may not manage.
        if bound.is_some() && !known.is_some_and(|k| within(bound, &k.org, &k.projects)) {
            return Err(ValidationError::new(
                ErrorCode::NotFound,
                "name",
                format!("no key is named `{}`", cortex_domain::error::shown(name)),
                "the admin page lists the keys you manage",
            )
            .into());
        }
        Ok(org)
    }
}

#[cfg(test)]
mod tests {
    use super::within;
    use cortex_domain::tenant::Bound;

    #[test]
    fn a_key_stays_within_its_admins_org_and_projects() {
        let org = Bound { org: "acme".into(), projects: vec![] };
        let api = Bound { org: "acme".into(), projects: vec!["api".into(), "web".into()] };
        let p = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(within(None, "globex", &[]));
        assert!(within(Some(&org), "acme", &[]) && within(Some(&org), "acme", &p(&["x"])));
        assert!(!within(Some(&org), "globex", &[]));
        assert!(within(Some(&api), "acme", &p(&["api"])) && within(Some(&api), "acme", &p(&["web", "api"])));
        assert!(!within(Some(&api), "acme", &[]), "all projects is more than two");
        assert!(!within(Some(&api), "acme", &p(&["api", "billing"])));
    }
}
