"""The container images and the compose file, with Debian's podman: `scripts/image` builds the
server's image (from the binary under test, CORTEX_BIN, without the model, which is mounted
instead) and the PostgreSQL one; the server runs as non-root, answers /health (its HEALTHCHECK
too) and MCP, keeps its data across containers, drains on SIGTERM; `deploy/compose.yaml` comes
up with podman-compose and round-trips a store and a find. The whole module skips, saying why,
where podman cannot run a container."""

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from cluster import call, free_port, store, found_ids, unique
from conftest import BIN, ROOT, TIMEOUT

RUN = uuid.uuid4().hex[:8]
MODEL = Path(os.environ.get("CORTEX_MODEL_DIR", ROOT / ".cache" / "models" / "all-MiniLM-L6-v2"))


def podman_env() -> dict:
    conf = subprocess.run([str(ROOT / "scripts" / "image"), "conf"], capture_output=True, text=True, timeout=60)
    return dict(os.environ, CONTAINERS_CONF=conf.stdout.strip())


def podman(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    out = subprocess.run(["podman", *args], env=podman_env(), capture_output=True, text=True, timeout=timeout)
    if check and out.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)}: {out.stdout}{out.stderr}")
    return out


def build(*args: str) -> str:
    out = subprocess.run([str(ROOT / "scripts" / "image"), *args], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def images():
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed: apt-get install podman runc (scripts/test does, as root)")
    server = build("--binary", BIN, "--no-model", "--tag", f"localhost/cortex-test:{RUN}")
    try:
        probe = podman("run", "--rm", server, "--version", check=False, timeout=120)
    except subprocess.TimeoutExpired:
        probe = None
    if probe is None or probe.returncode != 0:
        podman("rmi", "-f", server, check=False)
        pytest.skip(f"podman cannot run a container here: {probe.stderr[-500:] if probe else 'timed out'}")
    postgres = build("postgres", "--tag", f"localhost/cortex-postgres-test:{RUN}")
    yield server, postgres
    podman("rmi", "-f", server, postgres, check=False)


def wait_for_health(base: str, timeout: float = 90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"{base}/health did not answer")


class Container:
    def __init__(self, image: str, *args: str, env: dict | None = None):
        self.name = f"cortex-test-{uuid.uuid4().hex[:8]}"
        self.port = free_port()
        flags = [f for pair in (("-e", f"{k}={v}") for k, v in (env or {}).items()) for f in pair]
        podman("run", "-d", "--name", self.name, "-p", f"127.0.0.1:{self.port}:8080", *flags, *args, image)
        self.base = f"http://127.0.0.1:{self.port}"

    def exec(self, *args: str) -> str:
        return podman("exec", self.name, *args).stdout

    def remove(self):
        podman("rm", "-f", "-v", "-t", "0", self.name, check=False)


def test_the_server_image_runs_as_non_root_serves_mcp_keeps_its_data_and_drains(images):
    server, _ = images
    volume = f"cortex-test-data-{RUN}"
    model = ["-v", f"{MODEL}:/opt/cortex/model:ro", "-e", "CORTEX_EMBEDDER=local"]
    first = Container(server, "-v", f"{volume}:/data", *model)
    second = None
    try:
        wait_for_health(first.base)
        inspect = json.loads(podman("image", "inspect", server).stdout)[0]
        assert inspect["Config"]["User"] == "10001:10001"
        assert list(inspect["Config"]["ExposedPorts"]) == ["8080/tcp"]
        assert inspect["Healthcheck"]["Test"] == ["CMD", "cortex", "health"]
        # Its health check passes (podman runs it on demand where no systemd schedules it).
        assert podman("healthcheck", "run", first.name, check=False).returncode == 0
        users = podman("top", first.name, "user", "huser").stdout.split()
        assert "10001" in users or "cortex" in users, users
        assert "root" not in users[2:], users
        # `cortex` is on PATH, and the first key is one command.
        token = json.loads(first.exec("cortex", "keys", "create", "--name", "admin", "--org", "acme",
                                      "--role", "admin"))["token"]
        url = first.base + "/mcp"
        word = unique("boxed")
        status, item_id, answer = store(url, token, f"{word} stored in a container")
        assert item_id, (status, answer)
        assert found_ids(url, token, word, "auto") == [item_id]
        # Unauthenticated requests are refused: the server listens beyond loopback.
        status, _ = call(url, "cortex_0000000000000000_" + "0" * 64, "memory_find", {"query": word})
        assert status == 401
        # SIGTERM: the server finishes and exits 0, well within the stop timeout.
        started = time.monotonic()
        podman("stop", "-t", "30", first.name)
        assert time.monotonic() - started < 25
        state = json.loads(podman("inspect", first.name).stdout)[0]["State"]
        assert state["ExitCode"] == 0, state
        first.remove()
        # A new container on the same volume has the item and the key.
        second = Container(server, "-v", f"{volume}:/data", *model)
        wait_for_health(second.base)
        assert found_ids(second.base + "/mcp", token, word) == [item_id]
    finally:
        first.remove()
        if second:
            second.remove()
        podman("volume", "rm", "-f", volume, check=False)


def test_the_server_image_without_the_model_serves_lexical_finds(images):
    server, _ = images
    box = Container(server)
    try:
        wait_for_health(box.base)
        token = json.loads(box.exec("cortex", "keys", "create", "--name", "admin", "--org", "acme",
                                    "--role", "admin"))["token"]
        word = unique("plain")
        status, item_id, answer = store(box.base + "/mcp", token, f"{word} without a model")
        assert item_id, (status, answer)
        assert found_ids(box.base + "/mcp", token, word, "auto") == [item_id]
        size = json.loads(podman("image", "inspect", server).stdout)[0]["Size"]
        assert size < 150e6, f"{size / 1e6:.1f} MB"
    finally:
        box.remove()


def podman_compose() -> list[str]:
    found = shutil.which("podman-compose") or str(Path(sys.executable).parent / "podman-compose")
    if not Path(found).exists():
        pytest.skip("podman-compose is not installed: pip install podman-compose (tests/e2e/requirements.txt)")
    return [found]


def test_the_compose_file_comes_up_and_round_trips_a_store_and_a_find(images):
    server, postgres = images
    project = f"cortex-test-{RUN}"
    port = free_port()
    env = dict(podman_env(), CORTEX_IMAGE=server, POSTGRES_IMAGE=postgres, CORTEX_PORT=str(port),
               CORTEX_BIND="127.0.0.1", CORTEX_DB_PASSWORD=uuid.uuid4().hex)
    compose = [*podman_compose(), "-p", project, "-f", str(ROOT / "deploy" / "compose.yaml")]

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        out = subprocess.run([*compose, *args], env=env, capture_output=True, text=True, timeout=300)
        if check and out.returncode != 0:
            raise AssertionError(f"podman-compose {' '.join(args)}: {out.stdout[-2000:]}{out.stderr[-2000:]}")
        return out

    try:
        run("up", "-d")
        base = f"http://127.0.0.1:{port}"
        # The server came up whichever started first: it waits for the database.
        wait_for_health(base, timeout=120)
        token = json.loads(run("exec", "-T", "cortex", "cortex", "keys", "create", "--name", "admin", "--org",
                               "acme", "--role", "admin").stdout)["token"]
        word = unique("composed")
        status, item_id, answer = store(base + "/mcp", token, f"{word} through compose")
        assert item_id, (status, answer)
        assert found_ids(base + "/mcp", token, word) == [item_id]
        # The database is not published on the host.
        ports = podman("ps", "--filter", f"label=io.podman.compose.project={project}", "--format",
                       "{{.Names}} {{.Ports}}").stdout
        assert "5432" not in ports, ports
    finally:
        run("down", "-v", check=False)
