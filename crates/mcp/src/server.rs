//! The MCP server: translates `tools/list`, `tools/call` and `resources/read` to service
//! calls. Over stdio it serves the local user; over HTTP, each request as its key's holder
//! (the gate's [`Principal`]): through the service as that caller sees it, with the key's
//! role checked per tool, a time limit per call, and the figures `/metrics` shows.

use crate::figures::CallFigures;
use crate::principal::{self, AccessNote, Principal, Source};
use crate::resources;
use crate::schema::{FIND_TOOL, STORE_TOOL, tools};
use cortex_domain::api_key::role_for_tool;
use cortex_service::response::ErrorBody;
use cortex_service::{MemoryService, ServiceError};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, Implementation, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, PromptMessage, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ResourceContents, Role, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde::Serialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

const INSTRUCTIONS: &str = include_str!("instructions.md");

#[derive(Clone)]
pub struct CortexServer {
    service: Arc<MemoryService>,
    tools: Arc<Vec<Tool>>,
    /// The HTTP server's: the figures of `/metrics` and the time a call may take.
    http: Option<(Arc<dyn CallFigures>, Duration)>,
}

/// What a tool call came to, for the figures and the access log.
type Outcome = &'static str;

/// The service a request is served by, who asks (`None`: the local user on stdio), and the
/// access log's note on the request.
struct Served<'a> {
    service: Arc<MemoryService>,
    principal: Option<&'a Principal>,
    note: Option<&'a AccessNote>,
}

impl CortexServer {
    pub fn new(service: Arc<MemoryService>) -> CortexServer {
        CortexServer { service, tools: Arc::new(tools()), http: None }
    }

    /// The handler the team application serves over HTTP: each request as the principal its
    /// gate put on it, within `timeout`, its calls counted in `metrics`.
    pub fn for_http(
        service: Arc<MemoryService>,
        metrics: Arc<dyn CallFigures>,
        timeout: Duration,
    ) -> CortexServer {
        CortexServer { http: Some((metrics, timeout)), ..CortexServer::new(service) }
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

    /// Runs one tool call on a blocking thread (the store does synchronous I/O), within the
    /// HTTP server's time limit, and shapes the result: structured content plus its JSON text
    /// mirror, `isError` for refusals.
    async fn run<T, F>(
        &self,
        service: Arc<MemoryService>,
        work: F,
    ) -> Result<(CallToolResult, Outcome), McpError>
    where
        T: Serialize + Send + 'static,
        F: FnOnce(&MemoryService) -> Result<T, ServiceError> + Send + 'static,
    {
        let task = tokio::task::spawn_blocking(move || work(&service));
        let joined = match &self.http {
            Some((_, limit)) => match tokio::time::timeout(*limit, task).await {
                Ok(joined) => joined,
                // The blocking work cannot be stopped; it finishes unseen (a store it was
                // making is written, or not, as a whole).
                Err(_) => return Ok((timed_out(*limit), "timeout")),
            },
            None => task.await,
        };
        let outcome = joined.map_err(|e| McpError::internal_error(format!("tool task failed: {e}"), None))?;
        Ok(match outcome {
            Ok(value) => {
                let value = serde_json::to_value(value)
                    .map_err(|e| McpError::internal_error(format!("cannot encode result: {e}"), None))?;
                (CallToolResult::structured(value), "ok")
            }
            Err(ServiceError::Invalid(e)) => {
                (CallToolResult::structured_error(json!({ "error": ErrorBody::from(&e) })), "refused")
            }
            Err(e @ (ServiceError::Internal(_) | ServiceError::Lexical(_))) => {
                tracing::error!(error = %e, "tool call failed");
                (
                    CallToolResult::structured_error(json!({ "error": {
                        "code": cortex_domain::ErrorCode::Internal.as_str(),
                        "field": "",
                        "message": e.to_string(),
                        "human_hint": "this is a server-side failure, not your input; retry, and if it persists run `cortex doctor`",
                    }})),
                    "error",
                )
            }
            Err(ServiceError::Embedder(message)) => (
                CallToolResult::structured_error(json!({ "error": {
                    "code": "embedder_unavailable",
                    "field": "",
                    "message": message,
                    "human_hint": "the server's embedder is misconfigured, not your input: tell the user to run `cortex doctor`",
                }})),
                "error",
            ),
        })
    }

    /// Counts a finished call for `/metrics` and notes it for the access log (over HTTP), or
    /// logs it (on stdio, where there is no access log): tool, mode, outcome, duration and
    /// items, never the call's arguments (an idempotency key, an actor, the content).
    fn record(&self, call: Call<'_>, note: Option<&AccessNote>, result: &CallToolResult) {
        let Call { request_id, tool, mode, outcome, took } = call;
        let items = items_of(tool, result);
        match note {
            Some(note) => note.update(|n| {
                n.tool = Some(tool.to_string());
                n.mode = Some(mode);
                n.outcome = Some(outcome);
                n.items = items;
                n.call_ms = Some(took.as_millis());
            }),
            None => tracing::info!(
                target: "cortex::call",
                request_id,
                key = "local",
                tool,
                mode,
                outcome,
                duration_ms = took.as_millis() as u64,
                items,
                "call"
            ),
        }
        let Some((metrics, _)) = &self.http else { return };
        metrics.tool_call(tool, mode, outcome, took);
        if let Some(summary) = result.structured_content.as_ref().and_then(|v| v.get("summary"))
            && tool == STORE_TOOL
        {
            for status in [
                "inserted",
                "updated",
                "deleted",
                "skipped_dedupe",
                "business_rule_blocked",
                "validation_error",
            ] {
                metrics.store_items(status, summary.get(status).and_then(Value::as_u64).unwrap_or(0));
            }
        }
    }
}

/// A call that outlived the HTTP server's limit.
fn timed_out(limit: Duration) -> CallToolResult {
    CallToolResult::structured_error(json!({ "error": {
        "code": "timeout",
        "field": "",
        "message": format!("the call took longer than this server's limit of {} ms and was abandoned", limit.as_millis()),
        "human_hint": "a memory_store may still have been written: find before storing again; narrow a slow find (mode fast, fewer kinds)",
    }}))
}

/// A tool the caller's key may not use: what was refused and which role it needs.
fn forbidden(principal: &Principal, tool: &str) -> CallToolResult {
    let needed = role_for_tool(tool);
    CallToolResult::structured_error(json!({ "error": {
        "code": "forbidden_role",
        "field": "",
        "message": format!(
            "{tool} needs an API key with role {} or above; the key `{}` has role {}",
            needed.as_str(), principal.key, principal.role.as_str()
        ),
        "human_hint": format!("this key may only read: use memory_find, or ask the server's admin for a key with role {0} (signed in with OAuth: sign in again asking for the scope memory:{0})", needed.as_str()),
    }}))
}

/// A store refused by role, recorded in the audit trail as blocked attempts (what was tried,
/// by which key or token holder, why); a failure to record is logged, never the caller's answer.
async fn audit_refused_store(
    service: Arc<MemoryService>,
    args: Value,
    principal: &Principal,
    refusal: &CallToolResult,
) {
    let reason = refusal
        .structured_content
        .as_ref()
        .and_then(|c| c["error"]["message"].as_str())
        .unwrap_or("memory_store needs role write")
        .to_string();
    let actor = principal.caller.actor.clone().unwrap_or_else(|| format!("key:{}", principal.key));
    let recorded =
        tokio::task::spawn_blocking(move || service.audit_refused_store(&args, &actor, &reason)).await;
    match recorded {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::warn!("a store refused by role was not recorded in the audit trail: {e}"),
        Err(e) => tracing::warn!("a store refused by role was not recorded in the audit trail: {e}"),
    }
}

/// The find mode a call asked for (the label of its figures); `store` for memory_store.
/// A finished tool call, as it is counted and logged.
struct Call<'a> {
    /// The JSON-RPC request's id.
    request_id: &'a str,
    tool: &'a str,
    mode: &'static str,
    outcome: Outcome,
    took: Duration,
}

/// The items a call handled, for the log: a store's items (one result each, whatever became
/// of it), a find's hits; none for a refusal.
fn items_of(tool: &str, result: &CallToolResult) -> Option<u64> {
    let content = result.structured_content.as_ref()?;
    let list = if tool == STORE_TOOL { "results" } else { "hits" };
    Some(content.get(list)?.as_array()?.len() as u64)
}

fn mode_label(tool: &str, args: &Value) -> &'static str {
    if tool != FIND_TOOL {
        return "store";
    }
    match args.get("mode").and_then(Value::as_str) {
        Some("fast") => "fast",
        Some("deep") => "deep",
        None | Some("auto") => "auto",
        Some(_) => "invalid",
    }
}

impl CortexServer {
    /// The session briefing at its default budget, read on a blocking thread.
    async fn briefing(&self, service: Arc<MemoryService>) -> Result<String, McpError> {
        tokio::task::spawn_blocking(move || {
            service.context(None, cortex_domain::briefing::DEFAULT_BUDGET_TOKENS)
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

    fn get_tool(&self, name: &str) -> Option<Tool> {
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
        let tool = request.name.as_ref();
        if tool != STORE_TOOL && tool != FIND_TOOL {
            return Err(McpError::invalid_params(
                format!("unknown tool `{tool}`: this server has {STORE_TOOL} and {FIND_TOOL}"),
                None,
            ));
        }
        let mode = mode_label(tool, &args);
        let (result, outcome) = match principal {
            Some(p) if !p.role.covers(role_for_tool(tool)) => {
                let refusal = forbidden(p, tool);
                if tool == STORE_TOOL {
                    audit_refused_store(service.clone(), args, p, &refusal).await;
                }
                (refusal, "forbidden")
            }
            _ if tool == STORE_TOOL => self.run(service, move |s| s.store(&args)).await?,
            _ => self.run(service, move |s| s.find(&args)).await?,
        };
        let request_id = context.id.to_string();
        let call = Call { request_id: &request_id, tool, mode, outcome, took: started.elapsed() };
        self.record(call, note, &result);
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
        let id = resources::history_item(&request.uri).map_err(|m| McpError::resource_not_found(m, None))?;
        let records = tokio::task::spawn_blocking(move || {
            service.audit(Some(id), None, cortex_service::audit::MAX_AUDIT_RECORDS)
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
