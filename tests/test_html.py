"""The HTML report without a browser: structure, escaping, diagram geometry, charts, provenance.

The browser tests (test_html_browser.py) load the same reports in Chromium.
"""

from __future__ import annotations

import copy
import json
import re
from importlib import resources

import pytest
from browser import Dom
from test_html_rigs import XSS, build_rig, dgx_like, measured_rig, pcie_4090

from gpuadvisor import facts
from gpuadvisor.errors import InputError
from gpuadvisor.facts import Finding, PcieHop
from gpuadvisor.render.html import advice_view, fmt_any, render_html, svg_charts, write_html
from gpuadvisor.render.html.topology_layout import describe_link, layout

EXTERNAL = re.compile(r"(?i)(https?:|ftp:|//[a-z0-9.-]+\.[a-z]{2,}|wss?:)")


def preset_names() -> list[str]:
    from gpuadvisor.probes.rigdesc import preset_names as names

    return names()


PRESETS = preset_names()  # every preset shipped, so a new one is rendered (and browsed) too


def embedded_scan(dom: Dom) -> dict:
    scripts = [(a, body) for a, body in dom.scripts]
    assert len(scripts) == 1, f"expected only the JSON script, got {[a for a, _ in scripts]}"
    attrs, body = scripts[0]
    assert attrs == {"type": "application/json", "id": "scan"}
    return json.loads(body)


def external_urls(dom: Dom) -> list[str]:
    """Every attribute value or style text that would make a browser reach outside the file."""
    found = []
    for tag, attrs in dom.elements:
        for k, v in attrs.items():
            if k in (
                "src",
                "href",
                "xlink:href",
                "action",
                "formaction",
                "srcset",
                "poster",
                "data",
                "background",
                "cite",
                "ping",
                "manifest",
            ) and not v.startswith("#"):
                found.append(f"<{tag} {k}={v!r}>")
            if k == "style" and re.search(r"(?i)url\(|@import|expression\(", v):
                found.append(f"<{tag} style={v!r}>")
            if EXTERNAL.search(v) and k not in ("title", "aria-label"):
                found.append(f"<{tag} {k}={v!r}>")
        if tag == "link" or tag in (
            "iframe",
            "object",
            "embed",
            "img",
            "image",
            "use",
            "base",
            "audio",
            "video",
            "source",
            "form",
        ):
            found.append(f"<{tag} {attrs}>")
    css = "".join(dom.style_text)
    for m in re.finditer(r"(?i)url\(|@import|@font-face", css):
        found.append(f"style text: {css[max(0, m.start() - 30) : m.end() + 30]!r}")
    return found


def gpu_nodes(dom: Dom) -> dict[int, str]:
    return {int(a["data-gpu"]): a.get("class", "") for t, a in dom.elements if t == "g" and "data-gpu" in a}


def edge_classes(dom: Dom) -> dict[tuple[str, str], str]:
    return {(a["data-src"], a["data-dst"]): a["class"] for t, a in dom.elements if t == "g" and "data-dst" in a}


# -- every preset -------------------------------------------------------------------------------------------


def test_the_presets_this_file_checks_by_name_exist():
    assert {"dgx-h100", "dgx-a100", "4x4090-pcie", "2x3090-nvlink", "h100-pcie", "dgx2-v100"} <= set(PRESETS)


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_renders_self_contained(preset, name):
    rig = preset(name)
    html = render_html(rig)
    dom = Dom(html)
    # The embedded scan is the rig, byte for byte in meaning.
    assert embedded_scan(dom) == json.loads(rig.to_json())
    assert external_urls(dom) == []
    csp = [a for t, a in dom.elements if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert len(csp) == 1 and csp[0]["content"].startswith(
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
    )
    # The CSP comes before anything that could load (only <meta charset> precedes it).
    assert [t for t, _ in dom.elements[:4]] == ["html", "head", "meta", "meta"]
    # Every GPU is in the diagram, once, as a GPU node.
    assert sorted(gpu_nodes(dom)) == [g.index for g in rig.gpus]
    assert all("node-gpu" in c for c in gpu_nodes(dom).values())
    # A simulated scan says so prominently, at the top.
    banner = [a for t, a in dom.elements if a.get("id") == "source-banner"]
    assert banner and "simulated" in banner[0]["class"]
    text = dom.all_text()
    assert "Simulated rig — not a real machine" in text
    assert text.index("Simulated rig") < text.index("The rig")
    # Each GPU's row in the table, with its bus id.
    for g in rig.gpus:
        assert g.bus_id in text


@pytest.mark.parametrize("name", PRESETS)
def test_page_is_a_function_of_the_embedded_json(preset, name):
    """The HTML adds no fact the JSON lacks: rendering the embedded scan again gives the same page."""
    rig = preset(name)
    html = render_html(rig)
    again = facts.from_dict(embedded_scan(Dom(html)))
    assert render_html(again) == html


def test_4x4090_downgraded_link_is_drawn_fail(preset):
    rig = preset("4x4090-pcie")
    dom = Dom(render_html(rig))
    edges = edge_classes(dom)
    fails = {k: c for k, c in edges.items() if "fail" in c.split()}
    assert len(fails) == 1
    (src, dst), cls = next(iter(fails.items()))
    assert dst == "gpu-2" and src.startswith("rp-")
    assert "edge-pcie" in cls and "downgraded" in cls
    # Its label names the running and the maximum width.
    d = layout(rig)
    e = next(e for e in d.edges if e.dst == "gpu-2")
    assert e.label == ["Gen4 x8", "max Gen4 x16"]
    assert [e.label for e in d.edges if e.kind == "pcie" and e.dst != "gpu-2" and e.dst.startswith("gpu")] == [
        ["Gen4 x16"]
    ] * 3
    # The GPU table marks it too, and P2P "NS" is coloured as not supported.
    row = next(a for t, a in dom.elements if a.get("data-gpu-row") == "2")
    assert row
    assert (
        'class="fail" title="NVML: current Gen4 x8, maximum Gen4 x16" data-label="PCIe (NVML)">Gen4 x8 (max Gen4 x16)<'
        in render_html(rig)
    )


def test_dgx_h100_diagram_nvswitch_fabric_and_nics(preset):
    rig = preset("dgx-h100")
    d = layout(rig)
    fabric = [b for b in d.boxes if b.kind == "fabric"]
    assert len(fabric) == 1 and fabric[0].title == "NVSwitch fabric"
    nvs = [e for e in d.edges if e.kind == "nvswitch"]
    assert sorted(e.gpus[0] for e in nvs) == list(range(8))
    assert {tuple(e.label) for e in nvs} == {("18 links",)}
    assert not [e for e in d.edges if e.kind == "nvlink"]  # no 28 pair edges
    assert sorted(b.nic for b in d.boxes if b.kind == "nic") == sorted(rig.topology.nics)
    assert not [e for e in d.edges if "fail" in e.css.split()]
    assert len([b for b in d.boxes if b.kind == "cpu"]) == 2
    assert any(e.kind == "cpu" and e.label == ["inter-socket"] for e in d.edges)
    assert all(e.label == ["Gen5 x16"] for e in d.edges if e.kind == "pcie" and e.label)


def test_dgx2_v100_sixteen_gpus_one_fabric(preset):
    d = layout(preset("dgx2-v100"))
    assert len([b for b in d.boxes if b.kind == "gpu"]) == 16
    assert len([b for b in d.boxes if b.kind == "fabric"]) == 1
    assert {tuple(e.label) for e in d.edges if e.kind == "nvswitch"} == {("6 links",)}


def test_2x3090_bridge_is_one_arc(preset):
    d = layout(preset("2x3090-nvlink"))
    arcs = [e for e in d.edges if e.kind == "nvlink"]
    assert [(e.src, e.dst, e.label) for e in arcs] == [("gpu-0", "gpu-1", ["4 links"])]
    assert arcs[0].tooltip == "GPU 0 – GPU 1: 4 NVLinks (NV4)"
    assert not [b for b in d.boxes if b.kind == "fabric"]


# -- layout geometry ---------------------------------------------------------------------------------------


def _overlap(a, b) -> bool:
    return a.x < b.x + b.w and b.x < a.x + a.w and a.y < b.y + b.h and b.y < a.y + a.h


SHAPES = {
    "1": lambda: build_rig(1, sockets=1, gpus_per_switch=0),
    "2-nvlink": lambda: build_rig(2, sockets=1, gpus_per_switch=0, nv_pairs={(0, 1): 4}),
    "4-pcie": pcie_4090,
    "8-dgx": dgx_like,
    "8-mesh": lambda: build_rig(
        8,
        gpus_per_switch=2,
        nv_pairs={
            (0, 1): 2,
            (0, 2): 1,
            (0, 3): 1,
            (0, 4): 2,
            (1, 2): 1,
            (1, 3): 2,
            (1, 5): 2,
            (2, 3): 2,
            (2, 6): 1,
            (3, 7): 1,
            (4, 5): 1,
            (4, 6): 2,
            (4, 7): 1,
            (5, 6): 1,
            (5, 7): 2,
            (6, 7): 2,
        },
    ),
    "16": lambda: build_rig(16, nvswitch_links=6, nvlink_version=2),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_layout_boxes_do_not_overlap_and_fit(shape):
    rig = SHAPES[shape]()
    d = layout(rig)
    for i, a in enumerate(d.boxes):
        assert 0 <= a.x <= a.x + a.w <= d.width, a
        assert 0 <= a.y <= a.y + a.h <= d.height, a
        for b in d.boxes[i + 1 :]:
            assert not _overlap(a, b), (a.id, b.id)
    gpus = [b for b in d.boxes if b.kind == "gpu"]
    assert len(gpus) == len(rig.gpus)
    assert len({b.y for b in gpus}) == 1  # one row of GPUs
    assert [b.gpu for b in sorted(gpus, key=lambda b: b.x)] == sorted(g.index for g in rig.gpus)
    for e in d.edges:
        assert 0 <= e.lx <= d.width and 0 <= e.ly <= d.height


def test_layout_width_grows_with_gpus_not_faster():
    w = {n: layout(build_rig(n, sockets=1 if n < 4 else 2, gpus_per_switch=0)).width for n in (1, 2, 4, 8, 16)}
    assert w[1] < w[2] < w[4] < w[8] < w[16]
    assert w[16] <= 16 * (106 + 12) + 2 * 16 + 36 + 1  # GPUs side by side, no more


def test_mesh_arcs_use_lanes_without_overlap():
    d = layout(SHAPES["8-mesh"]())
    arcs = [e for e in d.edges if e.kind == "nvlink"]
    assert len(arcs) == 16
    spans: dict[float, list[tuple[float, float]]] = {}
    for e in arcs:
        m = re.match(r"M([\d.]+),[\d.]+ V([\d.]+) H([\d.]+)", e.d)
        x1, y, x2 = float(m.group(1)), float(m.group(2)), float(m.group(3))
        lo, hi = sorted((x1, x2))
        for a, b in spans.get(y, []):
            assert hi < a or lo > b, f"arcs overlap on lane y={y}"
        spans.setdefault(y, []).append((lo, hi))
    # Each label ("2 links", ~36 px wide) sits clear of the verticals of deeper arcs crossing its lane.
    geo = [(e, *map(float, re.match(r"M([\d.]+),[\d.]+ V([\d.]+) H([\d.]+)", e.d).groups())) for e in arcs]
    for e, _, y, _ in geo:
        crossing = [x for f, fa, fy, fb in geo if f is not e and fy > y for x in (fa, fb)]
        assert all(abs(e.lx - x) >= 20 for x in crossing), (e.src, e.dst)


def test_gpu_without_pcie_path_hangs_from_its_cpu_with_nvml_figures():
    rig = build_rig(2, sockets=1, gpus_per_switch=0)
    for g in rig.gpus:
        g.pcie.path = []
    rig.gpus[1].pcie.current_width = 4
    d = layout(rig)
    assert {(e.src, e.dst) for e in d.edges} == {("cpu-0", "gpu-0"), ("cpu-0", "gpu-1")}
    e1 = next(e for e in d.edges if e.dst == "gpu-1")
    assert e1.label == ["Gen5 x4", "max Gen5 x16"] and "fail" in e1.css


def test_unknown_numa_node_on_a_one_node_host_is_that_node():
    rig = build_rig(2, sockets=1, gpus_per_switch=0)
    rig.gpus[1].missing("numa_node", facts.NOT_SUPPORTED)
    d = layout(rig)
    assert [b.id for b in d.boxes if b.kind == "cpu"] == ["cpu-0"]
    assert "GPU 1 reports no NUMA node; it is drawn under the host's only NUMA node (0)." in d.notes


def test_unknown_numa_node_gets_an_unknown_cpu():
    rig = build_rig(2, sockets=1, gpus_per_switch=0)
    rig.host.numa_nodes = []
    for g in rig.gpus:
        g.missing("numa_node", facts.NOT_SUPPORTED)
    d = layout(rig)
    cpus = [b for b in d.boxes if b.kind == "cpu"]
    assert [(b.id, b.lines) for b in cpus] == [("cpu-unknown", ["NUMA node unknown"])]


def test_generation_drop_alone_is_warn_not_fail():
    label, css, tip = describe_link(
        PcieHop(bdf="0000:41:00.0", current_gen=1, max_gen=4, current_width=16, max_width=16)
    )
    assert (label, css) == (["Gen1 x16", "max Gen4 x16"], "warn downgraded")
    label, css, _ = describe_link(PcieHop(bdf="0000:41:00.0", current_gen=4, max_gen=4, current_width=8, max_width=16))
    assert (label, css) == (["Gen4 x8", "max Gen4 x16"], "fail downgraded")
    label, css, _ = describe_link(PcieHop(bdf="x", current_gen=4, max_gen=4, current_width=16, max_width=16))
    assert (label, css) == (["Gen4 x16"], "")


def test_x8_card_in_x16_slot_is_not_downgraded():
    """The link's maximum is the lower of the two ends: an x8 card running x8 in an x16 slot is fine."""
    rig = build_rig(1, sockets=1, gpus_per_switch=0)
    gpu_hop, port = rig.gpus[0].pcie.path
    gpu_hop.max_width = gpu_hop.current_width = 8
    port.current_width, port.max_width = 8, 16
    e = next(e for e in layout(rig).edges if e.dst == "gpu-0")
    assert e.label == ["Gen5 x8"] and e.css == ""


def test_switch_uplink_downgrade_marks_the_switch_edge():
    rig = build_rig(4, sockets=1, gpus_per_switch=2, switch_uplink_downgrade=(5, 4))
    d = layout(rig)
    bad = [e for e in d.edges if "fail" in e.css.split()]
    assert [(e.src, e.dst, e.label, e.gpus) for e in bad] == [
        ("rp-0000:10:01.0", "sw-0000:11:00.0", ["Gen5 x4", "max Gen5 x16"], [0, 1])
    ]


def test_nic_placed_under_its_pix_switch():
    rig = dgx_like()
    d = layout(rig)
    nic0 = next(e for e in d.edges if e.kind == "nic" and e.dst == "nic-0")
    assert nic0.src == "sw-0000:11:00.0" and nic0.label == ["PIX"]
    assert any("inferred" in n for n in d.notes)


# -- measurements, findings, advice --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def measured():
    rig = measured_rig()
    return rig, render_html(rig), Dom(render_html(rig))


def test_verdict_counts(measured):
    rig, html, dom = measured
    v = next(a for t, a in dom.elements if a.get("id") == "verdict")
    assert v["data-state"] == "failing"
    assert "1 failing, 1 warning, 1 note" in dom.all_text()


def test_findings_worst_first_with_evidence_and_links(measured):
    rig, html, dom = measured
    order = [a["data-code"] for t, a in dom.elements if t == "article"]
    assert order == ["GA101", "GA312", "GA102"]
    ids = {a["id"] for t, a in dom.elements if "id" in a}
    links = [a["href"] for t, a in dom.elements if t == "a" and a.get("class") == "code"]
    assert links == ["#rule-GA101", "#rule-GA312", "#rule-GA102"]
    assert all(h[1:] in ids for h in links)
    assert "current_width: 8" in dom.all_text() and "Reseat the card or move it to an x16 slot." in dom.all_text()


def test_explanations_come_from_the_rule_registry(measured):
    from gpuadvisor.rules import get_rule

    rule = get_rule("GA101")
    assert rule is not None
    rig, html, dom = measured
    text = dom.all_text()
    assert rule.summary in text
    assert rule.sections["How to fix"].split("\n")[0].strip() in text


def test_report_renders_without_rule_docs(monkeypatch):
    import gpuadvisor.render.html as h

    monkeypatch.setattr(h, "rule_doc", lambda code: None)
    html = render_html(measured_rig())
    assert "No description in this gpuadvisor's rule registry; run <code>gpuadvisor explain GA101</code>" in html


def test_busbw_chart_log_axis(measured):
    rig, html, dom = measured
    series = [a["data-series"] for t, a in dom.elements if "data-series" in a]
    assert series == ["all reduce", "all gather", "reduce scatter", "broadcast"]
    chart = svg_charts.line_chart([("a", [(1024, 1.0), (2048, 2.0), (4096, 4.0)])])
    xs = [p.x for p in chart.series[0].points]
    assert xs[1] - xs[0] == pytest.approx(xs[2] - xs[1])  # equal steps per doubling: log scale
    assert chart.series[0].points[0].x == pytest.approx(chart.left)
    assert chart.series[0].points[-1].x == pytest.approx(chart.right)
    # y: linear from 0 at the bottom; nice maximum 5 above 4 * 1.05
    assert chart.series[0].points[-1].y == pytest.approx(chart.bottom - 4 / 5 * (chart.bottom - chart.top))
    assert [lab for _, lab in chart.x_ticks] == ["1 KiB", "2 KiB", "4 KiB"]


def test_expected_lines_merge_when_equal():
    c = svg_charts.line_chart(
        [("all reduce", [(1, 1.0)]), ("all gather", [(2, 1.0)])],
        [("all reduce expected", 450.0), ("all gather expected", 450.0)],
    )
    assert [h.label for h in c.hlines] == ["expected 450.0 GB/s"]
    c = svg_charts.line_chart([("all reduce", [(1, 1.0)])], [("all reduce expected", 450.0)])
    assert [h.label for h in c.hlines] == ["expected 450.0 GB/s (all reduce)"]


def test_p2p_heat_map_and_copy_bars(measured):
    rig, html, dom = measured
    cells = re.findall(r'<g class="hcell( self)?"><title>([^<]*)</title>', html)
    assert len(cells) == 64
    assert sum(1 for s, _ in cells if s) == 8
    assert "GPU 2 → GPU 5: 392.50 GB/s" in [t for _, t in cells]
    bars = [a for t, a in dom.elements if t == "g" and "data-gpu-label" in a]
    assert len(bars) == 16
    assert "26.5 / 26.8 GB/s (99%)" in dom.all_text()
    assert "53.1 / 53.5 GB/s (99%)" in dom.all_text()
    # the 56 pair measurements collapse to one row (with the list behind a <details>)
    assert "56 ordered pairs" in dom.all_text() and "390.10 – 397.60" in dom.all_text()


def test_every_figure_has_provenance(measured):
    rig, html, dom = measured
    for fig in re.findall(r"<figure.*?</figure>", html, re.S):
        assert 'class="prov prov-' in fig, fig[:200]
    assert "prov prov-measured" in html and "prov prov-predicted" in html and "prov prov-read" in html


def test_strategy_pick_snippet_and_table(measured):
    rig, html, dom = measured
    text = dom.all_text()
    assert "Pick: ZeRO-2" in text
    assert "DDP does not fit; ZeRO-2 fits with margin at the same traffic." in text
    assert "torchrun --nproc_per_node 8 train.py --fsdp SHARD_GRAD_OP" in text
    rows = re.findall(r'<tr class="(pick)? ?(nofit)?">(.*?)</tr>', html)
    assert [(p, n, re.findall(r"<td>(.*?)</td>", r)[0]) for p, n, r in rows] == [
        ("", "nofit", "DDP"),
        ("pick", "", "ZeRO-2"),
        ("", "", "ZeRO-3"),
    ]
    assert "41,200" in text  # tokens/s, readable


def test_advice_view_generic_shapes():
    v = advice_view(
        {
            "recommended": "FSDP FULL_SHARD",
            "why": "does not fit otherwise",
            "deepspeed_config": {"zero_optimization": {"stage": 3}},
        }
    )
    assert v["pick_name"] == "FSDP FULL_SHARD" and v["reason"] == "does not fit otherwise"
    assert v["snippets"] == [("deepspeed_config", '{\n  "zero_optimization": {\n    "stage": 3\n  }\n}')]
    assert advice_view(None) is None and advice_view({}) is None


def test_fmt_any():
    assert fmt_any(41200.0) == "41,200"
    assert fmt_any(8.03e9) == "8.03e+09"
    assert fmt_any(0.4) == "0.4"
    assert fmt_any(12345) == "12,345"
    assert fmt_any({"current_width": 8}) == "current_width: 8"
    assert fmt_any([1, 2]) == "1, 2"
    assert fmt_any({"NS": ["0-1", "0-2"], "n": 2}) == "NS: 0-1, 0-2; n: 2"
    assert fmt_any({"a": {"b": 1}}) == '{"a": {"b": 1}}'
    assert fmt_any(None) == "—" and fmt_any(True) == "yes"


def test_unchecked_healthy_and_warnings_verdicts():
    rig = dgx_like()
    assert 'data-state="unchecked"' in render_html(rig)
    rig.findings = [
        Finding(code="GA405", name="psu-undersized", area="host", severity="not-checked", message="no PSU rating given")
    ]
    assert 'data-state="healthy"' in render_html(rig)
    assert "<p>No rule found a problem.</p>" in render_html(rig)
    rig.findings.append(
        Finding(code="GA313", name="persistence-mode-off", area="gpu", severity="warn", message="off", gpus=[1])
    )
    assert 'data-state="warnings"' in render_html(rig)


def test_not_checked_findings_are_a_compact_table():
    rig = dgx_like()
    rig.findings = [
        Finding(
            code="GA302",
            name="ecc-uncorrectable-errors",
            area="health",
            severity="not-checked",
            message="ECC error counters: not supported by this GPU or driver",
            gpus=[0, 1],
        ),
        Finding(code="GA313", name="persistence-mode-off", area="gpu", severity="warn", message="off", gpus=[1]),
    ]
    dom = Dom(render_html(rig))
    assert [a["data-code"] for t, a in dom.elements if t == "article"] == ["GA313"]
    assert [(t, a["data-code"]) for t, a in dom.elements if a.get("data-severity") == "not-checked"] == [
        ("tr", "GA302")
    ]
    assert "Not checked (1)" in dom.all_text()
    assert {"rule-GA302", "rule-GA313"} <= {a["id"] for t, a in dom.elements if "id" in a}


def test_missing_values_show_a_dash_with_the_reason():
    rig = build_rig(1, sockets=1, gpus_per_switch=0)
    rig.gpus[0].missing("power_limit_w", facts.NO_PERMISSION)
    html = render_html(rig)
    assert f'<td class="na" title="{facts.NO_PERMISSION}" data-label="power limit">—</td>' in html


# -- escaping -----------------------------------------------------------------------------------------------


def hostile_rig():
    rig = measured_rig()
    rig.host.hostname = XSS
    rig.gpus[0].name = f'"><img src=x onerror=alert(2)>{XSS}'
    rig.gpus[1].bus_id = "</script><script>alert(3)</script>"
    rig.findings[0].message = f"</script>{XSS}<!--"
    rig.findings[0].code = 'GA1"><b>'
    rig.software.env["NCCL_SOCKET_IFNAME"] = "<style>body{background:url(https://evil.example/x)}</style>"
    rig.advice["pick"]["launch"] = "torchrun </pre><script>alert(4)</script>"
    rig.topology.nics[0] = "<svg onload=alert(5)>"
    return rig


def test_hostile_strings_are_text():
    rig = hostile_rig()
    html = render_html(rig)
    dom = Dom(html)
    scan = embedded_scan(dom)  # one script element only, and its JSON intact
    assert scan["host"]["hostname"] == XSS
    assert scan["gpus"][1]["bus_id"] == "</script><script>alert(3)</script>"
    assert (
        "</script"
        not in html.split('<script type="application/json" id="scan">')[1][: -len("</script>\n</body>\n</html>\n")]
    )
    text = dom.all_text()
    for s in (
        XSS,
        "</script><script>alert(3)</script>",
        "<style>body{background:url(https://evil.example/x)}</style>",
        "torchrun </pre><script>alert(4)</script>",
        "<svg onload=alert(5)>",
    ):
        assert s in text, s
    assert not [a for t, a in dom.elements if any(k.startswith("on") for k in a)]
    assert [t for t, _ in dom.elements if t in ("img", "style", "script")] == ["style", "script"]
    assert external_urls(dom) == []
    assert render_html(facts.from_dict(scan)) == html


def test_write_html_errors_are_one_line(tmp_path):
    with pytest.raises(InputError, match=r"cannot write the report"):
        write_html(dgx_like(), tmp_path / "missing-dir" / "r.html")
    p = write_html(dgx_like(), tmp_path / "r.html")
    assert p.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_real_h100_scan_renders(fixtures_dir):
    """The live scan of the project's H100 VM (probes on real hardware): one GPU, no NUMA node reported."""
    rig = facts.load(fixtures_dir / "h100-vm" / "scan-live-torch.json")
    html = render_html(rig)
    dom = Dom(html)
    assert sorted(gpu_nodes(dom)) == [0]
    assert embedded_scan(dom) == json.loads(rig.to_json())
    assert external_urls(dom) == []
    d = layout(rig)
    assert [b.id for b in d.boxes if b.kind == "cpu"] == ["cpu-0"]
    e = next(e for e in d.edges if e.dst == "gpu-0")
    assert (e.src, e.label, e.css) == ("cpu-0", ["Gen5 x16"], "")
    # a long environment value folds away instead of widening the table
    long = [k for k, v in rig.software.env.items() if len(v) > 80]
    assert long and "characters)</summary>" in html


def test_templates_ship_as_package_data():
    files = resources.files("gpuadvisor.reports").joinpath("templates")
    names = sorted(p.name for p in files.iterdir())
    assert "report.html.j2" in names and "_style.css.j2" in names
    assert all("/" not in n for n in names)  # package-data "templates/*" takes no sub-folders


def test_imported_scan_says_so():
    rig = copy.deepcopy(dgx_like())
    rig.source = facts.Source(kind="imported", files=["smi-q.xml", "topo-m.txt"])
    dom = Dom(render_html(rig))
    banner = next(a for t, a in dom.elements if a.get("id") == "source-banner")
    assert "imported" in banner["class"]
    assert "These facts were parsed from smi-q.xml, topo-m.txt" in dom.all_text()
    assert "prov prov-imported" in render_html(rig)


@pytest.mark.parametrize("name", ["dgx-h100"])
def test_report_size_for_8_gpus(preset, name):
    html = render_html(preset(name))
    size = len(html.encode("utf-8"))
    # The page, not counting the embedded scan, stays small; the scan is the bulk only on big rigs.
    assert 40_000 < size < 400_000, size


# -- the advisor's own dict --------------------------------------------------------------------------------


def _advised(preset, name: str, **workload):
    from gpuadvisor import advisor

    rig = preset(name)
    advisor.advise(rig, advisor.Workload.from_options(**workload))
    return rig


def test_advisor_training_pick_snippet_and_candidates(preset):
    rig = _advised(preset, "dgx-h100", model="llama-3-8b")
    a = rig.advice
    html = render_html(rig)
    dom = Dom(html)
    text = dom.all_text()
    assert f"Pick: {a['pick']}" in text
    assert a["reason"] in text
    assert a["snippet"]["torchrun"] in text
    rows = re.findall(
        r'<tr class="(pick|nofit|)">(.*?)</tr>', html.split('<table class="cand">')[1].split("</table>")[0], re.S
    )
    assert [re.findall(r"<td>(.*?)</td>", r)[0] for _, r in rows] == [c["name"] for c in a["candidates"]]
    assert [css for css, _ in rows] == [
        ("pick" if c["status"] == "pick" else ("nofit" if not c["fits"] else "")) for c in a["candidates"]
    ]
    bars = [x["data-candidate"] for t, x in dom.elements if "data-candidate" in x]
    assert bars == [c["name"] for c in a["candidates"]]
    assert render_html(facts.from_dict(embedded_scan(dom))) == html


def test_advisor_nothing_fits_shows_the_smallest_rig(preset):
    rig = _advised(preset, "4x4090-pcie", model="llama-3-70b")
    a = rig.advice
    assert a["pick"] is None
    text = Dom(render_html(rig)).all_text()
    assert "Nothing fits" in text
    assert f"{a['smallest_rig']['smallest']['description']} ({a['smallest_rig']['smallest']['strategy']})" in text


def test_advisor_inference_table(preset):
    rig = _advised(preset, "dgx-h100", model="llama-3-8b", task="inference")
    a = rig.advice
    text = Dom(render_html(rig)).all_text()
    assert a["snippet"]["command"] in text
    for c in a["candidates"]:
        assert f"{c['kv_capacity_tokens']:,}" in text


# -- any rig renders -----------------------------------------------------------------------------------------


def _random_rig(data) -> facts.Rig:
    from hypothesis import strategies as st

    n = data.draw(st.integers(0, 16), label="gpus")
    sockets = data.draw(st.integers(1, 2))
    per_switch = data.draw(st.sampled_from([0, 1, 2, 4]))
    nvswitch = data.draw(st.sampled_from([0, 0, 6, 18]))
    rig = build_rig(
        max(n, 1),
        sockets=sockets,
        gpus_per_switch=per_switch,
        nvswitch_links=nvswitch,
        nics_per_switch=data.draw(st.integers(0, 2)) if per_switch else 0,
        downgrade={i: (4, 8) for i in data.draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=3))},
    )
    rig.gpus = rig.gpus[:n]
    rig.topology.matrix = [row[:n] for row in rig.topology.matrix[:n]]
    for g in rig.gpus:
        if data.draw(st.booleans()):
            g.pcie.path = g.pcie.path[: data.draw(st.integers(0, len(g.pcie.path)))]
        if data.draw(st.booleans()):
            g.missing("numa_node", facts.NOT_SUPPORTED)
        if data.draw(st.booleans()):
            g.missing("name", facts.GPU_LOST)
            g.missing("bus_id", facts.GPU_LOST)
        if data.draw(st.booleans()):
            g.pcie.missing("current_width", facts.NOT_SUPPORTED)
    if data.draw(st.booleans()):
        rig.topology.matrix = rig.topology.matrix[: n // 2]  # a short matrix, as a partial import leaves it
    if data.draw(st.booleans()):
        rig.host.numa_nodes = []
    return rig


def test_any_rig_renders_and_lays_out_cleanly():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=40, deadline=None)
    @given(st.data())
    def check(data):
        rig = _random_rig(data)
        d = layout(rig)
        for i, a in enumerate(d.boxes):
            assert 0 <= a.x <= a.x + a.w <= d.width and 0 <= a.y <= a.y + a.h <= d.height
            for b in d.boxes[i + 1 :]:
                assert not _overlap(a, b), (a.id, b.id)
        dom = Dom(render_html(rig))
        assert sorted(gpu_nodes(dom)) == sorted(g.index for g in rig.gpus)
        assert embedded_scan(dom) == json.loads(rig.to_json())

    check()


def test_the_report_gives_each_candidates_tokens_per_second_with_its_band(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """As the terminal does: "5,251 (3,981-6,127)" in the candidates table and the pick's table, from its band."""
    import subprocess
    import sys

    out = tmp_path / "r.html"
    scan = tmp_path / "s.json"
    cmd = [sys.executable, "-m", "gpuadvisor", "scan", "--simulate", "dgx-h100", "--model", "llama-3-70b"]
    r = subprocess.run([*cmd, "--json", str(scan), "--html", str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    advice = json.loads(scan.read_text())["advice"]
    html = out.read_text()
    fits = [c for c in advice["candidates"] if c.get("band")]
    assert fits
    for c in [*fits, advice["pick_detail"]]:
        b = c["band"]["tokens_per_second"]
        cell = f"{c['tokens_per_second']:,.0f} ({b['low']:,.0f}-{b['high']:,.0f})"
        assert cell in html, cell
    pick = advice["pick_detail"]
    assert html.count(f"{pick['tokens_per_second']:,.0f} (") >= 2  # the table row and the pick's table
