"""The real probe code over the simulated NVML: exact topology matrices, nulls with reasons, bad GPUs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pynvml
import pytest
from gpuadvisor.probes.rigdesc import preset_names

from gpuadvisor import facts
from gpuadvisor.collect import collect_live, simulate
from gpuadvisor.errors import InputError


def grid(text: str) -> list[list[str]]:
    return [line.split() for line in textwrap.dedent(text).strip().splitlines()]


DGX_H100_PCIE = grid("""
    X    NODE NODE NODE SYS  SYS  SYS  SYS
    NODE X    NODE NODE SYS  SYS  SYS  SYS
    NODE NODE X    NODE SYS  SYS  SYS  SYS
    NODE NODE NODE X    SYS  SYS  SYS  SYS
    SYS  SYS  SYS  SYS  X    NODE NODE NODE
    SYS  SYS  SYS  SYS  NODE X    NODE NODE
    SYS  SYS  SYS  SYS  NODE NODE X    NODE
    SYS  SYS  SYS  SYS  NODE NODE NODE X
""")
DGX_A100_PCIE = grid("""
    X    PXB  NODE NODE SYS  SYS  SYS  SYS
    PXB  X    NODE NODE SYS  SYS  SYS  SYS
    NODE NODE X    PXB  SYS  SYS  SYS  SYS
    NODE NODE PXB  X    SYS  SYS  SYS  SYS
    SYS  SYS  SYS  SYS  X    PXB  NODE NODE
    SYS  SYS  SYS  SYS  PXB  X    NODE NODE
    SYS  SYS  SYS  SYS  NODE NODE X    PXB
    SYS  SYS  SYS  SYS  NODE NODE PXB  X
""")


def all_nv(n: int, links: int) -> list[list[str]]:
    return [["X" if i == j else f"NV{links}" for j in range(n)] for i in range(n)]


def test_preset_list_is_the_documented_set():
    assert preset_names() == ["2x3090-nvlink", "4x4090-pcie", "dgx-a100", "dgx-h100", "dgx2-v100", "h100-pcie"]


def test_dgx_h100_matrix_cell_by_cell(preset):
    rig = preset("dgx-h100")
    assert rig.topology.matrix == all_nv(8, 18)
    assert rig.topology.pcie_matrix == DGX_H100_PCIE
    assert rig.topology.nics == [f"mlx5_{k}" for k in range(8)]
    assert [row.index("PIX") for row in rig.topology.nic_matrix] == list(range(8))
    assert all(c == "OK" for i, row in enumerate(rig.topology.p2p_read) for j, c in enumerate(row) if i != j)
    g = rig.gpus[5]
    assert (g.name, g.bus_id, g.numa_node, g.cpu_affinity, g.memory_total_bytes) == (
        "NVIDIA H100 80GB HBM3",
        "0000:ab:00.0",
        1,
        "56-111,168-223",
        81559 * 2**20,
    )
    assert len(g.active_nvlinks()) == 18 and {n.version for n in g.nvlinks} == {4}
    assert {n.remote_device_type for n in g.nvlinks} == {"switch"}
    assert [h.port_type for h in g.pcie.path] == ["endpoint", "downstream-port", "upstream-port", "root-port"]
    assert rig.source.kind == "simulated" and rig.problems == []


def test_dgx_a100_matrix_cell_by_cell(preset):
    rig = preset("dgx-a100")
    assert rig.topology.matrix == all_nv(8, 12)
    assert rig.topology.pcie_matrix == DGX_A100_PCIE


def test_4x4090_matrix_p2p_and_the_x8_card(preset):
    rig = preset("4x4090-pcie")
    assert rig.topology.matrix == grid("""
        X    NODE NODE NODE
        NODE X    NODE NODE
        NODE NODE X    NODE
        NODE NODE NODE X
    """)
    assert rig.topology.p2p_read == grid("""
        X  NS NS NS
        NS X  NS NS
        NS NS X  NS
        NS NS NS X
    """)
    assert [(g.pcie.current_width, g.pcie.max_width) for g in rig.gpus] == [(16, 16), (16, 16), (8, 16), (16, 16)]
    assert all(g.nvlinks == [] for g in rig.gpus)
    assert rig.gpus[0].ecc_enabled is None and rig.gpus[0].unavailable["ecc_enabled"] == facts.NOT_SUPPORTED


def test_2x3090_bridge_and_single_h100(preset):
    rig = preset("2x3090-nvlink")
    assert rig.topology.matrix == [["X", "NV4"], ["NV4", "X"]]
    assert rig.topology.pcie_matrix == [["X", "PHB"], ["PHB", "X"]]
    assert [n.remote_gpu_index for n in rig.gpus[0].nvlinks] == [1, 1, 1, 1]
    assert rig.topology.p2p_read == [["X", "OK"], ["OK", "X"]]
    one = preset("h100-pcie")
    assert one.topology.matrix == [["X"]] and one.gpus[0].pcie.current_gen == 5


def test_dgx2_sixteen_gpus_two_switch_levels(preset):
    rig = preset("dgx2-v100")
    assert rig.topology.matrix == all_nv(16, 6)
    row0 = ["X", "PIX", "PXB", "PXB"] + ["NODE"] * 4 + ["SYS"] * 8
    assert rig.topology.pcie_matrix[0] == row0
    assert rig.topology.pcie_matrix[13] == ["SYS"] * 8 + ["NODE"] * 4 + ["PIX", "X", "PXB", "PXB"]
    assert rig.gpus[0].retired_pages_single_bit == 0 and rig.gpus[0].remapped_rows_correctable is None


def _rig_toml(tmp_path, gpu_extra: str = "", extra: str = "") -> str:
    p = tmp_path / "rig.toml"
    p.write_text(
        textwrap.dedent(f"""
        name = "test-rig"
        {extra}
        [gpu]
        name = "NVIDIA A100-SXM4-40GB"
        {gpu_extra}
        [[ports]]
        id = "rp0"
        kind = "root-port"
        bdf = "0000:00:01.0"
        host_bridge = "pci0000:00"
        numa_node = 0
        [[ports]]
        id = "sw0"
        kind = "switch"
        parent = "rp0"
        bdf = "0000:01:00.0"
        gen = 4
        width = 8
        max_width = 16
        [[gpus]]
        bus_id = "0000:03:00.0"
        parent = "sw0"
        [[gpus]]
        bus_id = "0000:04:00.0"
        parent = "sw0"
    """)
    )
    return str(p)


def test_not_supported_fields_are_null_with_reason(tmp_path):
    rig = simulate(
        _rig_toml(
            tmp_path,
            'unsupported = ["nvmlDeviceGetPowerManagementLimit", "nvmlDeviceGetTotalEccErrors", '
            '"nvmlDeviceGetCurrPcieLinkWidth"]\nno_permission = ["nvmlDeviceGetSerial"]',
        )
    )
    g = rig.gpus[1]
    assert g.power_limit_w is None and g.unavailable["power_limit_w"] == facts.NOT_SUPPORTED
    assert (
        g.ecc_errors_uncorrected_volatile is None
        and g.unavailable["ecc_errors_uncorrected_volatile"] == facts.NOT_SUPPORTED
    )
    assert g.pcie.current_width is None and g.pcie.unavailable["current_width"] == facts.NOT_SUPPORTED
    assert g.serial is None and g.unavailable["serial"] == facts.NO_PERMISSION
    assert g.power_default_limit_w == 300.0  # the neighbours are still read
    d = rig.to_dict()["gpus"][1]
    assert d["power_limit_w"] is None and d["unavailable"]["power_limit_w"] == "not supported by this GPU or driver"


def test_gpus_behind_a_downgraded_switch_uplink(tmp_path):
    rig = simulate(_rig_toml(tmp_path))
    assert rig.topology.matrix == [["X", "PIX"], ["PIX", "X"]]
    hops = rig.gpus[0].pcie.path
    assert [(h.port_type, h.current_width, h.max_width) for h in hops] == [
        ("endpoint", 16, 16),
        ("downstream-port", 16, 16),
        ("upstream-port", 8, 16),
        ("root-port", 8, 16),
    ]
    from gpuadvisor.links import path_limit

    assert path_limit(rig.gpus[0]).where == "0000:01:00.0"


def test_a_lost_gpu_is_one_row_and_the_rest_are_read(tmp_path):
    path = Path(_rig_toml(tmp_path))
    path.write_text(path.read_text().replace('bus_id = "0000:04:00.0"', 'bus_id = "0000:04:00.0"\nlost = true'))
    rig = simulate(str(path))
    assert rig.gpus[0].name == "NVIDIA A100-SXM4-40GB"
    assert rig.gpus[1].name is None and rig.gpus[1].unavailable["name"] == facts.GPU_LOST


def test_bad_descriptions_are_one_line(tmp_path):
    with pytest.raises(InputError, match="unknown preset 'dgx-h900'"):
        simulate("dgx-h900")
    with pytest.raises(InputError, match=r"rig.toml: gpu.colour: unknown key"):
        simulate(_rig_toml(tmp_path, 'colour = "green"'))
    with pytest.raises(InputError, match=r"gpu.power_limit_w: expected float, got 'high'"):
        simulate(_rig_toml(tmp_path, 'power_limit_w = "high"'))
    with pytest.raises(InputError, match="no such rig description file"):
        simulate(str(tmp_path / "nope.toml"))


class _NoLibrary:
    """pynvml as it behaves on a machine without the NVIDIA driver."""

    def nvmlInit(self):
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)


class _OldBinding:
    """A binding that lacks most functions: each missing one is 'function not found', not a crash."""

    def __init__(self):
        self._sim = None

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return object()

    def nvmlDeviceGetName(self, h):
        return b"Tesla K80"


def test_live_without_driver_reports_host_and_the_reason(tmp_path):
    rig = collect_live(nvml_lib=_NoLibrary())
    assert rig.gpus == []
    assert rig.problems[0].startswith("no NVIDIA GPU or driver found (NVML library not found): ")
    assert rig.problems[0].endswith(
        "; or try a simulated rig: gpuadvisor scan --simulate dgx-h100 (gpuadvisor presets lists them)"
    )
    assert rig.software.unavailable["driver_version"] == facts.NO_LIBRARY
    assert rig.host.cores_logical and rig.host.memory_total_bytes


def test_old_binding_gives_function_not_found(tmp_path):
    rig = collect_live(nvml_lib=_OldBinding(), sysfs_root=tmp_path)
    g = rig.gpus[0]
    assert g.name == "Tesla K80"
    assert g.unavailable["memory_total_bytes"] == facts.FUNCTION_NOT_FOUND
    assert any(p.startswith("nvidia-ml-py and the driver disagree on:") for p in rig.problems)


def test_real_h100_fixture_loads_and_renders(fixtures_dir):
    from gpuadvisor.render.text.rig import render_scan

    for name in ("scan-live.json", "scan-live-torch.json"):
        rig = facts.load(fixtures_dir / "h100-vm" / name)
        g = rig.gpus[0]
        assert (g.name, g.bus_id, g.compute_capability, g.pcie.current_gen, g.pcie.current_width) == (
            "NVIDIA H100 80GB HBM3",
            "0000:00:06.0",
            "9.0",
            5,
            16,
        )
        assert g.power_limit_w == 700.0 and g.ecc_enabled is True
        assert g.unavailable["retired_pages_single_bit"] == facts.NOT_SUPPORTED
        text = render_scan(rig)
        assert "live scan of vm" in text and "NVIDIA H100 80GB HBM3" in text and "Gen5 x16 / Gen5 x16" in text
    torch_rig = facts.load(fixtures_dir / "h100-vm" / "scan-live-torch.json")
    assert (torch_rig.software.torch_cuda_version, torch_rig.software.nccl_version) == ("13.0", "2.28.9")


def test_real_h100_measured_scan_fixture(fixtures_dir):
    """`gpuadvisor scan --bench --quick --model llama-3-8b` recorded on a real H100
    (benchmarks/device/scan_bench.sh)."""
    from gpuadvisor.render.html import render_html
    from gpuadvisor.rules import evaluate

    rig = facts.load(fixtures_dir / "h100-vm" / "scan-bench.json")
    by = {(m.kind, m.memory): m for m in rig.measurements}
    h2d = by[("h2d", "pinned")]
    assert h2d.backend == "cuda" and h2d.status == "ok" and 50 < h2d.value_gbps < 63.0
    assert h2d.expected_gbps == pytest.approx(63.008 * 0.85, rel=1e-3) and h2d.ratio == pytest.approx(
        h2d.value_gbps / h2d.expected_gbps, rel=1e-3
    )
    ar = by[("all_reduce", None)]
    assert ar.backend == "nccl" and ar.world_size == 1 and all(r.correct for r in ar.rows)
    assert rig.advice["kind"] == "gpuadvisor-advice"
    findings = evaluate(rig)
    assert [(f.code, f.severity) for f in findings if f.severity in ("warn", "fail")] == []
    ga602 = next(f for f in findings if f.code == "GA602")
    assert ga602.severity == "not-checked" and "one rank only" in ga602.message
    html = render_html(rig)
    assert "NVIDIA H100 80GB HBM3" in html and "h2d" in html.lower()


def test_real_h100_scan_with_the_current_probe(fixtures_dir):
    """benchmarks/device/scan_current.sh on the lent H100: the fields added after the first recording were read
    on real NVML (P-state, SRAM corrected ECC via nvmlDeviceGetMemoryErrorCounter) or are null with the reason
    (that VM's kernel exposes no AER counters), and the default bench swept 8 B to 1 GiB."""
    rig = facts.load(fixtures_dir / "h100-vm" / "scan-v2-bench.json")
    g = rig.gpus[0]
    assert (g.performance_state, g.ecc_errors_corrected_sram_volatile, g.ecc_errors_corrected_sram_aggregate) == (
        0,
        0,
        0,
    )
    hop = g.pcie.path[0]
    assert hop.aer_correctable is None and hop.unavailable["aer_correctable"].startswith("no AER counters in sysfs")
    assert rig.host.net_interfaces == ["eth0", "ifb0", "ifb1"]
    ar = next(m for m in rig.measurements if m.kind == "all_reduce")
    assert (ar.rows[0].size_bytes, ar.rows[-1].size_bytes, len(ar.rows)) == (8, 2**30, 28)
    h2d = next(m for m in rig.measurements if m.kind == "h2d" and m.memory == "pinned")
    assert h2d.rows[-1].size_bytes == 256 * 2**20 and 50 < h2d.value_gbps < 63.0 and h2d.status == "ok"
