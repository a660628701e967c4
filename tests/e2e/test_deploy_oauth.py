"""A sign-in through the identity provider under way survives a switch of server: two `cortex
serve --http` over one PostgreSQL behind HAProxy (deploy/haproxy.cfg, the public URL), with a real
OpenID Connect provider (node's oidc-provider, tests/e2e/oidc). A sign-in begun on one server is
finished by the other (its state and PKCE verifier are kept in the database, the verifier sealed),
also when the server that began it is gone; a replayed or forged callback is refused by every
server. (A sign-in past its time is refused: the store's suite and the server's unit tests, on
the database's and the process's clock.)"""


import httpx
import pytest

from cluster import HAProxy, address, need, start_servers, stop_servers
from conftest import TIMEOUT, postgres_database
from test_oauth_flow import provider  # noqa: F401 (a fixture)
from test_ui_oauth import follow, register_ui_client


@pytest.fixture
def pg_db():
    yield from postgres_database()


def rows(db: str, statement: str):
    import psycopg

    with psycopg.connect(db, autocommit=True) as conn:
        return conn.execute(statement).fetchall()


def signed_in_as(http: httpx.Client, base: str, who: str) -> bool:
    page = http.get(base + "/")
    return page.status_code == 200 and who in page.text and 'name="token"' not in page.text


@pytest.mark.parametrize("provider", ["jwt"], indirect=True)
def test_a_sign_in_begun_on_one_server_is_finished_on_the_other_once(pg_db, provider):  # noqa: F811
    need("haproxy", "haproxy")
    issuer, _resource, port, _format = provider
    public = f"http://127.0.0.1:{port}"
    callback = f"{public}/ui/oauth/callback"
    _config, client = register_ui_client(issuer, callback)
    env = {"CORTEX_OAUTH_ISSUER": issuer, "CORTEX_PUBLIC_URL": public,
           "CORTEX_OAUTH_CLIENT_ID": client["client_id"], "CORTEX_OAUTH_CLIENT_SECRET": client["client_secret"]}
    servers = start_servers(pg_db, 2, env=env)
    proxy = None
    try:
        first, second = servers
        proxy = HAProxy([address(s) for s in servers], port=port)

        # Begun on the first server, the provider's callback taken by the second.
        browser = httpx.Client(timeout=TIMEOUT, follow_redirects=False)
        start = browser.get(first.base + "/ui/oauth/start")
        assert start.status_code == 303, start.text
        back = follow(browser, start.headers["location"], callback)
        state = httpx.URL(back).params["state"]
        [(state_hash, sealed)] = rows(pg_db, "SELECT state_hash, sealed_verifier FROM ui_sign_ins")
        assert state_hash != state and state.encode() not in bytes(sealed), "neither the state nor in clear"
        forged = back.replace(state, "0" * 64).replace(public, first.base)
        assert browser.get(forged).status_code == 400, "a state no server gave"
        signed = browser.get(back.replace(public, second.base))
        assert signed.status_code == 200 and "oauth:alice" in signed.text, signed.text[:500]
        assert rows(pg_db, "SELECT count(*) FROM ui_sign_ins") == [(0,)], "taken, not kept"
        for base in (first.base, second.base, public):
            assert signed_in_as(browser, base, "oauth:alice"), base
        replayer = httpx.Client(timeout=TIMEOUT, follow_redirects=False,
                                cookies={"cortex_oauth_state": state})
        for base in (first.base, second.base):
            replayed = replayer.get(back.replace(public, base))
            assert replayed.status_code == 400, f"a replayed callback on {base}: {replayed.text[:300]}"
            assert "cortex_session=" not in replayed.headers.get("set-cookie", "")

        # Begun through the balancer on a server that then goes away: the other finishes it.
        browser = httpx.Client(timeout=TIMEOUT, follow_redirects=False)
        start = browser.get(first.base + "/ui/oauth/start")
        back = follow(browser, start.headers["location"], callback)
        first.proc.kill()
        first.proc.wait(timeout=TIMEOUT)
        signed = browser.get(back)
        assert signed.status_code == 200 and "oauth:alice" in signed.text, signed.text[:500]
        assert signed_in_as(browser, second.base, "oauth:alice")
    finally:
        if proxy:
            proxy.stop()
        stop_servers(servers)
