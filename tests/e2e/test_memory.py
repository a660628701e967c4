"""A store and a find through the real MCP client, on both backends: what the client receives
(structured content and its text mirror, a brief hit, `detail: full`). The store and find rules
themselves are tested once, in Rust (crates/service/tests/flows.rs, semantic.rs)."""

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
