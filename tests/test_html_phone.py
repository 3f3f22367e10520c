"""Reports read on a phone (420 px), laid out by headless Chromium: no page wider than the window. The fleet page's
drain list (node, why, evidence, what to do) overflowed to 785 px; now each node to drain is a card."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser import find_chromium, layout_metrics
from test_browser_reports import make_report

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(find_chromium() is None, reason="chromium not installed (apt-get install -y chromium)"),
]


def test_fleet_page_with_a_drain_list_fits_a_phone(tmp_path: Path) -> None:
    page = make_report("fleet", tmp_path)  # three sound dgx-h100 nodes and the planted one
    m = layout_metrics(page.read_text(encoding="utf-8"), 420, tmp_path, probe="table.drain tbody tr")
    assert m["scrollWidth"] <= m["clientWidth"] == 420, m["overflow"]
    (row,) = m["probe"]
    assert row["text"].startswith("node-bad") and row["left"] >= 0 and row["right"] <= 420


def test_memory_chart_shows_its_whole_axis_on_a_phone(preset, tmp_path: Path) -> None:
    """The memory-per-GPU chart at 420 px: its phone variant (labels above the bars) spans the page and every
    tick of its axis is on screen; the desktop chart (900 px, which showed 0-8 GiB of its axis) is hidden."""
    from gpuadvisor.advisor import Workload, advise
    from gpuadvisor.render.html import render_html
    from gpuadvisor.rules import evaluate

    rig = preset("dgx-h100")
    evaluate(rig)
    advise(rig, Workload.from_options(model="llama-3-70b"))
    probe = "div.wide-only svg, div.narrow-only svg, div.narrow-only svg text.xtick"
    m = layout_metrics(render_html(rig), 420, tmp_path, probe=probe)
    wide, narrow, *ticks = m["probe"]
    assert m["scrollWidth"] <= 420
    assert (wide["left"], wide["right"]) == (0, 0)  # not displayed
    assert narrow["left"] >= 0 and narrow["right"] <= 420
    assert len(ticks) >= 4 and all(t["left"] >= 0 and t["right"] <= 420 for t in ticks)
    assert ticks[0]["text"] == "0" and float(ticks[-1]["text"]) >= 79.2  # the axis reaches past an H100's memory


def test_candidate_rows_stay_one_line_high_on_a_phone(preset, tmp_path: Path) -> None:
    """The advisor's candidate table at 420 px: rows were 160-170 px tall (every cell squeezed into the page);
    now each row keeps to one line (two where the reason wraps) and the table scrolls sideways in its box."""
    from gpuadvisor.advisor import Workload, advise
    from gpuadvisor.render.html import render_html
    from gpuadvisor.rules import evaluate

    rig = preset("dgx-h100")
    evaluate(rig)
    advise(rig, Workload.from_options(model="llama-3-70b"))
    m = layout_metrics(render_html(rig), 420, tmp_path, probe="table.cand tr")
    rows = m["probe"][1:]
    assert len(rows) >= 5 and m["scrollWidth"] <= 420
    assert max(r["height"] for r in rows) <= 60, [(r["text"][:20], r["height"]) for r in rows]
