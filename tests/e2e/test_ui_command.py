"""`cortex ui`: the web UI for one person on this machine, from outside on each backend. It
prints the URL, serves the memory there without sign-in (a loopback server no key exists for),
starts the program `$BROWSER` names on that URL once the server answers, and stops on SIGTERM;
an address others could reach is refused, naming the argument and `cortex serve --http`."""

import signal
import socket
import subprocess
import time

import httpx

from conftest import BIN, TIMEOUT, server_env
from test_ui import at, store_as_local


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cortex_ui_serves_the_memory_and_opens_the_browser(db, tmp_path):
    store_as_local(db, [{"kind": "section", "scope": at("acme"),
                         "data": {"title": "Quokka deploy notes", "body": "deploy on tuesdays"}}])
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s" "$1" > "{opened}"\n')
    browser.chmod(0o755)
    addr = f"127.0.0.1:{free_port()}"
    proc = subprocess.Popen([BIN, "ui", addr], env=server_env(db, BROWSER=str(browser)),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        url = f"http://{addr}/"
        assert url in first, first
        deadline = time.monotonic() + TIMEOUT
        while not opened.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert opened.read_text() == url, "the browser was started on the URL"
        page = httpx.get(url, timeout=TIMEOUT)
        assert page.status_code == 200, page.text
        assert "Quokka deploy notes" in page.text and 'name="token"' not in page.text, "no sign-in"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=TIMEOUT) == 0, proc.stderr.read()


def test_cortex_ui_refuses_an_address_others_can_reach(db):
    done = subprocess.run([BIN, "ui", "0.0.0.0:8787"], env=server_env(db), capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert done.returncode == 2, done
    assert "ADDR" in done.stderr and "cortex serve --http" in done.stderr
    assert done.stdout == ""
