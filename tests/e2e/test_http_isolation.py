"""Issue 18, item 4, through the real server: two orgs and two projects, a key of each, and the
official MCP client over Streamable HTTP trying every path from acme/api at the others' items —
a find by query at every width, by guessed ids, by another key's cursor, the history resource,
updates, deletes, `supersedes`, relation ends and scopes naming another tenant. Nothing of
theirs comes back, and their items are the same in an export before and after (on each
backend). The service-level suite (`crates/service/tests/tenant_isolation.rs`) covers each
path in depth; this one shows the HTTP server serves every call as its key's tenant — and,
the same test again, as an OAuth access token's tenant (issue 36: its org and projects claims)."""

import json
import subprocess
import uuid

import pytest

from conftest import BIN, run, server_env
from oauth_issuer import LocalIssuer
from http_server import cortex, error_code, http_session, serve  # noqa: F401 (serve is a fixture)
from test_oauth import oauth_server


def store_as_local(db, items: list) -> list[str]:
    out = cortex(db, "store", json.dumps({"items": items}))
    return [r["id"] for r in out["results"]]


def at(org: str, project: str) -> dict:
    return {"org": org, "project": project, "branch": "main"}


def export(db, tmp_path, ids: list[str]) -> list[str]:
    """Every stored field of these items, as the local user exports them."""
    path = tmp_path / "export.jsonl"
    done = subprocess.run([BIN, "export", "--out", str(path)], env=server_env(db), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    # Item lines only: an item's provenance line names it too.
    lines = [line for line in path.read_text().splitlines() if json.loads(line).get("id") in ids]
    assert len(lines) == len(ids), lines
    return sorted(lines)


@pytest.fixture
def tenants(db):
    inside = store_as_local(db, [
        {"kind": "decision", "scope": at("acme", "api"), "data": {"component": "webhooks", "status": "accepted",
         "title": "Retry webhook deliveries with backoff", "rationale": "receivers recover"}},
        {"kind": "entity", "scope": at("acme", "api"), "data": {"entity_type": "service", "name": "billing"}},
    ])
    outside = store_as_local(db, [
        {"kind": "decision", "scope": at("globex", "api"), "data": {"component": "webhooks", "status": "accepted",
         "title": "Retry webhook deliveries through the zanzibar relay", "rationale": "globex plan"}},
        {"kind": "entity", "scope": at("globex", "api"), "data": {"entity_type": "service", "name": "relay"}},
        {"kind": "section", "scope": at("acme", "web"), "data": {"title": "Webhook retries in the console",
         "body": "The console lists webhook deliveries and retries."}},
        {"kind": "todo", "scope": at("globex", "api"), "data": {"title": "Rotate the zanzibar webhook secret",
                                                                "status": "open"}},
    ])
    acme = cortex(db, "keys", "create", "--name", "acme-api", "--org", "acme", "--project", "api",
                  "--role", "write")["token"]
    globex = cortex(db, "keys", "create", "--name", "globex", "--org", "globex", "--project", "api",
                    "--role", "write")["token"]
    return inside, outside, acme, globex


def assert_nothing_of(outside: list[str], answer: dict):
    answer = dict(answer)
    answer.pop("missing_ids", None)
    answer["suggestions"] = [s for s in answer.get("suggestions", []) if not s.startswith("no stored item contains")]
    text = json.dumps(answer).lower()
    for item in outside:
        assert item not in text, f"{item} of another tenant in {text}"
    for word in ["zanzibar", "globex", "console", "relay"]:
        assert word not in text, f"`{word}` of another tenant in {text}"


@pytest.fixture(params=["key", "token"])
def holders(request, serve, tenants):
    """A server and acme's and globex's credentials: their API keys, or access tokens from an
    OAuth issuer with the same org and project in their claims."""
    _, _, acme, globex = tenants
    if request.param == "key":
        yield serve(), acme, globex
        return
    issuer = LocalIssuer()
    server = oauth_server(serve, issuer)
    tokens = [issuer.token(server.audience, sub=f"{org}-user", org=org, projects=["api"]) for org in ("acme", "globex")]
    yield server, *tokens
    issuer.close()


def test_a_holder_sees_and_changes_nothing_of_another_tenant(db, holders, tenants, tmp_path):
    inside, outside, _, _ = tenants
    server, acme, globex = holders
    before = export(db, tmp_path, outside)

    async def body():
        # A cursor of globex's pages, to be replayed by acme's key.
        async with http_session(server.url, globex) as g:
            first = await g.find(query="webhook", limit=1, mode="fast")
            cursor = first["next_cursor"]
            assert cursor, first
        async with http_session(server.url, acme) as a:
            for widen in ["branch", "project", "org", "all"]:
                for mode in ["fast", "auto", "deep"]:
                    found = await a.find(query="webhook retries zanzibar relay console", widen=widen, mode=mode,
                                         detail="full", expand="all", limit=50)
                    assert inside[0] in [h["id"] for h in found["hits"]], found
                    assert_nothing_of(outside, found)
                    # Mistyped words of theirs: no spelling hint or correction names them.
                    typo = await a.find(query="zanzibr relya", widen=widen, mode=mode)
                    assert typo["suggestions"], typo
                    assert_nothing_of(outside, typo)
            by_ids = await a.find(ids=inside + outside)
            assert sorted(by_ids["missing_ids"]) == sorted(outside)
            assert_nothing_of(outside, by_ids)
            is_error, replayed = await a.call("memory_find", {"query": "webhook", "limit": 1, "cursor": cursor})
            assert not is_error or error_code(replayed) == "bad_cursor", replayed
            assert_nothing_of(outside, replayed)
            is_error, named = await a.call("memory_find", {"query": "webhook", "scope": {"org": "globex"}})
            assert is_error and error_code(named) == "forbidden_scope", named
            own = await a.session.read_resource(f"cortex://items/{inside[0]}/history")
            assert json.loads(own.contents[0].text)["records"], own
            for item in outside:
                with pytest.raises(Exception) as refused:
                    await a.session.read_resource(f"cortex://items/{item}/history")
                assert "no history" in str(refused.value), refused.value
            decision, entity, section, todo = outside

            def attempts(decision, entity, section, todo):
                return {"items": [
                    {"kind": "decision", "id": decision, "data": {"component": "webhooks", "status": "accepted",
                     "title": "Taken over", "rationale": "taken"}},
                    {"kind": "section", "id": section, "data": {"title": "Taken over", "body": "taken"}},
                    {"kind": "todo", "operation": "delete", "id": todo},
                    {"kind": "decision", "supersedes": decision, "data": {"component": "webhooks",
                     "status": "accepted", "title": "Replaces theirs", "rationale": "taken"}},
                    {"kind": "relation", "data": {"from": inside[1], "to": entity, "relation_type": "calls"}},
                    {"kind": "section", "scope": {"org": "globex"}, "data": {"title": "Planted", "body": "there"}},
                    {"kind": "section", "scope": {"project": "web"}, "data": {"title": "Planted", "body": "there"}},
                ]}

            _, theirs = await a.call("memory_store", attempts(decision, entity, section, todo))
            codes = [r["error"]["code"] for r in theirs["results"]]
            assert codes == ["not_found"] * 5 + ["forbidden_scope"] * 2, theirs
            # Their ids are answered exactly as ids that name no item at all: nothing tells
            # that they exist.
            made_up = [str(uuid.uuid4()) for _ in range(4)]
            _, nobodys = await a.call("memory_store", attempts(*made_up))
            said = json.dumps(theirs)
            for real, fake in zip(outside, made_up):
                said = said.replace(real, fake)
            assert said == json.dumps(nobodys)

    run(body)
    assert export(db, tmp_path, outside) == before, "nothing of another tenant changed"
