"""A PCI domain above 0xffff keeps all its digits in every reader: the live NVML probe, the importers and the
kernel log, so a GPU's NVML id, its sysfs entry and its Xid lines name it alike.

Azure VMs' GPUs sit behind Hyper-V's virtual PCI bus, whose domain is 32 bits: nvidia-smi -a in an Azure VM shows
"GPU 3E3F8E05:00:00.0" (https://github.com/NVIDIA/nvidia-docker/issues/816, tests/corpus/s8-smi-q); Linux names
the device with the whole domain ("pci 3f8f31a:00:00.0" in the Azure dmesg of
https://github.com/NVIDIA/nvidia-docker/issues/1316, where a tool that kept four digits looked for
/proc/driver/nvidia/gpus/cfdd:00:00.0 beside the real 03f8cfdd:00:00.0). The driver prints an Xid's bus as
"PCI:%04x:%02x:%02x" (a minimum width: a 32-bit domain comes out whole).
"""

from __future__ import annotations

from gpuadvisor.probes.kmsg import map_gpus, normalise_bus_id, parse_log
from gpuadvisor.probes.nvml import normalize_bus_id as nvml_bus_id
from gpuadvisor.probes.rigdesc import load_description

from gpuadvisor.collect import simulate_description
from gpuadvisor.importers.values import normalize_bus_id as importer_bus_id

AZURE = "3e3f8e05:00:00.0"  # nvidia-docker#816's GPU
XID = "NVRM: Xid (PCI:3e3f8e05:00:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."


def test_nvml_keeps_a_32_bit_domain_as_the_importers_do():
    for raw in ("3E3F8E05:00:00.0", b"3E3F8E05:00:00.0"):
        assert nvml_bus_id(raw) == AZURE  # was "8e05:00:00.0": another GPU's id, no sysfs entry
    assert importer_bus_id("3E3F8E05:00:00.0") == AZURE
    assert nvml_bus_id("03F8CFDD:00:00.0") == importer_bus_id("3F8CFDD:00:00.0") == "03f8cfdd:00:00.0"  # #1316
    assert nvml_bus_id("00000000:41:00.0") == "0000:41:00.0"  # a bare-metal GPU: four digits, as before
    assert nvml_bus_id(b"00000001:00:00.0") == "0001:00:00.0"
    assert nvml_bus_id("not a bus id") == "not a bus id"  # kept as NVML gave it


def test_kernel_log_keeps_a_32_bit_domain():
    assert normalise_bus_id("3E3F8E05:00:00") == "3e3f8e05:00:00"
    assert normalise_bus_id("00000000:3B:00") == "0000:3b:00"
    assert normalise_bus_id("0000:3b:00.0") == "0000:3b:00.0"
    events, _ = parse_log([f"[ 1843.308145] {XID}", "[ 1843.4] NVRM: GPU at PCI:0000:8e:05: GPU-00000000"])
    assert [(e.code, e.bus_id) for e in events] == [(79, "3e3f8e05:00:00")]


def test_an_xid_is_tied_to_the_gpu_of_its_whole_domain():
    from gpuadvisor.facts import Gpu

    events, _ = parse_log([XID])
    # a GPU whose domain is the Azure domain's last four digits: the truncated id was its id
    map_gpus(events, [Gpu(index=0, bus_id="8e05:00:00.0"), Gpu(index=1, bus_id=AZURE)])
    assert events[0].gpu_index == 1


def test_simulated_rig_with_a_hyper_v_domain():
    """The simulated NVML gives the GPU's id as NVML does (%08x domain); the generated sysfs has the device under
    its whole domain; the kernel log's Xid on it is tied to it, not to the GPU at domain 8e05."""
    desc = load_description("4x4090-pcie")
    desc.gpus[1].bus_id = AZURE
    desc.gpus[2].bus_id = "8e05:00:00.0"
    desc.kernel_events = [{"code": 79, "gpu": 1, "text": "GPU has fallen off the bus."}]
    rig = simulate_description(desc)
    assert [g.bus_id for g in rig.gpus] == ["0000:01:00.0", AZURE, "8e05:00:00.0", "0000:61:00.0"]
    azure = rig.gpus[1]
    assert "path" not in azure.pcie.unavailable  # its sysfs entry found under the same id
    assert azure.pcie.path and azure.pcie.current_width == 16
    assert [(e.code, e.bus_id, e.gpu_index) for e in rig.kernel.events] == [(79, "3e3f8e05:00:00", 1)]


def test_kernel_log_signs_name_a_gpu_by_its_whole_domain():
    """The driver's lines that name a GPU by "%04x:%02x:%02x.%x" (RmInitAdapter, "The NVIDIA GPU ... fallen off")
    read its whole domain, as the Xid line does; a zero domain written with eight digits is the usual 0000."""
    log = [
        "[ 10.1] NVRM: GPU 3e3f8e05:00:00.0: RmInitAdapter failed! (0x24:0x72:1568)",
        "[ 10.2] NVRM: GPU 00000000:41:00.0: RmInitAdapter failed! (0x24:0x72:1568)",
        "[ 10.3] NVRM: The NVIDIA GPU 3e3f8e05:00:00.0",
        "[ 10.4] NVRM: (PCI ID: 10de:102d) installed in this system has",
        "[ 10.5] NVRM: fallen off the bus and is not responding to commands.",
    ]
    events, _ = parse_log(log)
    got = {(e.kind, e.code, e.bus_id) for e in events}
    assert ("gpu-init-failed", 0, AZURE) in got
    assert ("gpu-init-failed", 0, "0000:41:00.0") in got
    assert ("xid", 79, "3e3f8e05:00:00") in got
