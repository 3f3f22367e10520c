"""Held-out set 24's classes of kernel, RDMA and job logs, each from a real paste (the corpus file in tests/corpus/s24-*
and one more public sample of the same form, its source URL beside it)."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.probes import kmsg_signs

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
