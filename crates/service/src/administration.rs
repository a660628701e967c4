//! `stats` and `doctor`: what is stored and whether the server is set up right; and what the
//! team server's `/ready` and `/metrics` read of the store's state (readiness, the connection
//! pools, the write lanes).

use crate::index_sizes::{IndexSizes, UNEMBEDDED_FIX, VectorSizes};
use crate::scope_inference::InferredScope;
use crate::{MemoryService, Result};
use cortex_store::Store;
use serde::Serialize;

/// Counts, checks and state as one caller is served (see the module doc); made by
/// [`MemoryService::administration`].
pub struct Administration<'a> {
    pub(crate) service: &'a MemoryService,
}

#[derive(Debug, Serialize)]
pub struct StatsReport {
    pub database: String,
    pub schema_version: i64,
    pub items: i64,
    pub deleted: i64,
    pub by_kind: Vec<KindCount>,
    pub bytes: i64,
    /// What the prompt-submit hook did, per project, as counted on this machine (`cortex
    /// recall` keeps the counts in the user's cache folder, not in the database).
    pub recall: Vec<RecallCounts>,
    /// The search indexes' sizes and health ([`Administration::stats_in_full`] only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub indexes: Option<IndexSizes>,
}

/// The prompt-submit hook's counts for one project.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct RecallCounts {
    pub org: String,
    pub project: String,
    /// Prompts the hook saw.
    pub prompts: u64,
    /// Prompts it injected memories into.
    pub injections: u64,
    /// Memories injected, and their tokens (characters / 3).
    pub memories: u64,
    pub tokens: u64,
    /// Sessions that reached their ceiling (`CORTEX_RECALL_SESSION_BUDGET_TOKENS`).
    pub sessions_at_ceiling: u64,
}

#[derive(Debug, Serialize)]
pub struct KindCount {
    pub kind: String,
    pub items: i64,
}

#[derive(Debug, Serialize)]
pub struct DoctorReport {
    pub database: String,
    pub schema_version: i64,
    pub items: i64,
    pub scope: InferredScope,
    pub lexical_search: String,
    pub semantic_search: String,
    pub backends: &'static str,
    /// The database file's (or server's) own consistency check.
    pub integrity: IntegrityReport,
    /// The audit trail's triggers and hash chain (see `cortex audit --verify`).
    pub audit: crate::audit::AuditVerification,
    /// Every setting's value in force and where it came from (filled by the command line,
    /// which knows its flags).
    pub settings: Vec<crate::settings::SettingInForce>,
}

#[derive(Debug, Serialize)]
pub struct IntegrityReport {
    pub ok: bool,
    /// quick (pages and structure) | full (also every index against its table)
    pub check: &'static str,
    pub problems: Vec<String>,
}

impl DoctorReport {
    /// Neither the database nor its audit trail has a problem.
    pub fn healthy(&self) -> bool {
        self.integrity.ok && self.audit.ok
    }
}

impl Administration<'_> {
    /// Whether `auto`/`deep` can run dense search, and if not, how to enable it.
    fn semantic_status(&self, store: &dyn Store) -> Result<String> {
        if let Some(conflict) = self.service.shared.semantic.conflict()? {
            return Ok(format!("refused: {conflict}"));
        }
        Ok(match self.service.shared.semantic.embedder() {
            Ok(embedder) => {
                let (count, bytes) = self.service.shared.semantic.indexed()?;
                let dimension = match embedder.dimension() {
                    Ok(d) => format!("{d}-d"),
                    Err(e) => format!("dimension unknown: {e}"),
                };
                format!(
                    "enabled: {} ({dimension}), {count} vectors indexed ({:.1} MiB){}",
                    embedder.model_id().unwrap_or_else(|| "?".into()),
                    bytes as f64 / 1_048_576.0,
                    self.embedded_share(store)?
                )
            }
            Err(reason) => {
                format!(
                    "disabled, modes auto and deep run lexical only: {reason}{}",
                    self.embedded_share(store)?
                )
            }
        })
    }

    /// How many live items have their vectors, and a warning when some do not.
    fn embedded_share(&self, store: &dyn Store) -> Result<String> {
        let items = store.stats()?.items.max(0);
        let missing = store.count_unembedded()?.clamp(0, items);
        Ok(if missing == 0 {
            format!("; {items} of {items} items embedded")
        } else {
            format!(
                "; {} of {items} items embedded — warning: {missing} items have no vectors (stored while no embedder was available), so dense search cannot find them: {UNEMBEDDED_FIX}",
                items - missing
            )
        })
    }

    /// What the store calls are doing with their lanes now.
    pub fn write_load(&self) -> crate::lanes::LaneLoad {
        self.service.shared.write_lanes.load()
    }

    /// The database connection pools as they are now (PostgreSQL), for the server's metrics:
    /// the process's own, the same whoever asks, and naming no tenant's data.
    pub fn pool_state(&self) -> Vec<cortex_store::PoolState> {
        self.service.shared.store.pool_state()
    }

    /// Whether the database answers, at which schema version: one cheap query, for `/ready`.
    pub fn ready(&self) -> Result<cortex_store::Readiness> {
        Ok(self.service.whole_store("probing the database")?.ready()?)
    }

    /// What the whole store holds, per kind.
    pub fn stats(&self) -> Result<StatsReport> {
        let s = self.service.whole_store("counting the whole store")?.stats()?;
        Ok(StatsReport {
            database: self.service.shared.db_label.clone(),
            schema_version: s.schema_version,
            items: s.items,
            deleted: s.deleted,
            by_kind: s.by_kind.into_iter().map(|(kind, items)| KindCount { kind, items }).collect(),
            bytes: s.bytes,
            recall: self.recall_counts()?,
            indexes: None,
        })
    }

    /// [`stats`](Self::stats) with the search indexes' sizes and health, read cheaply (see
    /// `crate::index_sizes`): for `cortex stats` and the local user's status page.
    pub fn stats_in_full(&self) -> Result<StatsReport> {
        let mut report = self.stats()?;
        let store = self.service.whole_store("counting the whole store")?;
        let semantic = &self.service.shared.semantic;
        // A database that searches its own vectors says what it holds; else the in-process
        // index is what finds search (loaded here only where it is the one that searches).
        let (vectors, bytes, in_database) = match store.searched_vectors()? {
            Some((vectors, bytes)) => (vectors.max(0) as u64, bytes.max(0) as u64, true),
            None => {
                let (vectors, bytes) = semantic.indexed()?;
                (vectors as u64, bytes as u64, false)
            }
        };
        let (model, precision, loaded) = semantic.model_and_precision();
        let vectors = VectorSizes {
            model,
            precision,
            loaded,
            vectors,
            bytes,
            in_database,
            items: report.items,
            unembedded: store.count_unembedded()?.clamp(0, report.items.max(0)),
        };
        report.indexes = Some(IndexSizes { lexical: self.service.shared.lexical.sizes(), vectors });
        Ok(report)
    }

    /// The prompt-submit hook's counts per project for this store, as kept on this machine.
    pub fn recall_counts(&self) -> Result<Vec<RecallCounts>> {
        let store = self.service.whole_store("reading the recall counts")?;
        let Some(state) = &self.service.shared.recall.state else { return Ok(Vec::new()) };
        Ok(crate::briefing::Tally::at(state, &cortex_store::identity(store)?).all())
    }

    /// The setup, the database's integrity and the audit trail's; `options.full` runs the
    /// thorough checks (every index, the whole chain, every item against its trail).
    pub fn doctor(&self, options: &crate::audit::VerifyOptions) -> Result<DoctorReport> {
        let store = self.service.whole_store("checking the database")?;
        let mut problems = store.integrity_problems(options.full)?;
        // On a damaged file any later read may fail, depending on where the damage lies: what
        // cannot be read joins the problems instead of ending the report that names the damage.
        let damaged = !problems.is_empty();
        let s = match store.stats() {
            Err(e) if damaged => {
                problems.push(format!("counting items failed: {e}"));
                cortex_store::Stats::default()
            }
            other => other?,
        };
        let audit = match self.service.audit().verify(options) {
            Err(e) if damaged => crate::audit::AuditVerification::unreadable(e.to_string()),
            other => other?,
        };
        let semantic_search = match self.semantic_status(store) {
            Err(e) if damaged => format!("unknown: {e}"),
            other => other?,
        };
        let integrity =
            IntegrityReport { ok: !damaged, check: if options.full { "full" } else { "quick" }, problems };
        Ok(DoctorReport {
            database: self.service.shared.db_label.clone(),
            schema_version: s.schema_version,
            items: s.items,
            scope: self.service.inferred.clone(),
            lexical_search: self.service.shared.lexical.status(),
            semantic_search,
            backends: "sqlite (embedded, the default); postgresql ≥ 18 with pgvector and pg_trgm (--db postgres://…)",
            integrity,
            audit,
            settings: Vec::new(),
        })
    }
}
