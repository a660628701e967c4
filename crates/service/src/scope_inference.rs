//! Where the server stands: the scope new items get by default and finds are isolated to.
//!
//! Precedence per field: `CORTEX_ORG` / `CORTEX_PROJECT` / `CORTEX_BRANCH` > git (org and
//! project from the `origin` remote URL, else the top-level folder name; branch from HEAD) >
//! defaults (`local` / the folder name / `main`). Git is read from its files, so no `git`
//! binary is needed.

use crate::config::ConfigError;
use crate::settings;
use cortex_domain::Scope;
use cortex_domain::git_remote::org_and_project;
use cortex_domain::scope::check_value;
use serde::Serialize;
use std::path::{Path, PathBuf};

pub const DEFAULT_ORG: &str = "local";
pub const DEFAULT_PROJECT: &str = "default";
pub const DEFAULT_BRANCH: &str = "main";

/// The inferred scope and where each part came from, for `cortex doctor`.
#[derive(Debug, Clone, Serialize)]
pub struct InferredScope {
    pub scope: Scope,
    pub org_from: &'static str,
    pub project_from: &'static str,
    pub branch_from: &'static str,
    /// The top folder of the git checkout the server stands in, if any: where items stored
    /// for its org and project take their commit and files from (`crate::git`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkout: Option<PathBuf>,
}

impl InferredScope {
    /// A scope given outright (benchmarks, evaluations, tests), not inferred.
    pub fn fixed(org: &str, project: &str, branch: &str) -> InferredScope {
        InferredScope {
            scope: Scope {
                org: Some(org.into()),
                project: Some(project.into()),
                branch: Some(branch.into()),
                ..Scope::default()
            },
            org_from: "fixed",
            project_from: "fixed",
            branch_from: "fixed",
            checkout: None,
        }
    }

    /// The same scope, standing in the git checkout at `top`.
    pub fn in_checkout(mut self, top: &Path) -> InferredScope {
        self.checkout = Some(top.to_path_buf());
        self
    }
}

/// Reads the environment and the git checkout around `workdir`. A value set in the
/// environment is checked like a scope value in a request (length, control characters) and
/// refused with the variable's name; a value read from git or the folder name that fails the
/// same check is passed over for the next source.
pub fn infer(workdir: &Path, env: impl Fn(&str) -> Option<String>) -> Result<InferredScope, ConfigError> {
    let git = GitFacts::read(workdir);
    let (env_org, env_project, env_branch) =
        (settings::ORG.get(&env)?, settings::PROJECT.get(&env)?, settings::BRANCH.get(&env)?);
    let remote = git.as_ref().and_then(|g| g.origin_url.as_deref()).and_then(org_and_project);
    let top_name = git
        .as_ref()
        .map(|g| g.top.as_path())
        .unwrap_or(workdir)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty());

    let pick = |env: Option<String>, derived: Option<(String, &'static str)>, default: &str| {
        let derived = derived.and_then(|(v, from)| check_value("scope", &v).ok().map(|v| (v, from)));
        match (env, derived) {
            (Some(v), _) => (v, "environment"),
            (None, Some((v, from))) => (v, from),
            (None, None) => (default.to_string(), "default"),
        }
    };
    let (org, org_from) = pick(env_org, remote.as_ref().map(|(o, _)| (o.clone(), "git remote")), DEFAULT_ORG);
    let (project, project_from) = pick(
        env_project,
        remote
            .as_ref()
            .map(|(_, p)| (p.clone(), "git remote"))
            .or_else(|| top_name.map(|n| (n, "folder name"))),
        DEFAULT_PROJECT,
    );
    let (branch, branch_from) = pick(
        env_branch,
        git.as_ref().and_then(|g| g.branch.clone()).map(|b| (b, "git HEAD")),
        DEFAULT_BRANCH,
    );
    Ok(InferredScope {
        scope: Scope { org: Some(org), project: Some(project), branch: Some(branch), ..Scope::default() },
        org_from,
        project_from,
        branch_from,
        checkout: git.map(|g| g.top),
    })
}

struct GitFacts {
    top: PathBuf,
    branch: Option<String>,
    origin_url: Option<String>,
}

impl GitFacts {
    /// Walks up from `start` to the folder holding `.git` (a folder, or a file pointing to
    /// one as in worktrees and submodules).
    fn read(start: &Path) -> Option<GitFacts> {
        let start = start.canonicalize().ok()?;
        let top = start.ancestors().find(|d| d.join(".git").exists())?.to_path_buf();
        let dot_git = top.join(".git");
        let git_dir = if dot_git.is_file() {
            let text = std::fs::read_to_string(&dot_git).ok()?;
            let target = text.trim().strip_prefix("gitdir:")?.trim();
            top.join(target)
        } else {
            dot_git
        };
        let head = std::fs::read_to_string(git_dir.join("HEAD")).ok();
        let branch =
            head.as_deref().and_then(|h| h.trim().strip_prefix("ref: refs/heads/")).map(str::to_string);
        // A worktree's config lives in the common dir.
        let common = std::fs::read_to_string(git_dir.join("commondir"))
            .ok()
            .map(|c| git_dir.join(c.trim()))
            .unwrap_or_else(|| git_dir.clone());
        let origin_url = std::fs::read_to_string(common.join("config")).ok().and_then(|c| origin_url(&c));
        Some(GitFacts { top, branch, origin_url })
    }
}

/// The `url` of `[remote "origin"]` in a git config file.
fn origin_url(config: &str) -> Option<String> {
    let mut in_origin = false;
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_origin = line.replace(' ', "") == "[remote\"origin\"]";
        } else if in_origin
            && let Some((key, value)) = line.split_once('=')
            && key.trim() == "url"
        {
            return Some(value.trim().to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn reads_branch_and_origin_from_a_checkout() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("checkout");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/feature/login\n").unwrap();
        std::fs::write(
            repo.join(".git/config"),
            "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = git@github.com:acme/api.git\n",
        )
        .unwrap();
        let inferred = infer(&repo.join("src/deep"), no_env).unwrap();
        assert_eq!(inferred.scope.org.as_deref(), Some("acme"));
        assert_eq!(inferred.scope.project.as_deref(), Some("api"));
        assert_eq!(inferred.scope.branch.as_deref(), Some("feature/login"));
        assert_eq!(inferred.branch_from, "git HEAD");
    }

    #[test]
    fn environment_wins_and_folder_name_is_the_fallback_project() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("myproj");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/dev\n").unwrap();
        let env = |k: &str| (k == "CORTEX_BRANCH").then(|| "release".to_string());
        let inferred = infer(&repo, env).unwrap();
        assert_eq!(inferred.scope.project.as_deref(), Some("myproj"));
        assert_eq!(inferred.scope.org.as_deref(), Some(DEFAULT_ORG));
        assert_eq!(inferred.scope.branch.as_deref(), Some("release"));
        assert_eq!(inferred.branch_from, "environment");
    }
}
