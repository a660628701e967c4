"""Issue 18, item 7: TLS to PostgreSQL. The test makes its own CA and server certificate
(trustme) and serves PostgreSQL's TLS negotiation with it in front of the test server
(`tls_front.py`: the wheel's PostgreSQL is built without SSL), then connects the real binary
with each sslmode: verify-full with the right CA works and the connection really is encrypted
(a TLS handshake completed for it); the wrong CA, or a host the certificate does not name, is
refused with a message that says what to fix."""

import os
import subprocess
import urllib.parse
import uuid
from pathlib import Path

import psycopg
import pytest
import trustme

from conftest import BIN, connect, run, server_env
from tls_front import TlsFront


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    """(URL of the test database through a TLS front with a certificate for 127.0.0.1, the
    front, folder with ca.pem (its CA) and other-ca.pem (a CA that signed nothing of it))."""
    server = os.environ.get("CORTEX_TEST_DATABASE_URL")
    if not server:
        pytest.fail("CORTEX_TEST_DATABASE_URL is not set: run scripts/test, or "
                    "export CORTEX_TEST_DATABASE_URL=$(scripts/postgres start)")
    folder = tmp_path_factory.mktemp("tls")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert.cert_chain_pems[0].write_to_path(str(folder / "server.crt"))
    cert.private_key_pem.write_to_path(str(folder / "server.key"))
    ca.cert_pem.write_to_path(str(folder / "ca.pem"))
    trustme.CA().cert_pem.write_to_path(str(folder / "other-ca.pem"))
    upstream = urllib.parse.urlsplit(server)
    front = TlsFront(upstream.port, str(folder / "server.crt"), str(folder / "server.key"))
    name = f"cortex_tls_{uuid.uuid4().hex}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    url = urllib.parse.urlunsplit(upstream._replace(netloc=f"{upstream.username}@127.0.0.1:{front.port}",
                                                     path="/" + name, query=""))
    yield url, front, folder
    front.close()
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def with_query(url: str, host: str | None = None, **params: str) -> str:
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc if host is None else parts.netloc.replace("127.0.0.1", host)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc, query=urllib.parse.urlencode(params)))


def stats(db: str) -> subprocess.CompletedProcess:
    return subprocess.run([BIN, "stats", "--db", db], env=server_env(db), capture_output=True, text=True,
                          timeout=60)


def test_verify_full_with_the_right_ca_connects_over_tls(tls_server):
    url, front, folder = tls_server
    db = with_query(url, sslmode="verify-full", sslrootcert=str(folder / "ca.pem"))
    before = front.handshakes

    async def body():
        async with connect(db) as client:
            out = await client.store({"kind": "section", "data": {"title": "Over TLS", "body": "encrypted"}})
            assert out["summary"]["inserted"] == 1
            hits = (await client.find(query="encrypted"))["hits"]
            assert [h["title"] for h in hits] == ["Over TLS"]

    run(body)
    assert front.handshakes > before, "the server was reached over TLS"
    # `disable` is plain: no handshake, and the front relays it as it came.
    before = front.handshakes
    done = stats(with_query(url, sslmode="disable"))
    assert done.returncode == 0, done.stderr
    assert front.handshakes == before


def test_require_encrypts_without_checking_the_certificate(tls_server):
    url, front, _ = tls_server
    before = front.handshakes
    done = stats(with_query(url, sslmode="require"))
    assert done.returncode == 0, done.stderr
    assert front.handshakes > before


def test_the_wrong_ca_is_refused_with_a_clear_message(tls_server):
    url, _, folder = tls_server
    for mode in ["verify-full", "verify-ca"]:
        done = stats(with_query(url, sslmode=mode, sslrootcert=str(folder / "other-ca.pem")))
        assert done.returncode != 0, done.stdout
        assert "certificate" in done.stderr and "sslrootcert" in done.stderr, done.stderr


def test_verify_full_checks_the_host_and_verify_ca_does_not(tls_server):
    url, _, folder = tls_server
    ca = str(folder / "ca.pem")
    # The certificate names 127.0.0.1 only; `localhost` reaches the same server.
    done = stats(with_query(url, host="localhost", sslmode="verify-full", sslrootcert=ca))
    assert done.returncode != 0, done.stdout
    assert "certificate" in done.stderr, done.stderr
    done = stats(with_query(url, host="localhost", sslmode="verify-ca", sslrootcert=ca))
    assert done.returncode == 0, done.stderr


def test_a_verify_mode_without_a_ca_says_how_to_name_one(tls_server):
    url, _, _ = tls_server
    done = stats(with_query(url, sslmode="verify-full"))
    assert done.returncode != 0
    assert "sslrootcert=" in done.stderr, done.stderr
    done = stats(with_query(url, sslmode="verify-ca", sslrootcert=str(Path("/no/such/ca.pem"))))
    assert done.returncode != 0
    assert "/no/such/ca.pem" in done.stderr, done.stderr
