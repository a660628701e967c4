//! `cortex export --markdown DIR`: the files `Ingest::export_markdown` renders,
//! written under DIR. Files an earlier export wrote there whose item is gone are removed, so
//! the folder shows the memory as it is and a later ingest of it brings nothing back.

use crate::error::CliError;
use cortex_domain::sources::export::ExportFile;
use cortex_domain::sources::export::read::is_exported;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

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
    std::fs::create_dir_all(dir).map_err(|e| CliError::io("create", dir, e))?;
    let mut report = MarkdownReport {
        dir: dir.display().to_string(),
        files: files.len(),
        written: 0,
        unchanged: 0,
        removed: 0,
    };
    let wanted: HashSet<PathBuf> = files.iter().map(|f| dir.join(&f.path)).collect();
    for stale in earlier_exports(dir).into_iter().filter(|p| !wanted.contains(p)) {
        std::fs::remove_file(&stale).map_err(|e| CliError::io("remove", &stale, e))?;
        report.removed += 1;
    }
    for file in files {
        let path = dir.join(&file.path);
        if std::fs::read(&path).is_ok_and(|old| old == file.text.as_bytes()) {
            report.unchanged += 1;
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| CliError::io("create", parent, e))?;
        }
        std::fs::write(&path, &file.text).map_err(|e| CliError::io("write", &path, e))?;
        report.written += 1;
    }
    Ok(report)
}

/// The Markdown files directly in `dir` or one folder down that an export wrote.
fn earlier_exports(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(dir) {
        folders.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    }
    for folder in folders {
        let Ok(entries) = std::fs::read_dir(&folder) else { continue };
        for path in entries.flatten().map(|e| e.path()) {
            let markdown = path.extension().is_some_and(|e| e == "md");
            if markdown && path.is_file() && std::fs::read_to_string(&path).is_ok_and(|t| is_exported(&t)) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}
