"""Held-out set 11's classes of kernel and RDMA outputs, each from a real paste (its source URL beside it; the
pastes themselves are in tests/corpus/s11-*): an NVRM Xid line behind a platform's tags; an ibv_devinfo -v
fragment cut below its 'hca_id:' line."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers import import_files
from gpuadvisor.importers.rdma_ports import parse_ibv_devinfo
from gpuadvisor.rules import evaluate


def _judged(tmp_path: Path, text: str, *codes: str):
    f = tmp_path / "paste.txt"
    f.write_text(text)
    return sorted((x.code, x.severity, x.subject) for x in evaluate(import_files([f])) if x.code in codes)


# https://modal.com/docs/guide/gpu-health: Modal's gpu-health log line wrapping the kernel's NVRM line
_MODAL = (
    "[gpu-health] [CRITICAL] GPU-1234: XID: NVRM: Xid (PCI:0000:c6:00): 79, pid=1101234, name=nvc:[driver], "
    "GPU has fallen off the bus.\n"
)


def test_an_xid_line_behind_a_platforms_tags_is_read(tmp_path):
    assert _judged(tmp_path, _MODAL, "GA801") == [("GA801", "fail", "PCI 0000:c6:00")]
    other = _MODAL.replace("[gpu-health] [CRITICAL] GPU-1234: XID: ", "[node-check] [ERROR] gpu7: ")
    assert _judged(tmp_path, other, "GA801") == [("GA801", "fail", "PCI 0000:c6:00")]


# https://github.com/openucx/ucx/issues/10430: the tail of one device's "ibv_devinfo -v" block, its hca_id cut off
_FRAGMENT = """\
        num_comp_vectors:               63
                port:   1
                        state:                  PORT_ACTIVE (4)
                        max_mtu:                4096 (5)
                        active_mtu:             1024 (3)
                        link_layer:             Ethernet
"""


def test_an_ibv_devinfo_port_block_without_its_hca_id_is_read_with_the_device_unknown(tmp_path):
    f = tmp_path / "paste.txt"
    f.write_text(_FRAGMENT)
    (port,) = import_files([f]).network.rdma_ports
    assert (port.device, port.port, port.state, port.link_layer) == ("", 1, "ACTIVE", "Ethernet")
    assert "hca_id" in (port.why("device") or "")
    assert parse_ibv_devinfo(["num_comp_vectors: 63", "port: 1", "link_layer: Ethernet"], 1) == ([], None)
