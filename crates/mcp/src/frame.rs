//! Line framing of the stdio transport, and what each line is: a message for rmcp, or an error
//! answered right here. rmcp's own stdio codec drops lines over its limit and ignores lines it
//! cannot parse, so a client waits for an answer that never comes; here every line that could
//! be a request gets exactly one answer (JSON-RPC 2.0 §5.1: -32700 for unparsable text, -32600
//! for an invalid request, -32602 for a known method with malformed params).

use cortex_domain::limits::MAX_MESSAGE_BYTES;
use rmcp::model::ClientJsonRpcMessage;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// Bytes kept from the start of an oversized line, to read its `id` from.
const HEAD_BYTES: usize = 4096;

pub const PARSE_ERROR: i32 = -32700;
pub const INVALID_REQUEST: i32 = -32600;
pub const INVALID_PARAMS: i32 = -32602;

/// One line read from the client.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// A whole line, without its newline.
    Line(Vec<u8>),
    /// A line longer than the limit: its first bytes and its full length. The rest was read
    /// and discarded, so the next frame starts at the next line.
    TooLarge { head: Vec<u8>, bytes: usize },
}

/// Splits a byte stream into lines of at most `limit` bytes.
///
/// Cancel-safe: rmcp polls `receive` inside a `select!` and drops it whenever something else is
/// ready first, so the part of a line read so far lives here, not in the future; the only await
/// is `fill_buf`, which reads nothing when it is dropped.
pub struct LineFramer<R> {
    reader: R,
    limit: usize,
    /// The current line so far (only its head once it is over the limit).
    line: Vec<u8>,
    /// Bytes of the current line so far.
    bytes: usize,
    over: bool,
}

impl<R: AsyncBufRead + Unpin> LineFramer<R> {
    pub fn new(reader: R) -> LineFramer<R> {
        LineFramer::with_limit(reader, MAX_MESSAGE_BYTES)
    }

    pub fn with_limit(reader: R, limit: usize) -> LineFramer<R> {
        LineFramer { reader, limit, line: Vec::new(), bytes: 0, over: false }
    }

    /// The next line, or `None` at the end of the stream. A last line without a newline
    /// still counts.
    pub async fn next(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            let buf = self.reader.fill_buf().await?;
            if buf.is_empty() {
                if self.bytes == 0 {
                    return Ok(None);
                }
                return Ok(Some(self.take()));
            }
            let (chunk, used, done) = match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (&buf[..i], i + 1, true),
                None => (buf, buf.len(), false),
            };
            self.bytes += chunk.len();
            if !self.over && self.bytes > self.limit {
                self.over = true;
                self.line.truncate(HEAD_BYTES);
            }
            if self.over {
                let room = HEAD_BYTES.saturating_sub(self.line.len());
                self.line.extend_from_slice(&chunk[..room.min(chunk.len())]);
            } else {
                self.line.extend_from_slice(chunk);
            }
            self.reader.consume(used);
            if done {
                return Ok(Some(self.take()));
            }
        }
    }

    fn take(&mut self) -> Frame {
        let line = std::mem::take(&mut self.line);
        let bytes = std::mem::replace(&mut self.bytes, 0);
        if std::mem::replace(&mut self.over, false) {
            Frame::TooLarge { head: line, bytes }
        } else {
            Frame::Line(line)
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
    /// Our error code (`parse_error`, `invalid_request`, `invalid_params`, `too_large`).
    pub kind: &'static str,
    pub message: String,
    pub human_hint: &'static str,
    /// The limit a `too_large` line broke.
    pub limit_bytes: Option<usize>,
}

impl Rejection {
    fn new(id: Value, code: i32, kind: &'static str, message: String, human_hint: &'static str) -> Rejection {
        Rejection { id, code, kind, message, human_hint, limit_bytes: None }
    }

    /// The answer for a line over the message limit.
    pub fn too_large(head: &[u8], bytes: usize, limit: usize) -> Rejection {
        Rejection {
            limit_bytes: Some(limit),
            ..Rejection::new(
                leading_id(head).unwrap_or(Value::Null),
                INVALID_REQUEST,
                "too_large",
                format!("message of {bytes} bytes exceeds the limit of {limit} bytes per message"),
                "split the work into smaller calls (for example fewer items per memory_store)",
            )
        }
    }

    /// The JSON-RPC error response, one line with its newline.
    pub fn to_line(&self) -> Vec<u8> {
        let mut data = json!({ "code": self.kind, "field": "", "human_hint": self.human_hint });
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
            return reject(
                Value::Null,
                PARSE_ERROR,
                "parse_error",
                format!("invalid UTF-8 at byte {at}"),
                LINE_HINT,
            );
        }
    };
    // serde_json refuses lone surrogates, trailing text (two messages on one line) and nesting
    // deeper than 128 levels, each with its line and column.
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => {
            return reject(Value::Null, PARSE_ERROR, "parse_error", format!("parse error: {e}"), LINE_HINT);
        }
    };
    let object = match &value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return reject(
                Value::Null,
                INVALID_REQUEST,
                "invalid_request",
                "batches are not supported: MCP sends one message per line".into(),
                "send each request as its own line",
            );
        }
        _ => {
            return reject(
                Value::Null,
                INVALID_REQUEST,
                "invalid_request",
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
                INVALID_REQUEST,
                "invalid_request",
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
            INVALID_REQUEST,
            "invalid_request",
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
            INVALID_PARAMS,
            "invalid_params",
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
                INVALID_PARAMS,
                "invalid_params",
                format!("invalid params for `{method}`: {e}"),
                "check the params against the method's schema",
            ),
            None if is_response => Inbound::Skip(format!("malformed response: {e}")),
            None => reject(
                answer_id,
                INVALID_REQUEST,
                "invalid_request",
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

fn reject(id: Value, code: i32, kind: &'static str, message: String, hint: &'static str) -> Inbound {
    Inbound::Reject(Rejection::new(id, code, kind, message, hint))
}

/// The top-level `id` of a JSON object whose text is cut off, when it appears in the part
/// that was kept (clients write it before the large `params`).
pub fn leading_id(head: &[u8]) -> Option<Value> {
    let mut s = Scanner { bytes: head, at: 0 };
    s.whitespace();
    s.eat(b'{')?;
    loop {
        s.whitespace();
        let key_start = s.at;
        s.string()?;
        let is_id = &head[key_start..s.at] == b"\"id\"";
        s.whitespace();
        s.eat(b':')?;
        s.whitespace();
        let start = s.at;
        s.value()?;
        if is_id {
            return match serde_json::from_slice::<Value>(&head[start..s.at]).ok()? {
                id @ (Value::String(_) | Value::Number(_)) => Some(id),
                _ => None,
            };
        }
        s.whitespace();
        s.eat(b',')?;
    }
}

/// A forward-only scanner over a prefix of JSON text; every step fails (`None`) where the
/// prefix ends.
struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn whitespace(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// A string, quotes included.
    fn string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
    }

    /// Any value; nested containers are skipped by counting brackets outside strings, so deep
    /// nesting costs no stack.
    fn value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string(),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => depth -= 1,
                        _ => {}
                    }
                    self.at += 1;
                    if depth == 0 {
                        return Some(());
                    }
                }
            }
            _ => {
                let start = self.at;
                while self
                    .peek()
                    .is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace())
                {
                    self.at += 1;
                }
                // A scalar cut off by the end of the prefix is not known whole.
                (self.at > start && self.at < self.bytes.len()).then_some(())
            }
        }
    }
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
            assert_eq!((r.code, r.kind, &r.id), (PARSE_ERROR, "parse_error", &Value::Null), "{r:?}");
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

    #[test]
    fn the_id_is_read_from_the_head_of_a_cut_off_message() {
        assert_eq!(
            leading_id(br#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"x":"aaaa"#),
            Some(json!(12))
        );
        assert_eq!(
            leading_id(br#" { "method" : "a", "params": {"id": 3, "s": "}\""}, "id" : "k-1", "x"#),
            Some(json!("k-1"))
        );
        assert_eq!(leading_id(br#"{"jsonrpc":"2.0","params":{"x":"aaaa"#), None);
        assert_eq!(leading_id(br#"{"id":12"#), None, "a number cut off may be longer");
        assert_eq!(leading_id(b"[1,2]"), None);
    }

    #[tokio::test]
    async fn a_read_dropped_midway_loses_nothing() {
        use tokio::io::AsyncWriteExt;
        let (mut client, server) = tokio::io::duplex(64);
        let mut framer = LineFramer::new(tokio::io::BufReader::new(server));
        client.write_all(b"{\"first\": ").await.unwrap();
        // Poll once (it reads the half line, then waits for more), then drop the read, as
        // rmcp's select! does when another event comes first.
        tokio::select! {
            biased;
            _ = framer.next() => panic!("half a line is not a frame"),
            _ = std::future::ready(()) => {}
        }
        client.write_all(b"1}\nsecond\n").await.unwrap();
        assert_eq!(framer.next().await.unwrap(), Some(Frame::Line(br#"{"first": 1}"#.to_vec())));
        assert_eq!(framer.next().await.unwrap(), Some(Frame::Line(b"second".to_vec())));
    }

    #[tokio::test]
    async fn lines_over_the_limit_are_reported_whole_and_the_next_line_is_intact() {
        let input = b"short\nxxxxxxxxxxxxxxxxxxxx\n\nlast".to_vec();
        let mut framer = LineFramer::with_limit(&input[..], 10);
        assert_eq!(framer.next().await.unwrap(), Some(Frame::Line(b"short".to_vec())));
        assert_eq!(framer.next().await.unwrap(), Some(Frame::TooLarge { head: vec![b'x'; 20], bytes: 20 }));
        assert_eq!(framer.next().await.unwrap(), Some(Frame::Line(Vec::new())));
        assert_eq!(framer.next().await.unwrap(), Some(Frame::Line(b"last".to_vec())));
        assert_eq!(framer.next().await.unwrap(), None);
    }
}
