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


# --- class 3: dcgmproftester's run: the field it loaded, its workers, GFLOPS if printed, an error; no GPU ---


def _note(rig, word: str) -> str:
    return next(p for p in rig.problems if word in p)


def test_dcgmproftester_without_validation_names_the_field_and_no_gpu():
    # https://github.com/NVIDIA/DCGM/issues/239: DCGM 4.2.3's dcgmproftester12 -t 1007 --no-dcgm-validation, 'Worker
    # 0:0[1007]: Fp32EngineActive: target max, dcgm 0' repeated, no GFLOPS printed (the thread's complaint)
    rig = _read(CORPUS / "s28-dcgm" / "dcgmproftester12-t1007-fp32-engine-active-dcgm-0-no-validation_bmerry.txt")
    assert rig.gpus == [] and rig.measurements == []
    note = _note(rig, "Fp32EngineActive")
    assert "-t 1007" in note and "worker 0:0" in note and "validation off" in note and "no GFLOPS" in note


# https://github.com/NVIDIA/DCGM/issues/76: DCGM 3.1.7's dcgmproftester11 stops at once
ISSUE_76 = """$ dcgmproftester11 --no-dcgm-validation -t 1004 -d 10
Skipping CreateDcgmGroups() since DCGM validation is disabled
Skipping CreateDcgmGroups() since DCGM validation is disabled
2023-04-18 03:46:10.915 ERROR [2843478:2843478] Error 0 from RunTests(). Exiting. \
[/workspaces/dcgm-rel_dcgm_3_1-postmerge@2/dcgmproftester/DcgmProfTester.cpp:1170] [main]
$
"""


def test_another_dcgmproftester_run_that_stopped_with_its_error():
    rig = import_texts([("proftester.txt", ISSUE_76)])
    assert rig.gpus == []
    assert "line 4" in _note(rig, "Error 0 from RunTests()")


# NVIDIA's DCGM user guide, "Feature Overview: Profiling Metrics"
# (https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/feature-overview.html): dcgmproftester11
# --no-dcgm-validation -t 1004 on an A100, then on two MIG 3g.20gb instances (a worker each)
GUIDE_A100 = """Skipping CreateDcgmGroups() since DCGM validation is disabled
Skipping WatchFields() since DCGM validation is disabled
Worker 0:0[1004]: TensorEngineActive: generated ???, dcgm 0.000 (250362.2 gflops)
Worker 0:0[1004]: TensorEngineActive: generated ???, dcgm 0.000 (252917.0 gflops)
Worker 0:0[1004]: TensorEngineActive: generated ???, dcgm 0.000 (253971.7 gflops)
Worker 0:0[1004]: TensorEngineActive: generated ???, dcgm 0.000 (253700.2 gflops)
"""
GUIDE_MIG = """Skipping CreateDcgmGroups() since DCGM validation is disabled
Worker 0:0[1004]: TensorEngineActive: generated ???, dcgm { GPU: 0.000, GI: 0.000, CI: 0.000 } (102659.5 gflops)
Worker 0:1[1004]: TensorEngineActive: generated ???, dcgm { GPU: 0.000, GI: 0.000, CI: 0.000 } (102659.8 gflops)
"""


def test_dcgmproftester_gflops_are_noted_not_judged():
    rig = import_texts([("proftester.txt", GUIDE_A100)])
    assert rig.measurements == [] and rig.gpus == []
    assert "4 GFLOPS reports, the last 253700.2, the highest 253971.7" in _note(rig, "TensorEngineActive [1004]")
    mig = import_texts([("proftester.txt", GUIDE_MIG)])
    assert "on worker 0:0, 0:1" in _note(mig, "TensorEngineActive [1004]")


# --- class 4: UCC's ucc_perftest table: a collective measurement as nccl-tests' rows, no GPU ---


def test_ucc_perftest_alltoall_rows_read_as_a_collective_measurement():
    # https://github.com/openucx/ucc/pull/223: Alltoall, cuda memory, float32, not in place; 65536 x 262144 B
    # 76.46 us 24.00 GB/s ... 4194304 x 16777216 B 2555.02 us 45.96 GB/s; cut inside the 32 MiB row
    rig = _read(CORPUS / "s28-nccl-tests" / "ucc-perftest-alltoall-cuda-float32-bw-columns-cut_sergei-lebedev.txt")
    assert rig.gpus == []
    (m,) = rig.measurements
    assert (m.kind, m.backend, m.status) == ("alltoall", "ucc", "partial")
    assert [(r.count, r.size_bytes, r.time_us, r.busbw_gbps) for r in m.rows[:1]] == [(65536, 262144, 76.46, 24.0)]
    assert (m.rows[-1].size_bytes, m.value_gbps) == (16777216, 45.96)
    assert m.world_size is None and "world_size" in m.unavailable


# https://github.com/openucx/ucc/pull/1199: ucc_perftest -c reducedt -m cuda-mng on two H100s, without -F: times only
PR_1199 = """Collective:             Reduce DT
Memory type:            cuda-managed
Datatype:               float32
Reduction:              sum
Inplace:                N/A
Warmup:
  small                 100
  large                 20
Iterations:
  small                 1000
  large                 200

       Count        Size                Time, us
                                 avg         min         max
         128         512        8.30        7.83        8.76
Total time: 0.008764 ms
"""


def test_ucc_perftest_without_bandwidth_columns_is_noted_not_measured():
    rig = import_texts([("ucc.txt", PR_1199)])
    assert rig.measurements == []
    assert "ucc_perftest Reduce DT (cuda-managed memory, float32)" in _note(rig, "no bandwidth column")


# --- class 5: deviceQuery with its rows wrapped by a narrow window: a known label's row joined again ---


def test_devicequery_memory_row_wrapped_by_a_browser_is_joined():
    # https://github.com/amock/kNNcuda/issues/1: 'Total amount of global memory:  8119 MBytes (8513716224' over
    # 'bytes)'; Quadro M4000, CUDA 8.0 / 8.0, compute capability 5.2
    rig = _read(
        CORPUS / "s28-cuda-samples" / "devicequery-quadro-m4000-8-0-lines-wrapped-by-browser-cut_itabhiyanta.txt"
    )
    assert [(g.name, g.memory_total_bytes, g.compute_capability) for g in rig.gpus] == [
        ("Quadro M4000", 8513716224, "5.2")
    ]
    assert rig.software.cuda_driver_version == "8.0"


# https://github.com/kosl/ihipp-examples (docs/week5.md, "Consumer grade vs. high-end GPUs"): an excerpt of deviceQuery
# on a Marconi-100 V100 whose values a narrow page put under their labels
MARCONI = """Total amount of global memory:
16128 MBytes (16911433728 bytes)
(80) Multiprocessors, (64) CUDA Cores/MP:
5120 CUDA Cores
GPU Max Clock rate: 1530 MHz (1.53 GHz)
"""


def test_another_wrapped_devicequery_row_is_joined_and_nothing_else():
    from gpuadvisor.importers.devicequery import unwrapped
    from gpuadvisor.importers.rows import stripped_rows

    rows = [r.text for r in unwrapped(stripped_rows(MARCONI, 1))]
    assert rows[0] == "Total amount of global memory: 16128 MBytes (16911433728 bytes)"
    assert rows[1:] == [
        "(80) Multiprocessors, (64) CUDA Cores/MP:",
        "5120 CUDA Cores",
        "GPU Max Clock rate: 1530 MHz (1.53 GHz)",
    ]


# --- class 6: a bash/csh '[user@host dir]$' prompt above an output is glue, not an unread line ---


def _unread(path_or_text: str, name: str = "paste.txt") -> list[str]:
    from gpuadvisor.importers import parse_text

    return [n for p in parse_text(path_or_text, name) for n in p.notes if "not recognised" in n]


def test_bracketed_prompt_above_nvidia_smi_is_not_noted_as_unread():
    # https://github.com/ronghanghu/snmn/issues/2: '[jalal@goku snmn]$ nvidia-smi' above the table
    path = CORPUS / "s28-smi" / "smi-410-48-prompt-2x-gtx1080ti-display-on-cut-in-second-gpu_monajalal.txt"
    assert _unread(path.read_text(encoding="utf-8")) == []


# https://github.com/NVIDIA/nccl-tests/issues/68: '[user@machine nccl-tests]$ nvidia-smi topo -m' over its matrix
ISSUE_68 = (
    "[user@machine nccl-tests]$ nvidia-smi topo -m\n"
    "\tGPU0\tGPU1\tGPU2\tGPU3\tmlx5_0\tCPU Affinity\tNUMA Affinity\n"
    "GPU0\t X \tNV2\tNV2\tNV2\tNODE\t0,2,4,6,8,10\t0\n"
    "GPU1\tNV2\t X \tNV2\tNV2\tNODE\t0,2,4,6,8,10\t0\n"
    "GPU2\tNV2\tNV2\t X \tNV2\tNODE\t0,2,4,6,8,10\t0\n"
    "GPU3\tNV2\tNV2\tNV2\t X \tNODE\t0,2,4,6,8,10\t0\n"
    "mlx5_0\tNODE\tNODE\tNODE\tNODE\t X \t\t\n"
)


def test_another_bracketed_prompt_is_glue_and_a_kernel_line_is_not():
    from gpuadvisor.importers.sections import _GLUE

    assert _unread(ISSUE_68) == []
    assert _GLUE.match("[    5.123456] nvidia: loading out-of-tree module taints kernel.") is None
