//! Which files an ingest reads, and the paths they are known by. A path is relative to the
//! ingest's root: the git checkout the files live in (so the same file has the same path
//! from any folder and on every clone), or, outside a checkout, the folder given (a file's
//! own folder for a file given). The root is named in every item, so a run never touches
//! what another root made: a checkout by its repository (its `origin` remote, the same on
//! every clone; else its folder), another folder by its path.

use cortex_domain::{ErrorCode, ValidationError};
use std::path::{Path, PathBuf};

/// Folders never walked: tools' and dependencies' trees, not the project's knowledge.
const SKIPPED_FOLDERS: &[&str] = &["node_modules", "target", "vendor", "dist", "build"];

/// The files of one PATH argument.
#[derive(Debug)]
pub(crate) struct Walked {
    /// What the root is known by in the items' metadata: `git:host/owner/repo` (or `dir:`
    /// and its folder) for a git checkout, else the folder's absolute path.
    pub root: String,
    /// The root folder's own name when it is no checkout: part of where a file lies, for the
    /// decision-folder rule (`cortex ingest docs/adr` outside a checkout).
    pub above: String,
    /// The part of the root this argument covers (`docs/adr`, or one file's path): items
    /// of files under it that are gone are deleted.
    pub covers: String,
    /// Whether `covers` is one file (only that path), not a folder.
    pub single_file: bool,
    /// `(path relative to the root, file on disk)`, sorted by path.
    pub files: Vec<(String, PathBuf)>,
    /// The top folder of the git checkout the files are in, if any.
    pub top: Option<PathBuf>,
}

impl Walked {
    /// Whether the file at `path` lies in a decision folder (`adr`, `decisions`, …), the
    /// root's own name included.
    pub fn in_decision_folder(&self, path: &str) -> bool {
        let full = if self.above.is_empty() { path.to_string() } else { format!("{}/{path}", self.above) };
        cortex_domain::sources::in_decision_folder(&full)
    }

    /// Whether an item of `path` lies in what this argument covers.
    pub fn covers(&self, path: &str) -> bool {
        if self.single_file {
            path == self.covers
        } else {
            self.covers.is_empty()
                || path.strip_prefix(&self.covers).is_some_and(|rest| rest.starts_with('/'))
        }
    }
}

/// The files under `arg` (a folder, walked recursively, hidden entries and dependency
/// folders left out) or `arg` itself (a file): Markdown, and reStructuredText changelogs.
pub(crate) fn walk(arg: &Path) -> Result<Walked, ValidationError> {
    let path = arg.canonicalize().map_err(|e| {
        ValidationError::new(
            ErrorCode::NotFound,
            "PATH",
            format!("cannot read {}: {e}", arg.display()),
            "name a folder or a Markdown file that exists (for example docs/adr or CHANGELOG.md)",
        )
    })?;
    let single_file = path.is_file();
    let folder = if single_file { path.parent().unwrap_or(&path).to_path_buf() } else { path.clone() };
    let top = checkout_top(&folder);
    let (base, root, above) = match top.clone() {
        Some(top) => {
            let root = super::git::checkout_identity(&top);
            (top, root, String::new())
        }
        None => {
            let name = folder.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            (folder.clone(), folder.display().to_string(), name)
        }
    };
    let covers = relative(&base, &path);
    let mut files = Vec::new();
    if single_file {
        if !is_source(&path) {
            return Err(ValidationError::new(
                ErrorCode::InvalidValue,
                "PATH",
                format!("{} is not a Markdown file", arg.display()),
                "ingest reads Markdown (.md, .markdown) files and folders, and reStructuredText \
                 changelogs (CHANGES.rst); for commits use --git",
            ));
        }
        files.push((covers.clone(), path.clone()));
    } else {
        collect(&path, &mut files, &base);
    }
    files.sort();
    Ok(Walked { root, above, covers, single_file, files, top })
}

fn collect(folder: &Path, out: &mut Vec<(String, PathBuf)>, base: &Path) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        tracing::warn!(folder = %folder.display(), "cannot read folder; passed over");
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() && !SKIPPED_FOLDERS.contains(&name.as_str()) {
            collect(&path, out, base);
        } else if kind.is_file() && is_source(&path) {
            out.push((relative(base, &path), path));
        }
    }
}

/// Markdown, or a reStructuredText file named like a changelog (`CHANGES.rst`, `HISTORY.rst`).
fn is_source(path: &Path) -> bool {
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_lowercase();
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("").to_lowercase();
    match extension.as_str() {
        "md" | "markdown" => true,
        "rst" => ["changelog", "changes", "history", "releases", "news"].iter().any(|n| stem.starts_with(n)),
        _ => false,
    }
}

/// `path` relative to `base`, `/`-separated (empty for `base` itself).
fn relative(base: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(base).unwrap_or(path);
    rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

/// The top folder of the git checkout holding `folder` (the one with `.git`), if any.
pub(crate) fn checkout_top(folder: &Path) -> Option<PathBuf> {
    folder.ancestors().find(|dir| dir.join(".git").exists()).map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_relative_to_the_checkout_and_cover_their_folder() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        std::fs::create_dir_all(top.join(".git")).unwrap();
        std::fs::create_dir_all(top.join("docs/adr/node_modules")).unwrap();
        std::fs::create_dir_all(top.join("docs/.hidden")).unwrap();
        for file in [
            "docs/adr/0001-a.md",
            "docs/adr/notes.txt",
            "docs/adr/node_modules/x.md",
            "docs/.hidden/y.md",
            "docs/guide.markdown",
        ] {
            std::fs::write(top.join(file), "# x\n").unwrap();
        }
        let walked = walk(&top.join("docs")).unwrap();
        let paths: Vec<&str> = walked.files.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["docs/adr/0001-a.md", "docs/guide.markdown"]);
        assert!(walked.root.starts_with("dir:"), "a checkout without a remote: {}", walked.root);
        assert_eq!(walked.covers, "docs");
        assert!(
            walked.covers("docs/adr/0002-b.md")
                && !walked.covers("docsx/a.md")
                && !walked.covers("README.md")
        );
        let one = walk(&top.join("docs/adr/0001-a.md")).unwrap();
        assert!(one.single_file && one.covers("docs/adr/0001-a.md") && !one.covers("docs/adr/0002-b.md"));
        // Links on disk are not followed: a file or a folder elsewhere is not read through one.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.md"), "# Secret\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.md"), top.join("docs/link.md")).unwrap();
        std::os::unix::fs::symlink(outside.path(), top.join("docs/linked-folder")).unwrap();
        let walked = walk(&top.join("docs")).unwrap();
        let paths: Vec<&str> = walked.files.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["docs/adr/0001-a.md", "docs/guide.markdown"], "no link followed");
        let err = walk(&top.join("missing")).unwrap_err();
        assert_eq!(err.field, "PATH");
        assert_eq!(walk(&top.join("docs/adr/notes.txt")).unwrap_err().code, ErrorCode::InvalidValue);
    }
}
