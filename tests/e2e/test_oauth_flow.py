"""Issue 36, the whole flow a client like Claude Code performs, against a real OpenID Connect
provider started locally (node's oidc-provider, tests/e2e/oidc/provider.mjs): discovery from
Cortex's 401, dynamic client registration, authorization code with PKCE and the `resource`
parameter (RFC 8707), the token, MCP calls with it through the official client, refresh, and
revocation. The access tokens carry the user's org and projects: JWTs for Cortex's resource
(ES256), or opaque tokens that Cortex introspects (RFC 7662) as its own client at the provider."""

import base64
import hashlib
import re
import secrets
import shutil
import subprocess
import threading
import urllib.parse
from pathlib import Path

import anyio
import httpx
import pytest

from conftest import TIMEOUT
from http_server import INIT, cortex, http_session, serve  # noqa: F401 (serve is a fixture)
from test_oauth import free_port

OIDC = Path(__file__).resolve().parent / "oidc"
REDIRECT = "http://127.0.0.1:8976/callback"
# Cortex's client at the provider, for introspection (tests/e2e/oidc/provider.mjs).
INTROSPECTION = {"CORTEX_OAUTH_CLIENT_ID": "cortex", "CORTEX_OAUTH_CLIENT_SECRET": "cortex-introspection-secret"}


@pytest.fixture(params=["jwt", "opaque"])
def provider(request):
    """The provider on a free port, for the resource of a Cortex server on another, issuing
    JWT or opaque access tokens: yields (issuer, resource, cortex port, format)."""
    if shutil.which("node") is None or not (OIDC / "node_modules").exists():
        pytest.fail("node and tests/e2e/oidc/node_modules are needed: run scripts/test (npm ci --prefix tests/e2e/oidc)")
    port, cortex_port = free_port(), free_port()
    resource = f"http://127.0.0.1:{cortex_port}/mcp"
    proc = subprocess.Popen(["node", str(OIDC / "provider.mjs"), str(port), resource, request.param],
                            stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready = threading.Event()
    lines: list[str] = []

    def watch():
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("listening "):
                ready.set()
        ready.set()

    threading.Thread(target=watch, daemon=True).start()
    assert ready.wait(TIMEOUT) and proc.poll() is None, "".join(lines) + proc.stderr.read()
    yield f"http://127.0.0.1:{port}", resource, cortex_port, request.param
    proc.terminate()
    proc.wait(timeout=TIMEOUT)


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def authorize(http: httpx.Client, endpoint: str, params: dict) -> str:
    """The authorization request in a user agent (keeping the provider's cookies), following
    its redirects through sign-in and consent to the client's redirect URI: the code."""
    url = endpoint + "?" + urllib.parse.urlencode(params)
    for _ in range(10):
        if url.startswith(REDIRECT):
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
            assert query["state"] == [params["state"]], query
            assert "code" in query, query
            return query["code"][0]
        answer = http.get(url, follow_redirects=False)
        assert answer.status_code in (302, 303), (answer.status_code, answer.text[:500])
        url = urllib.parse.urljoin(url, answer.headers["location"])
    raise AssertionError("the authorization request did not come back to the redirect URI")


def test_sign_in_with_a_real_provider_then_mcp_with_the_token(db, serve, provider):
    issuer, resource, port, token_format = provider
    server = serve(addr=f"127.0.0.1:{port}", env={
        "CORTEX_OAUTH_ISSUER": issuer, "CORTEX_PUBLIC_URL": f"http://127.0.0.1:{port}",
        **(INTROSPECTION if token_format == "opaque" else {})})

    # Discovery, from the 401 on.
    status, head, _ = server.post_mcp(INIT)
    assert status == 401
    metadata_url = re.search(r'resource_metadata="([^"]+)"', head["WWW-Authenticate"]).group(1)
    with httpx.Client(timeout=TIMEOUT) as http:
        metadata = http.get(metadata_url).json()
        assert metadata["resource"] == resource and metadata["authorization_servers"] == [issuer]
        config = http.get(issuer + "/.well-known/openid-configuration").json()
        assert config["issuer"] == issuer and "S256" in config["code_challenge_methods_supported"]

        # Dynamic client registration, as a native app with a loopback redirect.
        client = http.post(config["registration_endpoint"], json={
            "application_type": "native", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "client_name": "an MCP client"})
        assert client.status_code == 201, client.text
        client_id = client.json()["client_id"]

        verifier, challenge = pkce()
        code = authorize(http, config["authorization_endpoint"], {
            "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT,
            "scope": "openid offline_access memory:read memory:write", "state": secrets.token_urlsafe(8),
            "code_challenge": challenge, "code_challenge_method": "S256", "resource": resource, "prompt": "consent"})
        tokens = http.post(config["token_endpoint"], data={
            "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": client_id,
            "code_verifier": verifier, "resource": resource})
        assert tokens.status_code == 200, tokens.text
        tokens = tokens.json()
        access, refresh = tokens["access_token"], tokens["refresh_token"]
        assert (access.count(".") == 2) == (token_format == "jwt"), access

        async def use(token, store):
            async with http_session(server.url, token) as c:
                if store:
                    # The item names another author: a claim, kept apart from the token's subject.
                    stored = await c.store({"kind": "todo", "content": "signed in through the team's provider",
                                            "source": {"actor": "mallory"}})
                    assert stored["summary"]["inserted"] == 1
                found = await c.find(query="team's provider", mode="fast")
                assert len(found["hits"]) == 1, found
                return found["hits"][0]["id"]

        item = anyio.run(use, access, True)

        # Refresh: a new access token, accepted as the first was.
        refreshed = http.post(config["token_endpoint"], data={
            "grant_type": "refresh_token", "refresh_token": refresh, "client_id": client_id, "resource": resource})
        assert refreshed.status_code == 200, refreshed.text
        new_access = refreshed.json()["access_token"]
        assert new_access != access
        anyio.run(use, new_access, False)

        # Revocation: the refresh token is dead at the provider. An opaque access token revoked
        # there is refused by Cortex as soon as it asks the provider (a token it checked within
        # the last minute is trusted until that answer ends); a JWT is checked without asking,
        # and ends at its expiry.
        latest_refresh = refreshed.json().get("refresh_token", refresh)
        if token_format == "opaque":
            third = http.post(config["token_endpoint"], data={
                "grant_type": "refresh_token", "refresh_token": latest_refresh, "client_id": client_id,
                "resource": resource})
            assert third.status_code == 200, third.text
            latest_refresh = third.json().get("refresh_token", latest_refresh)
            unused = third.json()["access_token"]
            revoked = http.post(config["revocation_endpoint"], data={"token": unused, "client_id": client_id})
            assert revoked.status_code == 200, revoked.text
            status, _, body = server.post_mcp(INIT, {"Authorization": f"Bearer {unused}"})
            assert (status, body["error"]["code"]) == (401, "invalid_token"), body
            assert "not active" in body["error"]["message"]
        revoked = http.post(config["revocation_endpoint"], data={"token": latest_refresh, "client_id": client_id})
        assert revoked.status_code == 200, revoked.text
        again = http.post(config["token_endpoint"], data={
            "grant_type": "refresh_token", "refresh_token": latest_refresh, "client_id": client_id,
            "resource": resource})
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant", again.text

    # The item's own trail: `cortex serve` started in a git checkout records that checkout's
    # merges on the trail too.
    records = cortex(db, "audit", "--json", "--item", item)["records"]
    inserts = [r for r in records if r["operation"] == "insert"]
    assert [r["principal"] for r in inserts] == [f"oauth:alice at {issuer} (client {client_id})"], inserts
    assert inserts[0]["via"] == "memory_store" and "actor" not in inserts[0], inserts
    assert inserts[0]["claimed"]["actor"] == "mallory", "the claimed author stays a claim"
    assert inserts[0]["scope"]["org"] == "acme" and inserts[0]["scope"]["project"] == "api"
