"""The real agent CLIs, pinned in tests/e2e/agents (Claude Code at an older 2.1 release and the
newest, and Codex), wired to the real `cortex` by `cortex install` and driven against local
stand-ins for their model APIs (model_standins.py). What is asserted is what the model is
actually sent: both tools with their full input schemas, the tool results of a scripted store
and find, and the SessionStart briefing."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, CACHE, ROOT, TIMEOUT, server_env
from model_standins import Anthropic, Responses, anthropic_tool_results, responses_tool_outputs, tool_result_text
from http_server import HttpServer

AGENTS = ROOT / "tests" / "e2e" / "agents"
MODULES = AGENTS / "node_modules"
CLAUDE = {alias: MODULES / alias / "bin" / "claude.exe" for alias in ("claude-old", "claude-new")}
CODEX = MODULES / ".bin" / "codex"
TOOLS = ("memory_store", "memory_find")
RUN_TIMEOUT = 120

DECISION = "Billing retries go through the outbox table"
RUNBOOK = "Rotate the gateway signing keys every quarter"
TODO = "Move the invoice cron to the queue"
# A todo (which the briefing lists), the runbook a prompt asks about, and a section no prompt does.
PROJECT_ITEMS = (
    {"kind": "todo", "data": {"title": TODO, "status": "open"}},
    {"kind": "runbook", "data": {"title": RUNBOOK, "service": "gateway", "steps": [
        {"description": "mint the new signing key in the vault"},
        {"description": "publish the new key to the gateway"},
        {"description": "retire the old signing key after a day"}]}},
    {"kind": "section", "data": {"title": "Load balancer timeouts",
                                 "body": "The load balancer drops idle connections after 350 seconds."}},
)


def need(path: Path) -> Path:
    if not path.exists():
        pytest.fail(f"{path} is missing: run `npm ci --prefix tests/e2e/agents` (scripts/test does)")
    return path


def version(alias: str) -> str:
    return json.loads((MODULES / alias / "package.json").read_text())["version"]


def base_env(home: Path, **extra: str) -> dict:
    """A user's environment with nothing of ours in it: no CORTEX_* setting reaches a server
    unless its config entry carries it."""
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", "XDG_CACHE_HOME": CACHE}
    env.update(extra)
    return env


def cortex(args: list[str], env: dict, cwd: Path) -> str:
    run = subprocess.run([BIN, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)
    assert run.returncode == 0, f"cortex {' '.join(args)}: {run.stdout}{run.stderr}"
    return run.stdout


def store(db: Path, cwd: Path, home: Path, *items: dict) -> None:
    out = cortex(["--db", str(db), "store", json.dumps(list(items))], base_env(home, CORTEX_EMBEDDER="none"), cwd)
    assert json.loads(out)["summary"]["inserted"] == len(items), out


@pytest.fixture
def place(tmp_path: Path):
    """A home folder and a project folder (not a git checkout: its scope is local/project)."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    return home, project


def claude_env(home: Path, api: Anthropic, **extra: str) -> dict:
    # MCP_CONNECTION_NONBLOCKING=false: newer releases send `-p`'s first request without
    # waiting for MCP servers to connect, so on a busy machine the tools could miss it.
    return base_env(home, ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="dummy", DISABLE_TELEMETRY="1",
                    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1",
                    DISABLE_ERROR_REPORTING="1", MCP_CONNECTION_NONBLOCKING="false", **extra)

# Newer releases defer MCP tools: the first request names them, and ToolSearch loads their
# schemas into the requests after it. The model asks for them when ToolSearch is offered.
LOAD_TOOLS = ("if-offered", "ToolSearch", {"query": "select:" + ",".join(f"mcp__cortex__{t}" for t in TOOLS)})


def run_claude(alias: str, prompt: str, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    # Root may not use --dangerously-skip-permissions: the two tools are allowed by name.
    allowed = ",".join(f"mcp__cortex__{t}" for t in TOOLS)
    run = subprocess.run([str(need(CLAUDE[alias])), "-p", prompt, "--allowedTools", allowed], env=env, cwd=cwd,
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, f"claude {version(alias)} failed: {run.stdout[-2000:]}{run.stderr[-2000:]}"
    return run


def first_main(api, agent: str) -> dict:
    mains = api.main_requests()
    assert mains, f"{agent} sent no conversation request; it sent: {[r.path for r in api.requests]}"
    return mains[0]


def assert_both_tools_with_schemas(tools: dict, agent: str) -> None:
    """`tools` maps each offered tool's name to its input schema."""
    for tool in TOOLS:
        name = next((n for n in tools if n.endswith(tool) and "cortex" in n), None)
        assert name, f"{agent} did not offer {tool} to the model; it offered {sorted(tools)}"
        assert tools[name].get("properties"), f"{agent} sent {name} without its input schema: {tools[name]}"
    find = next(s for n, s in tools.items() if n.endswith("memory_find"))
    assert {"query", "ids", "types"} <= set(find["properties"]), find
    store_items = next(s for n, s in tools.items() if n.endswith("memory_store"))["properties"]["items"]
    assert store_items.get("items"), f"memory_store's items lost their schema: {store_items}"


def claude_tools(api: Anthropic, agent: str) -> dict:
    """Name → input schema of the tools offered to the model: the first request's, or, where
    that request defers MCP tools behind ToolSearch (naming them only), every request's after
    checking that the first named both of ours."""
    mains = api.main_requests()
    assert mains, f"{agent} sent no conversation request; it sent: {[r.path for r in api.requests]}"
    first = mains[0]
    if not any(t["name"] == "ToolSearch" for t in first.get("tools", [])):
        mains = [first]
    missing = [t for t in TOOLS if f"mcp__cortex__{t}" not in json.dumps(first)]
    assert not missing, f"{agent}'s first request does not name {missing}"
    return {t["name"]: t.get("input_schema", {}) for body in mains for t in body.get("tools", [])}


@pytest.mark.parametrize("alias", sorted(CLAUDE))
def test_claude_code_offers_both_tools_and_a_store_then_find_answers_from_the_named_database(alias, place):
    home, project = place
    db = project.parent / "team-memory.db"
    agent = f"Claude Code {version(alias)}"
    store(db, project, home, {"kind": "todo", "data": {"title": TODO, "status": "open"}})
    cortex(["install", "claude-code", "--user"], base_env(home, CORTEX_DB=str(db), CORTEX_EMBEDDER="none"), project)

    script = [
        LOAD_TOOLS,
        ("tool", "mcp__cortex__memory_store", {"items": [{"kind": "decision", "data": {
            "title": DECISION, "component": "billing", "status": "accepted", "rationale": "a retry survives a crash"}}]}),
        ("tool", "mcp__cortex__memory_find", {"query": "billing retries outbox"}),
        ("text", "Recorded and found."),
    ]
    with Anthropic(script) as api:
        run = run_claude(alias, "Record how billing retries work, then look it up.", claude_env(home, api), project)
    assert "Recorded and found." in run.stdout, run.stdout

    assert_both_tools_with_schemas(claude_tools(api, agent), agent)
    assert TODO in json.dumps(api.main_requests()[0]), "the SessionStart briefing did not read the named database"
    results = anthropic_tool_results(api.main_requests()[-1])[-2:]
    stored, found = (tool_result_text(r) for r in results)
    assert not any(r.get("is_error") for r in results), results
    assert json.loads(stored)["results"][0]["status"] == "inserted", stored
    assert DECISION in found, f"memory_find's result did not carry the stored decision: {found}"
    # The server wrote the database the install named, though the agent's environment named none.
    listed = cortex(["--db", str(db), "find", "outbox", "--json"], base_env(home, CORTEX_EMBEDDER="none"), project)
    assert DECISION in listed, listed


@pytest.mark.parametrize("alias", sorted(CLAUDE))
def test_claude_code_over_http_offers_both_tools_and_gets_the_briefing(alias, place, tmp_path):
    home, project = place
    db = tmp_path / "memory.db"
    agent = f"Claude Code {version(alias)}"
    # A user who exported the database and scope: the hook sees them as the server does.
    user = {k: v for k, v in server_env(db, CORTEX_EMBEDDER="none").items() if k.startswith("CORTEX_")}
    user = base_env(home, **user)
    cortex(["store", json.dumps([
        {"kind": "decision", "data": {"title": DECISION, "component": "billing", "status": "accepted",
                                      "rationale": "a retry survives"}},
        {"kind": "todo", "data": {"title": TODO, "status": "open"}},
    ])], user, project)
    # The SessionStart hook comes from the install; the server entry is the team server's URL.
    cortex(["install", "claude-code", "--user"], user, project)
    server = HttpServer(db, env={"CORTEX_EMBEDDER": "none"})
    try:
        config = json.loads((home / ".claude.json").read_text())
        config["mcpServers"] = {"cortex": {"type": "http", "url": server.url}}
        (home / ".claude.json").write_text(json.dumps(config))
        script = [LOAD_TOOLS, ("tool", "mcp__cortex__memory_find", {"query": "billing retries"}), ("text", "Found it.")]
        with Anthropic(script) as api:
            env = claude_env(home, api, **{k: v for k, v in user.items() if k.startswith("CORTEX_")})
            run_claude(alias, "How do billing retries work?", env, project)
    finally:
        server.stop()
    assert_both_tools_with_schemas(claude_tools(api, agent), agent)
    sent = json.dumps(api.main_requests()[0])
    assert "Project memory" in sent and TODO in sent, \
        f"the SessionStart briefing is not in {agent}'s first request"
    results = anthropic_tool_results(api.main_requests()[-1])
    assert results and DECISION in tool_result_text(results[-1]), results


@pytest.mark.parametrize("alias", sorted(CLAUDE))
def test_a_project_install_is_approved_and_its_tools_reach_the_model(alias, place):
    home, project = place
    agent = f"Claude Code {version(alias)}"
    cortex(["install", "claude-code"], base_env(home, CORTEX_DB=str(project / "memory.db"), CORTEX_EMBEDDER="none"),
           project)
    # A folder the user has trusted (interactive Claude Code asks that once per folder): its
    # .mcp.json servers still wait for their own approval unless the install gave it.
    (home / ".claude.json").write_text(json.dumps({"projects": {str(project): {"hasTrustDialogAccepted": True}}}))
    with Anthropic([]) as api:
        status = subprocess.run([str(need(CLAUDE[alias])), "mcp", "get", "cortex"], env=claude_env(home, api),
                                cwd=project, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                timeout=RUN_TIMEOUT)
    assert "Connected" in status.stdout, f"{agent} says: {status.stdout}{status.stderr}"
    with Anthropic([LOAD_TOOLS, ("text", "Hello.")]) as api:
        run_claude(alias, "Hello", claude_env(home, api), project)
    assert_both_tools_with_schemas(claude_tools(api, agent), agent)


def codex_config(home: Path, api: Responses) -> None:
    """The model provider: the stand-in, spoken to with the Responses API. `cortex install
    codex` adds its server to the same file afterwards."""
    (home / ".codex").mkdir(exist_ok=True)
    (home / ".codex" / "config.toml").write_text(
        'model = "stand-in"\nmodel_provider = "standin"\n\n'
        f'[model_providers.standin]\nname = "stand-in"\nbase_url = "{api.url}/v1"\nwire_api = "responses"\n')


def responses_tools(body: dict) -> dict:
    """Name → parameters of every function tool, namespaced ones included."""
    tools = {}
    for tool in body.get("tools", []):
        if tool.get("type") == "function":
            tools[tool["name"]] = tool.get("parameters", {})
        for inner in tool.get("tools", []) if isinstance(tool.get("tools"), list) else []:
            tools[f"{tool.get('name')}.{inner.get('name')}"] = inner.get("parameters", {})
    return tools


MODEL_DIR = os.environ.get("CORTEX_MODEL_DIR", str(ROOT / ".cache" / "models" / "all-MiniLM-L6-v2"))


@pytest.mark.parametrize("alias", sorted(CLAUDE))
def test_with_the_model_a_paraphrased_prompt_brings_the_runbook_in_other_words(alias, place, tmp_path):
    """With the embedding model installed, the prompt's recall is hybrid: "rotate the TLS
    certificate" brings the runbook that says "renew the web server certificate" (no lexical
    match: two of the prompt's three meaningful words are not in it) into the first request of
    the real Claude Code, and a prompt about nothing stored brings nothing."""
    home, project = place
    db = tmp_path / "memory.db"
    env = base_env(home, CORTEX_DB=str(db), CORTEX_MODEL_DIR=MODEL_DIR)
    title = "Renew the web server certificate with certbot"
    stored = json.loads(cortex(["store", json.dumps([
        {"kind": "runbook", "data": {"title": title, "service": "nginx", "steps": [
            {"description": "run certbot renew --dry-run to check the ACME account"},
            {"description": "run certbot renew and reload nginx"}]}},
        {"kind": "section", "data": {"title": "Load balancer timeouts",
                                     "body": "The load balancer drops idle connections after 350 seconds."}}])],
        env, project))
    assert stored["summary"]["inserted"] == 2, stored
    cortex(["install", "claude-code", "--user"], env, project)
    agent = f"Claude Code {version(alias)}"

    with Anthropic([LOAD_TOOLS, ("text", "Noted.")]) as api:
        run_claude(alias, "How do I rotate the TLS certificate?", claude_env(home, api), project)
    first = json.dumps(first_main(api, agent))
    assert title in first, f"the paraphrased prompt did not bring the runbook into {agent}'s first request"
    assert "350 seconds" not in first, "a memory unrelated to the prompt was injected"

    with Anthropic([LOAD_TOOLS, ("text", "A haiku.")]) as api:
        run_claude(alias, "Write a haiku about autumn leaves falling into a quiet pond", claude_env(home, api), project)
    first = json.dumps(first_main(api, agent))
    assert title not in first and "350 seconds" not in first, f"an unrelated prompt brought a memory into {agent}'s request"


def run_codex(prompt: str, home: Path, cwd: Path, *flags: str) -> subprocess.CompletedProcess:
    run = subprocess.run(
        [str(need(CODEX)), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", *flags,
         prompt],
        env=base_env(home, CODEX_HOME=str(home / ".codex")), cwd=cwd, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, f"codex failed: {run.stdout[-2000:]}{run.stderr[-3000:]}"
    return run


def test_codex_offers_both_tools_and_finds_what_the_named_database_holds(place, tmp_path):
    home, project = place
    db = tmp_path / "elsewhere" / "memory.db"
    db.parent.mkdir()
    store(db, project, home, {"kind": "runbook", "data": {"title": RUNBOOK, "service": "gateway", "steps": [
        {"description": "mint the new key"}, {"description": "publish it"}, {"description": "retire the old"}]}})
    with Responses([("tool", "memory_find", {"query": "gateway signing keys"}), ("text", "Found it.")]) as api:
        codex_config(home, api)
        cortex(["install", "codex"], base_env(home, CORTEX_DB=str(db), CORTEX_EMBEDDER="none"), project)
        run_codex("How do we rotate the gateway keys?", home, project)
    first = first_main(api, "Codex")
    assert_both_tools_with_schemas(responses_tools(first), "Codex")
    outputs = responses_tool_outputs(api.main_requests()[-1])
    assert outputs and RUNBOOK in outputs[-1], f"memory_find's output did not carry the runbook: {outputs}"


@pytest.mark.parametrize("alias", sorted(CLAUDE))
def test_a_prompt_about_a_stored_runbook_brings_it_and_an_unrelated_prompt_brings_nothing(alias, place, tmp_path):
    """After `cortex install claude-code`, with items of several kinds stored, the first request
    of a prompt about the stored runbook (a kind the SessionStart briefing never lists) carries
    that runbook: the UserPromptSubmit hook (`cortex recall`) put it there. A prompt about
    nothing stored carries no stored item the briefing does not list."""
    home, project = place
    db = tmp_path / "memory.db"
    agent = f"Claude Code {version(alias)}"
    store(db, project, home,
          {"kind": "decision", "data": {"title": DECISION, "component": "billing", "status": "accepted",
                                        "rationale": "a retry survives a crash"}},
          *PROJECT_ITEMS)
    cortex(["install", "claude-code", "--user"], base_env(home, CORTEX_DB=str(db), CORTEX_EMBEDDER="none"), project)
    runbook_id = json.loads(cortex(["--db", str(db), "find", "rotate gateway signing keys", "--json", "--mode", "fast"],
                                   base_env(home, CORTEX_EMBEDDER="none"), project))["hits"][0]["id"]
    section = "350 seconds"

    with Anthropic([LOAD_TOOLS, ("text", "Noted.")]) as api:
        run_claude(alias, "How do we rotate the gateway signing keys?", claude_env(home, api), project)
    first = json.dumps(first_main(api, agent))
    assert runbook_id in first and RUNBOOK in first, f"the runbook did not reach {agent}'s first request"
    assert section not in first, "a memory unrelated to the prompt was injected"

    with Anthropic([LOAD_TOOLS, ("text", "A haiku.")]) as api:
        run_claude(alias, "Write a haiku about autumn leaves falling into a quiet pond", claude_env(home, api), project)
    first = json.dumps(first_main(api, agent))
    assert "Project memory" in first and TODO in first, "the briefing is still there"
    for stored_outside_the_briefing in (RUNBOOK, runbook_id, section):
        assert stored_outside_the_briefing not in first, \
            f"an unrelated prompt brought {stored_outside_the_briefing!r} into {agent}'s first request"


def test_codex_hooks_bring_the_briefing_and_the_prompts_recall_once_trusted(place, tmp_path):
    """After `cortex install codex`, the first request of a prompt about the stored runbook
    carries the SessionStart briefing and that runbook (the UserPromptSubmit hook's plain
    stdout, which Codex adds to the model's context); a prompt about nothing stored carries the
    briefing only. Codex skips hooks it has not been told to trust, without a word: the install
    says so, and this scripted run trusts them with Codex's own flag."""
    home, project = place
    db = tmp_path / "memory.db"
    store(db, project, home, *PROJECT_ITEMS)
    env = base_env(home, CORTEX_DB=str(db), CORTEX_EMBEDDER="none")
    trust = "--dangerously-bypass-hook-trust"

    with Responses([("text", "Noted.")]) as api:
        codex_config(home, api)
        install = subprocess.run([BIN, "install", "codex"], env=env, cwd=project, capture_output=True, text=True,
                                 timeout=TIMEOUT)
        assert install.returncode == 0 and "/hooks" in install.stderr, install.stderr
        run_codex("How do we rotate the gateway signing keys?", home, project, trust)
    first = json.dumps(first_main(api, "Codex"))
    assert TODO in first, "the SessionStart briefing did not reach Codex's first request"
    assert RUNBOOK in first and "Cortex memory recalled for this prompt" in first, \
        "the prompt's recall did not reach Codex's first request"
    assert "350 seconds" not in first, "a memory unrelated to the prompt was injected"

    with Responses([("text", "A haiku.")]) as api:
        codex_config(home, api)
        cortex(["install", "codex"], env, project)
        run_codex("Write a haiku about autumn leaves falling into a quiet pond", home, project, trust)
    first = json.dumps(first_main(api, "Codex"))
    assert TODO in first, "the briefing is still there"
    assert RUNBOOK not in first, "an unrelated prompt brought the runbook into Codex's first request"
