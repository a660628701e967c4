"""Issue 36: `cortex serve --http` as an OAuth 2.1 resource server, checked from outside with a
local issuer of our own (tests/e2e/oauth_issuer.py) that mints RS256 and ES256 tokens and
serves discovery and a JWKS: the metadata document and the 401's challenge, tokens as
principals exactly like keys (role, tenant bound, audit principal), every refusal, a key rotated
without a restart, no token from a query string, and API keys still working."""

import json
import socket
import subprocess
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

import anyio
import pytest

from conftest import BIN, TIMEOUT, server_env
from oauth_issuer import LocalIssuer
from http_server import INIT, HttpServer, cortex, error_code, http_session, make_key, serve  # noqa: F401 (serve is a fixture)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def issuer():
    issuer = LocalIssuer()
    yield issuer
    issuer.close()


def oauth_server(serve, issuer, **env):
    """A server on a port known in advance: its public URL (the tokens' audience) names it."""
    port = free_port()
    public = f"http://127.0.0.1:{port}"
    server = serve(addr=f"127.0.0.1:{port}", env={"CORTEX_OAUTH_ISSUER": issuer.url, "CORTEX_PUBLIC_URL": public, **env})
    server.audience = public + "/mcp"
    return server


def metadata_url(server) -> str:
    return server.base + "/.well-known/oauth-protected-resource/mcp"


def test_metadata_and_the_challenge_tell_a_client_where_to_sign_in(db, serve, issuer):
    server = oauth_server(serve, issuer)
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        status, _, doc = server.request("GET", path)
        assert status == 200, doc
        assert doc["resource"] == server.audience
        assert doc["authorization_servers"] == [issuer.url], "the issuer exactly as configured"
        assert doc["scopes_supported"] == ["memory:read", "memory:write", "memory:admin"]
        assert doc["bearer_methods_supported"] == ["header"]
    status, head, body = server.post_mcp(INIT)
    assert (status, body["error"]["code"]) == (401, "missing_key"), body
    challenge = head["WWW-Authenticate"]
    assert challenge.startswith("Bearer ") and f'resource_metadata="{metadata_url(server)}"' in challenge
    assert 'scope="memory:read memory:write"' in challenge
    assert "invalid_token" not in challenge, "a request with no token is not told its token is bad"
    log = "".join(server.stderr_lines)
    assert "API keys and OAuth access tokens" in log and "serving without authentication" not in log, log


def test_tokens_are_principals_like_keys(db, serve, issuer):
    key = make_key(db, "writer-key", "write", "--project", "api")
    server = oauth_server(serve, issuer)
    aud = server.audience
    writer = issuer.token(aud)  # RS256
    reader = issuer.token(aud, kid="ec-1", sub="bob", scope="memory:read")  # ES256
    evil = issuer.token(aud, kid="ed-1", sub="mallory", org="evil", scope="memory:read memory:write")  # EdDSA

    async def body():
        async with http_session(server.url, writer) as w:
            stored = await w.store({"kind": "decision", "data": {
                "component": "auth", "status": "accepted", "title": "Sign in through the team's identity provider",
                "rationale": "no keys to hand out"}})
            assert stored["summary"]["inserted"] == 1
            found = await w.find(query="identity provider", mode="fast")
            assert [h["id"] for h in found["hits"]] == [stored["results"][0]["id"]]
        async with http_session(server.url, reader) as r:
            found = await r.find(query="identity provider", mode="fast")
            assert len(found["hits"]) == 1
            forged = {"kind": "todo", "content": "nope", "source": {"actor": "alice"}}
            is_error, out = await r.call("memory_store", {"items": [forged]})
            assert is_error and error_code(out) == "forbidden_role", out
            assert "oauth:bob" in out["error"]["message"] and "memory:write" in out["error"]["human_hint"], out
        async with http_session(server.url, evil) as e:
            found = await e.find(query="identity provider", mode="fast", widen="all")
            assert found["hits"] == [], "org evil sees none of acme's items"
            mine = await e.store({"kind": "todo", "content": "evil's own identity provider todo"})
            assert mine["summary"]["inserted"] == 1
        async with http_session(server.url, key) as k:
            found = await k.find(query="identity provider", mode="fast", widen="all")
            assert len(found["hits"]) == 1, "API keys keep working, and see none of evil's items"
            assert "evil" not in str(found)
        return stored["results"][0]["id"]

    written = anyio.run(body)
    # The trail names each token's subject at the issuer that signed it, and its client: who
    # the server established, not a name the client gave.
    trail = cortex(db, "audit", "--json", "--item", written)["records"]
    assert trail[0]["principal"] == f"oauth:alice at {issuer.url} (client test-client)", trail
    assert trail[0]["via"] == "memory_store" and "actor" not in trail[0], trail
    blocked = [r for r in cortex(db, "audit", "--json")["records"] if r["operation"] == "blocked"]
    assert [b["principal"] for b in blocked] == [f"oauth:bob at {issuer.url} (client test-client)"], blocked
    unclaimed = json.dumps({field: value for field, value in blocked[0].items() if field != "claimed"})
    assert "alice" not in unclaimed, "bob's claim to be alice is at most a claim"
    evil_item = cortex(db, "find", "evil's own", "--mode", "fast", "--org", "evil", "--project", "api", "--json")
    assert evil_item["hits"], "the token's org claim is where its items go"


def refusals(issuer, aud) -> dict:
    now = int(time.time())
    return {
        "wrong aud": issuer.token("http://127.0.0.1:1/mcp"),
        "wrong iss": issuer.token(aud, iss="http://127.0.0.1:1"),
        "expired": issuer.token(aud, exp=now - 3600, iat=now - 7200, nbf=now - 7200),
        "nbf in the future": issuer.token(aud, nbf=now + 3600),
        "bad signature": issuer.forged(aud),
        "another key's algorithm": issuer.token(aud, kid="ec-1", header_kid="rsa-1"),
        "tampered claims": tamper(issuer.token(aud, scope="memory:read"), issuer.claims(aud, scope="memory:admin")),
        "alg none": issuer.unsigned(aud),
        "HS256 with the public key": issuer.hmac_with_public_key(aud),
        "unknown kid": issuer.token(aud, header_kid="not-published"),
        "no exp": issuer.token(aud, exp=None),
        "not a JWT": "opaque-token-the-issuer-never-made",
    }


expected_reason = {
    "wrong aud": "not issued for this server",
    "wrong iss": "not issued by",
    "expired": "expired",
    "nbf in the future": "not valid yet",
    "bad signature": "signature does not verify",
    "another key's algorithm": "signs with RS256",
    "tampered claims": "signature does not verify",
    "alg none": "not a JWT signed with",
    "HS256 with the public key": "signed with HS256",
    "unknown kid": "does not publish",
    "no exp": "no `exp` claim",
    "not a JWT": "not a JWT",
}


def tamper(token: str, claims: dict) -> str:
    import base64
    import json

    head, _, signature = token.split(".")
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{head}.{body}.{signature}"


def test_every_bad_token_is_refused_with_401_and_the_keys_are_fetched_once(db, serve, issuer):
    server = oauth_server(serve, issuer)
    aud = server.audience
    # The server fetched the issuer's keys as it started; a good token needs no further fetch.
    status, _, body = server.post_mcp(INIT, {"Authorization": f"Bearer {issuer.token(aud)}"})
    assert status == 200, body
    for case, token in refusals(issuer, aud).items():
        status, head, body = server.post_mcp(INIT, {"Authorization": f"Bearer {token}"})
        assert status == 401, (case, status, body)
        assert body["error"]["code"] == "invalid_token", (case, body)
        assert body["error"]["human_hint"], case
        assert expected_reason[case] in body["error"]["message"], (case, body)
        challenge = head["WWW-Authenticate"]
        assert 'error="invalid_token"' in challenge and f'resource_metadata="{metadata_url(server)}"' in challenge
    # A made-up `kid` does not make the server fetch the keys again within the minute.
    assert len(issuer.jwks_fetches) == 1, issuer.jwks_fetches

    no_scope = issuer.token(aud, scope="openid profile")
    status, head, body = server.post_mcp(INIT, {"Authorization": f"Bearer {no_scope}"})
    assert (status, body["error"]["code"]) == (403, "insufficient_scope"), body
    assert 'error="insufficient_scope"' in head["WWW-Authenticate"]
    no_org = issuer.token(aud, org=None)
    status, _, body = server.post_mcp(INIT, {"Authorization": f"Bearer {no_org}"})
    assert (status, body["error"]["code"]) == (403, "forbidden_token") and "org" in body["error"]["message"], body
    outside = issuer.token(aud)
    status, _, body = server.post_mcp(INIT, {"Authorization": f"Bearer {outside}", "X-Cortex-Project": "web"})
    assert (status, body["error"]["code"]) == (403, "forbidden_scope"), "the projects claim bounds the token"


def test_a_single_tenant_server_puts_every_token_in_its_org(db, serve, issuer):
    server = oauth_server(serve, issuer, CORTEX_OAUTH_ORG="acme")
    token = issuer.token(server.audience, org="anything", projects=None)

    async def body():
        async with http_session(server.url, token, headers={"X-Cortex-Project": "web"}) as c:
            stored = await c.store({"kind": "todo", "content": "single tenant todo"})
            assert stored["summary"]["inserted"] == 1

    anyio.run(body)
    assert cortex(db, "find", "single tenant", "--mode", "fast", "--org", "acme", "--project", "web", "--json")["hits"]
    no_org = issuer.token(server.audience, org=None)
    assert server.post_mcp(INIT, {"Authorization": f"Bearer {no_org}"})[0] == 200, "the org claim is not read"


def test_behind_a_proxy_on_this_machine_the_public_host_is_admitted(db, serve, issuer):
    """A loopback server behind a TLS proxy gets requests naming the public host: admitted for
    the public URL's host, while other hosts stay refused (DNS rebinding)."""
    public = "https://memory.example.test"
    server = serve(env={"CORTEX_OAUTH_ISSUER": issuer.url, "CORTEX_PUBLIC_URL": public})
    token = issuer.token(public + "/mcp")
    head = {"Authorization": f"Bearer {token}"}
    status, _, body = server.post_mcp(INIT, {**head, "Host": "memory.example.test"})
    assert status == 200, body
    status, _, body = server.post_mcp(INIT, {**head, "Host": "rebound.example.test"})
    assert status == 403, body


def test_a_token_in_the_query_string_is_never_accepted(db, serve, issuer):
    server = oauth_server(serve, issuer)
    token = issuer.token(server.audience)
    for name in ("access_token", "token", "authorization"):
        query = urllib.parse.urlencode({name: token})
        status, head, body = server.request("POST", f"/mcp?{query}", INIT_BYTES, MCP_HEADERS)
        assert (status, body["error"]["code"]) == (401, "missing_key"), (name, body)
        assert "resource_metadata=" in head["WWW-Authenticate"]
    log = "".join(server.stderr_lines)
    assert token not in log, "a token is never written to the log"


INIT_BYTES = __import__("json").dumps(INIT).encode()
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def test_a_rotated_key_is_accepted_without_a_restart(tmp_path, issuer):
    """The issuer publishes a new key and drops the old one: tokens signed with the new key
    are accepted once the key set is fetched again (at most once a minute), without a restart,
    and the old key's tokens are refused from then on. (Not backend behaviour: SQLite only, as
    it waits out the minute.)"""
    servers = []

    def serve(**kwargs):
        servers.append(HttpServer(str(tmp_path / "memory.db"), **kwargs))
        return servers[-1]

    server = oauth_server(serve, issuer)
    aud = server.audience
    old = issuer.token(aud)
    assert server.post_mcp(INIT, {"Authorization": f"Bearer {old}"})[0] == 200
    first_fetch = issuer.jwks_fetches[0]
    issuer.rotate("rsa-2")
    new = issuer.token(aud, kid="rsa-2")
    status, _, body = server.post_mcp(INIT, {"Authorization": f"Bearer {new}"})
    assert status == 401 and len(issuer.jwks_fetches) == 1, "within the minute, the keys are not fetched again"
    time.sleep(max(0.0, first_fetch + 61 - time.monotonic()))
    status, _, body = server.post_mcp(INIT, {"Authorization": f"Bearer {new}"})
    assert status == 200, body
    assert len(issuer.jwks_fetches) == 2
    status, _, body = server.post_mcp(INIT, {"Authorization": f"Bearer {old}"})
    assert (status, body["error"]["code"]) == (401, "invalid_token"), "the dropped key is no longer accepted"
    assert "rsa-1" in body["error"]["message"]
    assert server.stop() == 0


def test_a_hanging_key_endpoint_delays_no_valid_token(tmp_path, issuer):
    """The issuer's key endpoint accepts and never answers, while tokens naming made-up `kid`s
    arrive together: the server fetches the key set once (not once per token), answers each of
    them 401 from the keys it holds, and a valid token's initialize is answered while the
    endpoint still hangs. (SQLite only: it waits out the minute between fetches.)"""
    server = oauth_server(lambda **kw: HttpServer(str(tmp_path / "memory.db"), **kw), issuer)
    aud = server.audience
    valid = issuer.token(aud)
    assert server.post_mcp(INIT, {"Authorization": f"Bearer {valid}"})[0] == 200
    assert len(issuer.jwks_fetches) == 1
    time.sleep(max(0.0, issuer.jwks_fetches[0] + 61 - time.monotonic()))
    issuer.hang_jwks()
    made_up = [issuer.token(aud, header_kid=f"made-up-{i}") for i in range(8)]
    with ThreadPoolExecutor(len(made_up)) as pool:
        refused = list(pool.map(lambda t: server.post_mcp(INIT, {"Authorization": f"Bearer {t}"}), made_up))
        status, _, body = server.post_mcp(INIT, {"Authorization": f"Bearer {valid}"})
    assert status == 200, body
    for status, _, body in refused:
        assert (status, body["error"]["code"]) == (401, "invalid_token"), body
        assert "does not publish" in body["error"]["message"], body
    assert (len(issuer.jwks_fetches), issuer.jwks_held) == (2, 1), "one fetch, still unanswered"
    issuer.release()
    assert server.stop() == 0


def test_opaque_tokens_are_introspected_once_and_need_a_numeric_exp(db, serve, issuer):
    """Junk opaque tokens, repeated, ask the issuer once each; an active token's answer is kept
    for its lifetime (one call for many requests); an answer without a numeric `exp` is refused."""
    server = oauth_server(serve, issuer, CORTEX_OAUTH_CLIENT_ID="cortex", CORTEX_OAUTH_CLIENT_SECRET="secret")
    now = int(time.time())
    active = {"active": True, "aud": server.audience, "sub": "carol", "scope": "memory:read", "org": "acme"}
    issuer.introspection_answers.update({
        "good-opaque": {**active, "exp": now + 600},
        "no-exp": active,
        "string-exp": {**active, "exp": str(now + 600)},
    })
    for _ in range(5):
        status, _, body = server.post_mcp(INIT, {"Authorization": "Bearer good-opaque"})
        assert status == 200, body
        for junk in ("junk-1", "junk-2"):
            status, _, body = server.post_mcp(INIT, {"Authorization": f"Bearer {junk}"})
            assert (status, body["error"]["code"]) == (401, "invalid_token") and "not active" in body["error"]["message"]
        for bad in ("no-exp", "string-exp"):
            status, _, body = server.post_mcp(INIT, {"Authorization": f"Bearer {bad}"})
            assert isinstance(body, dict), (bad, status, body)
            assert (status, body["error"]["code"]) == (401, "invalid_token"), body
            assert "`exp`" in body["error"]["message"], body
    assert sorted(issuer.introspections) == ["good-opaque", "junk-1", "junk-2", "no-exp", "string-exp"]


@pytest.fixture
def tmp_db(tmp_path):
    return str(tmp_path / "memory.db")


def test_a_plain_http_issuer_off_this_machine_stops_the_server(tmp_db):
    env = server_env(tmp_db, CORTEX_OAUTH_ISSUER="http://idp.example.com", CORTEX_PUBLIC_URL="https://m.example.com")
    done = subprocess.run([BIN, "serve", "--http", "127.0.0.1:0"], env=env, capture_output=True, text=True,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    assert done.returncode != 0
    assert "CORTEX_OAUTH_ISSUER" in done.stderr, done.stderr
    assert done.stdout == ""
