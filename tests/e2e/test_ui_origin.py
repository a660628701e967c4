"""The UI's form posts beyond loopback, from outside on each backend: a server on every
interface, reached by a name it was not told about, accepts a form whose Origin is the
request's own `scheme://Host`, or the origin of `CORTEX_PUBLIC_URL` (a proxy's address), and
refuses any other site's (403, nothing changed); `/mcp` keeps its allow-list; a loopback
server's DNS-rebinding guard still refuses a name that is not loopback."""

import re
import subprocess
import threading

import httpx
import pytest

from conftest import BIN, TIMEOUT, server_env
from test_http import make_key, serve  # noqa: F401 (serve is a fixture)
from test_ui import at, store_as_local


@pytest.fixture
def everywhere(db):
    """`cortex serve --http 0.0.0.0:0` (env: CORTEX_PUBLIC_URL), reached at 127.0.0.1."""
    procs = []

    def start(env=None) -> str:
        proc = subprocess.Popen([BIN, "serve", "--http", "0.0.0.0:0"], env=server_env(db, CORTEX_LOG="info", **(env or {})),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        procs.append(proc)
        for line in proc.stderr:
            found = re.search(r"at http://0\.0\.0\.0:(\d+)/mcp", line)
            if found:
                # Keep reading the log, so a full pipe never stalls the server.
                threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
                return found.group(1)
        raise AssertionError("the server did not start")

    yield start
    for proc in procs:
        proc.kill()
        proc.wait(timeout=TIMEOUT)


def session(port: str, host: str, token: str) -> tuple[httpx.Client, str]:
    """A browser that reached the server as `host` (its Host header), signed in."""
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Host": host}, timeout=TIMEOUT,
                          follow_redirects=False)
    signed = client.post("/login", data={"token": token}, headers={"Origin": f"http://{host}"})
    assert signed.status_code == 303, signed.text
    return client, re.search(r'name="csrf" value="([0-9a-f]{64})"', client.get("/").text).group(1)


def test_forms_from_the_servers_own_host_or_public_url_pass_and_others_do_not(db, everywhere):
    [item] = store_as_local(db, [{"kind": "section", "scope": at("acme"),
                                  "data": {"title": "Relay notes", "body": "the relay keeps order"}}])
    token = make_key(db, "curator", "write")
    port = everywhere({"CORTEX_PUBLIC_URL": "https://memory.example.com"})
    host = f"memory.internal:{port}"
    browser, csrf = session(port, host, token)
    target = f"/items/{item}"

    other = browser.post(f"{target}/edit", data={"csrf": csrf, "data.title": "hijacked"},
                         headers={"Origin": "https://evil.example"})
    assert other.status_code == 403
    ip_origin = browser.post(f"{target}/edit", data={"csrf": csrf, "data.title": "hijacked"},
                             headers={"Origin": f"http://127.0.0.1:{port}"})
    assert ip_origin.status_code == 403, "an origin that is neither this Host nor the public URL"
    assert "hijacked" not in browser.get(target).text

    own = browser.post(f"{target}/edit", data={"csrf": csrf, "data.title": "Relay notes, by host"},
                       headers={"Origin": f"http://{host}"})
    assert own.status_code == 200, own.text
    public = browser.post(f"{target}/edit", data={"csrf": csrf, "data.title": "Relay notes, by proxy"},
                          headers={"Origin": "https://memory.example.com"})
    assert public.status_code == 200, public.text
    assert "Relay notes, by proxy" in browser.get(target).text

    mcp = httpx.post(f"http://127.0.0.1:{port}/mcp", headers={"Host": host, "Origin": f"http://{host}",
                                                            "Authorization": f"Bearer {token}"},
                     json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=TIMEOUT)
    assert mcp.status_code == 403, "/mcp admits only the allow-list"


def test_a_loopback_servers_rebinding_guard_still_holds(db, serve):
    server = serve()
    port = server.base.rsplit(":", 1)[1]
    rebound = httpx.post(server.base + "/logout", data={"csrf": "x"},
                         headers={"Host": f"rebind.example:{port}", "Origin": f"http://rebind.example:{port}"},
                         timeout=TIMEOUT)
    assert rebound.status_code == 403
    page = httpx.get(server.base + "/", headers={"Host": f"rebind.example:{port}"}, timeout=TIMEOUT)
    assert page.status_code == 403
