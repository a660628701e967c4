"""Cortex inside the real Claude Code CLI (`@anthropic-ai/claude-code`, from
tests/e2e/agents/node_modules): the plugin installs from this repository's marketplace with the
hooks README documents, and the Stop hook asks a session that changed files and stored nothing
to store, once. The model is a small local stand-in for the Anthropic Messages API, scripted
below, that records every request Claude Code sends."""

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import BIN, ROOT, server_env

CLAUDE = Path(os.environ.get("CORTEX_TEST_CLAUDE") or ROOT / "tests/e2e/agents/node_modules/.bin/claude")
MARKER = "(cortex hook stop: asked once per session)"
# The plugin's hook commands, as README documents them.
PLUGIN_HOOKS = {
    "SessionStart": "cortex context",
    "UserPromptSubmit": "cortex recall",
    "Stop": "cortex hook stop",
    "PreCompact": "cortex hook pre-compact",
}


@pytest.fixture
def claude():
    if not CLAUDE.exists():
        pytest.fail(f"{CLAUDE} is missing: install the pinned Claude Code with `npm ci --prefix tests/e2e/agents`")
    return str(CLAUDE)


def sse(events: list[dict]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def message(blocks: list[dict], stop_reason: str) -> list[dict]:
    """One streamed assistant message: text blocks and tool uses (their input sent whole)."""
    events = [{"type": "message_start", "message": {
        "id": "msg_standin", "type": "message", "role": "assistant", "model": "claude-standin", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}]
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            events.append({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})
            events.append({"type": "content_block_delta", "index": i,
                           "delta": {"type": "text_delta", "text": block["text"]}})
        else:
            events.append({"type": "content_block_start", "index": i, "content_block": {
                "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})
            events.append({"type": "content_block_delta", "index": i,
                           "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
        events.append({"type": "content_block_stop", "index": i})
    events.append({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                   "usage": {"output_tokens": 5}})
    events.append({"type": "message_stop"})
    return events


class StandIn:
    """The Messages API, scripted: `script(body)` returns (blocks, stop_reason) for each request of
    the agent's main loop (the requests that offer the Write tool); any other request (a title,
    a quota check) gets a short text."""

    def __init__(self, script):
        self.requests: list[dict] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                if self.path.startswith("/v1/messages/count_tokens"):
                    return self.reply_json({"input_tokens": 10})
                if not self.path.startswith("/v1/messages"):
                    return self.reply_json({"error": "not here"}, 404)
                tools = [t.get("name") for t in body.get("tools", [])]
                if "Write" in tools:
                    stand_in.requests.append(body)
                    blocks, stop = script(body)
                else:
                    blocks, stop = [{"type": "text", "text": "ok"}], "end_turn"
                if not body.get("stream"):
                    return self.reply_json({"id": "msg_standin", "type": "message", "role": "assistant",
                                            "model": "claude-standin", "content": blocks, "stop_reason": stop,
                                            "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}})
                data = sse(message(blocks, stop))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self.reply_json({"error": "not here"}, 404)

            def do_HEAD(self):
                self.send_response(200)
                self.end_headers()

            def reply_json(self, value, status=200):
                data = json.dumps(value).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def last_user_text(body: dict) -> str:
    """Everything the last user turn of a request says, tool results included, as JSON text."""
    return json.dumps(body["messages"][-1])


def agent_env(home: Path, db: Path, base_url: str | None = None) -> dict:
    env = server_env(db, CORTEX_EMBEDDER="none")
    bin_dir = home / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    if not (bin_dir / "cortex").exists():
        (bin_dir / "cortex").symlink_to(Path(BIN).resolve())
    env.update(HOME=str(home), PATH=f"{bin_dir}:{env['PATH']}", ANTHROPIC_API_KEY="sk-ant-standin",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1", CI="1")
    env.pop("ANTHROPIC_AUTH_TOKEN", None)
    if base_url:
        env["ANTHROPIC_BASE_URL"] = base_url
    return env


def run(cmd: list[str], env: dict, cwd: Path, timeout: int = 120) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, f"{cmd}: {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


def test_the_plugin_installs_from_this_repository(claude, tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    # Claude Code asks its API host about plugins: the stand-in answers at once, where the real
    # host, unreachable here, would cost a timeout per command.
    stand_in = StandIn(lambda body: ([{"type": "text", "text": "ok"}], "end_turn"))
    try:
        install_and_check_the_plugin(claude, agent_env(home, tmp_path / "memory.db", stand_in.url), project)
    finally:
        stand_in.close()


def install_and_check_the_plugin(claude: str, env: dict, project: Path):
    run([claude, "plugin", "marketplace", "add", str(ROOT)], env, project)
    run([claude, "plugin", "install", "cortex@cortex-memory"], env, project)
    listed = json.loads(run([claude, "plugin", "list", "--json"], env, project).stdout)
    plugin = next((p for p in listed if p["id"] == "cortex@cortex-memory"), None)
    assert plugin is not None and plugin["enabled"] is True, listed
    assert plugin["mcpServers"] == {"cortex": {"command": "cortex", "args": ["serve"]}}, plugin

    installed = Path(plugin["installPath"])
    hooks = json.loads((installed / "hooks/hooks.json").read_text())["hooks"]
    registered = {event: [h["command"] for g in groups for h in g["hooks"]] for event, groups in hooks.items()}
    assert registered == {event: [command] for event, command in PLUGIN_HOOKS.items()}, registered
    readme = (ROOT / "README.md").read_text()
    for command in PLUGIN_HOOKS.values():
        assert f"`{command}`" in readme, f"README does not document {command}"
    skill = (installed / "skills/memory/SKILL.md").read_text()
    assert skill.startswith("---\nname: memory\n") and "memory_find" in skill and "memory_store" in skill
    details = run([claude, "plugin", "details", "cortex@cortex-memory"], env, project).stdout
    assert "SessionStart, UserPromptSubmit, Stop, PreCompact" in details, details


def test_the_stop_hook_asks_once_per_session_through_the_real_cli(claude, tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    db = tmp_path / "memory.db"
    calls = {"n": 0, "writes": 0}

    def script(body):
        """Each run: edit a file, then finish; asked to store, say nothing is worth keeping."""
        calls["n"] += 1
        if calls["n"] == 1:
            calls["writes"] += 1
            return [{"type": "tool_use", "id": f"toolu_{calls['writes']}", "name": "Write",
                     "input": {"file_path": str(project / f"notes{calls['writes']}.txt"), "content": "hello\n"}}], "tool_use"
        if '"tool_result"' in last_user_text(body):
            return [{"type": "text", "text": "Done."}], "end_turn"
        return [{"type": "text", "text": "Nothing here is worth keeping."}], "end_turn"

    stand_in = StandIn(script)
    try:
        env = agent_env(home, db, stand_in.url)
        installed = subprocess.run([BIN, "install", "claude-code", "--user"], env=env, cwd=project,
                                   capture_output=True, text=True)
        assert installed.returncode == 0, installed.stderr
        first = run([claude, "-p", "Write a note.", "--output-format", "json", "--allowedTools", "Write"], env, project)
        session = json.loads(first.stdout)["session_id"]
        texts = [json.dumps(r["messages"]) for r in stand_in.requests]
        assert len(stand_in.requests) == 3, texts
        assert MARKER not in texts[1], "not asked before the session stops"
        assert MARKER in last_user_text(stand_in.requests[2]), "asked once, with the hook's reason"
        assert "memory_store" in last_user_text(stand_in.requests[2])
        assert any(project.glob("notes*.txt")), "the Write really ran"
        transcripts = list((home / ".claude/projects").glob(f"*/{session}.jsonl"))
        assert transcripts and MARKER in transcripts[0].read_text(), "the reminder is in the session's transcript"

        # The same session, resumed: another edit, still nothing stored — never asked again.
        stand_in.requests.clear()
        calls["n"] = 0
        run([claude, "-p", "Write another note.", "--resume", session, "--allowedTools", "Write"], env, project)
        assert len(stand_in.requests) == 2, [last_user_text(r) for r in stand_in.requests]
        asked = [json.dumps(r["messages"]).count(MARKER) for r in stand_in.requests]
        assert asked[0] >= 1 and asked[-1] == asked[0], f"no new reminder: {asked}"
        assert len(list(project.glob("notes*.txt"))) == 2, "the second Write ran too"
    finally:
        stand_in.close()
