"""An item's audit history read as an MCP resource, through the real client, on both backends.
The governance rules themselves are tested once, in Rust (crates/service/tests/governance.rs)."""

import json
import os
import pwd

from conftest import connect, run


def decision(title, rationale, status="accepted", **data):
    return {"kind": "decision", "data": {"component": "sessions", "status": status, "title": title,
                                         "rationale": rationale, **data}}


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
            # Both are by the operating system's user running the stdio server; the name the
            # rewrite gave itself is kept as its claim, and names no one.
            me = f"local:{pwd.getpwuid(os.geteuid()).pw_name}"
            assert [(r["principal"], r["via"]) for r in history["records"]] == [(me, "memory_store")] * 2
            blocked = history["records"][1]
            assert blocked["claimed"]["actor"] == "mallory" and "actor" not in blocked, blocked
            unclaimed = json.dumps({field: value for field, value in blocked.items() if field != "claimed"})
            assert "mallory" not in unclaimed, blocked
    run(body)
