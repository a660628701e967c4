"""The web UI's "Sign in with <provider>" against a real OpenID Connect provider (node's
oidc-provider, tests/e2e/oidc), from outside: Cortex registered as a confidential client there,
the sign-in form links to the provider, the browser follows the authorization code flow with
PKCE and `state` back to `/ui/oauth/callback`, and the session that starts is the token's
(its subject, its org's items); a callback whose state this browser was not given, a used one,
and a wrong code are refused and start no session."""

import urllib.parse

import httpx

from conftest import TIMEOUT
from test_http import serve  # noqa: F401 (serve is a fixture)
from test_oauth_flow import provider  # noqa: F401 (a fixture)
from test_ui import at, store_as_local


def register_ui_client(issuer: str, callback: str) -> tuple[dict, dict]:
    """Registers Cortex's web UI at the provider as a confidential client: the provider's
    configuration and the registration."""
    with httpx.Client(timeout=TIMEOUT) as http:
        config = http.get(issuer + "/.well-known/openid-configuration").json()
        client = http.post(config["registration_endpoint"], json={
            "redirect_uris": [callback], "token_endpoint_auth_method": "client_secret_basic",
            "grant_types": ["authorization_code"], "response_types": ["code"], "client_name": "Cortex web UI"})
        assert client.status_code == 201, client.text
        return config, client.json()


def follow(browser: httpx.Client, url: str, until: str) -> str:
    """Follows redirects (through the provider's sign-in and consent) up to a URL starting with
    `until`, which is returned unvisited."""
    for _ in range(12):
        if url.startswith(until):
            return url
        answer = browser.get(url)
        assert answer.status_code in (302, 303), (answer.status_code, answer.text[:500])
        url = urllib.parse.urljoin(url, answer.headers["location"])
    raise AssertionError("the sign-in did not come back")


def test_sign_in_with_the_provider(db, serve, provider):  # noqa: F811 (the fixture)
    issuer, resource, port, _format = provider
    base = f"http://127.0.0.1:{port}"
    callback = f"{base}/ui/oauth/callback"
    config, client = register_ui_client(issuer, callback)
    store_as_local(db, [{"kind": "section", "scope": at("acme"), "data": {"title": "Acme relay", "body": "ordered"}},
                        {"kind": "section", "scope": at("globex"), "data": {"title": "Globex relay", "body": "private"}}])
    serve(addr=f"127.0.0.1:{port}", env={
        "CORTEX_OAUTH_ISSUER": issuer, "CORTEX_PUBLIC_URL": base,
        "CORTEX_OAUTH_CLIENT_ID": client["client_id"], "CORTEX_OAUTH_CLIENT_SECRET": client["client_secret"]})

    browser = httpx.Client(timeout=TIMEOUT, follow_redirects=False)
    form = browser.get(base + "/")
    assert form.status_code == 200 and 'href="/ui/oauth/start"' in form.text, form.text
    start = browser.get(base + "/ui/oauth/start")
    assert start.status_code == 303, start.text
    to_provider = start.headers["location"]
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(to_provider).query)
    assert to_provider.startswith(config["authorization_endpoint"])
    assert query["code_challenge_method"] == ["S256"] and query["redirect_uri"] == [callback], query
    assert len(query["state"][0]) == 64 and query["resource"] == [f"{base}/mcp"]
    back = follow(browser, to_provider, callback)

    forged = back.replace(query["state"][0], "0" * 64)
    assert browser.get(forged).status_code == 400, "a state this browser was not given"
    signed = browser.get(back)
    # A page of Cortex's own moving on to / (a redirect would carry no SameSite=Strict cookie
    # in a browser, the chain having started at the provider).
    assert signed.status_code == 200 and '<meta http-equiv="refresh" content="0; url=/">' in signed.text, signed.text
    assert "oauth:alice" in signed.text
    assert "cortex_session=" in signed.headers.get("set-cookie", "")
    page = browser.get(base + "/?q=relay")
    assert page.status_code == 200, page.text
    assert "oauth:alice" in page.text and "Acme relay" in page.text and "Globex relay" not in page.text
    assert browser.get(back).status_code == 400, "a used state"

    other = httpx.Client(timeout=TIMEOUT, follow_redirects=False)
    state = urllib.parse.parse_qs(urllib.parse.urlsplit(
        other.get(base + "/ui/oauth/start").headers["location"]).query)["state"][0]
    wrong = other.get(f"{callback}?code=not-a-code&state={state}")
    assert wrong.status_code == 401 and 'name="token"' in wrong.text, wrong.text
    assert "cortex_session=" not in wrong.headers.get("set-cookie", "")
    assert 'name="token"' in other.get(base + "/").text, "no session"
