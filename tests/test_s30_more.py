"""Held-out set 30's reading classes (an nvidia-smi table row cut inside its bus-id cell, another vendor's kernel
log, the libibverbs example programs' errors, club-3090's markdown rig report, the pip-list tail of a collect_env),
each on its s30 paste and another real public sample of the same form.

Values are the pastes' own (quoted in each test), never this tool's output."""

from __future__ import annotations

import pytest

from gpuadvisor.importers import import_texts
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.rules import evaluate
from tests.test_s21_reading import CORPUS, _read

# --- class 1: a table's first GPU row cut after its Disp.A cell (the bus id shown whole, the ECC cell not) ---


def test_a_row_cut_after_its_display_cell_keeps_bus_id_and_persistence():
    # https://github.com/ethereum-mining/ethminer/issues/207: driver 375.66, the paste ends in
    # '|   0  GeForce GTX 106...  Off  | 0000:01:00.0      On' (no ECC cell, no second row)
    rig = _read(CORPUS / "s30-smi" / "smi-375-gtx1060-display-on-no-cuda-field-cut-in-first-row_magniff.txt")
    assert [(g.index, g.bus_id, g.persistence_mode, g.name) for g in rig.gpus] == [(0, "0000:01:00.0", False, None)]
    assert rig.gpus[0].memory_total_bytes is None and "cut" in rig.gpus[0].why("memory_total_bytes")


# https://github.com/pop-os/pop/issues/3604 (driver 580.82.07), its table cut after the first row's Disp.A cell
_POP = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.82.07              Driver Version: 580.82.07      CUDA Version: 13.0     |
+-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GeForce GTX 1650        Off |   00000000:01:00.0 Off
"""


def test_another_table_cut_after_its_display_cell():
    rig = _read("smi.txt", _POP)
    assert [(g.name, g.bus_id, g.persistence_mode, g.power_limit_w) for g in rig.gpus] == [
        ("NVIDIA GeForce GTX 1650", "0000:01:00.0", False, None)
    ]


def test_a_row_cut_inside_its_bus_id_keeps_no_bus_id():
    # the same row cut inside the bus id ('00000000:01:0'): a stub, never a bus id
    rig = _read("smi.txt", _POP[: _POP.rindex(":00.0 Off")] + "\n")
    assert rig.gpus[0].bus_id is None and rig.gpus[0].persistence_mode is False


# --- class 2: another vendor's GPU driver's kernel log (amdgpu, radeon, i915, xe) with no NVIDIA line: refused ---

_FOREIGN_LOG = "kernel log of {}'s GPU driver ({}) with no NVIDIA line"


def _refusal(name: str, text: str) -> str:
    with pytest.raises(ImportParseError) as e:
        import_texts([(name, text)])
    assert "\n" not in str(e.value)
    return str(e.value)


@pytest.mark.parametrize(
    "name",
    [
        # https://github.com/ROCm/hip/issues/3353: 'amdgpu 0000:03:00.0: amdgpu: bo ... conflict with ...',
        # 'amdgpu: Failed to map bo to gpuvm', then 'kernel BUG at mm/slub.c:448!' in Blender's HIP wrapper
        "dmesg-amdgpu-va-conflict-failed-map-bo-kernel-bug-slub-blender-hip-cut_materuspl.txt",
        # https://github.com/ROCm/legacy-rocm-build/issues/5508: '[drm:mes_v11_0_submit_pkt_and_poll_completion...
        # [amdgpu]] *ERROR* MES failed to response msg=3', 'amdgpu 0000:28:00.0: amdgpu: GPU reset begin!'
        "journal-amdgpu-mes-failed-to-response-gpu-reset-begin-ltxvideo-comfyui-cut_theconanrider.txt",
    ],
)
def test_an_amdgpu_kernel_log_is_refused_as_amds(name):
    assert _FOREIGN_LOG.format("AMD", "amdgpu") in _refusal(name, (CORPUS / "s30-not-read" / name).read_text())


# https://github.com/pop-os/pop/issues/2132 (its syslog trimmed by the poster; the first six lines): an RX 5000-series
# desktop whose gfx ring timed out, 'amdgpu 0000:03:00.0: amdgpu: GPU reset begin!'
_POP_SYSLOG = """\
Feb  2 08:03:20 kernel: [37932.038809] [drm:amdgpu_dm_commit_planes [amdgpu]] *ERROR* Waiting for fences timed out!
Feb  2 08:03:20 kernel: [37937.168911] [drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, \
signaled seq=228661, emitted seq=228662
Feb  2 08:03:20 kernel: [37937.169061] [drm:amdgpu_job_timedout [amdgpu]] *ERROR* Process information: process Xorg \
pid 2184 thread Xorg:cs0 pid 2284
Feb  2 08:03:20 kernel: [37937.169164] amdgpu 0000:03:00.0: amdgpu: GPU reset begin!
Feb  2 08:03:20 kernel: [37937.396684] amdgpu 0000:03:00.0: [drm:amdgpu_ring_test_helper [amdgpu]] *ERROR* ring \
kiq_2.1.0 test failed (-110)
Feb  2 08:03:20 kernel: [37937.396771] [drm:gfx_v10_0_hw_fini [amdgpu]] *ERROR* KGQ disable failed
"""

# https://github.com/ValveSoftware/halflife/issues/484: an Intel GPU's hang in an older kernel's words
_I915_HANG = """\
[11546.020039] [drm:i915_hangcheck_hung] *ERROR* Hangcheck timer elapsed... GPU hung
[11546.020055] [drm] capturing error event; look for more information in /debug/dri/0/i915_error_state
[13862.012067] [drm:i915_hangcheck_hung] *ERROR* Hangcheck timer elapsed... GPU hung
[13863.516066] [drm:i915_hangcheck_hung] *ERROR* Hangcheck timer elapsed... GPU hung
[13863.516494] [drm:i915_reset] *ERROR* GPU hanging too fast, declaring wedged!
[13863.516561] [drm:i915_reset] *ERROR* Failed to reset chip.
"""


def test_other_amdgpu_and_i915_kernel_logs_are_refused_as_their_vendors():
    assert _FOREIGN_LOG.format("AMD", "amdgpu") in _refusal("syslog.txt", _POP_SYSLOG)
    assert _FOREIGN_LOG.format("Intel", "i915") in _refusal("dmesg.txt", _I915_HANG)


def test_a_log_with_both_vendors_lines_is_read_and_cut_before_nvidias_is_refused():
    # https://github.com/ublue-os/bazzite/issues/2612: an amdgpu iGPU ('[drm] amdgpu kernel modesetting enabled.',
    # 'amdgpu: Topology: Add CPU node'), then 'NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.133.07'
    text = (
        CORPUS / "s12-logs" / "journal-good-boot-amdgpu-igpu-nvidia-open-570-loads-no-fault-cut_sebmaster.txt"
    ).read_text()
    assert import_texts([("journal.txt", text)]).software.driver_version == "570.133.07"
    before = text[: text.index("nvidia-nvlink")]  # the same journal cut before its first NVIDIA line
    assert _FOREIGN_LOG.format("AMD", "amdgpu") in _refusal("journal.txt", before[: before.rindex("\n") + 1])


# --- class 3: libibverbs' example programs (ibv_rc_pingpong ...): a failed exchange read with its status ---


def test_rc_pingpong_retry_exceeded_is_a_failed_run_with_its_status():
    # https://github.com/linux-rdma/opensm/issues/38: local LID 0x0013, remote LID 0x0001, 'Failed status transport
    # retry counter exceeded (12) for wr_id 2', 'parse WC failed 1'
    rig = _read(
        CORPUS
        / "s30-rdma-logs"
        / "ibv-rc-pingpong-transport-retry-counter-exceeded-12-parse-wc-failed-ndr-opensm_rixon.txt"
    )
    (m,) = rig.measurements
    assert (m.kind, m.status, m.value_gbps) == ("rdma_pingpong", "failed", None)
    assert "status 12 (transport retry counter exceeded), wr_id 2" in (m.error or "")
    assert "parse WC failed 1" in (m.error or "")
    assert any("local LID 0x0013, remote LID 0x0001" in p for p in rig.problems)
    found = [(f.code, f.severity) for f in evaluate(rig) if f.severity in ("warn", "fail")]
    assert found == [("GA606", "warn")]


# https://github.com/SoftRoCE/rxe-dev/issues/51: both ends of 'ibv_rc_pingpong -g 1 -d rxe0 -i 1' over SoftRoCE print
# their addresses, then nothing (the exchange hangs)
_RXE = """\
mcfatealan@mcfatealan-desktop:~/librxe-dev$ ibv_rc_pingpong -g 1 -d rxe0 -i 1
  local address:  LID 0x0000, QPN 0x000012, PSN 0x5e5383, GID ::ffff:192.168.10.19
  remote address: LID 0x0000, QPN 0x000013, PSN 0x4c0dd8, GID ::ffff:192.168.10.19
"""


def test_another_rc_pingpong_that_shows_no_result_is_read_with_nothing_measured():
    rig = import_texts([("pingpong.txt", _RXE)])
    assert rig.measurements == []
    assert any("local LID 0x0000, remote LID 0x0000" in p for p in rig.problems)
    assert any("no result or error shown" in p for p in rig.problems)
    # the same run ending in rc_pingpong's completion error (parse_single_wc's form, rdma-core rc_pingpong.c)
    failed = _RXE + "Failed status transport retry counter exceeded (12) for wr_id 2\nparse WC failed 1\n"
    (m,) = import_texts([("pingpong.txt", failed)]).measurements
    assert m.status == "failed" and "status 12" in (m.error or "")


# --- class 5: collect_env's "Versions of relevant libraries" part pasted without the report above it ---


def test_a_collect_env_tail_of_pip3_rows_is_read_and_shows_no_gpu_fact():
    # https://github.com/PaddlePaddle/FastDeploy/pull/4044: the CPU 'Flags:' line, the banner 'Versions of relevant
    # libraries', '[pip3] nvidia-cublas-cu11==11.11.3.6', ... cut in '[pip3] nvidia-cuda-runti': no torch or NCCL row
    rig = _read(
        CORPUS
        / "s30-collect-env"
        / "fastdeploy-collect-env-tail-cpu-flags-pip-nvidia-wheels-cu11-cu12-no-gpu-section-cut_qwes5s5.txt"
    )
    assert rig.gpus == []
    sw = rig.software
    assert (sw.driver_version, sw.torch_version, sw.nccl_version) == (None, None, None)


# https://github.com/vllm-project/vllm/pull/4211: vLLM's collect_env example, its libraries part
_VLLM_LIBS = """\
Versions of relevant libraries:
[pip3] mypy==0.991
[pip3] mypy-extensions==1.0.0
[pip3] numpy==1.26.4
[pip3] nvidia-nccl-cu12==2.19.3
[pip3] torch==2.2.1
[pip3] triton==2.2.0
[pip3] vllm-nccl==0.1
[pip3] vllm-nccl-cu11==2.18.1.0.3.0
[pip3] vllm-nccl-cu12==2.18.1.0.3.0
"""


def test_another_libraries_part_gives_torch_and_the_nccl_wheel():
    sw = import_texts([("env.txt", _VLLM_LIBS)]).software
    assert (sw.torch_version, sw.nccl_version) == ("2.2.1", "2.19.3")
    assert sw.torch_cuda_version is None  # a torch version without a +cu tag names no CUDA build


# --- class 4: club-3090's markdown rig report (scripts/report.sh): its GPU hardware lines ---


def test_club3090_report_reads_each_gpu_and_its_cap_below_default():
    # https://github.com/noonghunna/club-3090/issues/105: '- **GPU 0:** NVIDIA GeForce RTX 3090 | 24576 MiB | driver
    # 590.48.01 | ... | persistence=Enabled', 'limit=275.00 W (default=420.00 W, max=500.00 W)', 'x16 lanes negotiated
    # (GPU max x16, Gen up to 4) | bus 00000000:81:00.0'; GPU 1 at 82:00.0 (default 350 W); GPU 2 cut in its name
    rig = _read(CORPUS / "s30-smi" / "club3090-report-md-3x-rtx3090-275w-capped-below-default-cut-in-gpu2_3dluvr.txt")
    assert rig.software.driver_version == "590.48.01"
    assert [(g.index, g.name, g.bus_id, g.power_limit_w, g.power_default_limit_w) for g in rig.gpus] == [
        (0, "NVIDIA GeForce RTX 3090", "0000:81:00.0", 275.0, 420.0),
        (1, "NVIDIA GeForce RTX 3090", "0000:82:00.0", 275.0, 350.0),
        (2, None, None, None, None),
    ]
    assert rig.gpus[0].memory_total_bytes == 24576 * 2**20 and rig.gpus[0].pcie.current_width == 16
    capped = sorted(f.subject or "" for f in evaluate(rig) if f.code == "GA312" and f.severity == "warn")
    assert capped == ["GPU 0 0000:81:00.0", "GPU 1 0000:82:00.0"]


# https://github.com/noonghunna/club-3090/issues/642 (2x RTX 3090 over KVM passthrough at 290 W): its GPU hardware
# part, cut after GPU 1's first line
_KVM = """\
## GPU hardware

- **GPU 0:** NVIDIA GeForce RTX 3090 | 24576 MiB | driver 595.71.05 | VBIOS 94.02.42.00.02 | persistence=Enabled
  - **Power:** limit=290.00 W (default=350.00 W, max=350.00 W) | current_draw=10.61 W ⚠ user-capped below default
  - **PCIe:** x8 lanes negotiated (GPU max x16, Gen up to 4) | bus 00000000:01:00.0 ⚠ slot is narrower than GPU \
capability — affects load + all-reduce bandwidth
- **GPU 1:** NVIDIA GeForce RTX 3090 | 24576 MiB | driver 595.71.05 | VBIOS 94.02.42.00.02 | persistence=Enabled
"""


def test_another_rig_report_with_a_narrow_slot():
    rig = import_texts([("report.md", _KVM)])
    assert rig.software.driver_version == "595.71.05"
    g0, g1 = rig.gpus
    assert (g0.bus_id, g0.power_limit_w, g0.power_default_limit_w, g0.persistence_mode) == (
        "0000:01:00.0",
        290.0,
        350.0,
        True,
    )
    assert (g0.pcie.current_width, g0.pcie.max_width) == (8, 16)
    assert (g1.name, g1.memory_total_bytes, g1.power_limit_w, g1.bus_id) == (
        "NVIDIA GeForce RTX 3090",
        24576 * 2**20,
        None,
        None,
    )
