"""What a colleague reading the HTML report could misread: found by looking at the rendered pages.

Each test names the misreading it prevents: a one-rank "busbw" charted as a result, a skipped run badged
"measured", a heat map whose colours exaggerate a 2 % spread, chart axes without a unit, an assumed batch
shown as missing, a caveat that the launch snippet fails placed after the snippet, and so on.
"""

from __future__ import annotations

import re

import pytest
from browser import Dom
from test_html_rigs import build_rig, measured_4090

from gpuadvisor import facts
from gpuadvisor.render.html import render_html, svg_charts

GiB = 2**30


def _advised(preset, name: str, **workload):
    from gpuadvisor import advisor

    rig = preset(name)
    advisor.advise(rig, advisor.Workload.from_options(**workload))
    return rig


def _section(html: str, sid: str) -> str:
    return html.split(f'<section id="{sid}"')[1].split("</section>")[0]


# -- bandwidth ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def h100_bench():
    from conftest import FIXTURES

    rig = facts.load(FIXTURES / "h100-vm" / "scan-bench.json")
    html = render_html(rig)
    return rig, html, Dom(html)


def test_one_rank_collectives_are_not_charted_as_bandwidth(h100_bench):
    """The real H100 scan ran the collectives on its one GPU: busbw is 0 (or a local copy, 2058 GB/s for
    broadcast). Charting that reads as a measured 2 TB/s; the page says why there is no chart instead."""
    rig, html, dom = h100_bench
    ones = [m for m in rig.measurements if m.kind in ("all_reduce", "all_gather", "reduce_scatter", "broadcast")]
    assert [m.world_size for m in ones] == [1, 1, 1, 1] and max(r.busbw_gbps for r in ones[3].rows) > 2000
    assert [a for t, a in dom.elements if "data-series" in a] == []
    assert "busbw against message size" not in html
    text = dom.all_text()
    assert (
        "all reduce, all gather, reduce scatter, broadcast ran on 1 rank (nccl): no data crosses a link, "
        "so there is no bus bandwidth to chart"
    ) in text
    # each measurement's own notes are shown with it
    for m in ones:
        for n in m.notes:
            assert n in text


def test_a_skipped_measurement_is_not_badged_measured(h100_bench):
    rig, html, dom = h100_bench
    skipped = [m for m in rig.measurements if m.status == "skipped"]
    assert [(m.kind, m.value_gbps) for m in skipped] == [("p2p_unidir", None)]
    row = next(r for r in re.findall(r"<tr class=\"[^\"]*\"><td>p2p unidir.*?</tr>", html, re.S))
    assert "prov prov-not" in row and ">not measured<" in row and "prov-measured" not in row
    # the measured copies keep their badge
    h2d = re.search(r"<tr class=\"\"><td>h2d \(pinned\).*?</tr>", html, re.S).group(0)
    assert "prov prov-measured" in h2d and ">measured · cuda<" in h2d


def test_heat_map_colours_start_at_zero():
    """A min-to-max scale paints 390 vs 397 GB/s (healthy, 2 % apart) as pale yellow vs deep blue."""
    h = svg_charts.heat_map(["GPU 0", "GPU 1"], [[None, 390.0], [397.0, None]])
    assert (h.vmin, h.vmax) == (0.0, 397.0)
    fills = {c.text: c.fill for c in h.cells if c.css == ""}
    assert fills == {"390": svg_charts.heat_color(390 / 397)[0], "397": svg_charts.heat_color(1.0)[0]}
    assert fills["390"] != svg_charts.heat_color(0.0)[0]


def test_charts_name_their_units():
    bars = svg_charts.bar_chart([("GPU 0", "h2d", 25.4, 26.78, "t")])
    assert bars.unit == "GB/s"
    html = render_html(measured_4090())
    copies = html.split('<figure class="copies">')[1].split("</figure>")[0]
    assert ">copy bandwidth (GB/s, 10<tspan" in copies
    assert re.search(r'<text x="[\d.]+" y="[\d.]+" class="lo">0\.0 GB/s</text>', html)


def test_measured_4090_every_chart(preset):
    """4 GPUs, P2P off: the 4-rank sweep, three pair matrices (copy one way, both ways, latency), 8 copy bars,
    each pair matrix with the expected figure per pair in its caption."""
    rig = measured_4090()
    html = render_html(rig)
    dom = Dom(html)
    assert [a["data-series"] for t, a in dom.elements if "data-series" in a] == [
        "all reduce",
        "all gather",
        "reduce scatter",
        "broadcast",
    ]
    heads = re.findall(r'<figure class="p2p-heat">\s*<div class="fighead"><h3>([^<]*)</h3>', html)
    assert heads == [
        "GPU-to-GPU copy, one direction, P2P off",
        "GPU-to-GPU copy, both directions at once, P2P off",
        "GPU-to-GPU latency, P2P off",
    ]
    cells = re.findall(r'<g class="hcell( self)?"><title>([^<]*)</title>', html)
    assert len(cells) == 3 * 16 and "GPU 2 → GPU 0: 12.10 GB/s" in [t for _, t in cells]
    exp = {m.expected_gbps for m in rig.measurements if m.kind == "p2p_unidir"}
    assert exp == {26.7775} or len(exp) == 1
    assert f"Expected per pair: {next(iter(exp)):.2f} GB/s (predicted from the links" in dom.all_text()
    bars = [a["data-gpu-label"] for t, a in dom.elements if t == "g" and "data-gpu-label" in a]
    assert bars == ["GPU 0", "GPU 0", "GPU 1", "GPU 1", "GPU 2", "GPU 2", "GPU 3", "GPU 3"]
    assert "12.9 / 26.8 GB/s (48%)" in dom.all_text()


# -- strategy ----------------------------------------------------------------------------------------------


def test_assumed_global_batch_is_shown_not_a_dash(preset):
    rig = _advised(preset, "dgx-h100", model="llama-3-70b")
    a = rig.advice
    assert a["workload"]["global_batch"] is None and a["batch"]["global_batch"] == 128
    html = render_html(rig)
    assert '<tr><th scope="row">global batch</th><td>128 (none given: assumed, see the notes)</td></tr>' in html


def test_communication_detail_is_one_row(preset):
    rig = _advised(preset, "dgx-h100", model="llama-3-70b")
    detail = rig.advice["pick_detail"]["comm"]["detail"]
    assert len(detail) == 2
    html = render_html(rig)
    assert html.count('<th scope="row">communication</th>') == 1
    row = html.split('<th scope="row">communication</th>')[1].split("</tr>")[0]
    assert [re.sub("<[^>]+>", "", d) for d in re.findall(r"<div>(.*?)</div>", row)] == detail


def test_caveats_come_before_the_launch_snippet(preset):
    """The advisor's notes qualify the snippet (a precision the GPU lacks, a batch it assumed, a bandwidth it
    did not measure): they are read before the snippet, not after the tables at the bottom."""
    rig = _advised(preset, "dgx2-v100", model="llama-3-70b", task="inference")
    a = rig.advice
    assert a["notes"] and a["snippet"]["command"]
    text = Dom(render_html(rig)).all_text()
    assert "Read before launching" in text
    assert all(text.index(n) < text.index(a["snippet"]["command"]) for n in a["notes"])


def test_serving_bars_total_what_they_draw_and_one_gpu_has_no_nvlink_cell(preset):
    rig = _advised(preset, "h100-pcie", model="llama-3-70b", task="inference")
    (c,) = rig.advice["candidates"]
    assert c["tensor_parallel_size"] == 1 and c["nvlink"] is True
    drawn = (c["weights_bytes"] + c["activation_peak_bytes"] + c["runtime_bytes"] + c["kv_cache_needed_bytes"]) / GiB
    html = render_html(rig)
    bar = html.split('data-candidate="TP=1"')[1].split("</g>")[0]
    assert f">{drawn:,.1f} GiB ▸<" in bar or f">{drawn:,.1f} GiB<" in bar
    cand = html.split('<table class="cand">')[1].split("</table>")[0]
    assert "<td>— (one GPU)</td>" in cand and "<td>yes</td><td>no</td>" not in cand


def test_a_bar_under_the_memory_line_that_was_rejected_says_so(preset):
    """4x 4090, Llama 3 70B: ZeRO-3 + CPU offload needs 16.8 GiB per GPU (under 24 GiB) but more host RAM
    than the machine has. A bar below the red line without a word reads as 'fits'."""
    rig = _advised(preset, "4x4090-pcie", model="llama-3-70b")
    c = next(c for c in rig.advice["candidates"] if c["name"] == "ZeRO-3 + CPU offload + act. ckpt")
    assert c["fits"] is False and c["memory"]["total_bytes"] < c["capacity_bytes"] and "host RAM" in c["reason"]
    html = render_html(rig)
    bar = html.split(f'data-candidate="{c["name"]}"')[1].split("</g>")[0]
    assert f">{c['memory']['total_bytes'] / GiB:,.1f} GiB · fits GPU memory; rejected (see the table)<" in bar
    fitting = html.split('data-candidate="DDP + act. ckpt"')[1].split("</g>")[0]
    assert "rejected" not in fitting


# -- verdict, header, findings, diagram ------------------------------------------------------------------


def test_unchecked_scan_points_at_the_command_that_checks_it():
    """`gpuadvisor scan` would probe the reader's own machine; the saved scan is checked by `report --rules`."""
    html = render_html(build_rig(2))
    assert (
        "This scan carries no rule results. To get findings, run the rules on it: "
        "gpuadvisor report SCAN.json --rules --html OUT.html"
    ) in Dom(html).all_text()


def test_header_separators_are_spaced(preset):
    rig = preset("h100-pcie")
    text = Dom(render_html(rig)).all_text()
    assert f"{rig.source.created_at} · schema {rig.schema_version}" in text


def test_imported_banner_names_each_file_once():
    rig = build_rig(2)
    rig.source = facts.Source(
        kind="imported",
        files=["/x/topo.txt", "/x/nccl.txt"],
        detail="imported from /x/topo.txt: nvidia-smi topo -m; /x/nccl.txt: nccl-tests",
    )
    dom = Dom(render_html(rig))
    banner = next(a for t, a in dom.elements if a.get("id") == "source-banner")
    assert banner
    text = dom.all_text()
    start = text.index("Imported scan")
    para = text[start : text.index("fields those outputs lack", start) + 60]
    assert para.count("/x/topo.txt") == 1
    assert "parsed from /x/topo.txt: nvidia-smi topo -m; /x/nccl.txt: nccl-tests;" in para


def test_rules_only_not_checked_are_folded_away(preset):
    from gpuadvisor.commands.report import run_rules

    rig = preset("4x4090-pcie")
    run_rules(rig)
    fired = {f.code for f in rig.findings if f.severity != "not-checked"}
    quiet = {f.code for f in rig.findings if f.severity == "not-checked"} - fired
    assert fired and quiet
    html = render_html(rig)
    folded = html.split('<details class="explain-quiet">')[1].split("</details>")[0]
    assert f"The {len(quiet)} rules not checked on this scan" in folded
    assert set(re.findall(r'<div class="explain" id="rule-(GA\d+)">', folded)) == quiet
    before = html.split('<details class="explain-quiet">')[0]
    assert set(re.findall(r'<div class="explain" id="rule-(GA\d+)">', before)) == fired
    assert "pre-wrap" not in html.split(".explain p")[1].split("}")[0]


def _keys(html: str) -> list[str]:
    fig = html.split('<div class="diagram">')[1].split("</figure>")[0]
    return re.findall(r'<span class="swatch-line (sw-[a-z]+)"></span>', fig)


def test_diagram_legend_lists_what_is_drawn(preset):
    assert _keys(render_html(preset("4x4090-pcie"))) == ["sw-pcie", "sw-fail"]
    assert _keys(render_html(preset("dgx-h100"))) == ["sw-pcie", "sw-nv", "sw-nic"]
    rig = build_rig(2, sockets=1, gpus_per_switch=0)
    for g in rig.gpus:
        g.pcie.path = []
        g.pcie.missing("current_gen", facts.NOT_SUPPORTED)
        g.pcie.missing("current_width", facts.NOT_SUPPORTED)
    assert _keys(render_html(rig)) == ["sw-unknown"]
