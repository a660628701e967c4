"""Helpers for end-to-end tests: the real `cortex` binary, driven over stdio by the official
`mcp` Python client (or, for raw protocol checks, by newline-delimited JSON-RPC)."""

import atexit
import contextlib
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.parse
import uuid
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("CORTEX_BIN") or str(ROOT / "target" / "debug" / "cortex")
TIMEOUT = 20
# The servers' cache folder: a PostgreSQL database's lexical index lives there by default, and
# every test makes its own database, so the run's indexes go with the run.
CACHE = tempfile.mkdtemp(prefix="cortex-e2e-cache-")
atexit.register(shutil.rmtree, CACHE, True)


def server_env(db: str | Path, branch: str = "main", **extra: str) -> dict:
    # Start from a clean slate, but keep the model location the test command set up.
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORTEX_") or k == "CORTEX_MODEL_DIR"}
    # Where scripts/test installs the model, for runs of pytest on its own.
    env.setdefault("CORTEX_MODEL_DIR", str(ROOT / ".cache" / "models" / "all-MiniLM-L6-v2"))
    env.update(CORTEX_DB=str(db), CORTEX_ORG="acme", CORTEX_PROJECT="api", CORTEX_BRANCH=branch, CORTEX_LOG="warn")
    env["XDG_CACHE_HOME"] = CACHE
    env.update(extra)
    return env


class Client:
    """One MCP session with the server; every call checks the JSON text mirror."""

    def __init__(self, session: ClientSession, timeout: float = TIMEOUT):
        self.session = session
        self.timeout = timeout

    async def call(self, tool: str, args: dict):
        """Returns (is_error, structured content)."""
        with anyio.fail_after(self.timeout):
            result = await self.session.call_tool(tool, args)
        structured = result.structured_content
        assert structured is not None, f"{tool} returned no structuredContent"
        assert json.loads(result.content[0].text) == structured, "text mirror differs from structuredContent"
        return bool(result.is_error), structured

    async def store(self, *items: dict) -> dict:
        is_error, out = await self.call("memory_store", {"items": list(items)})
        assert not is_error, out
        return out

    async def find(self, **args) -> dict:
        is_error, out = await self.call("memory_find", args)
        assert not is_error, out
        return out


@contextlib.asynccontextmanager
async def connect(db: str | Path, branch: str = "main", era: str = "handshake", version: str | None = None,
                  env: dict | None = None, errlog=None, timeout: float = TIMEOUT):
    """A session to a fresh `cortex serve`: `handshake` runs initialize (the client's newest,
    2025-11-25, or `version` when given), `modern` runs server/discover (2026-07-28, stateless).
    `env` adds to (or overrides) the server's environment; `errlog`, a file open for writing,
    receives the server's stderr (its log) instead of the test's own. `timeout` bounds each
    request's wait: a hang guard, never a speed check."""
    params = StdioServerParameters(command=BIN, args=["serve"], env=server_env(db, branch, **(env or {})))
    logged = {"errlog": errlog} if errlog is not None else {}
    async with stdio_client(params, **logged) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=timeout) as session:
            with anyio.fail_after(timeout):
                if era == "modern":
                    await session.discover()
                elif version is None:
                    await session.initialize()
                else:
                    await initialize_at(session, version)
            yield Client(session, timeout)


async def initialize_at(session: ClientSession, version: str) -> None:
    """The initialize handshake offering `version` instead of the client's newest: the same
    steps as `ClientSession.initialize`, through the session's public request API."""
    result = await session.send_request(
        types.InitializeRequest(params=types.InitializeRequestParams(
            protocol_version=version, capabilities=types.ClientCapabilities(),
            client_info=types.Implementation(name="cortex-e2e", version="1"))),
        types.InitializeResult,
    )
    session.adopt(result)
    await session.send_notification(types.InitializedNotification())


def run(test_fn):
    """Runs an async test body."""
    anyio.run(test_fn)


@pytest.fixture(params=["sqlite", "postgres"])
def db(request, tmp_path: Path):
    """A fresh database of each backend, as `--db` takes it: a SQLite file path, or the URL of
    a new PostgreSQL database on the server named by CORTEX_TEST_DATABASE_URL (scripts/test
    starts one), dropped afterwards. Every test taking `db` runs once per backend."""
    if request.param == "sqlite":
        yield str(tmp_path / "memory.db")
        return
    yield from postgres_database()


def postgres_database():
    """Yields the URL of a new PostgreSQL database on the server named by
    CORTEX_TEST_DATABASE_URL, dropped afterwards (the body of a fixture)."""
    server = os.environ.get("CORTEX_TEST_DATABASE_URL")
    if not server:
        pytest.fail("CORTEX_TEST_DATABASE_URL is not set: run scripts/test, or "
                    "export CORTEX_TEST_DATABASE_URL=$(scripts/postgres start)")
    import psycopg

    name = f"cortex_e2e_{uuid.uuid4().hex}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield with_database(server, name)
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def with_database(url: str, name: str) -> str:
    """`url` naming database `name` instead (query parameters kept)."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path="/" + name))


class RawServer:
    """`cortex serve` spoken to line by line, for what a well-behaved client never sends.
    Every read is bounded by TIMEOUT; stderr is drained so a chatty server never blocks."""

    def __init__(self, db: str | Path, branch: str = "main", env: dict | None = None):
        self.proc = subprocess.Popen(
            [BIN, "serve"], env=server_env(db, branch, **(env or {})), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
        )
        self.lines: "queue.Queue[str | None]" = queue.Queue()
        self.stdout_lines: list[str] = []
        self.stderr_lines: list[str] = []
        self._pumps = [threading.Thread(target=self._pump, daemon=True),
                       threading.Thread(target=self._drain_stderr, daemon=True)]
        for pump in self._pumps:
            pump.start()

    def _pump(self):
        for line in self.proc.stdout:
            self.stdout_lines.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def _drain_stderr(self):
        for line in self.proc.stderr:
            self.stderr_lines.append(line)

    def send(self, message) -> None:
        text = message if isinstance(message, str) else json.dumps(message)
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def response(self, request_id) -> dict:
        """The response to `request_id`, skipping notifications and other ids."""
        while True:
            try:
                line = self.lines.get(timeout=TIMEOUT)
            except queue.Empty:
                raise AssertionError(f"no answer to request {request_id!r} within {TIMEOUT}s") from None
            assert line is not None, f"server closed stdout before answering; stderr: {''.join(self.stderr_lines)}"
            msg = json.loads(line)
            if msg.get("id") == request_id:
                return msg

    def stderr_shows(self, wanted, timeout: float = TIMEOUT) -> bool:
        """Whether a line for which `wanted(line)` holds reaches stderr within `timeout`: the
        log is written apart from the answer, so it may arrive just after it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(wanted(line) for line in list(self.stderr_lines)):
                return True
            time.sleep(0.02)
        return False

    def initialize(self, version: str) -> dict:
        self.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
        result = self.response(1)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def close(self) -> int:
        """Closes stdin and returns the exit code (the server must leave by itself)."""
        self.proc.stdin.close()
        code = self.proc.wait(timeout=TIMEOUT)
        for pump in self._pumps:
            pump.join(timeout=TIMEOUT)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=TIMEOUT)


@pytest.fixture
def spawn(db: Path):
    """Starts raw servers on the test's database (`spawn(branch=..., env=...)`); any still
    running at the end of the test are killed."""
    servers: list[RawServer] = []

    def start(branch: str = "main", env: dict | None = None) -> RawServer:
        server = RawServer(db, branch, env)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.kill()


@pytest.fixture
def raw(spawn) -> RawServer:
    return spawn()
