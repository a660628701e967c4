//! The commits of a repository, read with gix (pure Rust: no `git` binary, no C library to
//! build), without its default features: only opening a repository, references and walking
//! commits, which is all this needs.

use cortex_domain::sources::commits::Commit;
use cortex_domain::{ErrorCode, ValidationError};
use std::collections::HashSet;
use std::path::Path;

/// The commits reachable from HEAD of the repository around `repo`, oldest first. `since`
/// keeps those after it: a date (`YYYY-MM-DD` or RFC 3339: commits authored at or after it),
/// or a revision (a branch, a tag or a commit hash: commits it does not reach).
pub(crate) fn commits(repo: &Path, since: Option<&str>) -> Result<Vec<Commit>, ValidationError> {
    let repository = gix::discover(repo).map_err(|e| {
        ValidationError::new(
            ErrorCode::NotFound,
            "--git",
            format!("{} is not in a git repository: {e}", repo.display()),
            "run in a git checkout, or give its folder: cortex ingest --git path/to/repo",
        )
    })?;
    let read_error = |e: &dyn std::fmt::Display| {
        ValidationError::new(
            ErrorCode::InvalidValue,
            "--git",
            format!("cannot read the history of {}: {e}", repo.display()),
            "check that the repository is whole (`git fsck`), then run again",
        )
    };
    let head = match repository.head_id() {
        Ok(id) => id.detach(),
        // A repository without commits has no history to ingest.
        Err(_) => return Ok(Vec::new()),
    };
    let mut all = walk(&repository, head).map_err(|e| read_error(&e))?;
    if let Some(since) = since {
        match cortex_domain::time::parse_instant(since) {
            Ok(at) => all.retain(|c| c.time >= at),
            Err(_) => {
                let start = resolve(&repository, since, &all)?;
                let reached: HashSet<String> = walk(&repository, start)
                    .map_err(|e| read_error(&e))?
                    .into_iter()
                    .map(|c| c.hash)
                    .collect();
                all.retain(|c| !reached.contains(&c.hash));
            }
        }
    }
    all.reverse();
    Ok(all)
}

/// Every commit reachable from `tip`, newest first by commit time.
fn walk(repository: &gix::Repository, tip: gix::ObjectId) -> Result<Vec<Commit>, gix::Error> {
    let mut out = Vec::new();
    let walk = repository
        .rev_walk([tip])
        .sorting(gix::revision::walk::Sorting::ByCommitTime(Default::default()))
        .all()?;
    for info in walk {
        let info = info?;
        let commit = info.object()?;
        let author = commit.author()?;
        let time = author.time().map(|t| t.seconds).unwrap_or_default();
        out.push(Commit {
            hash: info.id.to_string(),
            message: String::from_utf8_lossy(commit.message_raw()?).into_owned(),
            author: format!("{} <{}>", author.name, author.email),
            time: time * 1000,
        });
    }
    Ok(out)
}

/// A revision's commit: a branch or tag name, a full hash, or the prefix of a hash among
/// `known` (HEAD's history).
fn resolve(
    repository: &gix::Repository,
    rev: &str,
    known: &[Commit],
) -> Result<gix::ObjectId, ValidationError> {
    if let Ok(Some(mut reference)) = repository.try_find_reference(rev)
        && let Ok(id) = reference.peel_to_id()
    {
        return Ok(id.detach());
    }
    let lower = rev.trim().to_lowercase();
    let matching: Vec<&Commit> =
        known.iter().filter(|c| lower.len() >= 4 && c.hash.starts_with(&lower)).collect();
    match matching.as_slice() {
        [one] => gix::ObjectId::from_hex(one.hash.as_bytes()).map_err(|e| {
            ValidationError::new(ErrorCode::InvalidValue, "--since", e.to_string(), "give a full commit hash")
        }),
        [] => Err(ValidationError::new(
            ErrorCode::NotFound,
            "--since",
            format!("`{rev}` is neither a date nor a branch, tag or commit of this history"),
            "give a date (2024-01-31), a tag or branch (v1.2.0, main), or a commit hash from `git log`",
        )),
        _ => Err(ValidationError::new(
            ErrorCode::InvalidValue,
            "--since",
            format!("`{rev}` is the start of several commits' hashes"),
            "give more of the hash",
        )),
    }
}
