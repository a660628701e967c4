"""Long documents over MCP: stored whole, found as one hit through their chunks, returned byte
for byte. The document is this repository's own architecture notes (tables, lists, code)."""

from pathlib import Path

from conftest import connect, run

DOC = (Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")


def test_a_long_document_is_one_hit_pointing_at_its_best_chunk(db):
    async def body():
        async with connect(db) as c:
            stored = await c.store(
                {"kind": "section", "content": DOC},
                {"kind": "section", "content": "The billing worker charges customers every night at 02:00 UTC."},
            )
            doc_id = stored["results"][0]["id"]
            found = await c.find(query="why keep every kind of memory in a single table", max_content_chars=20000)
            ids = [h["id"] for h in found["hits"]]
            assert ids.count(doc_id) == 1, ids
            hit = found["hits"][ids.index(doc_id)]
            chunk = hit["chunk"]
            raw = DOC.encode("utf-8")
            assert 0 <= chunk["start"] < chunk["end"] <= len(raw)
            assert chunk["heading_path"] and chunk["heading_path"][0].startswith("Architecture")
            assert hit["chunks_matched"] >= 1
            part = raw[chunk["start"]:chunk["end"]].decode("utf-8")
            # A snippet is one line cut from the chunk (its whitespace collapsed).
            assert hit["snippet"].replace("**", "").strip("…") in " ".join(part.split())
            assert hit["content"] == DOC

            by_id = await c.find(ids=[doc_id])
            assert by_id["hits"][0]["content"] == DOC
    run(body)
