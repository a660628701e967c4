"""Semantic search is optional: without it, `auto` still answers, lexically, and says why."""

import pytest

from conftest import connect, run

WITHOUT_SEMANTIC = {
    "model missing": lambda tmp_path: {"CORTEX_MODEL_DIR": str(tmp_path / "no-model-here")},
    "embedder none": lambda tmp_path: {"CORTEX_EMBEDDER": "none"},
}


@pytest.mark.parametrize("setup", WITHOUT_SEMANTIC.values(), ids=WITHOUT_SEMANTIC.keys())
def test_auto_mode_without_semantic_search_runs_lexical_and_notes_it(db, tmp_path, setup):
    async def body():
        async with connect(db, env=setup(tmp_path)) as c:
            stored = await c.store({"kind": "section", "data": {"title": "Backups", "body": "nightly pangolin snapshot"}})
            assert stored["summary"]["inserted"] == 1
            found = await c.find(query="pangolin")
            assert [h["id"] for h in found["hits"]] == [stored["results"][0]["id"]]
            assert found["mode"] == "auto"
            assert found["route_used"] == "lexical"
            assert any("semantic search" in n and "unavailable" in n for n in found["notes"]), found.get("notes")
    run(body)


def test_fast_mode_is_lexical_and_has_nothing_to_excuse(db):
    async def body():
        async with connect(db) as c:
            await c.store({"kind": "section", "data": {"title": "Backups", "body": "nightly pangolin snapshot"}})
            found = await c.find(query="pangolin", mode="fast")
            assert found["mode"] == "fast" and found["route_used"] == "lexical"
            assert not any("unavailable" in n for n in found.get("notes", []))
    run(body)
