"""Protocol: the tool list, both protocol eras, clean exit, stdout discipline, bad JSON-RPC."""

import json

from conftest import RawServer, connect, run


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
            assert tools[0].annotations.read_only_hint is False
            size = len(json.dumps([t.model_dump(by_alias=True, exclude_none=True) for t in tools], separators=(",", ":")))
            assert size < 10_000, size
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


def test_initialize_negotiates_2025_06_18_and_2025_11_25(db):
    for version in ["2025-06-18", "2025-11-25"]:
        server = RawServer(db)
        result = server.initialize(version)
        assert result["result"]["protocolVersion"] == version
        server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert len(server.response(2)["result"]["tools"]) == 2
        assert server.close() == 0


def test_a_discover_only_client_that_leaves_is_a_clean_exit(db):
    server = RawServer(db)
    server.send({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}}})
    assert "2026-07-28" in server.response(1)["result"]["supportedVersions"]
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
