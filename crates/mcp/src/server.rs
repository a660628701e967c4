//! The MCP server: translates `tools/list`, `tools/call` and `resources/read` to service
//! calls. No policy here.

use crate::resources;
use crate::schema::{FIND_TOOL, STORE_TOOL, tools};
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

const INSTRUCTIONS: &str = include_str!("instructions.md");

#[derive(Clone)]
pub struct CortexServer {
    service: Arc<MemoryService>,
    tools: Arc<Vec<Tool>>,
}

impl CortexServer {
    pub fn new(service: Arc<MemoryService>) -> CortexServer {
        CortexServer { service, tools: Arc::new(tools()) }
    }

    /// Runs one tool call on a blocking thread (the store does synchronous I/O) and shapes
    /// the result: structured content plus its JSON text mirror, `isError` for refusals.
    async fn run<T, F>(&self, work: F) -> Result<CallToolResult, McpError>
    where
        T: Serialize + Send + 'static,
        F: FnOnce(&MemoryService) -> Result<T, ServiceError> + Send + 'static,
    {
        let service = self.service.clone();
        let outcome = tokio::task::spawn_blocking(move || work(&service))
            .await
            .map_err(|e| McpError::internal_error(format!("tool task failed: {e}"), None))?;
        match outcome {
            Ok(value) => {
                let value = serde_json::to_value(value)
                    .map_err(|e| McpError::internal_error(format!("cannot encode result: {e}"), None))?;
                Ok(CallToolResult::structured(value))
            }
            Err(ServiceError::Invalid(e)) => {
                Ok(CallToolResult::structured_error(json!({ "error": ErrorBody::from(&e) })))
            }
            Err(ServiceError::Internal(e)) => {
                tracing::error!(error = %e, "tool call failed");
                Ok(CallToolResult::structured_error(json!({ "error": {
                    "code": cortex_domain::ErrorCode::Internal.as_str(),
                    "field": "",
                    "message": e.to_string(),
                    "human_hint": "this is a server-side failure, not your input; retry, and if it persists run `cortex doctor`",
                }})))
            }
            Err(ServiceError::Embedder(message)) => Ok(CallToolResult::structured_error(json!({ "error": {
                "code": "embedder_unavailable",
                "field": "",
                "message": message,
                "human_hint": "the server's embedder is misconfigured, not your input: tell the user to run `cortex doctor`",
            }}))),
        }
    }
}

impl CortexServer {
    /// The session briefing at its default budget, read on a blocking thread.
    async fn briefing(&self) -> Result<String, McpError> {
        let service = self.service.clone();
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
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let result = match request.name.as_ref() {
            STORE_TOOL => self.run(move |s| s.store(&args)).await?,
            FIND_TOOL => self.run(move |s| s.find(&args)).await?,
            other => {
                return Err(McpError::invalid_params(
                    format!("unknown tool `{other}`: this server has {STORE_TOOL} and {FIND_TOOL}"),
                    None,
                ));
            }
        };
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
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        if request.name != resources::CONTEXT_PROMPT {
            return Err(McpError::invalid_params(
                format!("unknown prompt `{}`: this server has `{}`", request.name, resources::CONTEXT_PROMPT),
                None,
            ));
        }
        let briefing = self.briefing().await?;
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, briefing)])
            .with_description("Session briefing from Cortex Memory")
            .into())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if request.uri == resources::CONTEXT_URI {
            let contents = ResourceContents::TextResourceContents {
                uri: request.uri,
                mime_type: Some("text/markdown".into()),
                text: self.briefing().await?,
                meta: None,
            };
            return Ok(ReadResourceResult::new(vec![contents]).into());
        }
        let id = resources::history_item(&request.uri).map_err(|m| McpError::resource_not_found(m, None))?;
        let service = self.service.clone();
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
