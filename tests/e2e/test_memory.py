"""Store and find through the real MCP client: the round trips an agent relies on."""

import pytest

from conftest import connect, run


def section(title, body, **extra):
    return {"kind": "section", "data": {"title": title, "body": body}, **extra}


def test_a_section_is_found_by_a_unique_word_with_a_marked_snippet(db):
    async def body():
        async with connect(db) as c:
            stored = await c.store(section("Payments retries", "Retries follow the flibbertigibbet schedule"))
            assert stored["results"][0]["status"] == "inserted"
            found = await c.find(query="flibbertigibbet")
            hit = found["hits"][0]
            assert hit["id"] == stored["results"][0]["id"]
            assert "**flibbertigibbet**" in hit["snippet"]
            assert found["route_used"] == "hybrid" and 0 < found["confidence"] <= 1
            # Brief by default: what it takes to choose what to read, nothing more.
            assert set(hit) == {"id", "kind", "title", "snippet", "scope_match", "updated_at"}
            assert hit["scope_match"] == "branch" and hit["title"] == "Payments retries"
            full = (await c.find(query="flibbertigibbet", detail="full"))["hits"][0]
            assert full["scope"]["branch"] == "main"
            assert set(full["score_parts"]) == {"relevance", "recency", "scope_proximity", "citations"}
            assert full["content"] == "Retries follow the flibbertigibbet schedule"
    run(body)


def test_the_same_item_twice_is_skipped_with_the_first_id(db):
    async def body():
        async with connect(db) as c:
            first = await c.store(section("Deploy", "make deploy to production"))
            again = await c.store(section("Deploy", "make deploy to production"))
            result = again["results"][0]
            assert result["status"] == "skipped_dedupe"
            assert result["existing_id"] == first["results"][0]["id"]
            assert again["summary"]["skipped_dedupe"] == 1
    run(body)


def test_one_idempotency_key_stores_one_item(db):
    async def body():
        async with connect(db) as c:
            a = await c.store({"kind": "todo", "content": "first wording", "idempotency_key": "retry-42"})
            b = await c.store({"kind": "todo", "content": "second wording", "idempotency_key": "retry-42"})
            assert b["results"][0]["status"] == "skipped_dedupe"
            assert b["results"][0]["id"] == a["results"][0]["id"]
            assert (await c.find(query="wording"))["hits"].__len__() == 1
    run(body)


def test_a_batch_of_valid_invalid_valid_stores_two_and_names_the_field(db):
    async def body():
        async with connect(db) as c:
            out = await c.store(
                section("One", "alpha text"),
                {"kind": "decision", "data": {"component": "db", "status": "accepted", "title": "Use PG"}},
                section("Two", "beta text"),
            )
            assert [r["status"] for r in out["results"]] == ["inserted", "validation_error", "inserted"]
            error = out["results"][1]["error"]
            assert error["field"] == "items[1].data.rationale"
            assert error["human_hint"]
            assert out["summary"] == {"total": 3, "inserted": 2, "updated": 0, "deleted": 0, "skipped_dedupe": 0,
                                      "business_rule_blocked": 0, "validation_error": 1}
    run(body)


def test_branch_isolation_widening_and_own_branch_first(db):
    async def body():
        async with connect(db, branch="main") as c:
            feature = await c.store({"kind": "section", "content": "quetzal cache layout", "scope": {"branch": "feature-a"}})
            assert (await c.find(query="quetzal"))["hits"] == []
            widened = await c.find(query="quetzal", widen="project")
            assert [h["id"] for h in widened["hits"]] == [feature["results"][0]["id"]]
            assert widened["hits"][0]["scope_match"] == "project"
            from_b = await c.find(query="quetzal", scope={"branch": "feature-a"})
            assert from_b["hits"][0]["scope_match"] == "branch"
            own = await c.store({"kind": "section", "content": "quetzal cache layout on main"})
            both = await c.find(query="quetzal cache", widen="project")
            assert both["hits"][0]["id"] == own["results"][0]["id"]
            assert [h["scope_match"] for h in both["hits"]] == ["branch", "project"]
        async with connect(db, branch="feature-a") as other:
            assert [h["id"] for h in (await other.find(query="quetzal"))["hits"]] == [feature["results"][0]["id"]]
    run(body)


def test_types_filter(db):
    async def body():
        async with connect(db) as c:
            await c.store(
                section("Kafka lag", "consumer lag grows at night"),
                {"kind": "incident", "data": {"title": "Kafka lag incident", "severity": "high",
                                              "impact": "emails late", "resolution_status": "resolved"}},
            )
            out = await c.find(query="kafka lag", types=["incident"])
            assert [h["kind"] for h in out["hits"]] == ["incident"]
            assert any("other kinds" in s for s in out["suggestions"])
    run(body)


def test_limit_and_cursor(db):
    async def body():
        async with connect(db) as c:
            # Five different facts that share a word (near-identical texts would be near-duplicates).
            await c.store(
                section("Billing chart", "The helm chart for billing sets three replicas"),
                section("CRD conflict", "Our helm upgrade failed on a CRD ownership conflict"),
                section("Diff first", "Run helm diff before every production rollout"),
                section("OCI registry", "The helm repository moved to an OCI registry in May"),
                section("Rollback", "Use helm rollback to return to the previous revision"),
            )
            first = await c.find(query="helm", limit=2)
            assert len(first["hits"]) == 2 and first["next_cursor"]
            second = await c.find(query="helm", limit=2, cursor=first["next_cursor"])
            assert len(second["hits"]) == 2
            assert not {h["id"] for h in first["hits"]} & {h["id"] for h in second["hits"]}
    run(body)


def test_a_nonsense_query_gets_no_hits_and_real_suggestions(db):
    async def body():
        async with connect(db) as c:
            await c.store(section("Cluster upgrade", "kubernetes cluster upgrade procedure"))
            none = await c.find(query="zzqxw vlorp")
            assert none["hits"] == []
            assert any("zzqxw" in s for s in none["suggestions"]), none["suggestions"]
            typo = await c.find(query="procedxre")
            assert any('"procedure"' in s for s in typo["suggestions"]), typo["suggestions"]
    run(body)


def test_special_character_queries_never_error(db):
    async def body():
        async with connect(db) as c:
            await c.store(section("Odd", "foo bar (baz) quoted"))
            for q in ['"unbalanced', "-", "*", "foo:bar", "(", "AND", "OR NOT", "🚀🔥", "NEAR(", "x" * 1000]:
                is_error, out = await c.call("memory_find", {"query": q})
                assert not is_error, (q, out)
            assert (await c.find(query="foo:bar"))["hits"]
            for q in ["", "y" * 1001]:
                is_error, out = await c.call("memory_find", {"query": q})
                assert is_error and out["error"]["field"] == "query", (q, out)
    run(body)


def test_delete_then_find(db):
    async def body():
        async with connect(db) as c:
            stored = await c.store(section("Vault rotation", "rotate vault tokens monthly"))
            item_id = stored["results"][0]["id"]
            deleted = await c.store({"operation": "delete", "id": item_id})
            assert deleted["results"][0]["status"] == "deleted"
            assert (await c.find(query="vault"))["hits"] == []
            assert (await c.find(ids=[item_id]))["missing_ids"] == [item_id]
    run(body)


def test_ids_lookup_returns_the_whole_item(db):
    async def body():
        async with connect(db) as c:
            text = "step line\n" * 300
            stored = await c.store({"kind": "section", "content": text})
            found = await c.find(ids=[stored["results"][0]["id"]])
            assert found["route_used"] == "ids"
            assert found["hits"][0]["content"] == text
    run(body)


def test_two_servers_on_one_file_share_writes_without_duplicates(db):
    async def body():
        async with connect(db) as a, connect(db) as b:
            first = await a.store({"kind": "todo", "content": "shared todo", "idempotency_key": "same"})
            second = await b.store({"kind": "todo", "content": "shared todo", "idempotency_key": "same"})
            assert second["results"][0]["id"] == first["results"][0]["id"]
            assert len((await b.find(query="shared"))["hits"]) == 1
    run(body)


def test_auto_mode_finds_a_paraphrase_that_fast_mode_cannot(db):
    async def body():
        async with connect(db) as c:
            stored = await c.store({"kind": "decision", "data": {
                "component": "sessions", "status": "accepted", "title": "Sessions in Postgres",
                "rationale": "We moved user sessions from Redis to PostgreSQL; running Redis cost more than it saved."}})
            query = "why did we stop using the in-memory cache for login state"
            fast = await c.find(query=query, mode="fast")
            assert stored["results"][0]["id"] not in [h["id"] for h in fast["hits"]]
            auto = await c.find(query=query)
            assert auto["route_used"] == "hybrid"
            assert auto["hits"][0]["id"] == stored["results"][0]["id"]
    run(body)


@pytest.mark.parametrize("typo", ["kubernets", "kuberntes"])
def test_a_misspelled_query_suggests_the_stored_spelling(db, typo):
    async def body():
        async with connect(db) as c:
            await c.store(section("Cluster upgrade", "kubernetes cluster upgrade procedure"))
            found = await c.find(query=typo, mode="fast")
            assert any("kubernetes" in s for s in found["suggestions"]), found["suggestions"]
    run(body)
