"""NCCL debug logs as pasted (held-out set 8's classes), text written by hand in the form NCCL_DEBUG=INFO prints
(NCCL User Guide, Troubleshooting and Environment Variables): lines prefixed by the rank only, lines run together by
a terminal copy, network hops with and without /GDRDMA."""

from __future__ import annotations

from gpuadvisor.importers import import_texts
from gpuadvisor.rules import evaluate


def _read(text: str):
    rig = import_texts([("paste.txt", text)])
    return rig, sorted((f.code, f.severity) for f in evaluate(rig) if f.severity in ("warn", "fail"))


_RANK_ONLY = """\
 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE ; OOB eth0:10.0.0.1<0>
 [0] NCCL INFO NCCL version 2.18.3+cuda12.2
 [0] NCCL INFO Channel 00/0 : 1[1] -> 0[0] [receive] via NET/IB/0
 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/1/GDRDMA
"""


def test_rank_only_lines_are_read_and_a_nic_without_gdrdma_warns():
    rig, found = _read(_RANK_ONLY)
    assert rig.network.nccl_nics == ["mlx5_0:1/RoCE", "mlx5_1:1/RoCE"]
    assert rig.network.nccl_gdr_disabled == ["HCA 0 'mlx5_0' (hops via NET/IB/0 without GDRDMA)"]
    assert found == [("GA825", "warn")]


def test_lines_run_together_on_one_terminal_line_are_read_apart():
    pad = " " * 40
    text = (
        "node1:100:200 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/IBext/0/GDRDMA"
        + pad
        + "node1:101:201 [1] NCCL INFO Channel 01/0 : 1[1] -> 9[1] [send] via NET/IBext/1/GDRDMA"
        + pad
        + "node1:102:202 [2] NCCL INFO Channel 02/0 : 2[2] -> 10[2] [send] via\n"
        " NET/IBext/2/GDRDMA" + pad + "node1:102:202 [2] NCCL INFO Channel 03/0 : 2[2] -> 10[2] [send] via "
        "NET/IBext/2/GDRDMA\n"
    )
    rig, found = _read(text)
    assert rig.network.nccl_transports == ["NET/IBext/0/GDRDMA", "NET/IBext/1/GDRDMA", "NET/IBext/2/GDRDMA"]
    assert rig.network.nccl_gdr_disabled == [] and found == []


def test_nccl_tests_rows_carrying_a_launchers_tags_between_their_field_groups_are_read():
    # all_reduce_perf's row layout (size count type redop root, then time algbw busbw #wrong twice), each field
    # group tagged by the launcher as it flushed: "[0]"
    text = (
        "[0]      1048576        262144     float     sum      -1[0]    100.00   10.49   20.97      0[0]    99.00"
        "   10.59   21.18      0\n"
        "[0]      2097152        524288     float     sum      -1[0]    150.00   13.98   27.96      0[0]   149.00"
        "   14.07   28.15      0\n"
    )
    rig, _ = _read(text)
    assert [(m.kind, m.value_gbps) for m in rig.measurements] == [("all_reduce", 27.96)]


def test_hops_between_hosts_over_tcp_sockets_are_said_with_a_network_fix_not_as_gdr_disabled():
    # GPUDirect RDMA is a path of NCCL's IB/RoCE transport (NCCL User Guide, NCCL_NET_GDR_LEVEL): sockets have none
    text = (
        "hostA:100:200 [0] NCCL INFO Ring 00 : 0[0] -> 1[1] via P2P/IPC\n"
        "hostA:101:201 [1] NCCL INFO Ring 00 : 1 -> 2 [send] via NET/Socket/0\n"
        "hostB:300:400 [1] NCCL INFO Ring 00 : 3 -> 0 [send] via NET/Socket/0\n"
    )
    rig, found = _read(text)
    assert rig.network.nccl_gdr_disabled == ["NET/Socket/0 (TCP sockets between hosts: no RDMA NIC used)"]
    assert found == []
    (f,) = [f for f in evaluate(rig) if f.code in ("GA504", "GA825")]
    assert (f.code, f.severity) == ("GA504", "info")
    assert "NCCL_IB_DISABLE" in f.fix and "peermem" not in f.fix
