"""Governance through the real MCP client, on both backends: an accepted decision cannot be
rewritten, and a newer decision supersedes it."""

from conftest import connect, run


def decision(title, rationale, status="accepted", **data):
    return {"kind": "decision", "data": {"component": "sessions", "status": status, "title": title,
                                         "rationale": rationale, **data}}


def test_an_accepted_decision_edit_is_blocked_with_a_hint_to_supersede(db):
    async def body():
        async with connect(db) as c:
            adr = (await c.store(decision("Sessions in Postgres", "one database to run")))["results"][0]["id"]
            edit = {**decision("Sessions in Postgres", "rewritten history"), "id": adr}
            result = (await c.store(edit))["results"][0]
            assert result["status"] == "business_rule_blocked"
            assert result["error"]["field"] == "items[0].data.rationale"
            assert f'"supersedes": "{adr}"' in result["error"]["human_hint"]
            kept = await c.find(ids=[adr])
            assert kept["hits"][0]["data"]["rationale"] == "one database to run"
    run(body)


def test_a_superseded_decision_is_found_through_its_successor(db):
    async def body():
        async with connect(db) as c:
            old = (await c.store(decision("Sessions in Redis", "fast lookups")))["results"][0]["id"]
            new = (await c.store(decision("Sessions in Postgres", "one database", supersedes=old)))["results"][0]["id"]
            found = await c.find(query="sessions", mode="fast")
            assert [h["id"] for h in found["hits"]] == [new]
            everything = await c.find(query="sessions", mode="fast", include_superseded=True)
            former = next(h for h in everything["hits"] if h["id"] == old)
            assert former["superseded_by"] == new and former["status"] == "superseded"
    run(body)


def test_an_expired_pr_context_hides_stays_listable_and_is_purged(db):
    import datetime
    import json
    import subprocess

    from conftest import BIN, server_env

    merged = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=40)).strftime("%Y-%m-%dT%H:%M:%SZ")

    async def body():
        async with connect(db) as c:
            pr = {"kind": "pr_context", "data": {"pr_number": 7, "title": "Rework the walrus cache", "status": "merged",
                                                 "base_branch": "main", "head_branch": "walrus", "merged_at": merged}}
            pr_id = (await c.store(pr))["results"][0]["id"]
            assert (await c.find(query="walrus", mode="fast"))["hits"] == []
            listed = await c.find(query="walrus", mode="fast", include_expired=True)
            assert [h["id"] for h in listed["hits"]] == [pr_id]
        purge = subprocess.run([BIN, "purge"], env=server_env(db), capture_output=True, text=True, timeout=60)
        assert purge.returncode == 0, purge.stderr
        report = json.loads(purge.stdout)
        assert report["purged"] == 1 and report["by_kind"] == [{"kind": "pr_context", "items": 1}]
        async with connect(db) as c:
            assert (await c.find(query="walrus", mode="fast", include_expired=True))["hits"] == []
    run(body)
