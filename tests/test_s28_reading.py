"""Held-out set 28's reading classes (nvidia-smi vgpu on a vGPU host, the driver's per-GPU power file,
dcgmproftester's run, UCC's perftest table, deviceQuery's lines wrapped by a browser, a ``[user@host dir]$``
prompt), each on its s28 paste and another real public sample of the same form.

Values are the pastes' own (quoted in each test), never this tool's output."""

from __future__ import annotations

from gpuadvisor.importers import import_texts
from tests.test_s21_reading import CORPUS, _read

# --- class 1: nvidia-smi vgpu on a vGPU host: the physical GPUs read, the vGPUs under them not counted ---


def test_vgpu_host_table_reads_the_physical_gpus_not_the_vgpus():
    # https://github.com/NVIDIA/gpu-operator/issues/267: driver 470.63; Tesla T4 at 85:00.0 and C1:00.0, each with
    # one 'GRID T4-4C' vGPU (VMs instance-00000273 and instance-00000264) under it; cut after GPU 1's vGPU row
    rig = _read(CORPUS / "s28-smi" / "smi-vgpu-host-470-63-2x-t4-grid-t4-4c-vms-cut_kralicky.txt")
    assert rig.software.driver_version == "470.63"
    assert [(g.index, g.name, g.bus_id) for g in rig.gpus] == [
        (0, "Tesla T4", "0000:85:00.0"),
        (1, "Tesla T4", "0000:c1:00.0"),
    ]
    assert all(g.memory_total_bytes is None for g in rig.gpus)
    assert rig.partial_gpu_list
    assert any("GRID T4-4C" in p and "instance-00000273" in p for p in rig.problems)


# https://github.com/akb486/vgpu (README.md): 'nvidia-smi vgpu' on a host with one RTX 40-series card in vGPU mode,
# driver 525.147.01, no vGPU running yet; the name cut to the column
AKB486 = """Thu Nov 2 21:43:18 2025
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 525.147.01             Driver Version: 525.147.01                |
|---------------------------------+------------------------------+------------+
| GPU  Name                       | Bus-Id                       | GPU-Util   |
|      vGPU ID     Name           | VM ID     VM Name            | vGPU-Util  |
|=================================+==============================+============|
|   0  NVIDIA GeForce RTX 408...  | 00000000:01:00.0             |   0%       |
+---------------------------------+------------------------------+------------+
"""


def test_another_vgpu_host_table_with_no_vgpu_and_a_cut_name():
    rig = import_texts([("vgpu.txt", AKB486)])
    assert rig.software.driver_version == "525.147.01"
    assert [(g.index, g.name, g.bus_id) for g in rig.gpus] == [(0, None, "0000:01:00.0")]
    assert not rig.partial_gpu_list


# --- class 2: the driver's per-GPU power file: runtime D3 (RTD3) state, D3cold by design not a lost GPU ---


def test_proc_power_d3cold_by_design_is_read_as_asleep_not_lost():
    # https://github.com/NVIDIA/open-gpu-kernel-modules/issues/907: 'Runtime D3 status: Enabled (fine-grained)',
    # 'Video Memory: Off', then the PCI device's runtime_status 'suspended' and power_state 'D3cold'
    rig = _read(
        CORPUS
        / "s28-lost-gpu"
        / "proc-driver-nvidia-power-rtd3-d3cold-by-design-blackwell-pro-healthy-cut_sysadmin-guru.txt"
    )
    assert [g.bus_id for g in rig.gpus] == ["0000:11:00.0"]
    note = next(p for p in rig.problems if "Runtime D3 status" in p)
    assert "Enabled (fine-grained)" in note and "D3cold" in note and "not one lost" in note


# https://github.com/NVIDIA/open-gpu-kernel-modules/issues/728 (a comment): RTD3 not available on a desktop board,
# the GPU awake
ISSUE_728 = """$ cat /proc/driver/nvidia/gpus/0000:01:00.0/power
Runtime D3 status:          Disabled by default
Video Memory:               Active

GPU Hardware Support:
 Video Memory Self Refresh: Not Supported
 Video Memory Off:          Supported

"""


def test_another_proc_power_file_with_rtd3_off_and_memory_active():
    rig = import_texts([("power.txt", ISSUE_728)])
    assert [g.bus_id for g in rig.gpus] == ["0000:01:00.0"]
    note = next(p for p in rig.problems if "Runtime D3 status" in p)
    assert "Disabled by default" in note and "Video Memory: Active" in note and "not one lost" not in note
