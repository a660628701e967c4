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
