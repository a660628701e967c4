"""Issue 18, item 7: the team server over HTTPS. The test makes its own CA and a certificate for
127.0.0.1 (trustme), starts the real `cortex serve --http … --tls-cert … --tls-key …`, and
talks to it with the official Python MCP client over Streamable HTTP, trusting that CA: the
tools work over TLS; a client that does not trust the CA, or speaks plain HTTP to the TLS port,
gets nothing; half a TLS configuration is refused at start, naming the missing flag."""

import re
import socket
import ssl
import subprocess
import time

import anyio
import httpx2
import pytest
import trustme
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from conftest import BIN, TIMEOUT, Client, run, server_env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def https_server(tmp_path):
    """(the server's https URL, the CA that signed its certificate)."""
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert.cert_chain_pems[0].write_to_path(str(tmp_path / "server.crt"))
    cert.private_key_pem.write_to_path(str(tmp_path / "server.key"))
    db = tmp_path / "memory.db"
    port = free_port()
    server = subprocess.Popen(
        [BIN, "serve", "--http", f"127.0.0.1:{port}", "--tls-cert", str(tmp_path / "server.crt"),
         "--tls-key", str(tmp_path / "server.key")],
        env=server_env(db, CORTEX_LOG="info"), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        # The server says where it listens on stderr once it accepts connections.
        deadline = time.monotonic() + TIMEOUT
        seen = ""
        while time.monotonic() < deadline:
            line = server.stderr.readline()
            seen += line
            if re.search(r"serving MCP over HTTP at https://", line):
                break
            if server.poll() is not None:
                pytest.fail(f"the server exited: {seen}{server.stderr.read()}")
        else:
            pytest.fail(f"the server did not say it listens: {seen}")
        yield f"https://127.0.0.1:{port}/mcp", ca
    finally:
        server.terminate()
        server.wait(timeout=TIMEOUT)


def test_the_tools_work_over_https_for_a_client_that_trusts_the_ca(https_server):
    url, ca = https_server

    async def body():
        async with httpx2.AsyncClient(verify=trusting(ca)) as http:
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=TIMEOUT) as session:
                    with anyio.fail_after(TIMEOUT):
                        await session.initialize()
                    client = Client(session)
                    out = await client.store({"kind": "section", "data": {"title": "Over HTTPS", "body": "sealed"}})
                    assert out["summary"]["inserted"] == 1
                    hits = (await client.find(query="sealed"))["hits"]
                    assert [h["title"] for h in hits] == ["Over HTTPS"]

    run(body)


def trusting(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


def test_a_client_that_does_not_trust_the_ca_or_speaks_plain_http_gets_nothing(https_server):
    url, _ = https_server
    with pytest.raises(httpx2.ConnectError) as refused:
        httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=TIMEOUT)
    assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value) or "certificate" in str(refused.value).lower()
    with pytest.raises(httpx2.HTTPError):
        httpx2.post(url.replace("https://", "http://"), json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                    timeout=TIMEOUT)


def test_half_a_tls_configuration_is_refused_at_start_naming_the_flag(tmp_path):
    ca = trustme.CA()
    ca.issue_cert("127.0.0.1").cert_chain_pems[0].write_to_path(str(tmp_path / "server.crt"))
    done = subprocess.run([BIN, "serve", "--http", "127.0.0.1:0", "--tls-cert", str(tmp_path / "server.crt")],
                          env=server_env(tmp_path / "memory.db"), capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 2, done.stderr
    assert "--tls-key" in done.stderr, done.stderr
    (tmp_path / "bad.key").write_text("not a key")
    done = subprocess.run([BIN, "serve", "--http", "127.0.0.1:0", "--tls-cert", str(tmp_path / "server.crt"),
                           "--tls-key", str(tmp_path / "bad.key")],
                          env=server_env(tmp_path / "memory.db"), capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 2, done.stderr
    assert "--tls-key" in done.stderr and "private key" in done.stderr, done.stderr
