"""Issue 33, item 6: a damaged lexical index never answers empty. The index's segment files
are overwritten (their first 64 bytes) while `cortex serve` runs: a `fast` find still finds the
stored word, the server says why in its log (once) and builds the index again by itself;
`cortex doctor` names a damaged index and its fix, and `cortex reindex --lexical` rebuilds it
from nothing whatever state its folder is in. On PostgreSQL the index lives in the cache folder."""

import json
import subprocess
import time
from pathlib import Path

import anyio

from conftest import BIN, connect, run, server_env

NOTE = {"kind": "section", "data": {"title": "Backups", "body": "nightly pangolin snapshot"}}
FILLER = [{"kind": "section", "data": {"title": f"Note {i}", "body": f"filler words {i} zebra"}} for i in range(40)]


def setup(db, tmp_path: Path) -> tuple[dict, Path]:
    """The servers' environment, with a cache folder of the test's own, and where the index
    lives: beside a SQLite file, in the cache folder for a PostgreSQL database."""
    # JSON lines: a panic of the damaged index's search is one of them too.
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "CORTEX_LOG": "info", "CORTEX_LOG_FORMAT": "json"}
    if "://" in str(db):
        return env, tmp_path / "cache" / "cortex" / "lexical"
    return env, Path(str(db) + ".lexical")


def index_folder(root: Path) -> Path:
    if root.name.endswith(".lexical"):
        return root
    [folder] = [p for p in root.iterdir() if p.is_dir()]
    return folder


def corrupt(folder: Path) -> int:
    """Overwrites the first 64 bytes of every segment file in place (tantivy's bookkeeping,
    meta.json and .managed.json, left intact), as the probe did."""
    damaged = 0
    for path in folder.iterdir():
        if path.suffix in (".json", ".lock") or path.name.startswith("."):
            continue
        with open(path, "r+b") as f:
            f.write(bytes([0xA5]) * min(64, path.stat().st_size))
        damaged += 1
    return damaged


def cli(db, env, *args):
    return subprocess.run([BIN, *args], env=server_env(db, **env), capture_output=True, text=True, timeout=300)


def test_a_damaged_index_never_answers_empty_and_is_repaired(db, tmp_path):
    env, root = setup(db, tmp_path)
    stored = {}

    async def fill():
        async with connect(db, env=env) as c:
            out = await c.store(NOTE, *FILLER)
            stored["id"] = out["results"][0]["id"]
            # Near-duplicates among the filler notes are merged: count what was kept.
            stored["items"] = out["summary"]["inserted"]
            found = await c.find(query="pangolin", mode="fast")
            assert [h["id"] for h in found["hits"]] == [stored["id"]]
            # A find's changes are committed to the index's files a moment later.
            await anyio.sleep(1.5)
    run(fill)
    folder = index_folder(root)

    async def serve_through_damage(errlog):
        async with connect(db, env=env, errlog=errlog) as c:
            found = await c.find(query="pangolin", mode="fast")
            assert [h["id"] for h in found["hits"]] == [stored["id"]], "read from its commit"
            assert corrupt(folder) > 0, "the index has segment files"
            for _ in range(3):
                found = await c.find(query="pangolin", mode="fast")
                assert [h["id"] for h in found["hits"]] == [stored["id"]], found
            # The server builds the index again by itself; meanwhile and after, finds answer.
            await anyio.sleep(1.5)
            found = await c.find(query="zebra", mode="fast", limit=3, detail="brief")
            assert len(found["hits"]) == 3, found
    log = tmp_path / "serve.log"
    with open(log, "w") as errlog:
        run(lambda: serve_through_damage(errlog))
    entries = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    damaged = [e for e in entries if "lexical index is damaged" in e.get("message", "")]
    assert len(damaged) == 1, f"said once, not per find: {entries}"
    assert damaged[0]["level"] == "ERROR" and damaged[0]["reason"], damaged
    [repaired] = [e for e in entries if "was built again" in e.get("message", "")]
    assert repaired["items"] == stored["items"], repaired

    # A damaged index found by a command: doctor names it and the fix; reindex repairs it.
    corrupt(folder)
    doctor = cli(db, env, "doctor")
    report = json.loads(doctor.stdout)
    named = report["lexical_search"]
    assert named.startswith("damaged:") or "could not be read" in named, named
    assert "cortex reindex --lexical" in named or "built again" in named, named
    corrupt(folder)
    reindex = cli(db, env, "reindex", "--lexical")
    assert reindex.returncode == 0, reindex.stderr
    assert json.loads(reindex.stdout)["items"] == stored["items"], reindex.stdout
    doctor = json.loads(cli(db, env, "doctor").stdout)
    assert doctor["lexical_search"].startswith("enabled: BM25 index"), doctor["lexical_search"]
    assert "could not be read" not in doctor["lexical_search"], doctor["lexical_search"]

    async def after():
        async with connect(db, env=env) as c:
            found = await c.find(query="pangolin", mode="fast")
            assert [h["id"] for h in found["hits"]] == [stored["id"]]
    run(after)
