// The official MCP TypeScript SDK's StreamableHTTPClientTransport against `cortex serve --http`
// (tests/e2e/test_http.py starts the server and makes the keys). With the write key: store and
// find (each result checked by the SDK against the tool's outputSchema), then the session ends
// (DELETE). With the read key: a find, and a store refused for its role. Prints one JSON object.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const session = async (token) => {
  const transport = new StreamableHTTPClientTransport(new URL(process.env.CORTEX_URL), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "cortex-e2e-ts-http", version: "1.0.0" });
  await client.connect(transport);
  const call = async (name, args) => {
    const result = await client.callTool({ name, arguments: args });
    return { isError: Boolean(result.isError), out: result.structuredContent };
  };
  return { client, transport, call };
};

const writer = await session(process.env.CORTEX_WRITE_TOKEN);
const sessionId = writer.transport.sessionId;
const stored = await writer.call("memory_store", {
  items: [{ kind: "todo", content: "ship the team server over HTTP" }],
});
const found = await writer.call("memory_find", { query: "team server", mode: "fast" });
await writer.transport.terminateSession();
await writer.client.close();

const reader = await session(process.env.CORTEX_READ_TOKEN);
const readerFound = await reader.call("memory_find", { query: "team server", mode: "fast" });
const refused = await reader.call("memory_store", { items: [{ kind: "todo", content: "not mine to write" }] });
await reader.client.close();

console.log(JSON.stringify({
  sessionId: Boolean(sessionId),
  stored: stored.out.results.map((r) => r.status),
  found: found.out.hits.length,
  readerFound: readerFound.out.hits.length,
  refused: { isError: refused.isError, code: refused.out.error?.code },
}));
