"""The published input schemas and the server agree: over the tool reference's examples and a sample
of real and malformed arguments, a JSON Schema 2020-12 validator accepts an argument object
exactly when the server does — except where listed below, each for a stated reason.

The schemas are written in the subset every model API accepts (no `anyOf`, no nullable
forms, no string lengths: see crates/mcp/src/schema.rs), so a few rules live in the server
alone (SERVER_ONLY: the schema lets them through and the server refuses them, per field, with
a hint), and the server takes a few spellings the schema does not advertise (LENIENT: null for
an absent argument, one kind where a list is published).

"The server accepts" means: no request-level error, and for memory_store no item refused as
malformed. Semantic rules the schema cannot state (a kind's required data fields, a real
calendar date, a query of only stopwords) are server-side by design and not sampled here; so is
one courtesy: the server also takes a kind's name in another case or with `-` for `_`, while the
schema lists the canonical spellings and aliases."""

import json
import re

import jsonschema

from conftest import ROOT, connect, run


def documented_examples():
    """Every kind's example item in the tool reference (docs/TOOLS.md), as one memory_store
    call, after the entity the relation's example links to (the reference shows one entity,
    `billing`)."""
    reference = (ROOT / "docs" / "TOOLS.md").read_text()
    examples = [json.loads(b) for b in re.findall(r'```json\n(\{"kind".*?)\n```', reference, re.S)]
    assert len(examples) == 16, "one example per kind"
    ledger = {"kind": "entity", "data": {"entity_type": "service", "name": "ledger"}}
    return [{"items": [ledger] + examples}]

UUID = "01a20ee0-2f50-7297-b7bc-eef19a09bd2a"

FIND_ACCEPTED = [
    {"query": "postgres sessions"},
    {"query": "postgres", "types": ["decision", "adr", "runbook"]},
    {"types": ["runbook"]},
    {"query": "postgres", "mode": "deep", "limit": 100, "expand": "all", "depth": 3, "expand_limit": 100},
    {"query": "postgres", "mode": "fast", "widen": "all", "detail": "full", "max_content_chars": 0},
    {"query": "postgres", "scope": {"org": "acme", "project": "api", "branch": "main"}},
    {"query": "postgres", "since": "2026-01-01", "until": "2030-01-01T00:00:00Z"},
    {"query": "postgres", "tags": ["db", "auth"], "status": "accepted"},
    {"query": "postgres", "include_superseded": True, "include_expired": False},
    {"ids": [UUID]},
    {"ids": [UUID], "query": "ignored when ids are given", "detail": "brief"},
    {"query": "x" * 1000},
]

FIND_REFUSED = [
    {"query": 5},
    {"query": "postgres", "bogus": True},
    {"query": "postgres", "types": ["novel"]},
    {"query": "postgres", "mode": "turbo"},
    {"query": "postgres", "widen": "galaxy"},
    {"query": "postgres", "detail": "everything"},
    {"query": "postgres", "expand": "sideways"},
    {"query": "postgres", "limit": 0},
    {"query": "postgres", "limit": 101},
    {"query": "postgres", "limit": "10"},
    {"query": "postgres", "depth": 4},
    {"query": "postgres", "expand_limit": 0},
    {"query": "postgres", "max_content_chars": 20001},
    {"query": "postgres", "scope": "main"},
    {"query": "postgres", "scope": {"planet": "mars"}},
    {"query": "postgres", "include_expired": "yes"},
    {"query": "postgres", "tags": "db"},
    {"ids": "not-a-list"},
    {"ids": [UUID] * 101},
]


def item(**extra):
    return {"kind": "decision", "data": {"title": "Sessions in Postgres", "component": "auth",
                                         "status": "accepted", "rationale": "one store"}, **extra}


STORE_ACCEPTED = [
    {"items": [item()]},
    {"items": [{"kind": "adr", "data": {"title": "ADR alias", "component": "api", "status": "proposed", "rationale": "r"}}]},
    {"items": [{"kind": "section", "content": "free text", "tags": ["a"], "ttl": "long", "metadata": {"k": 1}}]},
    {"items": [{"kind": "todo", "content": "with source", "source": {"actor": "agent"}, "idempotency_key": "k1"}]},
    {"items": [{"kind": "section", "content": "scoped", "scope": {"branch": "feature-x"}, "dedupe": False}]},
    {"items": [{"kind": "section", "content": "expiring", "expires_at": "2030-01-01T00:00:00Z"}]},
    {"items": [{"kind": "pr", "operation": "upsert", "data": {"pr_number": 7, "title": "Fix", "status": "open",
                                                            "base_branch": "main", "head_branch": "fix"}}]},
    {"items": [item()] * 100},
]

# The schema lets these through; the server refuses them, naming the field.
SERVER_ONLY = {
    "memory_find": [
        {},  # one of query, ids or types is needed: a top-level anyOf hides the tool from Claude Code
        {"query": ""},  # 1–1000 characters: strict mode refuses minLength/maxLength
        {"query": "x" * 1001},
    ],
    "memory_store": [],
}

# The server takes these; the schema publishes one spelling only.
LENIENT = {
    "memory_find": [
        {"query": "postgres", "types": "decision"},
        {"query": "postgres", "limit": None, "mode": None, "types": None, "detail": None},
    ],
    "memory_store": [
        {"items": [{"kind": "section", "content": "expiring", "expires_at": "2030-01-01T00:00:00Z", "ttl": None}]},
    ],
}

STORE_REFUSED = [
    {},
    {"items": []},
    {"items": "one"},
    {"items": [item()] * 101},
    {"items": [item()], "extra": 1},
    {"items": [{"kind": "section", "content": "x", "colour": "blue"}]},
    {"items": [{"kind": "section", "content": "x", "ttl": "forever"}]},
    {"items": [{"kind": "section", "content": "x", "operation": "merge"}]},
    {"items": [{"kind": "section", "content": "x", "tags": "a"}]},
    {"items": [{"kind": "section", "content": "x", "scope": {"planet": "mars"}}]},
    {"items": [{"kind": "novel", "content": "x"}]},
    {"items": [{"kind": "section", "content": 5}]},
    {"items": [{"kind": "section", "content": "x", "dedupe": "no"}]},
]


def accepted_by_server(tool, is_error, out):
    if is_error:
        return False
    if tool == "memory_store":
        return all(r["status"] != "validation_error" for r in out["results"])
    return True


def test_the_input_schemas_accept_exactly_what_the_server_accepts(db):
    async def body():
        async with connect(db) as c:
            tools = {t.name: t for t in (await c.session.list_tools()).tools}
            disagreements = []
            for tool, accepted, refused in [
                ("memory_find", FIND_ACCEPTED, FIND_REFUSED),
                ("memory_store", STORE_ACCEPTED + documented_examples(), STORE_REFUSED),
            ]:
                validator = jsonschema.Draft202012Validator(tools[tool].input_schema)
                samples = ([(a, True, True) for a in accepted] + [(a, False, False) for a in refused]
                           + [(a, True, False) for a in SERVER_ONLY[tool]]
                           + [(a, False, True) for a in LENIENT[tool]])
                for args, schema_expected, server_expected in samples:
                    by_schema = validator.is_valid(args)
                    is_error, out = await c.call(tool, args)
                    by_server = accepted_by_server(tool, is_error, out)
                    if (by_schema, by_server) != (schema_expected, server_expected):
                        disagreements.append((tool, str(args)[:120], f"schema={by_schema} server={by_server} "
                                              f"expected schema={schema_expected} server={server_expected}"))
            assert not disagreements, "\n".join(map(str, disagreements))
    run(body)
