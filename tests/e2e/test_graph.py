"""The knowledge graph through the real MCP client, on both backends: entity upsert, relations
by id or by name, expansion with paths, cycles, depth and cap, observations, citations,
cascading delete, and scope isolation."""

from conftest import connect, run


def entity(entity_type, name, **data):
    return {"kind": "entity", "data": {"entity_type": entity_type, "name": name, **data}}


def ref(entity_type, name):
    return {"entity_type": entity_type, "name": name}


def relation(frm, to, relation_type):
    return {"kind": "relation", "data": {"from": frm, "to": to, "relation_type": relation_type}}


def expanded(found):
    return [h["id"] for h in found["hits"] if h.get("expanded")]


def test_entity_upsert_and_a_decision_found_implementing_it(db):
    async def body():
        async with connect(db) as c:
            first = (await c.store(entity("service", "billing", description="Charges cards")))["results"][0]
            again = (await c.store(entity("Service", "BILLING")))["results"][0]
            assert again["status"] == "updated" and again["id"] == first["id"]
            adr = (await c.store({"kind": "decision", "data": {
                "component": "billing", "status": "accepted", "title": "Idempotent charge requests",
                "rationale": "retries must never charge a card twice"}}))["results"][0]["id"]
            link = (await c.store(relation(adr, ref("service", "billing"), "implements")))["results"][0]
            assert link["status"] == "inserted"
            twice = (await c.store(relation(adr, first["id"], "implements")))["results"][0]
            assert twice["status"] == "skipped_dedupe" and twice["existing_id"] == link["id"]

            found = await c.find(query="idempotent charge", types=["decision"], mode="fast", expand="relations")
            assert found["hits"][0]["id"] == adr
            assert expanded(found) == [first["id"]]
            reached = found["hits"][1]
            assert reached["path"] == [{"id": link["id"], "from": adr, "to": first["id"],
                                        "relation_type": "implements"}]
            assert {n["id"] for n in found["graph"]["nodes"]} == {adr, first["id"]}
            read = (await c.find(ids=[first["id"]]))["hits"][0]
            assert read["data"]["description"] == "Charges cards"
            assert [(r["direction"], r["other_id"]) for r in read["relations"]] == [("incoming", adr)]
    run(body)


def test_bad_links_are_refused_per_item_with_a_hint(db):
    async def body():
        async with connect(db) as c:
            api = (await c.store(entity("service", "api")))["results"][0]["id"]
            out = await c.store(
                relation(api, "0190f5c0-0000-7000-8000-000000000000", "calls"),
                relation(ref("service", "ghost"), api, "calls"),
                relation(api, api, "calls"),
                entity("service", "kept"),
            )
            fields = [(r["status"], r.get("error", {}).get("field")) for r in out["results"]]
            assert fields == [("validation_error", "items[0].data.to"), ("validation_error", "items[1].data.from"),
                              ("validation_error", "items[2].data.to"), ("inserted", None)]
            assert all(r["error"]["human_hint"] for r in out["results"][:3])
    run(body)


def test_a_cycle_terminates_and_depth_and_cap_hold(db):
    async def body():
        async with connect(db) as c:
            ids = [r["id"] for r in (await c.store(*[entity("step", n) for n in "abcd"]))["results"]]
            await c.store(relation(ref("step", "a"), ref("step", "b"), "then"),
                          relation(ref("step", "b"), ref("step", "c"), "then"),
                          relation(ref("step", "c"), ref("step", "d"), "then"),
                          relation(ref("step", "d"), ref("step", "a"), "then"))
            one = await c.find(ids=[ids[0]], expand="children")
            assert expanded(one) == [ids[1]]
            three = await c.find(ids=[ids[0]], expand="all", depth=3)
            assert sorted(expanded(three)) == sorted(ids[1:]), "each item once, the cycle ends"
            capped = await c.find(ids=[ids[0]], expand="all", depth=3, expand_limit=1)
            assert len(expanded(capped)) == 1
            bad = await c.call("memory_find", {"ids": [ids[0]], "expand": "all", "depth": 9})
            assert bad[0] and bad[1]["error"]["field"] == "depth"
    run(body)


def test_observations_citations_and_cascading_delete(db):
    async def body():
        async with connect(db) as c:
            cron = (await c.store(entity("service", "legacy-cron")))["results"][0]["id"]
            note = {"kind": "observation", "data": {"entity": ref("service", "legacy-cron"), "text": "Runs at 3am"}}
            first = (await c.store(note))["results"][0]
            again = (await c.store({**note, "data": {**note["data"], "text": "runs  at 3AM"}}))["results"][0]
            assert again["status"] == "skipped_dedupe" and again["existing_id"] == first["id"]
            other = {"kind": "observation", "data": {"entity": cron, "text": "Owned by platform"}}
            await c.store(other)
            read = (await c.find(ids=[cron]))["hits"][0]
            assert [o["text"] for o in read["observations"]] == ["Runs at 3am", "Owned by platform"]

            users = await c.store(*[entity("service", n) for n in ("auth", "gateway", "billing")])
            rels = await c.store(*[relation(r["id"], cron, "triggers") for r in users["results"]])
            assert rels["summary"]["inserted"] == 3
            cited = (await c.find(ids=[cron]))["hits"][0]
            assert cited["score_parts"]["citations"] > 0.5

            gone = (await c.store({"operation": "delete", "id": cron}))["results"][0]
            assert gone["status"] == "deleted" and "5 relation(s) and observation(s)" in gone["reason"]
            rel_ids = [r["id"] for r in rels["results"]]
            left = await c.find(ids=rel_ids + [first["id"]])
            assert sorted(left["missing_ids"]) == sorted(rel_ids + [first["id"]])
    run(body)


def test_expansion_never_leaks_another_branch(db):
    async def body():
        async with connect(db, branch="main") as main:
            queue = (await main.store(entity("queue", "jobs")))["results"][0]["id"]
        async with connect(db, branch="feature-x") as feature:
            adr = (await feature.store({"kind": "decision", "data": {
                "component": "jobs", "status": "proposed", "title": "Streams for jobs",
                "rationale": "consumer groups"}}))["results"][0]["id"]
            await feature.store(relation(adr, queue, "changes"))
        async with connect(db, branch="main") as main:
            assert expanded(await main.find(ids=[queue], expand="all")) == []
            assert expanded(await main.find(ids=[queue], expand="all", widen="project")) == [adr]
    run(body)
