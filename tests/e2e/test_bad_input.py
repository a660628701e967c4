"""Bad input gets a per-field error with a human hint, and stores nothing for that item."""

import pytest

from conftest import connect, run

REQUEST_ERRORS = [
    ({}, "items"),
    ({"items": []}, "items"),
    ({"items": "not a list"}, "items"),
    ({"items": [{"kind": "todo", "content": str(i)} for i in range(101)]}, "items"),
    ({"items": [{"kind": "todo", "content": "x"}], "dry_run": True}, "dry_run"),
]


@pytest.mark.parametrize("args,field", REQUEST_ERRORS)
def test_request_level_store_errors(db, args, field):
    async def body():
        async with connect(db) as c:
            is_error, out = await c.call("memory_store", args)
            assert is_error and out["error"]["field"] == field and out["error"]["human_hint"]
            found = await c.find(query="x")
            assert found["hits"] == [], "a refused request stores nothing"
    run(body)


def nested(depth):
    value = 1
    for _ in range(depth):
        value = {"a": value}
    return value


ITEM_ERRORS = [
    ({"kind": "spaceship", "content": "x"}, "items[0].kind"),
    ({"kind": "section", "content": "nul\u0000byte"}, "items[0].content"),
    ({"kind": "section", "content": "x" * (256 * 1024 + 1)}, "items[0].content"),
    ({"kind": "section", "content": "x", "scope": {"branch": "b" * 200}}, "items[0].scope.branch"),
    ({"kind": "section", "content": "x", "scope": {"project": "tab\there"}}, "items[0].scope.project"),
    ({"kind": "section", "content": "x", "metadata": nested(10)}, "items[0].metadata"),
    ({"kind": "section", "content": "x", "idempotency_key": "k" * 257}, "items[0].idempotency_key"),
    ({"kind": "todo", "data": {"title": 5, "status": "open"}}, "items[0].data.title"),
    ({"kind": "decision", "data": {"component": "c", "status": "maybe", "title": "t", "rationale": "r"}}, "items[0].data.status"),
]


@pytest.mark.parametrize("item,field", ITEM_ERRORS)
def test_item_errors_name_the_field_and_store_nothing(db, item, field):
    async def body():
        async with connect(db) as c:
            is_error, out = await c.call("memory_store", {"items": [item]})
            assert not is_error
            result = out["results"][0]
            assert result["status"] == "validation_error"
            assert result["error"]["field"] == field
            assert result["error"]["human_hint"]
            assert out["summary"]["inserted"] == 0
    run(body)


@pytest.mark.parametrize("limit", [0, 101, -1, "5"])
def test_bad_limits_are_refused(db, limit):
    async def body():
        async with connect(db) as c:
            is_error, out = await c.call("memory_find", {"query": "x", "limit": limit})
            assert is_error and out["error"]["field"] == "limit"
    run(body)


def test_a_thousand_find_tags_are_too_many_not_internal(db):
    async def body():
        async with connect(db) as c:
            await c.store({"kind": "todo", "content": "tagged work", "tags": ["ops"]})
            is_error, out = await c.call("memory_find", {"query": "tagged", "tags": [f"t{i}" for i in range(1000)]})
            assert is_error and out["error"]["code"] == "too_many" and out["error"]["field"] == "tags", out
            assert "32" in out["error"]["human_hint"]
            found = await c.find(query="tagged", tags=["ops"] * 32)
            assert len(found["hits"]) == 1
    run(body)


@pytest.mark.parametrize("item,code,field", [
    ({"kind": "section", "content": "x", "idempotency_key": ""}, "empty", "items[0].idempotency_key"),
    ("just text", "wrong_type", "items[0]"),
    ({"kind": "section", "content": "x", "scope": "main"}, "wrong_type", "items[0].scope"),
])
def test_item_errors_have_the_right_code_and_never_name_an_empty_field(db, item, code, field):
    async def body():
        async with connect(db) as c:
            is_error, out = await c.call("memory_store", {"items": [item]})
            error = out["results"][0]["error"]
            assert (error["code"], error["field"]) == (code, field), error
            assert "``" not in error["message"] and "``" not in error["human_hint"], error
    run(body)
