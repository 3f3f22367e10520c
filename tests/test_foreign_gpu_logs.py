# ruff: noqa: E501  (real pastes, quoted as their threads show them)
"""Kernel logs of other vendors' GPU drivers (embedded and other DRM drivers) with no NVIDIA line are refused in one
line naming the vendor and driver, like amdgpu's and i915's: never judged as an NVIDIA host's log. Each sample is a
real public paste (its thread cited)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor.errors import InputError
from gpuadvisor.importers import import_texts

CORPUS = Path(__file__).parent / "corpus"

# https://github.com/samueldr/wip-pinebook-pro/issues/4 (a Pinebook Pro's Mali T860 under panfrost)
PANFROST = """\
[58159.525827] panfrost ff9a0000.gpu: Unhandled Page fault in AS1 at VA 0x0000000013B4B880
               Reason: TODO
               raw fault status: 0x68002C3
               decoded fault status: SLAVE FAULT
               exception type 0xC3: TRANSLATION_FAULT_LEVEL3
               access type 0x2: READ
               source id 0x680
[58160.049939] panfrost ff9a0000.gpu: gpu sched timeout, js=0, config=0x3301, status=0x8, head=0xab92f00, tail=0xab92f00, sched_job=00000000c821ea39
[58160.051750] ------------[ cut here ]------------
"""
# https://github.com/AsahiLinux/linux/issues/72 (an M2's GPU under Apple Silicon's asahi driver)
ASAHI = """\
Jun 14 12:39:27 locke-m2 kernel: asahi 206400000.gpu: ** GPU timeout nya~!!!!! **
Jun 14 12:39:27 locke-m2 kernel: asahi 206400000.gpu:   Event slot: 27
Jun 14 12:39:27 locke-m2 kernel: asahi 206400000.gpu:   Timeout count: 168
"""
# https://github.com/ROCKNIX/distribution/pull/2366 (Arm's own Mali driver, kbase)
MALI = """\
[   66.849453] mali ffe40000.gpu_mali_vulkan: t6xx: GPU fault 0x4002 from job slot 0
[   67.349497] mali ffe40000.gpu_mali_vulkan: Failed to soft-reset GPU (timed out after 500 ms), now attempting a hard reset
[   67.349689] mali ffe40000.gpu_mali_vulkan: Reset complete
"""


@pytest.mark.parametrize(
    ("text", "vendor", "driver"),
    [(PANFROST, "Arm", "panfrost"), (ASAHI, "Apple", "asahi"), (MALI, "Arm", "mali")],
    ids=["panfrost", "asahi", "mali"],
)
def test_another_vendors_gpu_driver_log_is_refused_naming_it(text: str, vendor: str, driver: str) -> None:
    with pytest.raises(InputError) as err:
        import_texts([("dmesg.txt", text)])
    assert f"a kernel log of {vendor}'s GPU driver ({driver}) with no NVIDIA line" in str(err.value)


@pytest.mark.parametrize(
    ("name", "vendor", "driver"),
    [
        ("dmesg-t-raspberry-pi-v3d-resetting-gpu-for-hang-mmu-error-cut_nbuchwitz.txt", "Broadcom", "v3d"),
        ("dmesg-etnaviv-vivante-mmu-fault-recover-hung-gpu-warning-loongson-cut_suijingfeng.txt", "Vivante", "etnaviv"),
        ("dmesg-moore-threads-mtgpu-mmu-fault-guilty-lockup-recovery-cut_dixyes.txt", "Moore Threads", "mtgpu"),
    ],
)
def test_set_31s_other_vendor_logs_are_refused(name: str, vendor: str, driver: str) -> None:
    with pytest.raises(InputError) as err:
        import_texts([(name, (CORPUS / "s31-logs" / name).read_text())])
    assert f"{vendor}'s GPU driver ({driver})" in str(err.value)


def test_the_same_lines_beside_an_nvidia_line_are_read() -> None:
    # an NVIDIA line anywhere in the log (here the real one of set 32's driver load) makes it an NVIDIA host's log
    nvidia = (CORPUS / "s32-logs").glob("*")
    line = next(x for p in sorted(nvidia) if p.suffix == ".txt" for x in p.read_text().splitlines() if "NVRM" in x)
    rig = import_texts([("dmesg.txt", PANFROST + line + "\n")])
    assert rig.kernel.lines_read
