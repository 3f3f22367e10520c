"""nvidia-smi's "No devices were found": the driver answers and lists no GPU. Read as nvidia-smi's message (no GPU,
its causes named), judged beside the kernel log pasted with it; another program's line is not nvidia-smi's."""

from __future__ import annotations

import pytest

from gpuadvisor.errors import InputError
from gpuadvisor.importers import import_texts
from gpuadvisor.rules import evaluate

# https://github.com/NVIDIA/open-gpu-kernel-modules/issues/862 (cyril23, 2025-07-26): an RTX 5090 with Resizable BAR
# and Above 4G Decoding off in the BIOS
ISSUE_862 = """# nvidia-smi
No devices were found

# meanwhile, output in /var/log/syslog
Jul 01 22:55:07 gpu kernel: NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor number 0
Jul 01 22:55:07 gpu kernel: NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:884)
"""


def test_no_devices_with_the_kernel_log_beside_it_fails_on_the_gpu_that_did_not_initialise():
    rig = import_texts([("paste.txt", ISSUE_862)])
    assert rig.gpus == []
    assert any("line 2: nvidia-smi: No devices were found: the NVIDIA driver answers" in p for p in rig.problems)
    found = [(f.code, f.severity, f.subject) for f in evaluate(rig) if f.severity in ("warn", "fail")]
    assert found == [("GA820", "fail", "GPU 0000:01:00.0")]


def test_no_devices_alone_is_nvidia_smis_message_not_a_refusal():
    rig = import_texts([("smi.txt", "$ nvidia-smi\nNo devices were found\n")])
    assert rig.gpus == [] and rig.software.driver_version is None
    assert [p.split(": ", 1)[1] for p in rig.problems][:1] == [
        "line 2: nvidia-smi: No devices were found: "
        "the NVIDIA driver answers but lists no GPU: one lost from the bus or failed at init (dmesg | grep -i nvrm), "
        "not bound to the driver or not supported by it (lspci -nnk | grep -iA3 nvidia), or not passed into this "
        "container or VM"
    ]


def test_another_programs_line_is_not_nvidia_smis():
    with pytest.raises(InputError):
        import_texts([("notes.txt", "I ran the trainer and it printed:\nNo devices were found\n")])
