//! The MCP server: translates `tools/list`, `tools/call` and `resources/read` to service
//! calls. Over stdio it serves the local user; over HTTP, each request as its key's holder
//! (the gate's [`Principal`]): through the service as that caller sees it, with the key's
//! role checked per tool, a time limit per call, and the metrics `/metrics` shows.

use crate::metrics::{CallMetrics, CallOutcome};
use crate::principal::{self, AccessNote, Principal, Source};
use crate::resources;
use crate::schema::tools;
use cortex_domain::args::Word;
use cortex_domain::find::{FindRequest, Mode};
use cortex_domain::item::StoreRequest;
use cortex_domain::{ErrorCode, Tool, ValidationError};
use cortex_service::response::{ErrorBody, FindResponse, ItemStatus, StoreResponse};
use cortex_service::{MemoryService, ServiceError};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, Implementation, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, PromptMessage, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ResourceContents, Role, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde::Serialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

const INSTRUCTIONS: &str = include_str!("instructions.md");

#[derive(Clone)]
pub struct CortexServer {
    service: Arc<MemoryService>,
    tools: Arc<Vec<rmcp::model::Tool>>,
    /// The HTTP server's: the metrics of `/metrics` and the time a call may take.
    http: Option<(Arc<dyn CallMetrics>, Duration)>,
    /// Finds running at once over HTTP (see [`FINDS_PER_CORE`]); `None` on stdio.
    finds: Option<Arc<Semaphore>>,
}

/// Finds that run at once over HTTP, per core; the others wait their turn, first come first
/// served. A find is CPU work (or, on PostgreSQL, a few round trips): a hundred of them on a
/// hundred blocking threads only shared two cores among them, each answer as late as the
/// last, and the switching between them (and their threads' allocator caches) cost CPU of its
/// own. A few per core keep the cores busy while one waits for PostgreSQL. No caller starves:
/// a key holds at most its calls-at-once cap of places in the queue, which is served in order.
const FINDS_PER_CORE: usize = 4;

/// The service a request is served by, who asks (`None`: the local user on stdio), and the
/// access log's note on the request.
struct Served<'a> {
    service: Arc<MemoryService>,
    principal: Option<&'a Principal>,
    note: Option<&'a AccessNote>,
}

impl CortexServer {
    pub fn new(service: Arc<MemoryService>) -> CortexServer {
        CortexServer { service, tools: Arc::new(tools()), http: None, finds: None }
    }

    /// The handler the team application serves over HTTP: each request as the principal its
    /// gate put on it, within `timeout`, its calls counted in `metrics`.
    pub fn for_http(
        service: Arc<MemoryService>,
        metrics: Arc<dyn CallMetrics>,
        timeout: Duration,
    ) -> CortexServer {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        CortexServer {
            http: Some((metrics, timeout)),
            finds: Some(Arc::new(Semaphore::new(FINDS_PER_CORE * cores))),
            ..CortexServer::new(service)
        }
    }

    fn served<'a>(&self, context: &'a RequestContext<RoleServer>) -> Result<Served<'a>, McpError> {
        match principal::of(context) {
            Source::Stdio => Ok(Served { service: self.service.clone(), principal: None, note: None }),
            Source::Http { principal: Some(p), note } => {
                Ok(Served { service: Arc::new(self.service.for_caller(&p.caller)), principal: Some(p), note })
            }
            // The gate puts a principal on every request it lets through; none means a route
            // around it, which is refused rather than served as the local user.
            Source::Http { principal: None, .. } => Err(McpError::internal_error(
                "the request reached MCP without passing the server's gate",
                None,
            )),
        }
    }

    /// Runs one tool call on a blocking thread (the store does synchronous I/O), once one of
    /// `places` is free when given, within the HTTP server's time limit (the wait for a place
    /// included), and shapes the result: structured content plus its JSON text mirror,
    /// `isError` for refusals.
    async fn run<T, F>(
        &self,
        service: Arc<MemoryService>,
        places: Option<&Arc<Semaphore>>,
        work: F,
    ) -> Result<(CallToolResult, CallOutcome, Option<Tally>), McpError>
    where
        T: Answer + Send + 'static,
        F: FnOnce(&MemoryService) -> Result<T, ServiceError> + Send + 'static,
    {
        let places = places.cloned();
        let task = async move {
            // The place goes with the work: a call abandoned at the time limit keeps it until
            // its thread is done.
            let place = match places {
                Some(places) => Some(places.acquire_owned().await?),
                None => None,
            };
            let done = tokio::task::spawn_blocking(move || {
                let _place = place;
                work(&service)
            })
            .await?;
            Ok::<_, TaskError>(done)
        };
        let joined = match &self.http {
            Some((_, limit)) => match tokio::time::timeout(*limit, task).await {
                Ok(joined) => joined,
                // The blocking work cannot be stopped; it finishes unseen (a store it was
                // making is written, or not, as a whole).
                Err(_) => return Ok((timed_out(*limit), CallOutcome::Timeout, None)),
            },
            None => task.await,
        };
        let outcome = joined.map_err(|e| McpError::internal_error(format!("tool task failed: {e}"), None))?;
        Ok(match outcome {
            Ok(answer) => {
                let tally = answer.tally();
                let value = serde_json::to_value(answer)
                    .map_err(|e| McpError::internal_error(format!("cannot encode result: {e}"), None))?;
                (CallToolResult::structured(value), CallOutcome::Ok, Some(tally))
            }
            Err(ServiceError::Invalid(e)) => (refusal_of(&e), CallOutcome::Refused, None),
            Err(
                e @ (ServiceError::Internal(_)
                | ServiceError::Lexical(_)
                | ServiceError::NoLexicalIndex
                | ServiceError::Git(_)),
            ) => {
                tracing::error!(error = %e, "tool call failed");
                let hint = "this is a server-side failure, not your input; retry, and if it persists run `cortex doctor`";
                (refusal(ErrorCode::Internal, e.to_string(), hint), CallOutcome::Error, None)
            }
            Err(ServiceError::Embedder(message)) => {
                let hint = "the server's embedder is misconfigured, not your input: tell the user to run `cortex doctor`";
                (refusal(ErrorCode::EmbedderUnavailable, message.to_string(), hint), CallOutcome::Error, None)
            }
            Err(e @ ServiceError::AdminOnly(_)) => {
                let hint = "this spans every tenant: ask the server's operator, who runs it with `cortex` on the server";
                (refusal(ErrorCode::ForbiddenRole, e.to_string(), hint), CallOutcome::Refused, None)
            }
        })
    }

    /// Counts a finished call for `/metrics` and notes it for the access log (over HTTP), or
    /// logs it (on stdio, where there is no access log): tool, mode, outcome, duration and
    /// items, never the call's arguments (an idempotency key, an actor, the content).
    fn record(&self, call: Call<'_>, note: Option<&AccessNote>, tally: Option<&Tally>) {
        let Call { request_id, tool, mode, outcome, took } = call;
        let items = tally.map(|t| t.items);
        match note {
            Some(note) => note.update(|n| {
                n.tool = Some(tool.name().to_string());
                n.mode = Some(mode);
                n.outcome = Some(outcome);
                n.items = items;
                n.call_ms = Some(took.as_millis());
            }),
            None => tracing::info!(
                target: "cortex::call",
                request_id,
                key = "local",
                tool = tool.name(),
                mode,
                outcome = outcome.as_str(),
                duration_ms = took.as_millis() as u64,
                items,
                "call"
            ),
        }
        let Some((metrics, _)) = &self.http else { return };
        metrics.tool_call(tool.name(), mode, outcome, took);
        for (status, n) in tally.map(|t| t.statuses.as_slice()).unwrap_or_default() {
            metrics.store_items(status.as_str(), *n);
        }
    }
}

/// Why a tool call's work did not run to its end (answered as an internal JSON-RPC error).
#[derive(Debug, thiserror::Error)]
enum TaskError {
    /// The queue of finds was closed: the server is stopping.
    #[error(transparent)]
    Queue(#[from] tokio::sync::AcquireError),
    /// The blocking thread panicked or was cancelled.
    #[error(transparent)]
    Thread(#[from] tokio::task::JoinError),
}

/// What a call's answer held, read from the typed answer before it becomes JSON: how many
/// items it handled (a store's results, a find's hits) and, for a store, how many came to
/// each status.
struct Tally {
    items: u64,
    statuses: Vec<(ItemStatus, u64)>,
}

/// A tool's typed answer.
trait Answer: Serialize {
    fn tally(&self) -> Tally;
}

impl Answer for StoreResponse {
    fn tally(&self) -> Tally {
        let statuses = ItemStatus::ALL.iter().map(|s| (*s, self.summary.count(*s).max(0) as u64)).collect();
        Tally { items: self.results.len() as u64, statuses }
    }
}

impl Answer for FindResponse {
    fn tally(&self) -> Tally {
        Tally { items: self.hits.len() as u64, statuses: Vec::new() }
    }
}

/// The caller's request refused: `{"error": {...}}` naming the field and how to fix it.
fn refusal_of(error: &ValidationError) -> CallToolResult {
    CallToolResult::structured_error(json!({ "error": ErrorBody::from(error) }))
}

/// A tool error that is not a refusal of one field: `field` is empty, the code says why.
fn refusal(code: ErrorCode, message: String, hint: impl Into<String>) -> CallToolResult {
    let body = ErrorBody::from(&cortex_domain::ValidationError::new(code, "", message, hint));
    CallToolResult::structured_error(json!({ "error": body }))
}

/// A call that outlived the HTTP server's limit.
fn timed_out(limit: Duration) -> CallToolResult {
    refusal(
        ErrorCode::Timeout,
        format!(
            "the call took longer than this server's limit of {} ms and was abandoned",
            limit.as_millis()
        ),
        "a memory_store may still have been written: find before storing again; narrow a slow find (mode fast, fewer kinds)",
    )
}

/// A tool the caller's key may not use: what was refused and which role it needs.
fn forbidden(principal: &Principal, tool: Tool) -> CallToolResult {
    let needed = tool.role();
    refusal(
        ErrorCode::ForbiddenRole,
        format!(
            "{tool} needs an API key with role {} or above; the key `{}` has role {}",
            needed.as_str(),
            principal.key,
            principal.role.as_str()
        ),
        format!(
            "this key may only read: use memory_find, or ask the server's admin for a key with role {0} (signed in with OAuth: sign in again asking for the scope memory:{0})",
            needed.as_str()
        ),
    )
}

/// A call refused by role. A store is recorded in the audit trail as blocked attempts (what
/// was tried, by which key or token holder, why); a failure to record is logged, never the
/// caller's answer. A tool that only reads changes nothing, so there is nothing to record.
async fn audit_refused(service: Arc<MemoryService>, tool: Tool, args: Value, refusal: &CallToolResult) {
    match tool {
        Tool::Store => {}
        Tool::Find => return,
    }
    let reason = refusal
        .structured_content
        .as_ref()
        .and_then(|c| c["error"]["message"].as_str())
        .unwrap_or("memory_store needs role write")
        .to_string();
    // Arguments that are not even a batch name nothing to record the attempt on.
    let recorded = tokio::task::spawn_blocking(move || match StoreRequest::from_json(&args) {
        Ok(request) => service.memory_store().audit_refused_store(&request, &reason),
        Err(_) => Ok(0),
    })
    .await;
    match recorded {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::warn!("a store refused by role was not recorded in the audit trail: {e}"),
        Err(e) => tracing::warn!("a store refused by role was not recorded in the audit trail: {e}"),
    }
}

/// A finished tool call, as it is counted and logged.
struct Call<'a> {
    /// The JSON-RPC request's id.
    request_id: &'a str,
    tool: Tool,
    mode: &'static str,
    outcome: CallOutcome,
    took: Duration,
}

/// The find mode a call asked for (the label of its metrics); `store` for memory_store. A find
/// refused for another argument is still labelled with the mode it named.
fn mode_label(tool: Tool, find: Option<&Result<FindRequest, ValidationError>>, args: &Value) -> &'static str {
    match (tool, find) {
        (Tool::Store, _) => "store",
        (Tool::Find, Some(Ok(request))) => request.mode.as_str(),
        (Tool::Find, _) => match args.get("mode") {
            None | Some(Value::Null) => Mode::default().as_str(),
            Some(Value::String(word)) => Mode::parse_word(word).map_or("invalid", Mode::as_str),
            Some(_) => "invalid",
        },
    }
}

impl CortexServer {
    /// The session briefing at its default budget, read on a blocking thread.
    async fn briefing(&self, service: Arc<MemoryService>) -> Result<String, McpError> {
        tokio::task::spawn_blocking(move || {
            service.briefing().context(None, cortex_domain::briefing::DEFAULT_BUDGET_TOKENS)
        })
        .await
        .map_err(|e| McpError::internal_error(format!("briefing task failed: {e}"), None))?
        .map_err(|e| McpError::internal_error(e.to_string(), None))
    }
}

impl ServerHandler for CortexServer {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(
            ServerCapabilities::builder().enable_tools().enable_resources().enable_prompts().build(),
        )
        .with_server_info(Implementation::new("cortex-memory", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items((*self.tools).clone()))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let started = Instant::now();
        let Served { service, principal, note } = self.served(&context)?;
        let args = Value::Object(request.arguments.unwrap_or_default());
        // An unknown name is refused before any role question: it has no role to default to.
        let Some(tool) = Tool::parse(request.name.as_ref()) else {
            return Err(McpError::invalid_params(
                format!("unknown tool `{}`: this server has {}", request.name, Tool::names()),
                None,
            ));
        };
        // A find's arguments are parsed here, once (they are small); a store's on its blocking
        // thread (a batch may carry megabytes of text to check and hash).
        let find = match tool {
            Tool::Find => Some(FindRequest::from_json(&args)),
            Tool::Store => None,
        };
        let mode = mode_label(tool, find.as_ref(), &args);
        let (result, outcome, tally) = match principal {
            Some(p) if !p.role.covers(tool.role()) => {
                let refusal = forbidden(p, tool);
                audit_refused(service.clone(), tool, args, &refusal).await;
                (refusal, CallOutcome::Forbidden, None)
            }
            _ => match find {
                None => {
                    let store =
                        move |s: &MemoryService| s.memory_store().store(&StoreRequest::from_json(&args)?);
                    self.run(service, None, store).await?
                }
                Some(Err(refused)) => (refusal_of(&refused), CallOutcome::Refused, None),
                Some(Ok(request)) => {
                    self.run(service, self.finds.as_ref(), move |s| s.memory_find().find(&request)).await?
                }
            },
        };
        let request_id = context.id.to_string();
        let call = Call { request_id: &request_id, tool, mode, outcome, took: started.elapsed() };
        self.record(call, note, tally.as_ref());
        Ok(result.into())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(resources::templates()))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(resources::listed()))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(resources::prompts()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        if request.name != resources::CONTEXT_PROMPT {
            return Err(McpError::invalid_params(
                format!("unknown prompt `{}`: this server has `{}`", request.name, resources::CONTEXT_PROMPT),
                None,
            ));
        }
        let service = self.served(&context)?.service;
        let briefing = self.briefing(service).await?;
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, briefing)])
            .with_description("Session briefing from Cortex Memory")
            .into())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let service = self.served(&context)?.service;
        if request.uri == resources::CONTEXT_URI {
            let contents = ResourceContents::TextResourceContents {
                uri: request.uri,
                mime_type: Some("text/markdown".into()),
                text: self.briefing(service).await?,
                meta: None,
            };
            return Ok(ReadResourceResult::new(vec![contents]).into());
        }
        let id = resources::history_item(&request.uri)
            .map_err(|e| McpError::resource_not_found(e.to_string(), None))?;
        let records = tokio::task::spawn_blocking(move || {
            service.audit().records(Some(id), None, cortex_service::audit::MAX_AUDIT_RECORDS)
        })
        .await
        .map_err(|e| McpError::internal_error(format!("history task failed: {e}"), None))?
        .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        if records.is_empty() {
            return Err(McpError::resource_not_found(
                format!("no history for item {id}: no item with this id was ever stored"),
                None,
            ));
        }
        let text = serde_json::to_string_pretty(&json!({ "item_id": id, "records": records }))
            .map_err(|e| McpError::internal_error(format!("cannot encode history: {e}"), None))?;
        let contents = ResourceContents::TextResourceContents {
            uri: request.uri,
            mime_type: Some("application/json".into()),
            text,
            meta: None,
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}
