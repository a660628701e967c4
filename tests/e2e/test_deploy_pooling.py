"""Cortex through PgBouncer 1.18 in transaction pooling with a plain URL: the administration
commands, two servers storing and finding at once, each statement free to land on any of the
pooler's few server connections (before, the second `keys create` failed with `prepared
statement "s17" already exists`, and the servers did not start)."""

import subprocess
import threading

import pytest

from conftest import BIN, TIMEOUT, server_env
from cluster import (PgBouncer, Postgres, Scratch, admin_key, call, cortex_cli, found_ids, pg_bin,
                     start_servers, store, stored_ids, unique)


@pytest.fixture(scope="module")
def pooled():
    need_bin = pg_bin()
    scratch = Scratch("cortex-pooling-")
    primary = bouncer = None
    try:
        primary = Postgres.primary(need_bin, scratch)
        bouncer = PgBouncer(primary)
        yield primary, bouncer
    finally:
        if bouncer:
            bouncer.stop()
        if primary:
            primary.stop()
        scratch.remove()


# A server's first store loads the model and opens its indexes: on a busy machine that takes
# longer than one call's usual wait.
SLOW = 120


def test_keys_and_two_servers_work_through_pgbouncer_in_transaction_mode(pooled):
    primary, bouncer = pooled
    url = bouncer.url()
    token = admin_key(url, "first", "--rate", "1000/s")
    admin_key(url, "second")
    admin_key(url, "third")
    names = [k["name"] for k in cortex_cli(url, "keys", "list")["keys"]]
    assert names == ["first", "second", "third"]
    servers = start_servers(url, 2)
    try:
        word = unique("pooled")
        ids: list[str] = []
        failures: list[str] = []

        def writer(server, n):
            # A call that raises (a timeout) is a failure to report, not a thread that dies quietly.
            try:
                for i in range(n):
                    status, item_id, answer = store(server.url, token, f"{word} {unique('entry')} number {i}",
                                                    timeout=SLOW)
                    if item_id is None:
                        failures.append(f"{status}: {answer}")
                    else:
                        ids.append(item_id)
                    # Finds in between, on the other server's pool too.
                    call(server.url, token, "memory_find", {"query": word, "mode": "fast"}, timeout=SLOW)
            except Exception as e:  # noqa: BLE001 - reported by the assertion below
                failures.append(f"{server.url}: {e!r}")

        threads = [threading.Thread(target=writer, args=(servers[i % 2], 15)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert failures == []
        assert len(ids) == 60
        # Every item is in the database and found through either server.
        assert stored_ids(primary, ids) == set(ids)
        for server in servers:
            assert set(found_ids(server.url, token, word)) == set(ids)
        # PgBouncer served it all with its few server connections (4 per database and user).
        backends = primary.sql("postgres", "SELECT count(*) FROM pg_stat_activity WHERE datname = 'memory'")[0][0]
        assert backends <= 4, f"{backends} server connections; the pooler allows 4"
        assert "pool_mode = transaction" in bouncer.config()
        assert "prepared statement" not in bouncer.log()
        for server in servers:
            assert not any("prepared statement" in line for line in server.stderr_lines), server.stderr_lines[-5:]
    finally:
        for server in servers:
            server.stop()


def test_a_server_started_before_its_database_waits_for_it():
    """A container started beside its database: `cortex serve` tries again once a second
    (CORTEX_DB_WAIT_SECS) instead of exiting, and serves once the database is up."""
    scratch = Scratch("cortex-wait-")
    pg = Postgres.primary(pg_bin(), scratch, start=False)
    proc = None
    try:
        quick = subprocess.run([BIN, "stats"], env=server_env(pg.url(), CORTEX_DB_WAIT_SECS="0"),
                               capture_output=True, text=True, timeout=TIMEOUT)
        assert quick.returncode == 1 and "cannot reach the database" in quick.stderr, quick.stderr
        proc = subprocess.Popen([BIN, "serve", "--http", "127.0.0.1:0"],
                                env=server_env(pg.url(), CORTEX_DB_WAIT_SECS="120", CORTEX_EMBEDDER="none",
                                               CORTEX_LOG="info"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        lines = iter(proc.stderr.readline, "")
        assert any("waiting for the database" in line for line in lines), "no word of waiting"
        pg.start()
        for line in lines:
            if "cortex serving MCP over HTTP at" in line:
                break
        else:
            raise AssertionError("the server did not start once the database was up")
        assert proc.poll() is None
    finally:
        if proc:
            proc.kill()
            proc.wait()
        pg.stop()
        scratch.remove()
