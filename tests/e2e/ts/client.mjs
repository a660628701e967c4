// One session of the official MCP TypeScript SDK client with `cortex serve` over stdio.
// The SDK checks every tool result's structuredContent against the tool's outputSchema (it
// throws when they disagree), so each call below is also a schema check. Prints one JSON
// object with what the Python test asserts on; exits non-zero on any failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const transport = new StdioClientTransport({
  command: process.env.CORTEX_BIN,
  args: ["serve"],
  env: process.env,
  stderr: "inherit",
});
const client = new Client({ name: "cortex-e2e-ts", version: "1.0.0" });
await client.connect(transport);

const call = async (name, args) => {
  const result = await client.callTool({ name, arguments: args });
  const text = JSON.parse(result.content[0].text);
  if (JSON.stringify(text) !== JSON.stringify(result.structuredContent)) {
    throw new Error(`${name}: text mirror differs from structuredContent`);
  }
  return { isError: Boolean(result.isError), out: result.structuredContent };
};

const tools = (await client.listTools()).tools;
const stored = await call("memory_store", {
  items: [
    { kind: "adr", data: { title: "Sessions in Postgres", component: "auth", status: "accepted", rationale: "one store for sessions and users" } },
    { kind: "runbook", content: "Restart the billing worker when the ledger queue stalls", data: { title: "Billing restart", service: "billing", steps: [{ description: "restart", command: "systemctl restart billing" }] } },
    { kind: "todo", content: "rotate the signing keys of the gateway" },
  ],
});
const brief = await call("memory_find", { query: "sessions postgres" });
const full = await call("memory_find", { query: "billing worker restart", detail: "full" });
const ids = stored.out.results.map((r) => r.id);
const byIds = await call("memory_find", { ids });
const refused = await call("memory_find", { query: "" });
const deleted = await call("memory_store", { items: [{ operation: "delete", id: ids[2] }] });

console.log(JSON.stringify({
  tools: tools.map((t) => ({ name: t.name, destructive: t.annotations?.destructiveHint, required: t.inputSchema.required ?? [] })),
  stored: stored.out.results.map((r) => r.status),
  brief: brief.out.hits.map((h) => Object.keys(h).sort()),
  full: full.out.hits.map((h) => ({ content: h.content, score: h.score })),
  byIds: byIds.out.hits.length,
  refused: { isError: refused.isError, code: refused.out.error?.code, field: refused.out.error?.field },
  deleted: deleted.out.results.map((r) => r.status),
}));
await client.close();
