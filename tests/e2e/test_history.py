"""An item's audit history read as an MCP resource, through the real client, on both backends.
The governance rules themselves are tested once, in Rust (crates/service/tests/governance.rs)."""

import json

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
            # The name the client gave is kept as its claim; the principal is who really called.
            assert history["records"][1]["claimed"]["actor"] == "mallory"
            assert "mallory" not in history["records"][1]["principal"]
    run(body)
