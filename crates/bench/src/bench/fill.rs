//! `cortex-bench bench --fill DATASET --postgres URL --sizes N --dir D`: grows a PostgreSQL
//! database to N items of `--prose`'s corpus, the items numbered on from those already there (so
//! a database grown in steps holds what one filled at once would), for measuring a running
//! deployment at that size (`scripts/capacity`). Steps of 10,000 items stored through
//! `memory_store` in batches of 100, each step whole before the next: a fill stopped (or paused
//! while something is measured) leaves a database to measure at the size reached, and a fill
//! killed inside a step stores that step again when started again. Nothing is deleted; the load
//! rate of each step is printed.
//!
//! The items' ids are kept in `D/fill-<database>.ids` (16 bytes each, in item order), and how
//! many of them have their vectors in `D/fill-<database>.vectors`: with `--semantic` the items
//! stored before without vectors get them first (the mean of their sentences' vectors, as
//! `--prose --semantic` sets them), so the slow sentence embedding need not hold up the stores.

use super::prose_corpus::{self, Prose};
use super::{bench_scope, settle_postgres};
use crate::output;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_store::DbTarget;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Items stored (and given their vectors) between two progress lines.
const STEP: usize = 10_000;

pub fn run(dataset: &Path, size: usize, dir: &Path, url: &str, semantic: bool) -> Result<(), String> {
    let prose = Prose::read(dataset)?;
    let vectors = if semantic {
        let EmbedderChoice::Local { model_dir, .. } =
            cortex_service::config::embedder_from_env().map_err(|e| e.to_string())?
        else {
            return Err(
                "--fill --semantic embeds the sentences with the local model (CORTEX_EMBEDDER=local)".into(),
            );
        };
        Some(prose_corpus::sentence_vectors(&prose, &model_dir, dir)?)
    } else {
        None
    };
    let target = DbTarget::parse(url);
    let store = cortex_store::open(&target).map_err(|e| e.to_string())?;
    let service =
        MemoryService::with_store(store.clone(), &Config::new(target, bench_scope(), EmbedderChoice::None));
    let held = service.administration().stats().map_err(|e| e.to_string())?.items;
    let held = usize::try_from(held).map_err(|e| e.to_string())?;
    let (ids_file, vectored_file) = files(dir, url);
    let mut ids = read_ids(&ids_file)?;
    // An item equal to one stored before (the same sentences, kind and scope) is not stored
    // again: its number is taken, its id is the earlier item's.
    // A fill stopped inside a step left part of that step's items stored but unlisted: the step
    // runs again, and its items already there are found equal and not stored twice.
    let distinct = ids.iter().collect::<std::collections::HashSet<_>>().len();
    if !(distinct..distinct + STEP).contains(&held) {
        return Err(format!(
            "{} lists {distinct} items and the database holds {held}: fill an empty database, or the one this folder's fill filled",
            ids_file.display(),
        ));
    }
    let mut vectored: usize =
        std::fs::read_to_string(&vectored_file).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0);
    let mut done = ids.len();
    let picks = prose.picks(size.max(done));
    output::line("| items | stores items/s | vectors set items/s | elapsed |");
    output::line("|---:|---:|---:|---:|");
    let started = Instant::now();
    loop {
        if let Some(vectors) = vectors.as_deref()
            && vectored < done
        {
            let t = Instant::now();
            prose_corpus::set_vectors(
                &service,
                store.as_ref(),
                &ids[vectored..done],
                &picks[vectored..done],
                vectors,
            )?;
            let rate = (done - vectored) as f64 / t.elapsed().as_secs_f64().max(f64::MIN_POSITIVE);
            output::line(&format!("| {done} | | {rate:.0} | {:.0} s |", started.elapsed().as_secs_f64()));
            vectored = done;
            std::fs::write(&vectored_file, vectored.to_string()).map_err(|e| e.to_string())?;
        }
        if done >= size {
            break;
        }
        let end = (done + STEP).min(size);
        let t = Instant::now();
        let (_, step_ids) = prose_corpus::store_from(&service, &prose, done, &picks[done..end])?;
        let rate = (end - done) as f64 / t.elapsed().as_secs_f64().max(f64::MIN_POSITIVE);
        append_ids(&ids_file, &step_ids)?;
        ids.extend(step_ids);
        output::line(&format!("| {end} | {rate:.0} | | {:.0} s |", started.elapsed().as_secs_f64()));
        done = end;
    }
    settle_postgres(url)?;
    let held = service.administration().stats().map_err(|e| e.to_string())?.items;
    output::line(&format!("\n{held} items in the database"));
    Ok(())
}

/// The ids file and the vectored count of the database at `url`, in `dir`.
fn files(dir: &Path, url: &str) -> (PathBuf, PathBuf) {
    let name: String = url
        .rsplit('/')
        .next()
        .unwrap_or(url)
        .split('?')
        .next()
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    (dir.join(format!("fill-{name}.ids")), dir.join(format!("fill-{name}.vectors")))
}

fn read_ids(file: &Path) -> Result<Vec<uuid::Uuid>, String> {
    match std::fs::read(file) {
        Ok(bytes) => Ok(bytes
            .chunks_exact(16)
            .map(|b| uuid::Uuid::from_bytes(b.try_into().unwrap_or([0; 16])))
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(format!("{}: {e}", file.display())),
    }
}

fn append_ids(file: &Path, ids: &[uuid::Uuid]) -> Result<(), String> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let bytes: Vec<u8> = ids.iter().flat_map(|id| *id.as_bytes()).collect();
    f.write_all(&bytes).map_err(|e| format!("{}: {e}", file.display()))
}
