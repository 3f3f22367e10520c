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
