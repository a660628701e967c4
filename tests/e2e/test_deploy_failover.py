"""A primary failover under writes, as an operator runs it without Patroni: the primary is lost
(stopped at once, as a machine losing power), its streaming replica is promoted and PgBouncer is
pointed at it and reloaded. The servers behind HAProxy are not restarted: they accept writes
again within 30 s, and with synchronous replication no write they acknowledged is lost."""

import threading
import time

import pytest

from cluster import (HAProxy, PgBouncer, Postgres, Scratch, address, admin_key, need, pg_bin, start_servers,
                     stop_servers, store, stored_ids, unique)


@pytest.fixture
def cluster():
    need("haproxy", "haproxy")
    need("pgbouncer", "pgbouncer")
    scratch = Scratch("cortex-failover-")
    parts, servers = [], []
    try:
        bin_dir = pg_bin()
        primary = Postgres.primary(bin_dir, scratch)
        parts.append(primary)
        replica = Postgres.replica_of(primary, scratch, "replica")
        parts.append(replica)
        primary.synchronous(replica)
        bouncer = PgBouncer(primary)
        parts.append(bouncer)
        token = admin_key(bouncer.url(), "admin", "--rate", "1000/s")
        servers = start_servers(bouncer.url(), 2)
        proxy = HAProxy([address(s) for s in servers])
        parts.append(proxy)
        yield primary, replica, bouncer, servers, proxy, token
    finally:
        stop_servers(servers)
        for part in reversed(parts):
            part.stop()
        scratch.remove()


def test_a_promoted_replica_takes_writes_within_30_s_and_no_acknowledged_write_is_lost(cluster):
    primary, replica, bouncer, servers, proxy, token = cluster
    word = unique("failover")
    acknowledged: list[tuple[float, str]] = []
    failures: list[tuple[float, str]] = []
    lost_at: list[float] = []
    stop = threading.Event()
    lock = threading.Lock()

    def writer(w):
        i = 0
        while not stop.is_set():
            try:
                status, item_id, answer = store(proxy.url, token, f"{word} {unique('w')} by {w} #{i}")
            except OSError as e:
                status, item_id, answer = None, None, repr(e)
            now = time.monotonic()
            with lock:
                if item_id:
                    acknowledged.append((now, item_id))
                else:
                    failures.append((now, f"{status}: {str(answer)[:160]}"))
            i += 1
            time.sleep(0.01)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
    for t in threads:
        t.start()
    repointed = None
    try:
        while len(acknowledged) < 30:
            time.sleep(0.05)
        primary.crash()
        lost_at.append(time.monotonic())
        # The operator's steps: promote the replica, point the pooler at it.
        replica.promote()
        bouncer.repoint(replica)
        repointed = time.monotonic() - lost_at[0]
        deadline = lost_at[0] + 60
        while time.monotonic() < deadline and sum(1 for t, _ in acknowledged if t > lost_at[0]) < 20:
            time.sleep(0.1)
    finally:
        stop.set()
        for t in threads:
            t.join()
    after = sorted(t for t, _ in acknowledged if t > lost_at[0])
    assert after, f"no write was accepted after the failover; failures: {failures[-5:]}"
    back_in = after[0] - lost_at[0]
    print(f"failover: replica promoted and pooler repointed {repointed:.1f} s after the primary was lost; "
          f"writes accepted again after {back_in:.1f} s; {len(acknowledged)} acknowledged, "
          f"{len(failures)} refused meanwhile")
    assert back_in < 30
    ids = [item_id for _, item_id in acknowledged]
    assert stored_ids(replica, ids) == set(ids), "an acknowledged write is missing on the new primary"
    for server in servers:
        assert server.proc.poll() is None, "a server stopped"
