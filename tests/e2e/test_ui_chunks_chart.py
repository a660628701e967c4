"""Two views of the web UI, from outside on each backend: a long document's chunks on its item
page, as the store keeps them (embedded one by one, with the headings above each); and the
activity page's chart of changes per kind per day, an SVG drawn by the server that counts only
what the key can see."""

import re

from test_http import cortex, serve  # noqa: F401 (serve is a fixture)
from test_ui import assert_loads_nothing_from_elsewhere, at, memory, signed_in, store_as_local  # noqa: F401


def test_a_long_documents_chunks_are_on_its_page(db, serve):
    parts = "\n\n".join(f"## Stage {i}\n\n" + f"The pipeline's stage {i} drains its queue before the next. " * 12
                        for i in range(8))
    [long_id] = store_as_local(db, [{"kind": "section", "scope": at("acme"), "content": f"# Pipeline\n\n{parts}"}])
    [short_id] = store_as_local(db, [{"kind": "section", "scope": at("acme"),
                                      "data": {"title": "Short", "body": "one line"}}])
    browser, server = signed_in(db, serve, "reader", "read")
    page = browser.get(f"/items/{long_id}")
    assert page.status_code == 200, page.text
    assert_loads_nothing_from_elsewhere(page.text)
    # Collapsed under the text they cut (a person opens them when they want to see the cut).
    section = re.search(r"<summary>Chunks \(\d+\)</summary>(.*?)</ol>", page.text, re.S)
    assert section, "the chunks are shown"
    chunks = re.findall(r'<li><p class="meta">bytes (\d+)–(\d+)( · [^<]*)?</p><pre>', section.group(1))
    assert len(chunks) >= 2, section.group(1)
    assert "As the store keeps them" in section.group(1), "embedded: the store's own ranges"
    ends = [(int(a), int(b)) for a, b, _ in chunks]
    assert ends[0][0] == 0 and all(a < b for a, b in ends) and all(ends[i][1] <= ends[i + 1][0] for i in range(len(ends) - 1))
    assert any("Pipeline › Stage" in (h or "") for _, _, h in chunks), chunks
    assert "<summary>Chunks" not in browser.get(f"/items/{short_id}").text, "a short text has none"


def test_the_activity_chart_counts_kinds_per_day_within_the_key(db, serve, memory):
    store_as_local(db, [{"kind": "todo", "scope": at("globex"), "data": {"title": "globex only", "status": "open"}}])
    browser, server = signed_in(db, serve, "reader", "read")
    page = browser.get("/activity")
    assert page.status_code == 200, page.text
    assert_loads_nothing_from_elsewhere(page.text)
    chart = re.search(r'<svg class="chart"[^>]*>(.*?)</svg>', page.text, re.S)
    assert chart, "the chart is drawn"
    titles = re.findall(r'<rect x="[\d.]+" y="[\d.]+" width="[\d.]+" height="[\d.]+" fill="#[0-9a-f]{6}"><title>'
                        r'(\d{4}-\d{2}-\d{2}): (\d+) change\(s\) of (\w+)</title>', chart.group(1))
    kinds = {kind: int(count) for _, count, kind in titles}
    # The reader key made for the test is a change in its org too (key_create). The server runs
    # inside this repository's checkout, in the key's org: its git upkeep records the merges of
    # that history as `branch` changes (docs/PROVENANCE.md), as many as the history holds.
    kinds.pop("branch", None)
    assert kinds == {"section": 1, "decision": 1, "entity": 2, "relation": 1, "api_key": 1}, titles
    assert "todo" not in page.text.split('<svg class="chart"')[1].split("</ul>")[0], "another tenant's kind"
    legend = re.findall(r'<span class="kind">(\w+)</span> (\d+)</li>', page.text)
    assert ("entity", "2") in legend, legend
