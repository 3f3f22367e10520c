"""Held-out set 24's classes of kernel, RDMA and job logs, each from a real paste (the corpus file in tests/corpus/s24-*
and one more public sample of the same form, its source URL beside it)."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.probes import kmsg_signs

from gpuadvisor.importers import import_files
from gpuadvisor.rules import evaluate
from tests.test_s21_logs import _judged, _worst

CORPUS = Path(__file__).parent / "corpus"

# https://github.com/Mellanox/nv_peer_memory/issues/39: nv_peer_mem built against the OFED of another kernel
_NV_PEER_MEM_OTHER_OFED = """\
Welcome to Ubuntu 14.04.5 LTS (GNU/Linux 4.4.0-116-generic x86_64)
...
[76463.688316] nv_peer_mem: disagrees about version of symbol ib_register_peer_memory_client
[76463.688326] nv_peer_mem: Unknown symbol ib_register_peer_memory_client (err -22)
"""


def test_the_peer_memory_module_failing_to_load_is_ga808_not_the_drivers_install(tmp_path):
    rdma = CORPUS / "s24-rdma-logs"
    gb300 = next(rdma.glob("dmesg-T-nvidia-peermem-*.txt")).read_text()
    rhel7 = next(rdma.glob("modprobe-nv-peer-mem-*.txt")).read_text()
    for text in (gb300, rhel7, _NV_PEER_MEM_OTHER_OFED):
        found = [f for f in _judged(tmp_path, text) if f[1] != "not-checked"]
        # a warning for the peer-memory module (GPUDirect RDMA off), not the GPU driver's install problem (GA820)
        assert [c for c, _, _ in found] == ["GA808"], found
        assert _worst(found) == "warn"
    # the driver's own modules' unknown symbols stay the driver's install problem; the peer-memory module's are not
    assert kmsg_signs.classify("nvidia: Unknown symbol drm_gem_object_free (err -2)")[0] == "driver-install"
    assert kmsg_signs.classify("nvidia_uvm: Unknown symbol nvUvmInterfaceRegisterGpu (err -2)")[0] == "driver-install"
    line = "[76463.688326] nv_peer_mem: Unknown symbol ib_register_peer_memory_client (err -22)"
    assert kmsg_signs.classify(line) == (
        "peermem-load-failed",
        None,
        "nv_peer_mem: Unknown symbol ib_register_peer_memory_client (err -22)",
    )
    modprobe = "modprobe: ERROR: could not insert 'nv_peer_mem': Unknown symbol in module, or unknown parameter"
    assert kmsg_signs.classify(modprobe)[0] == "peermem-load-failed"


# https://github.com/Bumblebee-Project/bbswitch/issues/226 (the corpus file) and the same form on other devices: a
# laptop's card whose NVIDIA driver logs the line itself (https://github.com/system76/firmware-open/issues/259, the
# corpus journalctl; its audio and USB functions on 01:00.1-3 are not the GPU) and a Thunderbolt dock's Aquantia NIC
# (https://github.com/clearlinux/distribution/issues/3291, in tests/corpus/s24-logs): no GPU
_DOCK_NIC = """\
Mar 26 12:24:25 DadsGram kernel: atlantic 0000:06:00.0: Unable to change power state from D3cold to D0, device \
inaccessible
Mar 26 12:24:25 DadsGram kernel: pcieport 0000:00:07.0: pciehp: Slot(5): Link Down
Mar 26 12:24:25 DadsGram kernel: pcieport 0000:03:02.0: Unable to change power state from D3hot to D0, device \
inaccessible
"""


def test_a_gpu_that_did_not_come_back_from_d3cold_fails_on_its_bus_when_the_log_ties_it_to_nvidia(tmp_path):
    lost = CORPUS / "s24-lost-gpu"
    # what the log itself shows: bbswitch's paste names no vendor on the D3cold line ("pci 0000:01:00.0"), but
    # nvidia-drm's "[GPU ID 0x00000100]" is bus 01 device 00 (domain << 16 | bus << 8 | device); the vfio-pci paste
    # shows only a device held for passthrough (read as the GPU, the message says its vendor is not shown); the
    # journalctl's line is the nvidia driver's own
    for name, why in (
        ("dmesg-bbswitch-*.txt", "nvidia-drm's GPU ID 0x00000100"),
        ("dmesg-vfio-pci-*.txt", "vfio-pci passthrough, its vendor not shown"),
        ("journalctl-laptop-d3cold-*.txt", "the NVIDIA driver's device"),
    ):
        text = next(lost.glob(name)).read_text()
        signs = [e for e in kmsg_signs.parse_signs(text, 1, lambda _p, _e: None) if e.kind == "gpu-d3cold"]
        assert {e.bus_id for e in signs} == {"0000:01:00.0"}, name  # 01:00.1-3 (audio, USB) are not the GPU
        assert signs[0].text.startswith(why)
        found = [f for f in _judged(tmp_path, text) if f[0] == "GA820"]
        assert found == [("GA820", "fail", "GPU 0000:01:00.0")], found
    # another vendor's device (a dock's NIC) with no NVIDIA line for its bus: not the GPU's sign
    assert not [e for e in kmsg_signs.parse_signs(_DOCK_NIC, 1, lambda _p, _e: None) if e.kind == "gpu-d3cold"]
    assert "GA820" not in {c for c, _, _ in _judged(tmp_path, _DOCK_NIC)}


# https://github.com/wilicc/gpu-burn/issues/133: nvidia-smi -L with each UUID cut away after "(UUID:", then gpu_burn's
# CUDA error 802 on an 8 x H200 (HGX) node
_GPU_BURN_H200 = """\
GPU 0: NVIDIA H200 (UUID:
GPU 1: NVIDIA H200 (UUID
GPU 2: NVIDIA H200 (UUID:
GPU 3: NVIDIA H200 (UUID:
GPU 4: NVIDIA H200 (UUID:
GPU 5: NVIDIA H200 (UUID:
GPU 6: NVIDIA H200 (UUID:
GPU 7: NVIDIA H200 (UUID:
Couldn't init CUDA: Error (gpu_burn-drv.cpp:304): system not yet initialized
Couldn't init a GPU test: Error (gpu_burn-drv.cpp:112): initialization error
No CUDA devices
""".replace("(UUID:\n", "(UUID: \n")  # each as pasted, a space after the colon


def test_a_job_logs_nvidia_smi_l_with_its_uuids_elided_is_read_and_cuda_802_fails_the_fabric(tmp_path):
    job = next((CORPUS / "s24-fabric").glob("hf-jobs-h200-*.txt")).read_text()
    assert "GPU 0: NVIDIA H200 (...)" in job
    for text, gpus in ((job, 1), (_GPU_BURN_H200, 8)):
        f = tmp_path / "job.txt"
        f.write_text(text)
        rig = import_files([f])
        assert [(g.index, g.name, g.uuid) for g in rig.gpus] == [(i, "NVIDIA H200", None) for i in range(gpus)]
        assert all("uuid" in g.unavailable for g in rig.gpus)  # not shown, not unknown for want of a reader
        found = [x for x in evaluate(rig) if x.code == "GA809"]
        assert [x.severity for x in found] == ["fail"]  # error 802: the GPUs never joined the NVLink fabric
