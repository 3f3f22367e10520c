"""The fleet HTML report in headless Chromium: it parses, fetches nothing, and every outlier links to evidence."""

from __future__ import annotations

import fleet_synth as synth
import pytest
from browser import Dom, dump_dom, find_chromium, png_size, screenshot
from test_html import external_urls

from gpuadvisor.fleet.analyse import Options, analyse
from gpuadvisor.fleet.load import load_nodes
from gpuadvisor.render.html.fleet import anchor, render_html

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(find_chromium() is None, reason="chromium not installed (apt-get install -y chromium)"),
]
NAMES = [f"node{i:02d}" for i in range(1, 25)]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    d = tmp_path_factory.mktemp("fleet")
    plants = {
        "node05": synth.Plant(x8_gpu=2),
        "node09": synth.Plant(driver="535.104.05"),
        'node<b>"x': synth.Plant(slow_gpu=1),
    }
    synth.write_fleet(d / "scans", [n for n in NAMES if n != "node13"] + ['node<b>"x'], seed=2, plants=plants)
    report = analyse(load_nodes([str(d / "scans")]), Options(expect=NAMES))
    html = d / "fleet.html"
    html.write_text(render_html(report), encoding="utf-8")
    return report, html, Dom(dump_dom(html))


def test_parses_with_every_node_in_the_heat_map(page):
    report, _, dom = page
    rows = [a for t, a in dom.elements if t == "tr" and a.get("class", "").startswith("sev-")]
    assert len(rows) == len(report.nodes) == 25
    text = dom.all_text()
    assert 'node<b>"x' in text  # a hostile host name is text, not markup
    assert not [t for t, _ in dom.elements if t == "b"]
    assert "GPU fleet: 25 nodes in 1 hardware group" in text
    drain = [a for t, a in dom.elements if t == "tr" and a.get("class") == "drain-row"]
    assert len(drain) == len(report.drain()) == 2  # the x8 link (50% slow) and the missing node
    assert text.index("Drain list (2 nodes, worst first)") < text.index("Heat map: nodes")


def test_fetches_nothing(page):
    _, _, dom = page
    assert external_urls(dom) == []
    assert not dom.scripts


def test_each_outlier_links_to_its_evidence(page):
    report, _, dom = page
    ids = {a["id"] for _, a in dom.with_attr("id")}
    links = {a["href"][1:] for t, a in dom.elements if t == "a" and a.get("href", "").startswith("#n-")}
    flagged = {f.node for f in report.findings if f.kind == "outlier"}
    assert flagged == {"node05", 'node<b>"x'}
    assert {anchor(n) for n in flagged} <= links <= ids
    assert anchor("node13") in ids  # the missing node has its evidence section too
    text = dom.all_text()
    assert "h2d pinned · GPU 2:" in text and "node05.json: measurements[" in text


def test_screenshot_renders(page, tmp_path):
    _, html, _ = page
    png = screenshot(html, tmp_path / "fleet.png", window=(1280, 1600))
    assert png_size(png) == (1280, 1600)
