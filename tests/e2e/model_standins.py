"""Local stand-ins for the model APIs the agent CLIs call: Anthropic Messages (Claude Code) and
OpenAI Responses (Codex). Each listens on a free loopback port, records every request it gets,
and answers the agent's main conversation from a script: the n-th answer is the script's n-th
step, where n is the number of model turns already in the conversation, so a retried request
gets the same answer. Requests that are not the main conversation (Claude Code's title and
summary calls to a small model, say) get a short text.

A step is ("tool", name, arguments), ("text", words), or ("if-offered", name, arguments): a tool
call made only when the conversation offers that tool (Claude Code's ToolSearch, which newer
releases put in front of MCP tools), left out of the script otherwise."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple


class Recorded(NamedTuple):
    path: str
    body: Any  # the parsed JSON, the text when it is not JSON, None for a GET


class StandIn:
    """The server, run on a thread; `requests` holds every request as it arrived."""

    def __init__(self, script: list, is_main):
        self.script = script
        self.is_main = is_main
        self.requests: list[Recorded] = []
        self.lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                standin.record(self.path, None)
                self.answer_json(404, {"error": {"type": "not_found", "message": "not in the stand-in"}})

            def do_HEAD(self):
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                standin.record(self.path, body)
                standin.answer(self, self.path, body)

            def answer_json(self, status: int, value):
                data = json.dumps(value).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def answer_sse(self, events: list[dict]):
                data = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def record(self, path: str, body):
        with self.lock:
            self.requests.append(Recorded(path, body))

    def main_requests(self) -> list[dict]:
        """The bodies of the agent's main conversation requests, in order."""
        with self.lock:
            return [r.body for r in self.requests if isinstance(r.body, dict) and self.is_main(r.body)]

    def step(self, turns: int, offered: list[str]):
        script = [s for s in self.script if s[0] != "if-offered" or s[1] in offered]
        step = script[turns] if turns < len(script) else ("text", "Done.")
        return ("tool", *step[1:]) if step[0] == "if-offered" else step

    def answer(self, handler, path: str, body):
        raise NotImplementedError


def _tool_names_anthropic(body: dict) -> list[str]:
    return [t.get("name") for t in body.get("tools") or []]


class Anthropic(StandIn):
    """Anthropic Messages (`POST /v1/messages`, streamed as server-sent events when asked).
    The main conversation is the request that offers tools."""

    def __init__(self, script: list):
        super().__init__(script, is_main=lambda b: bool(b.get("tools")) and "messages" in b)

    def answer(self, handler, path: str, body):
        if not path.split("?")[0].endswith("/v1/messages"):
            # count_tokens and the like: a plausible answer, never the conversation.
            handler.answer_json(200, {"input_tokens": 100})
            return
        if not isinstance(body, dict):
            handler.answer_json(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                "message": "the body is not JSON"}})
            return
        if self.is_main(body):
            turns = sum(1 for m in body["messages"] if m.get("role") == "assistant")
            step = self.step(turns, _tool_names_anthropic(body))
        else:
            step = ("text", "Cortex stand-in")
        message = _anthropic_message(step, body.get("model", "stand-in"), len(self.requests))
        if body.get("stream"):
            handler.answer_sse(_anthropic_events(message))
        else:
            handler.answer_json(200, message)


def _anthropic_message(step, model: str, serial: int) -> dict:
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    if step[0] == "tool":
        content = [{"type": "tool_use", "id": f"toolu_{serial:04d}", "name": step[1], "input": step[2]}]
        stop = "tool_use"
    else:
        content = [{"type": "text", "text": step[1]}]
        stop = "end_turn"
    return {"id": f"msg_{serial:04d}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": None, "usage": usage}


def _anthropic_events(message: dict) -> list[dict]:
    start = dict(message, content=[], stop_reason=None)
    events = [{"type": "message_start", "message": start}]
    for i, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            events.append({"type": "content_block_start", "index": i,
                           "content_block": dict(block, input={})})
            events.append({"type": "content_block_delta", "index": i,
                           "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
        else:
            events.append({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})
            events.append({"type": "content_block_delta", "index": i,
                           "delta": {"type": "text_delta", "text": block["text"]}})
        events.append({"type": "content_block_stop", "index": i})
    events.append({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                   "usage": {"output_tokens": 5}})
    events.append({"type": "message_stop"})
    return events


def anthropic_tool_results(body: dict) -> list[dict]:
    """Every tool_result block the request carries, in order."""
    out = []
    for m in body.get("messages", []):
        if isinstance(m.get("content"), list):
            out += [b for b in m["content"] if b.get("type") == "tool_result"]
    return out


def tool_result_text(block: dict) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(c.get("text", "") for c in content or [] if isinstance(c, dict))


class Responses(StandIn):
    """OpenAI Responses (`POST /v1/responses`, streamed). Every request is the conversation."""

    def __init__(self, script: list):
        super().__init__(script, is_main=lambda b: "input" in b)

    def answer(self, handler, path: str, body):
        if not path.split("?")[0].endswith("/responses") or not isinstance(body, dict):
            handler.answer_json(404, {"error": {"message": f"{path} is not in the stand-in"}})
            return
        items = body.get("input") or []
        turns = sum(1 for i in items if isinstance(i, dict) and i.get("type") == "function_call")
        step = self.step(turns, [t.get("name", "") for t in body.get("tools") or []])
        serial = len(self.requests)
        rid = f"resp_{serial:04d}"
        if step[0] == "tool":
            item = {"type": "function_call", "id": f"fc_{serial:04d}", "call_id": f"call_{serial:04d}",
                    "name": step[1], "arguments": json.dumps(step[2]), "status": "completed"}
            # Codex offers an MCP server's tools in a namespace (`mcp__<server>`): a call to one
            # names the namespace beside the tool's own name.
            for tool in body.get("tools") or []:
                if tool.get("type") == "namespace" and any(t.get("name") == step[1] for t in tool.get("tools", [])):
                    item["namespace"] = tool["name"]
        else:
            item = {"type": "message", "role": "assistant", "id": f"msg_{serial:04d}", "status": "completed",
                    "content": [{"type": "output_text", "text": step[1], "annotations": []}]}
        usage = {"input_tokens": 10, "input_tokens_details": None, "output_tokens": 5,
                 "output_tokens_details": None, "total_tokens": 15}
        handler.answer_sse([
            {"type": "response.created", "response": {"id": rid}},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": {"id": rid, "usage": usage}},
        ])


def responses_tool_outputs(body: dict) -> list[str]:
    """The output text of every function_call_output the request carries, in order."""
    out = []
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            output = item.get("output")
            if isinstance(output, str):
                out.append(output)
            elif isinstance(output, list):
                out.append("".join(c.get("text", "") for c in output if isinstance(c, dict)))
            else:
                out.append(json.dumps(output))
    return out
