"""The scan report read at a desktop (1280 px) and a phone (420 px) width, laid out by headless Chromium.

What a reader could not read before: the topology diagram and the memory chart shrunk to 4-7 px text (an SVG
scaled down to the page), rule descriptions with long URLs widening the page, the red x8 cell of the GPU table
off-screen on a phone, and diagram labels drawn on top of their lines. Now: no text below 11 px, no page wider than
the window, the failing cell on screen, and PCIe labels beside their line.
"""

from __future__ import annotations

import re

import pytest
from browser import find_chromium, layout_metrics

from gpuadvisor.advisor import Workload, advise
from gpuadvisor.render.html import render_html
from gpuadvisor.rules import evaluate

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(find_chromium() is None, reason="chromium not installed (apt-get install -y chromium)"),
]

MIN_TEXT_PX = 11  # the smallest text a reader can read without zooming (WCAG has no minimum; 11 px is the usual floor)


def _report(preset, name: str) -> str:
    rig = preset(name)
    evaluate(rig)
    advise(rig, Workload.from_options(model="llama-3-70b"))
    return render_html(rig)


@pytest.mark.parametrize("name", ["dgx-h100", "4x4090-pcie", "dgx2-v100"])
@pytest.mark.parametrize("width", [1280, 420])
def test_readable_without_zoom_or_sideways_page_scroll(preset, tmp_path, name, width):
    m = layout_metrics(_report(preset, name), width, tmp_path)
    assert m["clientWidth"] == width
    assert m["scrollWidth"] <= width, m
    assert m["overflow"] == [], m
    assert m["minFont"] >= MIN_TEXT_PX, m


def test_the_failing_gpu_cell_is_on_screen_on_a_phone(preset, tmp_path):
    """4x4090-pcie: GPU 2 runs at x8. At 420 px the GPU table becomes one labelled card per GPU."""
    m = layout_metrics(_report(preset, "4x4090-pcie"), 420, tmp_path, probe="table.gpus td.fail")
    cells = m["probe"]
    assert [c["text"] for c in cells] == ["Gen4 x8 (max Gen4 x16)"]
    assert cells[0]["left"] >= 0 and cells[0]["right"] <= 420


def test_pcie_labels_sit_beside_their_line(preset):
    """Each labelled PCIe edge ends in a vertical segment down to the child at x = child centre; its label starts
    to the right of that segment (it used to be centred on it, the line striking through the text)."""
    html = _report(preset, "dgx-h100")
    blocks = re.findall(r'<g class="edge edge-pcie[^"]*"[^>]*>(.*?)</g>', html, re.S)
    labelled = 0
    for b in blocks:
        label = re.search(r'<text x="([\d.]+)"[^>]*class="elabel beside">', b)
        if not label:
            continue
        last_x = float(re.search(r'<path d="[^"]*?H([\d.]+) V[\d.]+"', b).group(1))
        assert float(label.group(1)) >= last_x + 4, b
        labelled += 1
    assert labelled == 16  # switch uplinks and GPU links of the 8 GPUs
