"""Protocol: the tool list, both protocol eras, clean exit, stdout discipline, bad JSON-RPC."""

import json

import pytest
from mcp.shared.exceptions import MCPError

from conftest import connect, run


def test_tools_list_has_exactly_the_two_tools_with_schemas_and_honest_annotations(db):
    async def body():
        async with connect(db) as c:
            tools = (await c.session.list_tools()).tools
            assert [t.name for t in tools] == ["memory_store", "memory_find"]
            for t in tools:
                assert t.input_schema["type"] == "object"
                assert t.output_schema and t.output_schema["type"] == "object"
                assert t.description
            find = tools[1].annotations
            assert (find.read_only_hint, find.idempotent_hint, find.open_world_hint) == (True, True, False)
            # memory_store deletes, overwrites by id and merges: never to be auto-approved.
            assert (tools[0].annotations.read_only_hint, tools[0].annotations.destructive_hint) == (False, True)
            assert "required" not in tools[1].input_schema, "no argument of memory_find is required"
            # What the model reads of both tools: name, description, input schema.
            seen = [{"name": t.name, "description": t.description, "inputSchema": t.input_schema} for t in tools]
            size = len(json.dumps(seen, separators=(",", ":"), ensure_ascii=False))
            assert size <= 6_000, size
            info = c.session.initialize_result
            assert "memory_find" in info.instructions and "memory_store" in info.instructions
    run(body)


def test_the_modern_era_runs_stateless_over_server_discover(db):
    async def body():
        async with connect(db, era="modern") as c:
            assert c.session.protocol_version == "2026-07-28"
            supported = c.session.discover_result.supported_versions
            assert {"2025-06-18", "2025-11-25", "2026-07-28"} <= set(supported)
            stored = await c.store({"kind": "todo", "content": "modern era harbinger"})
            assert stored["summary"]["inserted"] == 1
            found = await c.find(query="harbinger")
            assert found["hits"][0]["title"] == "modern era harbinger"
    run(body)


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_the_mcp_client_negotiates_each_handshake_version_and_uses_the_tools(db, version):
    async def body():
        async with connect(db, version=version) as c:
            assert c.session.protocol_version == version
            assert c.session.initialize_result.protocol_version == version
            assert c.session.initialize_result.instructions
            stored = await c.store({"kind": "todo", "content": f"handshake era marmoset {version}"})
            assert stored["summary"]["inserted"] == 1
            found = await c.find(query="marmoset")
            assert [h["id"] for h in found["hits"]] == [stored["results"][0]["id"]]
    run(body)


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_initialize_over_raw_json_rpc_reports_the_offered_version(spawn, version):
    server = spawn()
    result = server.initialize(version)
    assert result["result"]["protocolVersion"] == version
    server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert len(server.response(2)["result"]["tools"]) == 2
    assert server.close() == 0


def test_server_discover_lists_all_three_versions_and_a_discover_only_client_exits_cleanly(spawn):
    server = spawn()
    server.send({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}}})
    result = server.response(1)["result"]
    assert {"2025-06-18", "2025-11-25", "2026-07-28"} <= set(result["supportedVersions"])
    assert "capabilities" in result
    assert server.close() == 0


def test_stdout_carries_only_json_rpc_and_the_server_exits_0_when_stdin_closes(raw):
    raw.initialize("2025-11-25")
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "memory_store", "arguments": {"items": [{"kind": "todo", "content": "stdout check"}]}}})
    raw.response(2)
    assert raw.close() == 0
    for line in raw.stdout_lines:
        assert json.loads(line)["jsonrpc"] == "2.0"


def test_malformed_json_rpc_does_not_stop_the_server(raw):
    raw.initialize("2025-11-25")
    raw.send("this is not json")
    raw.send({"jsonrpc": "2.0", "id": 7})  # no method
    raw.send({"jsonrpc": "2.0", "id": 8, "method": "no/such/method"})
    answer = raw.response(8)
    assert answer["error"]["code"] == -32601
    raw.send({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
    assert len(raw.response(9)["result"]["tools"]) == 2


def test_an_unknown_tool_is_a_clear_error(raw):
    raw.initialize("2025-11-25")
    raw.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "memory_delete", "arguments": {}}})
    answer = raw.response(3)
    message = json.dumps(answer)
    assert ("error" in answer) or answer["result"].get("isError")
    assert "memory_store" in message and "memory_find" in message


def test_the_mcp_client_gets_an_error_for_an_unknown_tool(db):
    async def body():
        async with connect(db) as c:
            try:
                result = await c.session.call_tool("memory_delete", {})
            except MCPError as error:  # a JSON-RPC error is one acceptable answer
                assert "memory_delete" in str(error)
            else:  # a tool result flagged isError is the other
                assert result.is_error
    run(body)
