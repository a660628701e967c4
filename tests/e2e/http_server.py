"""The HTTP team server as the e2e tests drive it: `cortex serve --http` started on the test's
database (the `serve` fixture), `cortex` commands on the same database, API keys, and an MCP
session over Streamable HTTP with the official `mcp` client."""

import contextlib
import json
import re
import signal
import subprocess
import threading
import urllib.error
import urllib.request

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from conftest import BIN, TIMEOUT, Client, initialize_at, server_env

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}


class HttpServer:
    """`cortex serve --http 127.0.0.1:0` on the test's database; the port is read from the line
    the server logs when it listens. stderr is kept for assertions about the access log."""

    def __init__(self, db, args=(), env=None, addr="127.0.0.1:0", prefix=(), cwd=None):
        self.db = db
        self.proc = subprocess.Popen(
            [*prefix, BIN, "serve", "--http", addr, *args],
            env=server_env(db, **{"CORTEX_LOG": "info", **(env or {})}), cwd=cwd,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.stderr_lines: list[str] = []
        listening = threading.Event()
        self.base = None

        def drain():
            for line in self.proc.stderr:
                self.stderr_lines.append(line)
                found = re.search(r"at (http://127\.0\.0\.1:\d+)/mcp", line)
                if found and self.base is None:
                    self.base = found.group(1)
                    listening.set()
            listening.set()

        self._drain = threading.Thread(target=drain, daemon=True)
        self._drain.start()
        assert listening.wait(TIMEOUT) and self.base, f"server did not start: {''.join(self.stderr_lines)}"

    @property
    def url(self) -> str:
        return self.base + "/mcp"

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
        """(status, headers, JSON body or text) of one plain HTTP request."""
        req = urllib.request.Request(self.base + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
                status, head, raw = resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as e:
            status, head, raw = e.code, e.headers, e.read()
        text = raw.decode()
        try:
            return status, head, json.loads(text)
        except json.JSONDecodeError:
            return status, head, text

    def post_mcp(self, message: dict, headers: dict | None = None):
        return self.request("POST", "/mcp", json.dumps(message).encode(), {
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})})

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=TIMEOUT)
        self._drain.join(timeout=TIMEOUT)
        return code


@pytest.fixture
def serve(db):
    """Starts HTTP servers on the test's database (`serve(args=..., env=...)`); stopped at the end."""
    servers: list[HttpServer] = []

    def start(args=(), env=None, addr="127.0.0.1:0", prefix=(), cwd=None) -> HttpServer:
        """`prefix` runs the server under another command (`prlimit --nofile=512`); `cwd` is
        the folder it starts in (a git checkout it infers its scope from)."""
        server = HttpServer(db, args, env, addr, prefix, cwd)
        servers.append(server)
        return server

    yield start
    for server in servers:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait(timeout=TIMEOUT)


def cortex(db, *args: str) -> dict:
    """Runs a `cortex` command on the test's database and returns its JSON output."""
    out = subprocess.run([BIN, *args], env=server_env(db), capture_output=True, text=True, timeout=TIMEOUT)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


def make_key(db, name: str, role: str, *extra: str) -> str:
    return cortex(db, "keys", "create", "--name", name, "--org", "acme", "--role", role, *extra)["token"]


@contextlib.asynccontextmanager
async def http_session(url: str, token: str | None = None, era: str = "handshake", headers: dict | None = None):
    """An MCP session over Streamable HTTP: `handshake` runs initialize (an `Mcp-Session-Id`
    session, ended by DELETE when it closes), `modern` runs server/discover (2026-07-28)."""
    all_headers = dict(headers or {})
    if token:
        all_headers["Authorization"] = f"Bearer {token}"
    async with create_mcp_http_client(headers=all_headers) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=TIMEOUT) as session:
                with anyio.fail_after(TIMEOUT):
                    if era == "modern":
                        await session.discover()
                    else:
                        await initialize_at(session, "2025-06-18")
                yield Client(session)


def error_code(structured: dict) -> str:
    return structured["error"]["code"]
