"""Beyond-the-GPU facts downstream: check's Prometheus textfile (Xid counts, RDMA port rates), its JUnit
report (one testcase per GA8xx rule), and the HTML report's network section."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest
from gpuadvisor.probes.rigdesc import parse_description
from test_beyond_rules import planted

from gpuadvisor import facts
from gpuadvisor.collect import simulate_description
from gpuadvisor.render.html import render_html
from gpuadvisor.render.machine.junit import render_junit
from gpuadvisor.render.machine.prometheus import render_prometheus
from gpuadvisor.rules import all_rules, evaluate


@pytest.fixture(scope="module")
def rig():
    r = simulate_description(parse_description(planted(), "test"))
    evaluate(r)
    return r


def test_prometheus_has_xid_counts_and_port_rates(rig: facts.Rig) -> None:
    text = render_prometheus(rig, rig.findings, failing=True, fail_on="fail")
    lines = set(text.splitlines())
    assert {
        'gpuadvisor_kernel_xid_events{gpu="2",bus_id="0000:3a:00",xid="94"} 3',
        'gpuadvisor_kernel_xid_events{gpu="3",bus_id="0000:5d:00",xid="79"} 1',
        'gpuadvisor_kernel_sxid_events{bus_id="0000:05:00.0",sxid="20034"} 1',
        'gpuadvisor_rdma_port_up{device="mlx5_6",port="1",link_layer="InfiniBand"} 0',
        'gpuadvisor_rdma_port_rate_bytes_per_second{device="mlx5_0",port="1",link_layer="InfiniBand"} 50000000000',
        'gpuadvisor_rdma_port_rate_bytes_per_second{device="mlx5_5",port="1",link_layer="InfiniBand"} 25000000000',
        'gpuadvisor_fabric_manager_active{state="failed"} 0',
        'gpuadvisor_gpu_fabric_registered{index="4",state="in-progress"} 0',
        "gpuadvisor_nvidia_pci_gpus 9",
        'gpuadvisor_gpu_process_memory_bytes{index="0"} 31457280000',
        "gpuadvisor_dev_shm_size_bytes 67108864",
    } <= lines
    assert text.count("# TYPE gpuadvisor_kernel_xid_events gauge") == 1


def test_junit_has_a_testcase_per_new_rule_failing_where_the_rule_fails(rig: facts.Rig) -> None:
    rules = [r for r in all_rules()]
    suite = ET.fromstring(
        render_junit(rig, rig.findings, rules, failing=lambda f: f.severity == "fail", fail_on="fail")
    )
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["GA801 xid-events"].find("failure") is not None
    assert cases["GA801 xid-events"].get("classname") == "health"
    assert cases["GA803 rdma-port-down"].find("failure") is None  # a warning under fail_on=fail
    assert cases["GA803 rdma-port-down"].get("classname") == "network"


def test_html_report_has_a_network_section(rig: facts.Rig) -> None:
    html = render_html(rig)
    assert '<a href="#network">Network</a>' in html or 'href="#network"' in html
    section = html[
        html.index('<section id="network">') : html.index("</section>", html.index('<section id="network">'))
    ]
    assert '<tr class="fail"><td class="mono">mlx5_6/1</td><td>DOWN</td><td>Polling</td>' in section
    assert '<span class="warn">GPU 6 → mlx5_4 (NODE)</span>' in section
    assert '<th scope="row">IOMMU</th><td>translated</td>' in section
    assert "<td>GPU 3</td><td>Xid 79</td><td>1</td><td>GPU has fallen off the bus</td>" in section


def test_html_report_without_the_new_facts_has_no_network_section() -> None:
    assert '<section id="network">' not in render_html(facts.Rig(gpus=[facts.Gpu(index=0)]))


def test_advise_across_nodes_uses_the_port_rates_the_scan_read(preset: Any) -> None:
    from gpuadvisor.advisor import rigview

    view = rigview.from_rig(preset("dgx-h100"), nodes=2)
    assert view.inter_node.gbps == 50.0  # 8 x 400 Gb/s = 400 GB/s per node over 8 GPUs
    assert view.inter_node.source.startswith("simulated: 8 active RDMA port(s), 3200 Gb/s per node = 400 GB/s")
    degraded = preset("dgx-h100")
    ports = degraded.network.rdma_ports or []
    ports[6].state = "DOWN"
    ports[5].rate_gbps = 200.0
    assert rigview.from_rig(degraded, nodes=2).inter_node.gbps == 2600 / 8 / 8  # 6 x 400 + 200 active
    given = rigview.from_rig(preset("dgx-h100"), nodes=2, inter_node_gbps=40.0).inter_node
    assert (given.gbps, given.source.startswith("given")) == (40.0, True)
    assert rigview.from_rig(preset("4x4090-pcie"), nodes=2).inter_node.source.startswith("assumed")
