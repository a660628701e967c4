//! The memory service's integration tests, one binary (one link): the store and find flows, governance,
//! the graph, chunking, the semantic route, API keys, tenant isolation, ingest, the audit's tamper checks,
//! each on both backends (`per_backend!`), with the helpers they share in `common`.

mod admin_paths;
mod api_keys;
mod audit_operations;
mod audit_tamper;
mod authors;
mod chunking;
mod common;
mod concurrent_checks;
mod conflicts;
mod conflicts_replay;
mod export_markdown;
mod fairness;
mod flows;
mod fuzz;
mod governance;
mod graph;
mod hanging_embedder;
mod ingest_provenance;
mod ingest_questions;
mod ingest_real;
mod ingest_sources;
mod key_restore;
mod lexical_index;
mod provenance;
mod response_limits;
mod restore;
mod secrets;
mod secrets_paths;
mod semantic;
mod tenant_citations;
mod tenant_isolation;
mod vector_file;
