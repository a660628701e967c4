//! `cortex export`, `cortex import` and `cortex reindex`: the file handling and progress around the service's
//! transfer methods (the format is `cortex_service::transfer::format`).

use crate::error::CliError;
use cortex_service::MemoryService;
use cortex_service::transfer::{
    FORMAT_VERSION, GitImport, Header, ImportReport, ItemLine, Line, Trailer, TrailerCounts, check_lines,
    encode_line, parse_line,
};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

/// Items per page read on export and per transaction on import.
const BATCH: usize = 500;

fn bar(len: Option<u64>, what: &str) -> ProgressBar {
    let bar = match len {
        Some(n) => ProgressBar::new(n),
        None => ProgressBar::no_length(),
    };
    // Progress goes to stderr (indicatif's default), and only when it is a terminal.
    let template = if len.is_some() {
        "{msg} [{bar:40}] {pos}/{len} items ({per_sec}, eta {eta})"
    } else {
        "{msg} {pos} items ({per_sec})"
    };
    bar.set_style(ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()));
    bar.set_message(what.to_string());
    bar
}

/// Embeds every live item again with the configured embedder, with a progress bar.
pub fn reindex(service: &MemoryService) -> Result<cortex_service::indexes::ReindexReport, CliError> {
    let progress = bar(Some(service.administration().stats()?.items as u64), "embedding");
    let report = service.indexes().reindex_vectors(|done, _| progress.set_position(done as u64))?;
    progress.finish_and_clear();
    Ok(report)
}

pub fn reindex_lexical(
    service: &MemoryService,
) -> Result<cortex_service::indexes::LexicalReindexReport, CliError> {
    let progress = bar(Some(service.administration().stats()?.items as u64), "indexing");
    let report = service.indexes().reindex_lexical(&mut |done, total| {
        progress.set_length(total);
        progress.set_position(done);
    })?;
    progress.finish_and_clear();
    Ok(report)
}

/// Writes every item (deleted ones too) to `out`, or stdout when `None`; returns the count.
pub fn export(service: &MemoryService, out: Option<&Path>) -> Result<u64, CliError> {
    let sink: Box<dyn Write> = match out {
        Some(path) => Box::new(std::fs::File::create(path).map_err(|e| CliError::io("create", path, e))?),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut sink = BufWriter::new(sink);
    let target = out.unwrap_or(Path::new("stdout"));
    let fail = |e: std::io::Error| CliError::io("write the export to", target, e);
    let stats = service.administration().stats()?;
    let progress = bar(Some((stats.items + stats.deleted) as u64), "exporting");
    let header =
        Header { cortex_export: FORMAT_VERSION, embedding_model: service.transfer().embedding_model()? };
    writeln!(sink, "{}", encode_line(&header).map_err(CliError::Run)?).map_err(fail)?;
    let mut after = None;
    let mut count = 0u64;
    loop {
        let page = service.transfer().export_page(after, BATCH)?;
        let Some(last) = page.last() else { break };
        after = Some(last.id);
        for item in &page {
            writeln!(sink, "{}", encode_line(item).map_err(CliError::Run)?).map_err(fail)?;
        }
        count += page.len() as u64;
        progress.inc(page.len() as u64);
    }
    // The items' provenance, then the git tables.
    let mut git = 0u64;
    let mut after = None;
    loop {
        let page = service.transfer().provenance_page(after, BATCH)?;
        let Some(cortex_service::transfer::GitLine::Provenance { item, .. }) = page.last() else { break };
        after = Some(*item);
        for line in &page {
            writeln!(sink, "{}", encode_line(line).map_err(CliError::Run)?).map_err(fail)?;
        }
        git += page.len() as u64;
    }
    for line in service.transfer().git_tables()? {
        writeln!(sink, "{}", encode_line(&line).map_err(CliError::Run)?).map_err(fail)?;
        git += 1;
    }
    let trailer = Trailer { cortex_export_end: TrailerCounts { items: count, git } };
    writeln!(sink, "{}", encode_line(&trailer).map_err(CliError::Run)?).map_err(fail)?;
    sink.flush().map_err(fail)?;
    progress.finish_and_clear();
    Ok(count)
}

/// Reads an export file into the store in batches; verifies every item arrived.
pub fn import(service: &MemoryService, file: &Path) -> Result<ImportReport, CliError> {
    // A first pass checks the whole file (format, trailer, count) before anything is written:
    // a truncated or corrupt file imports nothing.
    let (header, declared) = check_lines(lines(file)?).map_err(|e| CliError::content(file, e))?;
    refuse_secrets(service, file)?;
    service
        .transfer()
        .accept_embedding_model(header.embedding_model.as_deref())?
        .map_err(|e| CliError::content(file, e))?;
    let progress = bar(Some(declared), "importing");
    let mut report = ImportReport { items: declared, ..ImportReport::default() };
    let mut batch: Vec<ItemLine> = Vec::with_capacity(BATCH);
    let mut ids = Vec::with_capacity(BATCH);
    let mut git = GitImport::default();
    let flush = |batch: &mut Vec<ItemLine>, ids: &mut Vec<uuid::Uuid>, report: &mut ImportReport| {
        let n = batch.len() as u64;
        let written = service.transfer().import_batch(std::mem::take(batch))?;
        report.imported += written.imported;
        report.already_present += written.present;
        report.redacted += written.redacted.len() as u64;
        report.verified += service.transfer().count_present(ids)?;
        ids.clear();
        progress.inc(n);
        Ok::<(), CliError>(())
    };
    for line in lines(file)? {
        let (number, line) = line.map_err(|e| CliError::content(file, e))?;
        match parse_line(&line).map_err(|e| CliError::content(file, format!("line {number}: {e}")))? {
            Line::Item(item) => {
                ids.push(item.id);
                batch.push(*item);
                if batch.len() == BATCH {
                    flush(&mut batch, &mut ids, &mut report)?;
                }
            }
            Line::Git(line) => git.add(*line),
            Line::Header(_) | Line::Trailer(_) => {}
        }
    }
    if !batch.is_empty() {
        flush(&mut batch, &mut ids, &mut report)?;
    }
    // After every item: provenance rows name their items.
    report.provenance = service.transfer().import_git(git)?;
    progress.finish_and_clear();
    if report.verified != report.items {
        return Err(CliError::Run(format!(
            "only {} of the file's {} items are in the store after the import",
            report.verified, report.items
        )));
    }
    Ok(report)
}

/// Under `CORTEX_SECRETS=refuse`, the first item of the file holding a secret, refused before
/// anything is written.
fn refuse_secrets(service: &MemoryService, file: &Path) -> Result<(), CliError> {
    if !service.transfer().refuses_secrets() {
        return Ok(());
    }
    for line in lines(file)? {
        let (_, line) = line.map_err(|e| CliError::content(file, e))?;
        if let Ok(Line::Item(item)) = parse_line(&line)
            && let Some(refusal) = service.transfer().refusal(&item)
        {
            return Err(cortex_service::ServiceError::Invalid(refusal).into());
        }
    }
    Ok(())
}

/// The file's non-empty lines with their 1-based numbers. A line that cannot be read (an I/O
/// error, bytes that are not UTF-8) is an error naming it, not the end of the file.
fn lines(file: &Path) -> Result<impl Iterator<Item = Result<(usize, String), String>>, CliError> {
    let reader = BufReader::new(std::fs::File::open(file).map_err(|e| CliError::io("open", file, e))?);
    let name = file.display().to_string();
    Ok(reader
        .lines()
        .enumerate()
        .map(move |(i, line)| {
            line.map(|l| (i + 1, l)).map_err(|e| format!("{name}, line {}: cannot be read: {e}", i + 1))
        })
        .filter(|line| line.as_ref().map_or(true, |(_, l)| !l.trim().is_empty())))
}
