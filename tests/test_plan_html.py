"""The pre-purchase HTML report in headless Chromium: readable at 1280 px and at phone width (420 px), with 4 and
with 12 builds; time and cost charted side by side; nothing fetched; hostile build names shown as text."""

from __future__ import annotations

import json
import re

import pytest
from browser import Dom, dump_dom, find_chromium, layout_metrics

from gpuadvisor.catalog.platforms import load_prices
from gpuadvisor.plan import Need, builtin_builds, run_plan
from gpuadvisor.render.html.plan import render_html

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(find_chromium() is None, reason="chromium not installed (apt-get install -y chromium)"),
]


def _plan_html(n_builds: int) -> str:
    builds = builtin_builds()
    keep = [
        "8xh100-sxm",
        "4x4090-tr-pro",
        "4x4090-7950x",
        "rent-8xh100",
        "2x3090-nvlink-5950x",
        "8xb200-sxm",
        "8xa100-sxm-used",
        "4x6000ada-tr-pro",
        "2x5090-9950x",
        "1xh100-pcie",
        "8xl40s-epyc",
        "4x5090-tr-pro",
        "1x4090-7950x",
        "2x4090-7950x",
        "8xh200-sxm",
        "rent-8xa100",
        "rent-8xb200",
        "4xa100-pcie-epyc",
    ][:n_builds]
    chosen = [b for b in builds if b.name in keep]
    assert len(chosen) == n_builds
    plan = run_plan(chosen, Need(task="qlora", tokens=2e8), {"model": "llama-3-70b"}, prices=load_prices())
    return render_html(plan)


@pytest.mark.parametrize("n_builds", [4, 18])
@pytest.mark.parametrize("width", [1280, 420])
def test_readable_at_desktop_and_phone_width(tmp_path, n_builds, width):
    probe = ", ".join(f"table.builds td[data-label='{c}']" for c in ("time", "price", "findings"))
    m = layout_metrics(_plan_html(n_builds), width, tmp_path, probe=probe)
    assert m["clientWidth"] == width
    # time, price and findings are on screen without scrolling the table sideways (cards at phone width)
    assert len(m["probe"]) == 3 * n_builds
    outside = [p for p in m["probe"] if p["left"] < 0 or p["right"] > width]
    assert outside == [], outside
    if width < 600:  # one card per build: each figure on a line of its own, not a squeezed column
        assert min(p["right"] - p["left"] for p in m["probe"]) >= 0.8 * width, m["probe"][:3]
    assert m["scrollWidth"] <= width, m  # no sideways scrolling of the page (the table scrolls inside its box)
    assert m["overflow"] == [], m
    assert m["minFont"] >= 12, m


def test_time_and_cost_charted_side_by_side(tmp_path):
    page = _plan_html(4)
    f = tmp_path / "plan.html"
    f.write_text(page, encoding="utf-8")
    dom = Dom(dump_dom(f))
    figs = [a["id"] for t, a in dom.elements if t == "figure"]
    assert figs == ["chart-time", "chart-cost"]
    # one bar per build that fits, widths proportional to the figure (the longest is 100%)
    text = dom.all_text()
    assert "Time for the token budget" in text and "Cost of the job" in text
    widths = [
        float(re.search(r"width:([\d.]+)%", a["style"]).group(1))
        for t, a in dom.elements
        if t == "span" and a.get("class", "").startswith("bar")
    ]
    assert max(widths) == 100.0 and len(widths) >= 6
    assert not [a for t, a in dom.elements for v in a.values() if re.search(r"(https?:)?//", v or "")]
    plan = json.loads(next(s for a, s in dom.scripts if a.get("id") == "plan"))
    assert plan["kind"] == "gpuadvisor-plan" and len(plan["builds"]) == 4


def test_hostile_build_title_is_text(tmp_path):
    from gpuadvisor.plan.build import parse_build

    b = parse_build(
        {
            "name": "evil",
            "title": "<script>alert(1)</script>",
            "gpu": "rtx-4090",
            "count": 2,
            "cpu": "ryzen-9-7950x",
            "ram_gib": 128,
            "psu_watts": 1600,
        },
        "",
        "test",
    )
    page = render_html(run_plan([b], Need(task="qlora"), {"model": "llama-3-8b"}, prices=load_prices()))
    f = tmp_path / "p.html"
    f.write_text(page, encoding="utf-8")
    dom = Dom(dump_dom(f))
    assert "<script>alert(1)</script>" in dom.all_text()
    assert [s for a, s in dom.scripts if a.get("type") != "application/json"] == []


def test_each_finding_once_and_unpriced_builds_on_the_cost_chart(tmp_path):
    """4x RTX 4090 on a desktop board raises GA103 once per narrowed slot (4 times): the table and the card show
    the code once with its count; the builds without a price stay on the cost chart, labelled so."""
    page = _plan_html(18)
    f = tmp_path / "plan.html"
    f.write_text(page, encoding="utf-8")
    dom = dump_dom(f)

    def text_of(tag: str, ident: str) -> str:
        m = re.search(rf'<{tag}[^>]*id="{ident}"[^>]*>(.*?)</{tag}>', dom, re.S)
        assert m, ident
        return re.sub(r"<[^>]+>", "", m.group(1))

    row = text_of("tr", "row-4x4090-7950x")
    assert row.count("GA103") == 1 and "GA103×4" in row.replace(" ", "")
    card = text_of("article", "build-4x4090-7950x")
    assert card.count("GA103") == 1 and "(4×)" in card
    cost = text_of("figure", "chart-cost")
    for name in ("8xh100-sxm", "8xb200-sxm", "1xh100-pcie"):  # no public price: shown, not dropped
        assert name in cost
    assert cost.count("price unknown") >= 3
