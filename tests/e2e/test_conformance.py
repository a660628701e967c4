"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
tests/e2e/conformance with the Node 22 it needs) against `cortex serve --http`, on each backend.
Every scenario passes except those in tests/e2e/conformance/expected-failures.yml, which need the
suite's own fixture tools, resources and prompts (each listed with its reason); the suite itself
fails the run on an unexpected failure and on a listed scenario that passes."""

import os
import subprocess
from pathlib import Path

from conftest import ROOT
from http_server import serve  # noqa: F401  (the fixture)

SUITE = ROOT / "tests" / "e2e" / "conformance"
BIN_DIR = SUITE / "node_modules" / ".bin"
EXPECTED = SUITE / "expected-failures.yml"


def test_the_conformance_suite_passes_every_scenario_but_the_fixture_ones(serve, tmp_path: Path):
    server = serve()
    env = {**os.environ, "PATH": f"{BIN_DIR}{os.pathsep}{os.environ['PATH']}"}
    run = subprocess.run(
        [BIN_DIR / "conformance", "server", "--url", server.url,
         "--expected-failures", EXPECTED, "--output-dir", tmp_path / "results"],
        env=env, capture_output=True, text=True, timeout=600,
    )
    report = run.stdout[-6000:] + run.stderr[-2000:]
    assert run.returncode == 0, report
    assert "Baseline check passed" in run.stdout, report
    # The run really exercised the server: the scenarios Cortex must pass are in the summary.
    for scenario in ("server-initialize", "ping", "tools-list", "resources-list", "prompts-list",
                     "server-sse-multiple-streams", "dns-rebinding-protection"):
        assert f"✓ {scenario}:" in run.stdout, f"{scenario} did not pass:\n{report}"
    results = list((tmp_path / "results").iterdir())
    assert len(results) >= 30, f"only {len(results)} scenarios ran:\n{report}"
