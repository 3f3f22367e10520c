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
    # journalctl's line is the nvidia driver's own
    for name, why in (
        ("dmesg-bbswitch-*.txt", "nvidia-drm's GPU ID 0x00000100"),
        ("journalctl-laptop-d3cold-*.txt", "the NVIDIA driver's device"),
    ):
        text = next(lost.glob(name)).read_text()
        signs = [e for e in kmsg_signs.parse_signs(text, 1, lambda _p, _e: None) if e.kind == "gpu-d3cold"]
        assert {e.bus_id for e in signs} == {"0000:01:00.0"}, name  # 01:00.1-3 (audio, USB) are not the GPU
        assert signs[0].text.startswith(why)
        found = [f for f in _judged(tmp_path, text) if f[0] == "GA820"]
        assert found == [("GA820", "fail", "GPU 0000:01:00.0")], found
    # the vfio-pci paste shows only a device held for passthrough, no vendor (the thread says it is the GPU): a
    # device the guest will not get, warned, not named a GPU
    text = next(lost.glob("dmesg-vfio-pci-*.txt")).read_text()
    signs = kmsg_signs.parse_signs(text, 1, lambda _p, _e: None)
    assert {(e.kind, e.bus_id) for e in signs if "d3cold" in e.kind} == {("passthrough-d3cold", "0000:01:00.0")}
    got = [f for f in _judged(tmp_path, text) if f[0] == "GA820"]
    assert got == [("GA820", "warn", "device 0000:01:00.0 (vfio-pci)")]
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


# https://github.com/prometheus/node_exporter/issues/966: an iWARP adapter's counters by its /sys/devices path, each
# "N/A (no PMA)" (the adapter has no performance-management agent): no count, the counters unknown, not 0
_IWARP_NO_PMA = """\
# grep -s . /sys/devices/pci0000:05/0000:05:02.0/0000:07:00.0/0000:08:03.0/0000:09:00.0/infiniband/i40iw*/ports/1/\
counters/*
/sys/devices/pci0000:05/0000:05:02.0/0000:07:00.0/0000:08:03.0/0000:09:00.0/infiniband/i40iw0/ports/1/counters/\
excessive_buffer_overrun_errors:N/A (no PMA)
/sys/devices/pci0000:05/0000:05:02.0/0000:07:00.0/0000:08:03.0/0000:09:00.0/infiniband/i40iw0/ports/1/counters/\
link_downed:N/A (no PMA)
/sys/devices/pci0000:05/0000:05:02.0/0000:07:00.0/0000:08:03.0/0000:09:00.0/infiniband/i40iw0/ports/1/counters/\
link_error_recovery:N/A (no PMA)
"""


def _ports(tmp_path: Path, text: str) -> list:
    f = tmp_path / "counters.txt"
    f.write_text(text)
    return import_files([f]).network.rdma_ports or []


def test_rdma_port_counters_pasted_from_sysfs_are_the_ports_error_counters_ga823_judges(tmp_path):
    rdma = CORPUS / "s24-rdma-logs"
    loop = next(rdma.glob("sysfs-ib-counters-cat-loop-*.txt")).read_text()
    [port] = _ports(tmp_path, loop)
    assert (port.device, port.port) == ("mlx5_1", 1)  # named by the prompt's directory
    assert port.counters == {
        "port_rcv_errors": 0,
        "link_error_recovery": 0,
        "port_rcv_remote_physical_errors": 0,
        "excessive_buffer_overrun_errors": 15,
        "link_downed": 255,
        "local_link_integrity_errors": 0,
        "port_xmit_discards": 65535,
        "symbol_error": 0,
    }  # the error counters the live probe reads; traffic counters (port_xmit_data ...) are not errors
    found = [f for f in _judged(tmp_path, loop) if f[1] not in ("not-checked", "ok")]
    assert found == [("GA823", "warn", "mlx5_1 port 1")]  # link_downed 255 > 10: warn, no fail from counters alone
    f = tmp_path / "loop.txt"
    f.write_text(loop)
    [ga823] = [x for x in evaluate(import_files([f])) if x.code == "GA823"]
    assert "link_downed 255 (at its 8-bit ceiling: at least that many)" in ga823.message
    # mlx5's RoCE hw_counters: no documented threshold, so read as a note on the port, not judged
    grep = next(rdma.glob("sysfs-hw-counters-grep-*.txt")).read_text()
    [port] = _ports(tmp_path, grep)
    assert (port.device, port.port, port.counters) == ("mlx5_0", 1, None)
    assert "local_ack_timeout_err 91316" in port.unavailable["counters"]
    assert "no documented threshold" in port.unavailable["counters"]
    assert [f for f in _judged(tmp_path, grep) if f[1] in ("warn", "fail")] == []
    # an adapter without a performance-management agent: no count is read as 0
    [port] = _ports(tmp_path, _IWARP_NO_PMA)
    assert (port.device, port.counters) == ("i40iw0", None)
    assert "N/A (no PMA)" in port.unavailable["counters"]


# https://github.com/Ysurac/openmptcprouter/issues/3217: a panic at boot whose oops faults in another module
# ("RIP: 0010: init_module+0x0/0x1000 [compat]"), typed from a screen; not the adapter's driver
_PANIC_ELSEWHERE = """\
[12.604170] ? exc_control_protection+0xbd/0xc0
[12.613565] ? exc_control_protection+0xbd/0xc0
[12.623338] ? asm_exc_invalid_op+0x1f/0x30
[12.633579] RIP: 0010:init_module+0x0/0x1000 [compat]
[12.646138] RSP: 0018: ffffc90000443c80 EFLAGS: 00010246
[12.702112] kmem_cache_alloc_node+0x16c/0x290
[12.715725] do_sys_init_module+0xf1/0x120
[12.9] Kernel panic - not syncing: Fatal exception
"""


def test_a_kernel_panic_in_the_adapters_driver_is_the_hca_fatal_class(tmp_path):
    talos = next((CORPUS / "s24-rdma-logs").glob("console-kernel-panic-mlx5_core-*.txt")).read_text()
    signs = kmsg_signs.parse_signs(talos, 1, lambda _p, _e: None)
    assert [(e.kind, e.bus_id) for e in signs] == [("hca-driver-panic", None)]
    assert signs[0].text.startswith("mlx5_core: kernel panic in the adapter's driver (esw_port_metadata_get+0x19")
    found = [f for f in _judged(tmp_path, talos) if f[1] in ("warn", "fail")]
    assert found == [("GA826", "fail", "RDMA adapter on mlx5_core")]  # no GPU finding (GA801, GA820, GA821)
    # the fix is the driver's or kernel's, not the card's
    f = tmp_path / "panic.txt"
    f.write_text(talos)
    [ga826] = [x for x in evaluate(import_files([f])) if x.code == "GA826"]
    assert "no RMA" in ga826.fix and "previous kernel or OS release" in ga826.fix
    # a panic whose oops is in another module is not the adapter's
    assert not [e for e in kmsg_signs.parse_signs(_PANIC_ELSEWHERE, 1, lambda _p, _e: None) if e.kind.startswith("hca")]


def test_a_peer_memory_module_loaded_now_outweighs_its_earlier_failures_in_the_log(tmp_path):
    log, mods = tmp_path / "dmesg.txt", tmp_path / "lsmod.txt"
    log.write_text(_NV_PEER_MEM_OTHER_OFED)
    # lsmod's header and a module's row (kmod's lsmod: name, size, use count)
    mods.write_text("Module                  Size  Used by\nnvidia_peermem         16384  0\n")
    rig = import_files([log, mods])
    assert rig.network.peermem_loaded is True and [e.kind for e in rig.kernel.events or []] == ["peermem-load-failed"]
    assert [x.severity for x in evaluate(rig) if x.code == "GA808" and x.severity in ("warn", "fail")] == []
    assert [x.severity for x in evaluate(import_files([log])) if x.code == "GA808"] == ["warn"]
