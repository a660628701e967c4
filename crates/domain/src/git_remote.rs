//! Org and project from a git remote URL, for scope inference.

/// `git@github.com:acme/api.git`, `https://github.com/acme/api`, `ssh://git@host:22/acme/api.git`
/// and nested groups (`gitlab.com/acme/platform/api`) give `("acme", "api")`
/// (`("acme/platform", "api")` for the nested one). `None` when the URL has no owner/name path.
pub fn org_and_project(url: &str) -> Option<(String, String)> {
    let url = url.trim();
    let path = if let Some((_, rest)) = url.split_once("://") {
        // scheme://[user@]host[:port]/path
        rest.split_once('/').map(|(_, p)| p)?
    } else if let Some((host, path)) = url.split_once(':') {
        // scp-like: [user@]host:path (but not a Windows drive or a bare path)
        if host.contains('/') { url } else { path }
    } else {
        url
    };
    let path = path.trim_matches('/').trim_end_matches(".git");
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        [] | [_] => None,
        [owners @ .., project] => Some((owners.join("/"), (*project).to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_common_remote_forms() {
        let expect = Some(("acme".to_string(), "api".to_string()));
        assert_eq!(org_and_project("git@github.com:acme/api.git"), expect);
        assert_eq!(org_and_project("https://github.com/acme/api"), expect);
        assert_eq!(org_and_project("https://github.com/acme/api.git/"), expect);
        assert_eq!(org_and_project("ssh://git@host:2222/acme/api.git"), expect);
        assert_eq!(
            org_and_project("https://gitlab.com/acme/platform/api.git"),
            Some(("acme/platform".to_string(), "api".to_string()))
        );
        assert_eq!(org_and_project("https://host/only"), None);
    }
}
