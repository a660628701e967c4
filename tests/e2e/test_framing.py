"""The raw protocol suite: every line a client writes gets exactly one answer, whatever its bytes,
and the session keeps working afterwards (issue 15, item 5). Bytes go straight to the real
binary's stdin; nothing here goes through an MCP client."""

import json

import pytest

from conftest import connect, run

LIMIT = 64 * 1024 * 1024  # MAX_MESSAGE_BYTES in crates/domain/src/limits.rs
PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def send_bytes(raw, data: bytes) -> None:
    raw.proc.stdin.flush()
    raw.proc.stdin.buffer.write(data + b"\n")
    raw.proc.stdin.buffer.flush()


def answers_until_ping(raw, ping_id) -> list[dict]:
    """Sends a ping and returns every answer (result or error) that arrived before the ping's."""
    raw.send({"jsonrpc": "2.0", "id": ping_id, "method": "ping"})
    answers = []
    while True:
        msg = raw.response_or_any()
        if msg.get("id") == ping_id and "result" in msg:
            return answers
        if "result" in msg or "error" in msg:
            answers.append(msg)


@pytest.fixture
def session(raw):
    def response_or_any():
        line = raw.lines.get(timeout=60)
        assert line is not None, f"server closed stdout; stderr: {''.join(raw.stderr_lines)}"
        return json.loads(line)

    raw.response_or_any = response_or_any
    raw.initialize("2025-11-25")
    return raw


DEEP = b"[" * 100_000
UNPARSABLE = {
    "truncated JSON": b'{"jsonrpc":"2.0","id":5,"method":"tools/list"',
    "invalid UTF-8": b'{"jsonrpc":"2.0","id":5,"method":"tools/list\xff\xfe"}',
    "lone surrogate": b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"memory_find","arguments":{"query":"\\ud800"}}}',
    "nesting 100k deep": DEEP,
    "nesting 100k deep inside a request": b'{"jsonrpc":"2.0","id":5,"method":"ping","params":' + DEEP + b"}",
    "two messages on one line": b'{"jsonrpc":"2.0","id":5,"method":"ping"}{"jsonrpc":"2.0","id":6,"method":"ping"}',
    "plain text": b"hello there",
}


@pytest.mark.parametrize("name", list(UNPARSABLE))
def test_an_unparsable_line_gets_one_parse_error_with_a_null_id(session, name):
    send_bytes(session, UNPARSABLE[name])
    answers = answers_until_ping(session, 100)
    assert len(answers) == 1, answers
    error = answers[0]
    assert error["id"] is None and error["error"]["code"] == PARSE_ERROR, error
    assert error["error"]["data"]["human_hint"]
    assert session.stderr_shows(lambda line: "parse_error" in line and "WARN" in line), session.stderr_lines
    # The session is intact: a real call still works.
    session.send({"jsonrpc": "2.0", "id": 101, "method": "tools/list"})
    assert len(session.response(101)["result"]["tools"]) == 2


@pytest.mark.parametrize("line,expected_id", [
    (b"[]", None),
    (b'[{"jsonrpc":"2.0","id":5,"method":"ping"}]', None),
    (b"42", None),
    (b'{"jsonrpc":"1.0","id":5,"method":"ping"}', 5),
    (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', None),
    (b'{"jsonrpc":"2.0","id":"no-method"}', "no-method"),
])
def test_an_invalid_request_gets_one_invalid_request_error(session, line, expected_id):
    send_bytes(session, line)
    answers = answers_until_ping(session, 100)
    assert len(answers) == 1, answers
    assert answers[0]["id"] == expected_id and answers[0]["error"]["code"] == INVALID_REQUEST, answers


@pytest.mark.parametrize("line", [
    b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{}}}',
    b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"memory_find","arguments":"x"}}',
    b'{"jsonrpc":"2.0","id":7,"method":"tools/call"}',
])
def test_a_tool_call_with_malformed_params_gets_invalid_params(session, line):
    send_bytes(session, line)
    answers = answers_until_ping(session, 100)
    assert len(answers) == 1, answers
    assert answers[0]["id"] == 7 and answers[0]["error"]["code"] == -32602, answers


def test_a_line_over_the_limit_gets_too_large_with_its_id_and_the_session_goes_on(session):
    head = b'{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"memory_store","arguments":{"items":[{"kind":"section","content":"'
    send_bytes(session, head + b"x" * LIMIT + b'"}]}}}')
    answers = answers_until_ping(session, 100)
    assert len(answers) == 1, answers
    error = answers[0]["error"]
    assert answers[0]["id"] == 41
    assert error["code"] == INVALID_REQUEST and error["data"]["code"] == "too_large", error
    assert error["data"]["limit_bytes"] == LIMIT and str(LIMIT) in error["message"]
    # Unreadable and oversized: answered too, with a null id.
    send_bytes(session, b"y" * (LIMIT + 1))
    answers = answers_until_ping(session, 101)
    assert [(a["id"], a["error"]["data"]["code"]) for a in answers] == [(None, "too_large")]
    session.send({"jsonrpc": "2.0", "id": 102, "method": "tools/call", "params": {
        "name": "memory_store", "arguments": {"items": [{"kind": "todo", "content": "after the flood"}]}}})
    assert session.response(102)["result"]["structuredContent"]["summary"]["inserted"] == 1


def test_blank_lines_and_malformed_notifications_get_no_answer(session):
    send_bytes(session, b"")
    send_bytes(session, b"   \r")
    session.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": 5})
    assert answers_until_ping(session, 100) == []


def test_stdout_stays_json_rpc_through_every_bad_line(session):
    for i, line in enumerate(UNPARSABLE.values()):
        send_bytes(session, line)
        answers_until_ping(session, 200 + i)
    assert session.close() == 0
    for line in session.stdout_lines:
        assert json.loads(line)["jsonrpc"] == "2.0"


def test_the_sdk_stores_a_full_batch_of_100_items_of_200_kib(db):
    async def body():
        # 20 MiB through every store stage of a debug build: what is checked is that it all
        # arrives and is stored, so the wait is only a hang guard.
        async with connect(db, env={"CORTEX_EMBEDDER": "none"}, timeout=180) as c:
            words = ["alpha", "beta", "gamma", "delta", "omega"]
            items = [{"kind": "section", "content": f"batch item {i} " + " ".join(words[(i + j) % 5] for j in range(40_000))[:200 * 1024 - 20]}
                     for i in range(100)]
            assert len(json.dumps({"items": items})) > 16 * 1024 * 1024, "the batch must be over rmcp's old 16 MiB limit"
            out = await c.store(*items)
            assert out["summary"]["inserted"] == 100, out["summary"]
    run(body)
