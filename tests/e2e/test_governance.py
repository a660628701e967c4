"""Governance through the real MCP client, on both backends: accepted decisions and approved
sections stay as they were, supersede chains, natural keys, expiry and purge, item history."""

import json

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


def test_an_approved_section_is_locked_and_a_new_version_supersedes_it(db):
    async def body():
        async with connect(db) as c:
            section = {"kind": "section", "data": {"title": "Log retention", "body": "Keep logs 30 days",
                                                   "status": "approved"}}
            old = (await c.store(section))["results"][0]["id"]
            edit = {**section, "id": old, "data": {**section["data"], "body": "Keep logs 60 days"}}
            assert (await c.store(edit))["results"][0]["status"] == "business_rule_blocked"
            deleted = (await c.store({"operation": "delete", "id": old}))["results"][0]
            assert deleted["status"] == "business_rule_blocked" and "supersedes" in deleted["error"]["human_hint"]
            new_version = {"kind": "section", "supersedes": old,
                           "data": {"title": "Log retention", "body": "Keep logs 60 days", "status": "approved"}}
            new = (await c.store(new_version))["results"][0]["id"]
            assert [h["id"] for h in (await c.find(query="retention", mode="fast"))["hits"]] == [new]
    run(body)


def test_natural_keys_issue_upsert_and_ddl_checksum(db):
    async def body():
        async with connect(db) as c:
            issue = {"kind": "issue", "data": {"tracker": "github", "external_id": "412", "title": "Crash on start",
                                               "status": "open"}}
            first = (await c.store(issue))["results"][0]
            closed = {**issue, "data": {**issue["data"], "status": "closed"}}
            again = (await c.store(closed))["results"][0]
            assert again["status"] == "updated" and again["id"] == first["id"]

            ddl = {"kind": "ddl", "data": {"migration_id": "0003_orders", "ddl_text": "CREATE TABLE orders (id int)"}}
            assert (await c.store(ddl))["results"][0]["status"] == "inserted"
            assert (await c.store(ddl))["results"][0]["status"] == "skipped_dedupe"
            changed = {"kind": "ddl", "data": {"migration_id": "0003_orders", "ddl_text": "CREATE TABLE orders (id bigint)"}}
            refused = (await c.store(changed))["results"][0]
            assert refused["status"] == "business_rule_blocked"
            assert refused["error"]["field"] == "items[0].data.ddl_text"
    run(body)


def test_an_items_history_is_an_mcp_resource(db):
    async def body():
        async with connect(db) as c:
            adr = (await c.store(decision("Queue on Kafka", "replay")))["results"][0]["id"]
            await c.store({**decision("Queue on Kafka", "rewritten"), "id": adr, "source": {"actor": "mallory"}})
            templates = await c.session.list_resource_templates()
            assert [t.uri_template for t in templates.resource_templates] == ["cortex://items/{id}/history"]
            read = await c.session.read_resource(f"cortex://items/{adr}/history")
            history = json.loads(read.contents[0].text)
            assert history["item_id"] == adr
            assert [r["operation"] for r in history["records"]] == ["insert", "blocked"]
            assert history["records"][1]["actor"] == "mallory"
    run(body)
