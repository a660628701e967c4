"""Automatic failover with Patroni: two PostgreSQL 18 members run by Patroni (from PyPI; Debian
12's 3.0.2 predates PostgreSQL 18) over one etcd (Debian's etcd-server), in synchronous mode, the
settings of deploy/patroni/patroni.yml on loopback. Two `cortex serve --http` behind HAProxy reach
them by a multi-host URL with `target_session_attrs=read-write` (each new connection finds the
primary itself), or through HAProxy's check of Patroni's REST API
(deploy/patroni/haproxy-postgres.cfg, on a plain URL). The leader is killed (Patroni with kill -9, its PostgreSQL stopped at once, as a
machine losing power) under three writers: Patroni promotes the synchronous standby once the
leader's key expires, the servers, not restarted, accept writes again within 30 s, and every write
they acknowledged is on the new primary."""

import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from cluster import (DATABASE, SERVICE_USER, SUPERUSER, HAProxy, Scratch, address, admin_key, as_root, free_port,
                     need, pg_bin, start_servers, stop_servers, store, unique)
from conftest import ROOT, TIMEOUT

SHIPPED = ROOT / "deploy" / "patroni" / "patroni.yml"
SHIPPED_CHECK = ROOT / "deploy" / "patroni" / "haproxy-postgres.cfg"


def patroni_bin() -> str:
    """Patroni 4 or later: CORTEX_PATRONI, else scripts/test's .venv-patroni, else PATH's."""
    for candidate in (os.environ.get("CORTEX_PATRONI"), str(ROOT / ".venv-patroni" / "bin" / "patroni"),
                      shutil.which("patroni")):
        if not candidate or not Path(candidate).exists():
            continue
        version = subprocess.run(as_user_cmd([candidate, "--version"]), capture_output=True, text=True, timeout=60)
        words = version.stdout.split()
        if version.returncode == 0 and words and int(words[-1].split(".")[0]) >= 4:
            return candidate
    pytest.skip("no Patroni 4 or later (PostgreSQL 18 needs it; Debian 12 has 3.0.2) that the service user can "
                "run: scripts/test installs one in .venv-patroni with the system's python3")


def as_user_cmd(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", SERVICE_USER, "--", *cmd] if as_root() else cmd


def spawn(cmd: list[str], log: Path, env: dict | None = None) -> subprocess.Popen:
    """Started as the service user, its pid the program's own (kill -9 reaches it)."""
    out = open(log, "w")
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd="/",
                            user=SERVICE_USER if as_root() else None, env=env)


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except (urllib.error.URLError, OSError) as e:
        return 0, repr(e)


def wait_for(what: str, check, logs: list[Path], timeout: float = 120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    tails = "\n".join(f"--- {p.name}\n{p.read_text()[-2000:]}" for p in logs if p.exists())
    raise AssertionError(f"{what} not within {timeout} s\n{tails}")


class Member:
    def __init__(self, name: str, scratch: Scratch, bin_dir: Path, etcd: str, patroni: str):
        self.name = name
        self.pg_port, self.api_port = free_port(), free_port()
        self.data = scratch.path / f"{name}-data"
        self.log = scratch.path / f"{name}.log"
        sock = scratch.sub(f"{name}-sock")
        config = yaml.safe_load(SHIPPED.read_text())
        # The shipped timings and replication settings; a disposable database needs no fsync.
        config["bootstrap"]["dcs"]["postgresql"]["parameters"].update({"fsync": "off", "max_connections": 100})
        config["bootstrap"].pop("post_bootstrap")
        config.update({
            "name": name,
            "restapi": {"listen": f"127.0.0.1:{self.api_port}", "connect_address": f"127.0.0.1:{self.api_port}"},
            "etcd3": {"hosts": etcd},
        })
        config["postgresql"].update({
            "listen": f"127.0.0.1:{self.pg_port}", "connect_address": f"127.0.0.1:{self.pg_port}",
            "data_dir": str(self.data), "bin_dir": str(bin_dir), "pgpass": str(scratch.path / f"{name}.pgpass"),
            "parameters": {"unix_socket_directories": str(sock)},
            "pg_hba": ["local all all trust", "host replication replicator 127.0.0.1/32 trust",
                       "host all all 127.0.0.1/32 trust"],
        })
        self.config = scratch.path / f"{name}.yml"
        self.config.write_text(json.dumps(config))
        env = dict(os.environ, HOME=str(scratch.path))
        self.proc = spawn([patroni, str(self.config)], self.log, env)
        self.bin = bin_dir

    def role(self) -> str:
        """`primary`, `replica`, or '' when its REST API does not answer."""
        status, body = get(f"http://127.0.0.1:{self.api_port}/patroni")
        return json.loads(body).get("role", "") if status in (200, 503) and body.startswith("{") else ""

    def is_sync_standby(self) -> bool:
        return get(f"http://127.0.0.1:{self.api_port}/sync")[0] == 200

    def url(self, database: str = DATABASE) -> str:
        return f"postgres://{SUPERUSER}@127.0.0.1:{self.pg_port}/{database}"

    def sql(self, database: str, statement: str, *params):
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            cur = conn.execute(statement, params or None)
            return cur.fetchall() if cur.description else None

    def kill(self):
        """Patroni killed, its PostgreSQL stopped at once: a machine lost."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=TIMEOUT)
        self.stop_postgres()

    def stop_postgres(self):
        if (self.data / "postmaster.pid").exists():
            subprocess.run(as_user_cmd([str(self.bin / "pg_ctl"), "stop", "-D", str(self.data), "-m", "immediate",
                                        "-w", "-t", "60", "-s"]), capture_output=True, timeout=90, cwd="/")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=TIMEOUT)
        self.stop_postgres()


class PrimaryCheck:
    """Debian's HAProxy running the shipped deploy/patroni/haproxy-postgres.cfg over the members:
    its primary listener reaches the member whose Patroni REST API answers 200 on /primary."""

    def __init__(self, members: list[Member], scratch: Scratch):
        binary = need("haproxy", "haproxy")
        self.port = free_port()
        by_name = {m.name: m for m in members}
        lines = []
        for line in SHIPPED_CHECK.read_text().splitlines():
            line = line.replace("bind *:5000", f"bind 127.0.0.1:{self.port}")
            line = line.replace("bind *:5001", f"bind 127.0.0.1:{free_port()}")
            server = re.match(r"\s*server (\S+) ", line)
            if server:
                member = by_name.get(server.group(1))
                if member is None:
                    continue
                line = f"    server {member.name} 127.0.0.1:{member.pg_port} check port {member.api_port}"
            lines.append(line)
        config = scratch.path / "haproxy-postgres.cfg"
        config.write_text("\n".join(lines) + "\n")
        self.log = scratch.path / "haproxy-postgres.log"
        self.proc = subprocess.Popen([binary, "-db", "-f", str(config)], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=open(self.log, "w"))

    def url(self) -> str:
        return f"postgres://{SUPERUSER}@127.0.0.1:{self.port}/{DATABASE}"

    def reaches_primary(self) -> bool:
        import psycopg

        try:
            with psycopg.connect(self.url(), connect_timeout=2, autocommit=True) as conn:
                return not conn.execute("SELECT pg_is_in_recovery()").fetchone()[0]
        except psycopg.Error:
            return False

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=TIMEOUT)


@pytest.fixture(params=["multi-host URL", "HAProxy's check"])
def patroni_cluster(request):
    etcd_bin = need("etcd", "etcd-server")
    need("haproxy", "haproxy")
    patroni = patroni_bin()
    bin_dir = pg_bin()
    scratch = Scratch("cortex-patroni-")
    procs, members, servers, proxy = [], [], [], None
    try:
        client, peer = free_port(), free_port()
        etcd_log = scratch.path / "etcd.log"
        procs.append(spawn([etcd_bin, "--name", "etcd1", "--data-dir", str(scratch.path / "etcd"),
                            "--listen-client-urls", f"http://127.0.0.1:{client}",
                            "--advertise-client-urls", f"http://127.0.0.1:{client}",
                            "--listen-peer-urls", f"http://127.0.0.1:{peer}",
                            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
                            "--initial-cluster", f"etcd1=http://127.0.0.1:{peer}"], etcd_log))
        wait_for("etcd answering", lambda: get(f"http://127.0.0.1:{client}/health")[0] == 200, [etcd_log])
        etcd = f"127.0.0.1:{client}"
        first = Member("pg1", scratch, bin_dir, etcd, patroni)
        members.append(first)
        wait_for("pg1 leading", lambda: first.role() == "primary", [first.log, etcd_log])
        second = Member("pg2", scratch, bin_dir, etcd, patroni)
        members.append(second)
        wait_for("pg2 the synchronous standby", second.is_sync_standby, [first.log, second.log])
        first.sql("postgres", f"CREATE DATABASE {DATABASE}")
        if request.param == "multi-host URL":
            url = (f"postgres://{SUPERUSER}@127.0.0.1:{first.pg_port},127.0.0.1:{second.pg_port}/{DATABASE}"
                   "?target_session_attrs=read-write")
        else:
            check = PrimaryCheck(members, scratch)
            procs.append(check.proc)
            # HAProxy counts a server up until its checks fail `fall` times: until then the
            # primary listener may reach the standby too.
            wait_for("HAProxy marking the standby down on its primary listener",
                     lambda: f"primary/{second.name} is DOWN" in check.log.read_text(), [check.log])
            assert check.reaches_primary()
            url = check.url()
        token = admin_key(url, "admin", "--rate", "1000/s")
        servers = start_servers(url, 2)
        proxy = HAProxy([address(s) for s in servers])
        yield first, second, servers, proxy, token, request.param
    finally:
        if proxy:
            proxy.stop()
        stop_servers(servers)
        for member in reversed(members):
            member.stop()
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=TIMEOUT)
        scratch.remove()


def test_patroni_promotes_the_synchronous_standby_and_no_acknowledged_write_is_lost(patroni_cluster):
    leader, standby, servers, proxy, token, route = patroni_cluster
    word = unique("patroni")
    acknowledged: list[tuple[float, str]] = []
    failures: list[tuple[float, str]] = []
    lost_at: list[float] = []
    promoted_at: list[float] = []
    stop = threading.Event()
    lock = threading.Lock()

    def writer(w):
        i = 0
        while not stop.is_set():
            sent = time.monotonic()
            try:
                status, item_id, answer = store(proxy.url, token, f"{word} {unique('w')} by {w} #{i}")
            except OSError as e:
                status, item_id, answer = None, None, repr(e)
            with lock:
                # By when it was sent: a write sent before the leader was lost may be
                # acknowledged after (committed, its answer delayed), which says nothing of new writes.
                if item_id:
                    acknowledged.append((sent, item_id))
                else:
                    failures.append((time.monotonic(), f"{status}: {str(answer)[:160]}"))
            i += 1
            time.sleep(0.01)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
    for t in threads:
        t.start()
    try:
        while len(acknowledged) < 30:
            time.sleep(0.05)
        leader.kill()
        lost_at.append(time.monotonic())
        deadline = lost_at[0] + 90
        while time.monotonic() < deadline and sum(1 for t, _ in acknowledged if t > lost_at[0]) < 20:
            if not promoted_at and standby.role() == "primary":
                promoted_at.append(time.monotonic())
            time.sleep(0.1)
    finally:
        stop.set()
        for t in threads:
            t.join()
    after = sorted(t for t, _ in acknowledged if t > lost_at[0])
    assert after, f"no write was accepted after the leader was lost; failures: {failures[-5:]}\n" \
                  f"{standby.log.read_text()[-3000:]}"
    back_in = after[0] - lost_at[0]
    promoted_in = promoted_at[0] - lost_at[0] if promoted_at else float("nan")
    print(f"patroni failover ({route}): the standby promoted {promoted_in:.1f} s and writes accepted again {back_in:.1f} s "
          f"after the leader was lost (ttl 20 s, loop_wait 5 s); {len(acknowledged)} acknowledged, {len(failures)} refused "
          f"meanwhile: {[(round(t - lost_at[0], 1), f) for t, f in failures]}")
    assert standby.role() == "primary"
    assert back_in < 30
    ids = [item_id for _, item_id in acknowledged]
    rows = standby.sql(DATABASE, "SELECT id::text FROM items WHERE id = ANY(%s::uuid[])", ids)
    assert {row[0] for row in rows} == set(ids), "an acknowledged write is missing on the new primary"
    for server in servers:
        assert server.proc.poll() is None, "a server stopped"
