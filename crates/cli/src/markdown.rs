//! `cortex export --markdown DIR`: the files `Ingest::export_markdown` renders,
//! written under DIR. Files an earlier export wrote there whose item is gone are removed, so
//! the folder shows the memory as it is and a later ingest of it brings nothing back.
//!
//! Nothing outside DIR is ever touched: the folder is worked on through [`Folder`], which
//! never follows a link. Every place the export would write, read or remove is looked at
//! first, and a link at any of them refuses the whole export (exit 2, naming the link) before
//! anything is written. Only regular files whose text reads back as an export with item ids
//! are ever removed.

use crate::confined::{Entry, Folder, link_refused};
use crate::error::CliError;
use cortex_domain::sources::export::ExportFile;
use cortex_domain::sources::export::read::{is_exported, read};
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

/// What the export did.
#[derive(Debug, serde::Serialize)]
pub struct MarkdownReport {
    pub dir: String,
    pub files: usize,
    pub written: usize,
    pub unchanged: usize,
    pub removed: usize,
}

/// Writes `files` under `dir` (an unchanged file is not touched).
pub fn write(dir: &Path, files: &[ExportFile]) -> Result<MarkdownReport, CliError> {
    let root = Folder::open_root(dir)?;
    let mut report = MarkdownReport {
        dir: dir.display().to_string(),
        files: files.len(),
        written: 0,
        unchanged: 0,
        removed: 0,
    };
    let placed = files.iter().map(|f| place(&f.path)).collect::<Result<Vec<_>, _>>()?;
    // The folders directly under DIR, none of them reached through a link.
    let mut folders: BTreeMap<String, Folder> = BTreeMap::new();
    for (name, entry) in root.entries()? {
        if entry == Entry::Folder
            && let Some(folder) = root.child(&name, false)?
        {
            folders.insert(name, folder);
        }
    }
    refuse_links(&root, &folders, &placed)?;
    let wanted: HashSet<(Option<&str>, &str)> = placed.iter().copied().collect();
    for (folder, name) in earlier_exports(&root, &folders)? {
        if !wanted.contains(&(folder.as_deref(), name.as_str())) {
            holder(&root, &folders, folder.as_deref()).remove(&name)?;
            report.removed += 1;
        }
    }
    for ((folder, name), file) in placed.iter().zip(files) {
        if let Some(f) = folder
            && !folders.contains_key(*f)
        {
            let made = root.child(f, true)?.ok_or_else(|| link_refused(&root.path().join(f)))?;
            folders.insert(f.to_string(), made);
        }
        let holder = holder(&root, &folders, *folder);
        if holder.read(name)?.is_some_and(|old| old == file.text.as_bytes()) {
            report.unchanged += 1;
            continue;
        }
        holder.replace(name, file.text.as_bytes())?;
        report.written += 1;
    }
    Ok(report)
}

/// The open folder a file lies in: DIR itself, or one of the folders opened under it.
fn holder<'a>(root: &'a Folder, folders: &'a BTreeMap<String, Folder>, folder: Option<&str>) -> &'a Folder {
    folder.and_then(|f| folders.get(f)).unwrap_or(root)
}

/// An export file's folder (none, or one directly under DIR) and name.
fn place(path: &str) -> Result<(Option<&str>, &str), CliError> {
    let parts: Vec<&str> = path.split('/').collect();
    let plain = |p: &str| !p.is_empty() && p != "." && p != ".." && !p.contains('\\');
    match parts.as_slice() {
        [name] if plain(name) => Ok((None, name)),
        [folder, name] if plain(folder) && plain(name) => Ok((Some(folder), name)),
        _ => Err(CliError::Run(format!("the export named the file {path:?}, which is not folder/name"))),
    }
}

/// Every folder and file the export would write, looked at before anything is written: a
/// link (or something that is no folder where one is needed) refuses the export.
fn refuse_links(
    root: &Folder,
    folders: &BTreeMap<String, Folder>,
    placed: &[(Option<&str>, &str)],
) -> Result<(), CliError> {
    for (folder, name) in placed {
        if let Some(f) = folder
            && !folders.contains_key(*f)
        {
            match root.entry(f)? {
                Entry::Missing => continue,
                Entry::Link => return Err(link_refused(&root.path().join(f))),
                _ => {
                    return Err(CliError::content(
                        &root.path().join(f),
                        "is in the way of a folder; move it elsewhere",
                    ));
                }
            }
        }
        let holder = holder(root, folders, *folder);
        if holder.entry(name)? == Entry::Link {
            return Err(link_refused(&holder.path().join(name)));
        }
    }
    Ok(())
}

/// The Markdown files directly in DIR or one folder down that an export wrote: regular files
/// (links, and whatever lies behind them, are never looked into) whose text reads back as
/// exported items with their ids.
fn earlier_exports(
    root: &Folder,
    folders: &BTreeMap<String, Folder>,
) -> Result<Vec<(Option<String>, String)>, CliError> {
    let mut out = Vec::new();
    let all = std::iter::once((None, root)).chain(folders.iter().map(|(n, f)| (Some(n.clone()), f)));
    for (folder_name, folder) in all {
        for (name, entry) in folder.entries()? {
            if entry != Entry::File || !name.ends_with(".md") {
                continue;
            }
            let Some(bytes) = folder.read(&name)? else { continue };
            let text = String::from_utf8_lossy(&bytes);
            if is_exported(&text) && read(&text).is_ok_and(|items| !items.is_empty()) {
                out.push((folder_name.clone(), name));
            }
        }
    }
    Ok(out)
}
