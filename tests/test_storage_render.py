"""The storage section in text, JSON and HTML."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.probes.storage import probe_storage

from gpuadvisor.advisor.checkpoint import plan_checkpoint
from gpuadvisor.facts import Rig, StorageBench, from_dict
from gpuadvisor.render.text.rig import render_rest
from tests.test_storage_probe import build_tree, fake_statvfs


def _rig(tmp_path: Path) -> Rig:
    from gpuadvisor.advisor import Workload, advise
    from gpuadvisor.collect import simulate

    rig = simulate("dgx-h100")
    advise(rig, Workload.from_options(model="llama-3-8b", precision="bf16"))
    rig.storage = probe_storage(
        [("/data/<x>", "data"), ("/", "checkpoint")], root=build_tree(tmp_path), statvfs=fake_statvfs
    )
    rig.storage.paths[1].bench = StorageBench(
        seq_read_gbps=6.8,
        seq_write_gbps=4.1,
        rand_read_iops=12345.6,
        iodepth=1,
        method="fio-3.33 (psync, iodepth 1, direct=1)",
    )
    assert rig.advice is not None
    rig.advice["checkpoint"] = plan_checkpoint(rig, rig.advice, "1h").to_dict()
    return rig


def test_text_section(tmp_path: Path) -> None:
    text = render_rest(_rig(tmp_path), width=100, findings=False)
    lines = text.splitlines()
    flat = " ".join(text.split())
    i = lines.index("Storage")
    assert lines[i + 2] == "data: /data/<x>"
    assert (
        "device: md0 (raid0, 7.0 TiB) over [nvme1n1 NVMe Micron_7450_MTFDKCC3T8TFR 3.5 TiB, PCIe Gen4 x4, NUMA 1, "
        "nvme2n1 NVMe Micron_7450_MTFDKCC3T8TFR 3.5 TiB, PCIe Gen4 x4, NUMA 1]"
    ) in flat
    assert "PCIe Gen4 x2 (capable Gen4 x4), NUMA 0" in text
    assert "measured: read 6.8 GB/s; write 4.1 GB/s; 4 KiB random read 12,346 IOPS (QD1) [fio-3.33" in flat
    plan = _rig(tmp_path / "a").advice["checkpoint"]
    total = 8_030_261_248 * plan["bytes_per_param"]
    assert plan["bytes_per_param"] in (12.0, 14.0) and plan["write_gbps"] == 4.1
    assert plan["save_seconds"] == round(total / 4.1e9, 1)
    assert (
        f"checkpoint: {total / 2**30:,.1f} GiB, {total / 4.1e9:,.0f} s per save at 4.1 GB/s = "
        f"{plan['stall_fraction']:.1%} of training time, every 60 min"
    ) in flat
    assert max(len(x) for x in lines) <= 100
    assert max(len(x) for x in render_rest(_rig(tmp_path / "b"), width=60, findings=False).splitlines()) <= 60


def test_json_and_html(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    again = from_dict(rig.to_dict())
    assert again.storage.paths[0].devices[0].members[1].name == "nvme2n1"
    assert again.storage.paths[1].bench.rand_read_iops == 12345.6
    from gpuadvisor.render.html import render_html

    page = render_html(rig)
    assert '<section id="storage">' in page and 'href="#storage"' in page
    assert "data: /data/&lt;x&gt;" in page and "/data/<x>" not in page.split("<script")[0]
    assert "raid0" in page
