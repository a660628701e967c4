//! What one line is: a message for rmcp, nothing to answer, or an error answered right here.

use super::leading_id;
use cortex_domain::ErrorCode;
use rmcp::model::ClientJsonRpcMessage;
use serde_json::{Value, json};

pub const PARSE_ERROR: i32 = -32700;
pub const INVALID_REQUEST: i32 = -32600;
pub const INVALID_PARAMS: i32 = -32602;

/// Why the transport answered a line itself: each reason ties its JSON-RPC error code to the
/// code in the error's `data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineError {
    /// Not JSON text (or not UTF-8).
    Parse,
    /// JSON, but not a JSON-RPC request.
    InvalidRequest,
    /// A known method whose params do not fit it.
    InvalidParams,
    /// Longer than the message limit.
    TooLarge,
}

impl LineError {
    /// The JSON-RPC error code (JSON-RPC 2.0 §5.1).
    pub fn code(self) -> i32 {
        match self {
            LineError::Parse => PARSE_ERROR,
            LineError::InvalidRequest | LineError::TooLarge => INVALID_REQUEST,
            LineError::InvalidParams => INVALID_PARAMS,
        }
    }

    /// The code in the error's `data`, as a client matches on it.
    pub fn name(self) -> &'static str {
        match self {
            LineError::Parse => "parse_error",
            LineError::InvalidRequest => "invalid_request",
            LineError::InvalidParams => "invalid_params",
            LineError::TooLarge => ErrorCode::TooLarge.as_str(),
        }
    }
}

/// What a line turned out to be.
#[derive(Debug)]
pub enum Inbound {
    Message(Box<ClientJsonRpcMessage>),
    /// Nothing to answer: a blank line, or a malformed notification or response (JSON-RPC
    /// never answers those). The reason is logged.
    Skip(String),
    Reject(Rejection),
}

/// An error answered by the transport itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// The request's id when it could be read; `null` otherwise.
    pub id: Value,
    pub code: i32,
    /// Why: `code` is its JSON-RPC code, and its name goes in the error's `data`.
    pub kind: LineError,
    pub message: String,
    pub human_hint: &'static str,
    /// The limit a `too_large` line broke.
    pub limit_bytes: Option<usize>,
}

impl Rejection {
    fn new(id: Value, kind: LineError, message: String, human_hint: &'static str) -> Rejection {
        Rejection { id, code: kind.code(), kind, message, human_hint, limit_bytes: None }
    }

    /// The answer for a line over the message limit.
    pub fn too_large(head: &[u8], bytes: usize, limit: usize) -> Rejection {
        Rejection {
            limit_bytes: Some(limit),
            ..Rejection::new(
                leading_id(head).unwrap_or(Value::Null),
                LineError::TooLarge,
                format!("message of {bytes} bytes exceeds the limit of {limit} bytes per message"),
                "split the work into smaller calls (for example fewer items per memory_store)",
            )
        }
    }

    /// The JSON-RPC error response, one line with its newline.
    pub fn to_line(&self) -> Vec<u8> {
        let mut data = json!({ "code": self.kind.name(), "field": "", "human_hint": self.human_hint });
        if let Some(limit) = self.limit_bytes {
            data["limit_bytes"] = json!(limit);
        }
        let answer = json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": { "code": self.code, "message": self.message, "data": data },
        });
        let mut line = answer.to_string().into_bytes();
        line.push(b'\n');
        line
    }
}

const LINE_HINT: &str = "send exactly one complete JSON-RPC 2.0 object per line, encoded as UTF-8";

/// Reads one line (without its newline) as a client message.
pub fn classify(line: &[u8]) -> Inbound {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Inbound::Skip("blank line".into());
    }
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => {
            let at = e.valid_up_to();
            return reject(Value::Null, LineError::Parse, format!("invalid UTF-8 at byte {at}"), LINE_HINT);
        }
    };
    // serde_json refuses lone surrogates, trailing text (two messages on one line) and nesting
    // deeper than 128 levels, each with its line and column.
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => {
            return reject(Value::Null, LineError::Parse, format!("parse error: {e}"), LINE_HINT);
        }
    };
    let object = match &value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return reject(
                Value::Null,
                LineError::InvalidRequest,
                "batches are not supported: MCP sends one message per line".into(),
                "send each request as its own line",
            );
        }
        _ => {
            return reject(
                Value::Null,
                LineError::InvalidRequest,
                "a JSON-RPC message must be an object".into(),
                LINE_HINT,
            );
        }
    };
    let id = match object.get("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id.clone()),
        Some(_) => {
            return reject(
                Value::Null,
                LineError::InvalidRequest,
                "`id` must be a string or a number".into(),
                "give each request a string or integer id",
            );
        }
    };
    let answer_id = id.clone().unwrap_or(Value::Null);
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        if id.is_none() {
            return Inbound::Skip("notification without `jsonrpc: \"2.0\"`".into());
        }
        return reject(
            answer_id,
            LineError::InvalidRequest,
            "`jsonrpc` must be \"2.0\"".into(),
            "add \"jsonrpc\": \"2.0\" to every message",
        );
    }
    let method = object.get("method").and_then(Value::as_str).map(str::to_owned);
    let is_response =
        !object.contains_key("method") && (object.contains_key("result") || object.contains_key("error"));
    // rmcp reads a request whose params do not fit its method as a custom request and answers
    // "method not found": the methods clients call with arguments are checked here first.
    if let (Some(method), Some(_)) = (&method, &id)
        && let Some(problem) = params_problem(method, object.get("params"))
    {
        return reject(
            answer_id,
            LineError::InvalidParams,
            format!("invalid params for `{method}`: {problem}"),
            "check the params against the method's schema",
        );
    }
    match serde_json::from_value::<ClientJsonRpcMessage>(value) {
        Ok(message) => Inbound::Message(Box::new(message)),
        Err(e) if id.is_none() => Inbound::Skip(format!("malformed notification or response: {e}")),
        Err(e) => match method {
            Some(method) => reject(
                answer_id,
                LineError::InvalidParams,
                format!("invalid params for `{method}`: {e}"),
                "check the params against the method's schema",
            ),
            None if is_response => Inbound::Skip(format!("malformed response: {e}")),
            None => reject(
                answer_id,
                LineError::InvalidRequest,
                format!("not a JSON-RPC request: {e}"),
                "a request needs a string `method`",
            ),
        },
    }
}

/// What is wrong with the params of a method that takes named arguments, if anything.
fn params_problem(method: &str, params: Option<&Value>) -> Option<String> {
    let needs_name = |key: &str| -> Option<String> {
        let Some(Value::Object(params)) = params else {
            return Some(format!("`params` must be an object with a string `{key}`"));
        };
        if !matches!(params.get(key), Some(Value::String(_))) {
            return Some(format!("`params.{key}` must be a string"));
        }
        None
    };
    match method {
        "tools/call" => needs_name("name").or_else(|| match params.and_then(|p| p.get("arguments")) {
            None | Some(Value::Null | Value::Object(_)) => None,
            Some(_) => Some("`params.arguments` must be an object".into()),
        }),
        "resources/read" => needs_name("uri"),
        "prompts/get" => needs_name("name"),
        _ => None,
    }
}

fn reject(id: Value, kind: LineError, message: String, hint: &'static str) -> Inbound {
    Inbound::Reject(Rejection::new(id, kind, message, hint))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejection(line: &[u8]) -> Rejection {
        match classify(line) {
            Inbound::Reject(r) => r,
            other => panic!("expected a rejection for {:?}, got {other:?}", String::from_utf8_lossy(line)),
        }
    }

    #[test]
    fn unparsable_lines_are_parse_errors_with_a_null_id() {
        let deep = "[".repeat(100_000);
        let cases: [&[u8]; 5] = [
            br#"{"jsonrpc":"2.0","id":1,"method":"#,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\xff\"}",
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"\ud800"}}"#,
            deep.as_bytes(),
            br#"{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
        ];
        for line in cases {
            let r = rejection(line);
            assert_eq!((r.code, r.kind, &r.id), (PARSE_ERROR, LineError::Parse, &Value::Null), "{r:?}");
        }
    }

    #[test]
    fn invalid_requests_keep_their_id_when_it_is_readable() {
        let r = rejection(br#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#);
        assert_eq!((r.code, r.id), (INVALID_REQUEST, json!(7)));
        let r = rejection(br#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#);
        assert_eq!((r.code, r.id), (INVALID_REQUEST, Value::Null));
        let r = rejection(b"[]");
        assert_eq!(r.code, INVALID_REQUEST);
        let r = rejection(b"42");
        assert_eq!(r.code, INVALID_REQUEST);
        let r = rejection(br#"{"jsonrpc":"2.0","id":"a"}"#);
        assert_eq!((r.code, r.id), (INVALID_REQUEST, json!("a")));
    }

    #[test]
    fn well_formed_messages_pass_and_blank_lines_are_skipped() {
        assert!(matches!(classify(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), Inbound::Message(_)));
        assert!(matches!(
            classify(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r"),
            Inbound::Message(_)
        ));
        assert!(matches!(classify(b"   "), Inbound::Skip(_)));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","method":"notifications/x","params":5}"#),
            Inbound::Skip(_)
        ));
    }

    #[test]
    fn a_tool_call_without_a_name_or_with_non_object_arguments_is_invalid_params() {
        for line in [
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_find","arguments":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{}}"#,
        ] {
            let r = rejection(line.as_bytes());
            assert_eq!((r.id.clone(), r.code), (serde_json::json!(2), INVALID_PARAMS), "{line}");
        }
        let fine = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_find","arguments":{"query":"x"}}}"#;
        assert!(matches!(classify(fine.as_bytes()), Inbound::Message(_)));
    }
}
