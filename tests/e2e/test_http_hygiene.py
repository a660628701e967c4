"""Issue 33 (items 2, 7, 8, 9) through the real `cortex serve --http`: the probe's reproductions
of connection abuse, session theft and memory amplification, each on both backends. The
timeouts are set short here (they are settings) so that each test takes seconds; the bounds
asserted are the issue's own ("answers within 2 s", "closed within 60 s", "≤ 100 MB")."""

import http.client
import json
import re
import selectors
import socket
import ssl
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import trustme

from conftest import BIN, server_env
from http_server import INIT, make_key, serve  # noqa: F401 (serve is a fixture)

PROTOCOL = "2025-06-18"


def connection(server) -> http.client.HTTPConnection:
    host, port = server.base.removeprefix("http://").split(":")
    return http.client.HTTPConnection(host, int(port), timeout=30)


def post(conn: http.client.HTTPConnection, message: dict, token: str, session: str | None = None):
    """(status, headers, text) of one POST /mcp on a kept-alive connection."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "Authorization": f"Bearer {token}", "Mcp-Protocol-Version": PROTOCOL, "X-Cortex-Project": "api"}
    if session:
        headers["Mcp-Session-Id"] = session
    conn.request("POST", "/mcp", json.dumps(message).encode(), headers)
    response = conn.getresponse()
    return response.status, response.headers, response.read().decode()


def open_session(server, token: str) -> str:
    conn = connection(server)
    status, head, text = post(conn, INIT, token)
    assert status == 200, text
    session = head["Mcp-Session-Id"]
    status, _, _ = post(conn, {"jsonrpc": "2.0", "method": "notifications/initialized"}, token, session)
    assert status == 202
    conn.close()
    return session


def result_of(text: str) -> dict:
    """The JSON-RPC answer in a JSON or SSE body."""
    for line in text.splitlines():
        body = line.removeprefix("data:").strip()
        if body.startswith("{") and ('"result"' in body or '"error"' in body):
            return json.loads(body)
    return json.loads(text)


def find_call(query: str) -> dict:
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "memory_find", "arguments": {"query": query, "mode": "fast"}}}


def store_call(item: dict, request_id: int = 8) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": "memory_store", "arguments": {"items": [item]}}}


def decision(title: str, rationale: str) -> dict:
    return {"kind": "decision", "data": {"component": "server", "status": "accepted", "title": title,
                                         "rationale": rationale}}


def status_of(pid: int) -> dict:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        fields[name] = value.strip()
    return fields


def resident_mb(pid: int, field: str = "VmRSS") -> float:
    return int(status_of(pid)[field].split()[0]) / 1024


def connections_open(server) -> int:
    _, _, metrics = server.request("GET", "/metrics")
    return int(re.search(r"^cortex_http_connections_open (\d+)$", metrics, re.M).group(1))


def test_slow_header_sockets_under_a_descriptor_limit_leave_health_and_a_keyed_find_answering(db, serve):
    token = make_key(db, "worker", "write")
    # The descriptor limit is what must hold here: the per-address cap (all these sockets come
    # from 127.0.0.1) is lifted above the flood.
    # The header timeout (20 s) outlasts the flood's start: the cap, not the timeout, must keep
    # room for the legitimate requests.
    server = serve(env={"CORTEX_HTTP_HEADER_TIMEOUT_MS": "20000", "CORTEX_HTTP_MAX_CONNECTIONS_PER_IP": "5000"},
                   prefix=("prlimit", "--nofile=512"))
    session = open_session(server, token)
    conn = connection(server)
    stored = post(conn, store_call(decision("The flood gate holds", "slow sockets are shed")), token, session)
    assert stored[0] == 200 and result_of(stored[2])["result"]["structuredContent"]["summary"]["inserted"] == 1, stored
    conn.close()

    started = time.monotonic()
    selector = selectors.DefaultSelector()
    host, port = server.base.removeprefix("http://").split(":")
    sockets = []
    for _ in range(600):
        s = socket.create_connection((host, int(port)), timeout=10)
        s.setblocking(False)
        try:
            s.send(b"P")
        except OSError:
            pass
        selector.register(s, selectors.EVENT_READ)
        sockets.append(s)
    closed: set = set()
    stop = threading.Event()

    def trickle():
        """One header byte a second on each socket; a closed one is noted."""
        while not stop.is_set() and len(closed) < len(sockets):
            for key, _ in selector.select(timeout=0.2):
                try:
                    if key.fileobj.recv(4096) == b"":
                        closed.add(key.fileobj)
                except OSError:
                    closed.add(key.fileobj)
                if key.fileobj in closed:
                    selector.unregister(key.fileobj)
            for s in sockets:
                if s not in closed:
                    try:
                        s.send(b"O")
                    except BlockingIOError:
                        pass
                    except OSError:
                        closed.add(s)
                        selector.unregister(s)
            time.sleep(0.8)

    flood = threading.Thread(target=trickle, daemon=True)
    flood.start()
    try:
        # Until the server holds as many connections as its descriptors allow.
        deadline = time.monotonic() + 20
        while connections_open(server) < 380 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert connections_open(server) >= 380
        # Legitimate requests, with the slow sockets open.
        t0 = time.monotonic()
        status, _, body = server.request("GET", "/health")
        assert status == 200 and time.monotonic() - t0 < 2, (status, body, time.monotonic() - t0)
        t0 = time.monotonic()
        conn = connection(server)
        status, _, text = post(conn, find_call("flood gate"), token, session)
        took = time.monotonic() - t0
        conn.close()
        assert status == 200 and took < 2, (status, took, text)
        hits = result_of(text)["result"]["structuredContent"]["hits"]
        assert any("flood gate" in json.dumps(h) for h in hits), text

        deadline = started + 60
        while len(closed) < len(sockets) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert len(closed) == len(sockets), f"{len(sockets) - len(closed)} partial-header connections still open"
    finally:
        stop.set()
        flood.join(timeout=10)
        for s in sockets:
            s.close()
    status, _, _ = server.request("GET", "/health")
    assert status == 200
    _, _, metrics = server.request("GET", "/metrics")
    closed = {reason: int(n) for reason, n in
              re.findall(r'^cortex_http_connections_closed_total\{reason="(\w+)"\} (\d+)$', metrics, re.M)}
    # Each slow socket was closed by the server: shed for a newer one at the cap of 384 (a
    # quarter of 512 descriptors kept back), or out of time.
    assert closed.get("shed", 0) >= 600 - 384 and closed.get("shed", 0) + closed.get("timeout", 0) >= 600, closed
    assert connections_open(server) <= 2
    assert server.stop() == 0


def test_an_idle_keep_alive_connection_is_closed_after_the_idle_timeout(db, serve):
    server = serve(env={"CORTEX_HTTP_IDLE_TIMEOUT_MS": "1000"})
    conn = connection(server)
    conn.request("GET", "/health")
    response = conn.getresponse()
    assert response.status == 200 and response.getheader("Connection") != "close"
    assert response.getheader("Keep-Alive") == "timeout=1", "clients are told when it closes"
    response.read()
    conn.sock.settimeout(30)
    t0 = time.monotonic()
    assert conn.sock.recv(1) == b"", "the server closed the idle connection"
    assert time.monotonic() - t0 < 15


def test_a_slow_body_is_answered_408_and_frees_its_keys_place_for_calls(db, serve):
    token = make_key(db, "slowpoke", "write")
    server = serve(env={"CORTEX_HTTP_BODY_TIMEOUT_MS": "1000", "CORTEX_HTTP_MAX_CONCURRENT": "1"})
    host, port = server.base.removeprefix("http://").split(":")
    s = socket.create_connection((host, int(port)), timeout=30)
    s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Accept: application/json, text/event-stream\r\n"
              b"Authorization: Bearer " + token.encode() + b"\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"")
    answer = b""
    while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
        chunk = s.recv(65536)
        if not chunk:
            break
        answer += chunk
    s.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408"), answer
    assert b"connection: close" in head.lower()
    assert json.loads(body[body.index(b"{"):body.rindex(b"}") + 1])["error"]["code"] == "body_timeout"
    # The key's only place for a call is free again.
    conn = connection(server)
    status, _, text = post(conn, INIT, token)
    assert status == 200, text


def test_another_key_can_neither_use_nor_end_a_session(db, serve):
    victim = make_key(db, "victim", "write")
    thief = make_key(db, "thief", "admin")
    server = serve()
    session = open_session(server, victim)
    conn = connection(server)
    for method in ("DELETE", "GET", "POST"):
        body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).encode() if method == "POST" else None
        conn.request(method, "/mcp", body, {
            "Authorization": f"Bearer {thief}", "Mcp-Session-Id": session, "Mcp-Protocol-Version": PROTOCOL,
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        response = conn.getresponse()
        text = response.read().decode()
        assert response.status == 404, (method, response.status, text)
        assert json.loads(text)["error"]["code"] == "session_not_found"
        conn = connection(server) if response.getheader("Connection") == "close" else conn
    # The victim's session is whole: it lists its tools, and its owner ends it.
    conn = connection(server)
    status, _, text = post(conn, {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, victim, session)
    assert status == 200 and "memory_find" in text, text
    conn.request("DELETE", "/mcp", None, {"Authorization": f"Bearer {victim}", "Mcp-Session-Id": session,
                                          "Mcp-Protocol-Version": PROTOCOL})
    response = conn.getresponse()
    response.read()
    assert response.status in (200, 202, 204)
    status, _, _ = post(conn, {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}, victim, session)
    assert status == 404


def test_a_key_past_its_session_cap_loses_its_oldest_session_only(db, serve):
    busy = make_key(db, "busy", "write")
    other = make_key(db, "other", "write")
    server = serve(env={"CORTEX_HTTP_MAX_SESSIONS_PER_KEY": "3"})
    theirs = open_session(server, other)
    mine = [open_session(server, busy) for _ in range(4)]
    time.sleep(0.2)
    conn = connection(server)
    listing = {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}
    assert post(conn, listing, busy, mine[0])[0] == 404, "the oldest ended"
    for session in mine[1:]:
        assert post(conn, listing, busy, session)[0] == 200
    assert post(conn, listing, other, theirs)[0] == 200, "another key's session stays"


def test_two_thousand_initializes_from_one_key_grow_resident_memory_by_at_most_100_mb(db, serve):
    token = make_key(db, "opener", "write", "--rate", "100000/s")
    server = serve()
    pid = server.proc.pid
    conn = connection(server)
    post(conn, INIT, token)
    before = resident_mb(pid)
    sessions = []
    for _ in range(2000):
        status, head, text = post(conn, INIT, token)
        assert status == 200, text
        sessions.append(head["Mcp-Session-Id"])
    time.sleep(1)
    grown = resident_mb(pid) - before
    print(f"RSS before {before:.0f} MB, after 2000 initializes +{grown:.0f} MB")
    assert grown <= 100, f"RSS grew {grown:.0f} MB"
    listing = {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}
    assert post(conn, listing, token, sessions[0])[0] == 404, "past the cap, the oldest sessions ended"
    assert post(conn, listing, token, sessions[-1])[0] == 200


def test_a_dozen_concurrent_26_mb_bodies_stay_within_the_byte_budget(db, serve):
    token = make_key(db, "bulky", "write", "--rate", "1000/s")
    server = serve(env={"CORTEX_EMBEDDER": "none"})
    pid = server.proc.pid
    session = open_session(server, token)
    before = resident_mb(pid, "VmHWM")
    content = "x" * (26 * 1024 * 1024)

    def send(i):
        # Each request its own id: requests in one session are told apart by it.
        payload = json.dumps(store_call(decision("A large rationale", content), 100 + i)).encode()
        conn = connection(server)
        conn.request("POST", "/mcp", payload, {
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {token}", "Mcp-Protocol-Version": PROTOCOL, "Mcp-Session-Id": session,
            "X-Cortex-Project": "api"})
        response = conn.getresponse()
        text = response.read().decode()
        conn.close()
        return response.status, response.getheader("Retry-After"), text

    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(send, range(12)))
    peak = resident_mb(pid, "VmHWM") - before
    print(f"peak RSS {before:.0f} MB before, +{peak:.0f} MB with 12 concurrent 26 MB bodies;"
          f" statuses {sorted(a[0] for a in answers)}")
    for status, retry_after, text in answers:
        assert status in (200, 503), (status, text[:300])
        if status == 503:
            assert json.loads(text)["error"]["code"] == "busy" and int(retry_after) >= 1
    assert any(status == 503 for status, _, _ in answers), "12 × 26 MB is over the default budget of 128 MiB"
    # Not ~1 GB, as the probe saw: the peak varies with how the bodies overlap (BENCHMARKS.md has
    # the range), the budget keeps it well below.
    assert peak <= 400, f"peak RSS grew {peak:.0f} MB"
    assert server.request("GET", "/health")[0] == 200


def test_every_keep_alive_client_over_its_rate_receives_its_429_with_retry_after(db, serve):
    token = make_key(db, "limited", "write", "--rate", "1/min")
    server = serve()

    def client(_):
        conn = connection(server)
        try:
            conn.request("GET", "/health")
            conn.getresponse().read()
            answers = [post(conn, INIT, token) for _ in range(2)]
        except (ConnectionError, http.client.HTTPException) as e:
            return f"failed: {e!r}"
        finally:
            conn.close()
        return [(status, head.get("Retry-After")) for status, head, _ in answers]

    with ThreadPoolExecutor(200) as pool:
        outcomes = list(pool.map(client, range(200)))
    told = [o for o in outcomes if not isinstance(o, str) and any(s == 429 and r for s, r in o)]
    assert len(told) >= 198, [o for o in outcomes if o not in told][:5]


def test_stalled_tls_connections_are_closed_within_the_header_timeout(tmp_path):
    """TLS only, so once: a stalled handshake, and headers stalled after a whole handshake, are
    bounded by the header timeout (the probe: 50/50 partial connections over TLS still open after
    65 s)."""
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert.cert_chain_pems[0].write_to_path(str(tmp_path / "server.crt"))
    cert.private_key_pem.write_to_path(str(tmp_path / "server.key"))
    server = subprocess.Popen(
        [BIN, "serve", "--http", "127.0.0.1:0", "--tls-cert", str(tmp_path / "server.crt"),
         "--tls-key", str(tmp_path / "server.key")],
        env=server_env(tmp_path / "memory.db", CORTEX_LOG="info", CORTEX_HTTP_HEADER_TIMEOUT_MS="2000"),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        port = None
        while port is None:
            line = server.stderr.readline()
            assert line, "the server exited"
            found = re.search(r"at https://127\.0\.0\.1:(\d+)/mcp", line)
            port = int(found.group(1)) if found else None
        threading.Thread(target=server.stderr.read, daemon=True).start()
        context = ssl.create_default_context(cadata=ca.cert_pem.bytes().decode())
        started = time.monotonic()
        stalled = []
        for i in range(50):
            s = socket.create_connection(("127.0.0.1", port), timeout=60)
            if i % 2:
                s.sendall(b"\x16\x03\x01")  # the first bytes of a ClientHello, and no more
            else:
                s = context.wrap_socket(s, server_hostname="127.0.0.1")
                s.sendall(b"G")  # a whole handshake, then one byte of a request
            stalled.append(s)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                tls.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                assert tls.recv(4096).startswith(b"HTTP/1.1 200")
        for s in stalled:
            s.settimeout(max(1.0, started + 60 - time.monotonic()))
            try:
                assert s.recv(1) == b"", "closed without an answer"
            except TimeoutError:
                raise AssertionError("a stalled TLS connection was still open after 60 s") from None
            except (ssl.SSLError, ConnectionResetError):
                pass
            s.close()
        assert time.monotonic() - started < 60
    finally:
        server.terminate()
        server.wait(timeout=30)


def sessions_open(server) -> int:
    status, _, text = server.request("GET", "/metrics")
    assert status == 200
    return int(re.search(r"^cortex_http_sessions_open (\d+)$", text, re.M).group(1))


def test_sessions_idle_past_their_timeout_end_and_are_let_go(db, serve):
    token = make_key(db, "forgetful", "write", "--rate", "100000/s")
    server = serve(env={"CORTEX_HTTP_SESSION_IDLE_TIMEOUT_MS": "3000", "CORTEX_HTTP_MAX_SESSIONS_PER_KEY": "5000"})
    pid = server.proc.pid
    conn = connection(server)
    post(conn, INIT, token)
    before = resident_mb(pid)

    def wave() -> list[str]:
        opened = []
        for _ in range(1000):
            status, head, text = post(conn, INIT, token)
            assert status == 200, text
            opened.append(head["Mcp-Session-Id"])
        return opened

    first = wave()
    after_first = resident_mb(pid) - before
    assert sessions_open(server) > 0, "the sessions opened last are open"
    deadline = time.monotonic() + 30
    while sessions_open(server) > 0 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert sessions_open(server) == 0, "every idle session ended and was let go"
    listing = {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}
    assert post(conn, listing, token, first[0])[0] == 404
    wave()
    after_second = resident_mb(pid) - before
    print(f"RSS +{after_first:.0f} MB after 1,000 sessions, +{after_second:.0f} MB after 1,000 more"
          " once the first had expired")
