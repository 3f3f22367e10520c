"""Held-out set 22's classes of logs and fabric outputs, each from a real paste (the corpus file in tests/corpus/s22-*
and one more public sample of the same form, its source URL beside it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor.importers import import_files
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.prefixed import strip_prefix
from gpuadvisor.rules import evaluate
from tests.test_s21_logs import _judged, _worst

CORPUS = Path(__file__).parent / "corpus"


# https://github.com/aws-samples/awsome-distributed-training/blob/main/4.validation_and_observability/6.probe-torch-nccl-aws-libs/README.md
# (its "srun -l -N1 ./probe-pt-nccl-aws-libs.sh" output)
_SRUN_L = """\
```console
$ srun -l -N1 ./probe-pt-nccl-aws-libs.sh
0: NCCL version : 2.19.3
0: NCCL path    : /fsx/marcverd/awsome-distributed-training/3.test_cases/10.FSDP/conda_env_pytorch/lib/python3.10/\
site-packages/nvidia/nccl/lib/libnccl.so.2
0: aws-ofi-nccl version : 1.7.4
0: aws-ofi-nccl path    : /opt/aws-ofi-nccl/lib/libnccl-net.so.0.0.0
```
"""


def test_srun_task_labels_are_taken_off_every_line_and_the_nccl_log_under_them_is_read(tmp_path):
    # https://github.com/NVIDIA/nccl/issues/1176: tasks 0 and 3 of a p4de job, srun --label
    corpus = (CORPUS / "s22-nccl-debug").glob("nccl-warn-bootstrap-message-truncated-*-srun-prefixed-*.txt")
    text = next(corpus).read_text()
    out, what = strip_prefix(text)
    assert what == "srun's task label"
    assert "\ncompute-st-p4de24xlarge-1:34639:36718 [5] bootstrap.cc:77 NCCL WARN Message truncated" in out
    assert "\n[rank24]:[W ProcessGroupNCCL.cpp:2302]" in out  # task 3's lines too: several task numbers, one job
    found = _judged(tmp_path, text)  # read (no exit 2); a bootstrap size mismatch is software: no GPU or NIC blamed
    assert _worst([x for x in found if x[1] != "not-checked"]) in ("ok", "info", "warn")
    assert not {c for c, sev, _ in found if sev in ("warn", "fail")} & {"GA801", "GA820", "GA822", "GA826"}
    out, what = strip_prefix(_SRUN_L)
    assert what == "srun's task label"
    assert "\nNCCL version : 2.19.3\naws-ofi-nccl version" not in out and "\nNCCL version : 2.19.3\n" in out
    assert "$ srun -l -N1 ./probe-pt-nccl-aws-libs.sh\n" in out  # the prompt line carries none


def test_ip_oneline_interface_indexes_are_not_task_labels():
    # iproute2's ip -o link/addr (man ip-link: "-o, -oneline output each record on a single line")
    text = (
        "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n"
        "2: eth0    inet 10.0.0.5/24 brd 10.0.0.255 scope global eth0\\       valid_lft forever\n"
        "3: ib0    inet 192.168.1.5/24 brd 192.168.1.255 scope global ib0\\       valid_lft forever\n"
    )
    assert strip_prefix(text) == (text, None)


# https://github.com/NVIDIA/k8s-test-infra/issues/371 (a GB200's nvidia-smi nvlink -s, the second GPU's list elided)
_GB200_NVLINK = (
    "nvidia-smi nvlink -s\n"
    "GPU 0: NVIDIA GB200 (UUID: GPU-d1b93026-6d5b-03bd-3a71-f85b47a61bde)\n"
    + "".join(f"         Link {n}: 53.125 GB/s\n" for n in range(18))
    + "GPU 1: NVIDIA GB200 (UUID: GPU-39ac7bce-e3d6-b426-008e-fa47897c72d5)\n"
    "         Link 0: 53.125 GB/s\n"
    "         Link 1: 53.125 GB/s\n"
    "...\n"
)


def test_nvlink_s_of_nvlink5_gpus_is_read_and_a_last_row_cut_inside_its_unit_is_not_shown(tmp_path):
    # https://github.com/NVIDIA/nvbandwidth/issues/44: a B200's links 0-11 at 50 GB/s, the paste ends in "50 GB"
    # (the copy's newline after it): link 12 and the rest of the 18 links are not shown, not unreadable
    f = next((CORPUS / "s22-fabric").glob("nvidia-smi-nvlink-s-b200-*.txt"))
    assert f.read_text().endswith("Link 12: 50 GB\n")
    (gpu,) = import_files([f]).gpus
    assert (gpu.name, [n.link for n in gpu.nvlinks]) == ("NVIDIA B200", list(range(12)))
    assert {(n.active, n.version) for n in gpu.nvlinks} == {(True, 5)}  # 50 GB/s: NVLink 5 (B200 datasheet)
    assert "line 16 is cut" in gpu.unavailable["nvlinks"]
    found = _judged(tmp_path, f.read_text())
    assert not {c for c, sev, _ in found if sev in ("warn", "fail")} & {"GA204", "GA205", "GA809"}
    g = tmp_path / "gb200.txt"
    g.write_text(_GB200_NVLINK)
    first, second = import_files([g]).gpus
    assert len(first.nvlinks) == 18 and {n.version for n in first.nvlinks} == {5}  # 53.125 GB/s: NVLink 5
    assert [n.link for n in second.nvlinks] == [0, 1] and "nvlinks" in second.unavailable
    # a value that is whole but unknown on a line that is not the last still refuses
    bad = tmp_path / "bad.txt"
    bad.write_text(_GB200_NVLINK.replace("Link 1: 53.125 GB/s\n...", "Link 1: 53 GB\n         Link 2: 53.125 GB/s"))
    with pytest.raises(ImportParseError):
        import_files([bad])


# https://github.com/ROCm/legacy-rocm-build/issues/6281 (an SR-IOV device's VF BARs) and
# https://github.com/fwupd/fwupd/issues/343 (a Thunderbolt bridge's windows, BAR 13 io and BAR 15 mem): the same
# kernel messages on other devices, none an NVIDIA GPU's own memory BAR
_OTHER_NO_SPACE = """\
[    4.181312] pci 0000:08:00.0: VF BAR 0 [mem size 0x00400000 64bit pref]: can't assign; no space
[    4.181317] pci 0000:08:00.0: VF BAR 0 [mem size 0x00400000 64bit pref]: failed to assign
[    4.181324] pci 0000:08:00.1: VF BAR 0 [mem size 0x00400000 64bit pref]: can't assign; no space
[182120.581893] pci 0000:02:02.0: BAR 15: no space for [mem size 0x00200000 64bit pref]
[182120.581894] pci 0000:02:02.0: BAR 15: failed to assign [mem size 0x00200000 64bit pref]
[182120.581895] pci 0000:02:02.0: BAR 13: no space for [io  size 0x1000]
[182120.581896] pci 0000:02:02.0: BAR 13: failed to assign [io  size 0x1000]
"""


def test_an_nvidia_gpus_memory_bar_the_kernel_cannot_assign_is_an_unusable_gpu_to_fix_in_firmware(tmp_path):
    # https://github.com/HeyMeco/Rockchip-pcie-devices/issues/2: an RTX 3090 (10de:2204) behind an RK3588 root port,
    # BAR 1 and BAR 3 "can't assign; no space": the driver cannot map the GPU (like NVRM's "BAR1 is 0M")
    f = next((CORPUS / "s22-lost-gpu").glob("dmesg-grep-pci-rtx3090-*.txt"))
    scan = import_files([f])
    assert [(e.kind, e.bus_id) for e in scan.kernel.events] == [("gpu-bar-unassigned", "0000:01:00.0")] * 2
    found = [x for x in _judged(tmp_path, f.read_text()) if x[1] in ("warn", "fail")]
    assert found == [("GA820", "fail", "GPU 0000:01:00.0")]
    (ga820,) = [x for x in evaluate(scan) if x.code == "GA820"]
    assert "Above 4G" in ga820.fix and "RMA" not in ga820.fix.replace("not at fault", "")
    # the old kernels' form ("BAR 1: no space for [mem ...]") of the same GPU reads the same
    old = f.read_text().replace(" [mem size 0x10000000 64bit pref]: can't assign; no space", ": no space for [mem size")
    assert [x for x in _judged(tmp_path, old) if x[1] == "fail"] == found
    # without the line that enumerates the device as an NVIDIA display controller, nothing says it is a GPU
    assert not [x for x in _judged(tmp_path, old.replace("[10de:2204]", "[1b4b:2204]")) if x[1] == "fail"]
    # other devices' BARs and windows the kernel could not place: no GPU is lost
    judged = _judged(tmp_path, _OTHER_NO_SPACE)
    assert not [x for x in judged if x[1] in ("warn", "fail")]


# https://github.com/ollama/ollama/issues/11932 (its syslog's first lines: systemd's, no kernel line among them)
_PERSISTENCED_SYSLOG = """\
2025-08-16T00:03:03.937586-04:00 localhost systemd[1]: nvidia-persistenced.service: Control process exited, code=exited, status=1/FAILURE
2025-08-16T00:03:03.959524-04:00 localhost systemd[1]: nvidia-persistenced.service: Failed with result 'exit-code'.
2025-08-16T00:03:03.959639-04:00 localhost systemd[1]: Failed to start nvidia-persistenced.service - NVIDIA Persistence Daemon.
"""  # noqa: E501


def test_a_failed_nvidia_unit_on_the_boot_console_or_in_the_journal_is_read_as_a_note_to_fix_the_config(tmp_path):
    # https://github.com/alan-turing-institute/data-safe-haven/pull/1320: "[FAILED] Failed to start NVIDIA Persistence
    # Daemon." among twenty "[  OK  ]" units of an Azure VM's boot. The hand reading: the daemon did not start (no
    # GPU on that VM size, or no driver loaded); no kernel line says a GPU failed: a configuration matter, nothing
    # to drain. So: read (not refused), one note (info), no lost-GPU warning or failure
    f = next((CORPUS / "s22-logs").glob("boot-console-failed-to-start-nvidia-persistence-daemon-*.txt"))
    for text, says in (
        (f.read_text(), "Failed to start NVIDIA Persistence Daemon"),
        (_PERSISTENCED_SYSLOG, "Failed to start nvidia-persistenced.service - NVIDIA Persistence Daemon"),
    ):
        found = [x for x in _judged(tmp_path, text) if x[1] != "not-checked"]
        assert [(c, sev) for c, sev, _ in found] == [("GA820", "info")]
        (ev,) = import_files([tmp_path / "paste.txt"]).kernel.events
        assert (ev.kind, ev.bus_id) == ("nvidia-unit-failed", None) and says in ev.text
    # the same console with the unit started: read, nothing to say
    ok = f.read_text().replace("[FAILED] Failed to start NVIDIA", "[  OK  ] Started NVIDIA")
    assert [x for x in _judged(tmp_path, ok) if x[1] != "not-checked"] == []


def test_nvbandwidth_multinode_process_lines_are_its_gpus_and_its_cuda_error_judges_no_gpu(tmp_path):
    # https://github.com/NVIDIA/nvbandwidth/issues/39: mpirun -n 4 ./nvbandwidth -p multinode in one Kubernetes pod,
    # "Process N (tensorflow-benchmarks-worker-0): device N: NVIDIA H200 (00000000:8f:00)", then the multinode test
    # fails at once (CUDA_ERROR_NOT_PERMITTED in cuMemCreate: no IMEX channel in the pod). The GPUs are read; the
    # error is a platform setup matter that no rule of this tool judges (not a fabric state GA809 reads, no Xid)
    f = next((CORPUS / "s22-fabric").glob("nvbandwidth-multinode-*.txt"))
    scan = import_files([f])
    assert [(g.index, g.name, g.bus_id) for g in scan.gpus] == [
        (0, "NVIDIA H200", "0000:8f:00.0"),
        (1, "NVIDIA H200", "0000:90:00.0"),
        (2, "NVIDIA H200", "0000:96:00.0"),
        (3, "NVIDIA H200", "0000:97:00.0"),
    ]
    assert scan.software.driver_version == "560.35.03" and scan.measurements == []
    found = _judged(tmp_path, f.read_text())
    assert not [x for x in found if x[1] in ("warn", "fail")]


# https://github.com/openucx/ucx/issues/6669 (UCX 1.9, two hosts' ranks, one remote LID) and
# https://github.com/openucx/ucx/issues/2973 (UCX 1.5's older one-line form)
_UCX_19 = """\
[g07r1n14:27251:0:27251] ib_mlx5_log.c:143  Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd 0/0)
[g07r1n14:27251:0:27251] ib_mlx5_log.c:143  DCI QP 0x10f3a wqe[446]: SEND s-e [rqpn 0x32ca rlid 19352] [inl len 20]
[i12r2n04:30536:0:30536] ib_mlx5_log.c:143  Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd 0/0)
[i12r2n04:30536:0:30536] ib_mlx5_log.c:143  DCI QP 0x17c58 wqe[384]: SEND s-e [rqpn 0x32ca rlid 19352] [inl len 20]
"""  # noqa: E501
_UCX_15 = """\
[ast1815:6807 :0:6807] ib_mlx5_log.c:115  FATAL: Error on mlx5_3:1 QP 0xe6d7 wqe[7821]: Transport retry count exceeded (synd 0x15 vend 0x81) opcode SEND
"""  # noqa: E501


def test_ucx_transport_retry_count_exceeded_is_read_as_a_fabric_path_note_not_an_adapter_fault(tmp_path):
    # https://github.com/openucx/ucx/issues/5199: five ranks on 'master', each 'Transport retry count exceeded on
    # mlx5_0:1/IB' sending to remote LID 703 (compute001). The hand reading: the peer stopped acknowledging: check
    # that node's port, the cable and the subnet; the local port is named but no local adapter fault is shown, no
    # GPU involved (at most a warning). Read as a note naming the port and the remote LID; no finding
    f = next((CORPUS / "s22-rdma-logs").glob("ucx-transport-retry-count-exceeded-*.txt"))
    for text, said in (
        (f.read_text(), "Transport retry count exceeded on mlx5_0 port 1 (x5): the peer (remote LID 703)"),
        (_UCX_19, "Transport retry count exceeded on mlx5_0 port 1 (x2): the peer (remote LID 19352)"),
        (_UCX_15, "Transport retry count exceeded on mlx5_3 port 1 (x1): the peer stopped"),
    ):
        found = [x for x in _judged(tmp_path, text) if x[1] in ("warn", "fail")]
        assert found == []
        scan = import_files([tmp_path / "paste.txt"])
        assert any(said in p for p in scan.problems), scan.problems
        assert scan.network.rdma_ports in (None, [])  # a port named by an error: its state is not said


def test_mlxlink_operational_info_is_read_as_one_port_its_device_and_number_not_printed(tmp_path):
    # https://github.com/sonic-net/SONiC/issues/265: mlxlink on a Spectrum switch port: State Active, Physical state
    # LinkUp, 25GbE x1, Firecode FEC, cut in "Supported Info": a healthy port, nothing to act on (at most a note)
    f = next((CORPUS / "s22-rdma-logs").glob("mlxlink-*.txt"))
    (port,) = import_files([f]).network.rdma_ports
    assert (port.state, port.phys_state, port.link_layer, port.rate_gbps) == ("ACTIVE", "LinkUp", "Ethernet", 25.0)
    assert (port.device, port.port) == ("/dev/mst/mt52100_pci_cr0", 1)  # mlxlink's -d and -p, on its command line
    assert _worst([x for x in _judged(tmp_path, f.read_text()) if x[1] != "not-checked"]) in ("ok", "info")
    # https://github.com/MrBr-github/lshca/issues/11: an HCA port's Operational Info as mlxlink --json gave it
    # (State Active, Physical state LinkUp, Speed IB-EDR, Width 4x), laid out as mlxlink prints it: EDR's 25 Gb/s
    # lanes (InfiniBand Architecture Specification) x 4 = 100 Gb/s
    text = "Operational Info\n----------------\n" + "".join(
        f"{k:<32}: {v}\n"
        for k, v in (("State", "Active"), ("Physical state", "LinkUp"), ("Speed", "IB-EDR"), ("Width", "4x"))
    )
    g = tmp_path / "mlxlink.txt"
    g.write_text(text)
    (port,) = import_files([g]).network.rdma_ports
    assert (port.state, port.link_layer, port.rate_gbps) == ("ACTIVE", "InfiniBand", 100.0)
