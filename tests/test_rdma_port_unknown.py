"""An RDMA port whose number the paste does not show is ``port: null`` with its reason, never port 1: ibv_devices and
lshca list adapters, not ports; an ibv_devinfo -v fragment cut below its "port:" line shows a port, not its number.
The reports then name the adapter alone ("mlx5_0", not "mlx5_0/1"), and a check that needs the number (NCCL_IB_HCA's
"mlx5_0:1", the fleet's comparison of the same port across nodes) says it could not judge that port."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from gpuadvisor.facts import RdmaPort, Rig
from gpuadvisor.facts.lean import lean_rig
from gpuadvisor.facts.scanfile import from_dict
from gpuadvisor.fleet import groups
from gpuadvisor.importers import import_files
from gpuadvisor.importers.beyond_merge import _numbered_over_unnumbered
from gpuadvisor.render.html import render_html
from gpuadvisor.render.text.findings import render_findings
from gpuadvisor.rules import evaluate

CORPUS = Path(__file__).parent / "corpus"
# https://github.com/NVIDIA/nvshmem/issues/51: ibv_devices lists mlx5_0 .. mlx5_3 with their node GUIDs
IBV_DEVICES = CORPUS / "s31-rdma-logs" / "ibv-devices-4-mlx5-pvrdma-warning-lsmod-nvidia-peermem-loaded_zzwzds.txt"
# https://github.com/NVIDIA/nccl/issues/769: five lines of an ibv_devinfo -v port record, from its phys_state line
GID_FRAGMENT = (
    CORPUS / "s28-rdma-logs" / "ibv-devinfo-v-fragment-mlx5-bond-0-link-up-four-gids-roce-v1-v2_elevenxiang.txt"
)
# https://github.com/openucx/ucx/issues/5970: lshca's HCA table, a row per device: mlx5_0 down, mlx5_1 init
LSHCA = CORPUS / "s29-rdma-logs" / "ucx-ci-hca-table-mlx5-0-down-mlx5-1-init-pcie-x8-of-x16_avildema.txt"


def _import_json(paste: Path, tmp_path: Path) -> dict:
    out = tmp_path / "scan.json"
    r = subprocess.run([sys.executable, "-m", "gpuadvisor", "import", str(paste), "--json", str(out)],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    return json.loads(out.read_text())


def _html_names(rig: Rig) -> list[str]:
    html = render_html(rig)
    section = html[html.index('<section id="network">') :]
    return re.findall(r'<tr[^>]*><td class="mono">([^<]*)</td>', section[: section.index("</section>")])


def test_ibv_devices_lists_adapters_whose_port_numbers_are_null_with_the_reason(tmp_path):
    rig = import_files([IBV_DEVICES])
    ports = rig.network.rdma_ports or []
    assert [(p.device, p.port, p.why("port")) for p in ports] == [
        (f"mlx5_{i}", None, "ibv_devices lists devices, not their ports") for i in range(4)
    ]
    scan = _import_json(IBV_DEVICES, tmp_path)
    (first, *_) = scan["network"]["rdma_ports"]
    assert "port" in first and first["port"] is None  # the key is kept, null where unknown
    assert first["unavailable"]["port"] == "ibv_devices lists devices, not their ports"
    assert _html_names(rig) == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]  # the adapter alone, no "/1"
    assert from_dict(scan).network.rdma_ports[0].port is None  # a scan with null reads back as unknown
    assert lean_rig(scan).network.rdma_ports[0].port is None


def test_a_gid_fragment_of_ibv_devinfo_shows_a_port_but_not_its_number(tmp_path):
    rig = import_files([GID_FRAGMENT])
    (port,) = rig.network.rdma_ports or []
    assert (port.device, port.port, port.link_layer) == ("", None, "Ethernet")  # RoCE v1/v2 GIDs: an Ethernet port
    assert port.why("port") == "the paste shows the port's phys_state or GID lines, not its 'port:' line"
    assert port.why("device") == "the paste starts inside ibv_devinfo's output, below its 'hca_id:' line"
    assert _html_names(rig) == ["—"]  # neither the adapter nor the port is shown: no "/1"
    assert _import_json(GID_FRAGMENT, tmp_path)["network"]["rdma_ports"][0]["port"] is None


def test_lshcas_ports_down_are_named_by_their_adapter_alone_in_the_findings_and_text():
    rig = import_files([LSHCA])
    evaluate(rig)
    assert [(p.device, p.port) for p in rig.network.rdma_ports or []] == [("mlx5_0", None), ("mlx5_1", None)]
    down = [(f.code, f.subject) for f in rig.findings if f.code == "GA803" and f.severity == "warn"]
    assert down == [("GA803", "mlx5_0"), ("GA803", "mlx5_1")]
    text = render_findings(rig.findings, color=False, rig=rig, width=120)
    assert "mlx5_0 is DOWN" in text and "port 1" not in text and "mlx5_0/1" not in text
    assert _html_names(rig) == ["mlx5_0", "mlx5_1"]


def test_nccl_ib_hca_naming_a_port_by_number_is_not_judged_on_adapters_listed_without_ports():
    rig = import_files([IBV_DEVICES])
    rig.software.env["NCCL_IB_HCA"] = "=mlx5_0:1,mlx5_1:1"
    (f,) = [f for f in evaluate(rig) if f.code == "GA814"]
    assert f.severity == "not-checked"
    assert "mlx5_0:1, mlx5_1:1" in f.message and "ibv_devices lists devices, not their ports" in f.message
    rig.software.env["NCCL_IB_HCA"] = "=mlx5_7:1"  # an adapter the listing does not have: judged
    (f,) = [f for f in evaluate(rig) if f.code == "GA814"]
    assert (f.severity, f.observed["unmatched"]) == ("fail", ["mlx5_7:1"])


def test_a_scan_of_an_older_version_with_a_port_number_still_reads_it(tmp_path):
    scan = _import_json(IBV_DEVICES, tmp_path)
    for p in scan["network"]["rdma_ports"]:  # as an older gpuadvisor wrote it: port 1 and no reason
        p["port"] = 1
        p["unavailable"].pop("port")
    assert [p.port for p in from_dict(scan).network.rdma_ports or []] == [1] * 4
    assert [p.port for p in lean_rig(scan).network.rdma_ports or []] == [1] * 4


def test_the_fleet_does_not_compare_ports_whose_numbers_it_does_not_know():
    rig = import_files([LSHCA])
    assert groups.rdma_ports(rig) == {}  # nothing to compare by name "mlx5_0/N"
    assert groups.unnumbered_ports(rig) == ["mlx5_0", "mlx5_1"]


def test_numbered_ports_of_another_output_take_the_place_of_an_adapter_listed_without_ports():
    listed = RdmaPort(device="mlx5_0")
    listed.missing("port", "ibv_devices lists devices, not their ports")
    read = RdmaPort(device="mlx5_0", port=1, state="ACTIVE")
    other = RdmaPort(device="mlx5_1")
    assert _numbered_over_unnumbered([listed, other], [read]) == [other, read]
    assert _numbered_over_unnumbered([read], [listed, other]) == [read, other]


def test_a_fleet_leaves_a_port_of_unknown_number_uncompared_and_says_so(tmp_path):
    """Six scans of the dgx-h100 preset; mlx5_3's number unknown on every node (as lshca lists it), trained at 200
    Gb/s on node3 where the others run 400: compared by name it would be a slow port; unnumbered, it is a note."""
    base = tmp_path / "base.json"
    r = subprocess.run([sys.executable, "-m", "gpuadvisor", "scan", "--simulate", "dgx-h100", "--json", str(base)],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    scans = tmp_path / "scans"
    scans.mkdir()
    for i in range(6):
        doc = json.loads(base.read_text())
        doc["host"]["hostname"] = f"node{i}"
        for p in doc["network"]["rdma_ports"]:
            if p["device"] == "mlx5_3":
                p["port"] = None
                p["unavailable"]["port"] = "lshca shows one row per RDMA device, not its port number"
                p["rate_gbps"] = 200.0 if i == 3 else 400.0
        (scans / f"node{i}.json").write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, "-m", "gpuadvisor", "fleet", str(scans), "--format", "json"],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    report = json.loads(r.stdout)
    assert [f for n in report["nodes"] for f in n["findings"] if f["kind"] == "slow-port"] == []
    (said,) = [x for x in report["notes"] if "mlx5_3" in x]
    assert "6 nodes (node0, node1, node2, node3, node4 and 1 more)" in said
    assert "without their port numbers (mlx5_3): those ports are not compared" in said


def test_nccl_ib_hca_on_adapters_whose_state_is_not_shown_is_not_judged_as_down():
    """ibv_devices lists adapters, not their state: an entry matching one is not "not ACTIVE" (a guess), it is not
    judged; the entry that matches no adapter still is."""
    rig = import_files([IBV_DEVICES])
    rig.software.env["NCCL_IB_HCA"] = "mlx5_0"
    (f,) = [f for f in evaluate(rig) if f.code == "GA814"]
    assert f.severity == "not-checked" and "does not show the state of mlx5_0" in f.message
    rig.software.env["NCCL_IB_HCA"] = "mlx5_0,mlx5_9"
    found = sorted((f.severity, str((f.observed or {}).get("unmatched"))) for f in evaluate(rig) if f.code == "GA814")
    assert found == [("not-checked", "None"), ("warn", "['mlx5_9']")]
