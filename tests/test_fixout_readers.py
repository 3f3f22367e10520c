"""GPU outputs read where they were refused or misread: a comment block's output, PaddlePaddle's device lines,
``mst status -v``, a ``--query-gpu`` CSV through ``column -t``, DCGM's "(Active)" count and ``dcgmi stats -v``, a
failed deviceQuery, dict-shaped environment reports, torch's CUDA runtime line and a redactor's placeholder in lspci.
The values are the pastes' own (each file's source in its folder's INDEX.toml; the URLs cited here)."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers import import_texts
from gpuadvisor.importers.collect_env import parse_collect_env
from gpuadvisor.importers.dcgm import parse_dcgm
from gpuadvisor.importers.devicequery import parse_devicequery
from gpuadvisor.importers.lspci import parse_lspci
from gpuadvisor.importers.mst_status import parse as parse_mst
from gpuadvisor.importers.paddle_log import parse_paddle_log
from gpuadvisor.importers.prefixed import uncommented
from gpuadvisor.importers.smi_csv import parse_smi_csv

CORPUS = Path(__file__).parent / "corpus"


def _paste(name: str) -> str:
    return next(CORPUS.glob(name)).read_text(encoding="utf-8")


def test_an_output_in_a_scripts_comment_block_reads_as_printed() -> None:
    # https://github.com/leuty/icon-model/blob/69ef5cda9b81f5947e30d1016f41e7b37012f5de/run/run_wrapper/levante.sh
    text = _paste("s36-topo/topo-mp-comment-prefixed-*.txt")
    bare = uncommented(text)
    assert bare is not None and bare.splitlines()[2].startswith("GPU0\t X \tSYS")
    rig = import_texts([("levante.sh", text)])
    assert [g.numa_node for g in rig.gpus] == [3, 1, 7, 5]
    assert rig.topology.nics == ["mlx5_0", "mlx5_1"]
    # an nccl-tests output: its "#" header lines over unmarked rows, not a comment block
    assert uncommented("# nThread 1 nGpus 8\n#  Rank  0 Pid 1 on host device  0 [0x1b] A100\n120 30 float\n") is None


def test_paddles_device_lines_of_three_eras() -> None:
    # https://github.com/PaddlePaddle/models/issues/5360 (2.0), PaddlePaddle/Paddle#23487 (1.7), #15183 (1.2)
    rig = parse_paddle_log(_paste("s35-collect-env/paddle-run-check-*.txt"))
    assert rig.software.cuda_driver_version == "10.1"
    assert rig.gpus[0].compute_capability == "6.1"
    assert rig.topology.p2p_read is not None and rig.topology.p2p_read[0][3] == "NS"  # 0 to 4: refused
    old = parse_paddle_log(_paste("fixout-paddle/paddle-1-7-*.txt"))
    assert (old.software.cuda_driver_version, old.gpus[0].compute_capability) == ("10.1", "6.1")
    oldest = parse_paddle_log(_paste("fixout-paddle/paddle-1-2-*.txt"))
    assert (oldest.software.cuda_driver_version, oldest.gpus[0].compute_capability) == ("10.0", "7.5")


def test_mst_status_rows_are_rdma_adapters_of_unknown_port() -> None:
    # https://github.com/k8snetworkplumbingwg/sriov-network-device-plugin/issues/601
    rig = parse_mst(_paste("fixout-mst/mst-status-v-7x-*.txt"))
    ports = rig.network.rdma_ports or []
    assert [p.device for p in ports] == ["mlx5_10", "mlx5_9", "mlx5_6", "mlx5_5", "mlx5_4", "mlx5_3", "mlx5_2"]
    assert ports[0].bus_id == "0000:e3:00.0" and ports[0].ca_type == "MT4129" and ports[0].link_layer == "InfiniBand"
    assert ports[0].port is None and "port" in ports[0].unavailable
    # https://github.com/Mellanox/k8s-rdma-shared-dev-plugin/issues/98: the PCI cells redacted as '###'
    redacted = parse_mst(_paste("s36-rdma/mst-status-v-*.txt")).network.rdma_ports or []
    assert [p.device for p in redacted] == ["mlx5_9", "mlx5_8", "mlx5_3", "mlx5_2"]
    assert redacted[0].bus_id is None and "###" in redacted[0].unavailable["bus_id"]
    # the MFT manual's VMware example: no RDMA cell on any row, so no port
    vmware = parse_mst(_paste("fixout-mst/mst-status-vv-vmware-*.txt"))
    assert vmware.network.rdma_ports == [] and "no RDMA device" in vmware.problems[0]


def test_a_query_gpu_csv_through_column_t_reads_by_its_columns() -> None:
    # https://github.com/Cyclenerd/ethereum_nvidia_miner/pull/51
    rig = parse_smi_csv(_paste("s36-smi-q/smi-query-gpu-csv-piped-through-column-*.txt"))
    assert [(g.name, g.power_draw_w, g.temperature_c) for g in rig.gpus] == [
        ("GeForce GTX 1080", 131.17, 38.0),
        ("GeForce GTX 1080", 131.13, 35.0),
    ]


def test_dcgm_active_count_and_stats_box() -> None:
    # https://github.com/KempnerInstitute/kempnerpulse/issues/15: '8 GPUs found (Active).' over GPU 0's rows
    rig = parse_dcgm(_paste("s35-dcgm/dcgmi-discovery-l-*.txt"))
    assert len(rig.gpus) == 8 and rig.gpus[0].bus_id == "0000:19:00.0" and rig.gpus[7].name is None
    # https://github.com/NVIDIA/DCGM/issues/58: dcgmi stats -v, '| GPU ID: 1 |'
    stats = parse_dcgm(_paste("s36-dcgm/dcgmi-stats-verbose-*.txt"))
    assert [g.index for g in stats.gpus] == [1]


def test_a_failed_devicequery_is_the_error_codes_event() -> None:
    # https://github.com/tensorflow/tensorflow/issues/990
    rig = parse_devicequery(_paste("fixout-devicequery/devicequery-cuda-7-0-*.txt"))
    assert rig.gpus == []
    assert [(e.kind, e.code) for e in rig.kernel.events] == [("driver-stack", 35)]


def test_dict_shaped_reports_and_a_torch_runtime_line() -> None:
    # https://github.com/open-mmlab/mmcv/issues/1470: pprint of collect_env()'s dict
    rig = import_texts([("env.txt", _paste("s35-collect-env/mmcv-collect-env-pprint-dict-*.txt"))])
    assert [g.name for g in rig.gpus] == ["NVIDIA TITAN RTX"] * 2 and rig.software.torch_version == "1.9.1"
    # https://github.com/netket/netket/pull/1084: JAX's devices as ['<0: NAME>', '<1: NAME>'
    rig = import_texts([("info.txt", _paste("s36-collect-env/netket-tools-info-*.txt"))])
    assert [g.name for g in rig.gpus] == ["Tesla V100-PCIE-32GB"] * 2
    # https://github.com/yuantn/MI-AOD/issues/38: 'PyTorch: 1.6.0' without +cuXYZ, '  - CUDA Runtime 10.2' below
    env = parse_collect_env(_paste("fixout-env/mmdet-env-info-*.txt"))
    assert (env.software.torch_version, env.software.torch_cuda_version) == ("1.6.0", "10.2")


def test_a_redactors_placeholder_in_an_lspci_device_line() -> None:
    # https://github.com/noonghunna/club-3090/issues/1095: every 'b' replaced by '<USER>'
    text = _paste("s35-lspci/rig-report-lspci-*.txt")
    rig = parse_lspci(text[text.index("0a:00.0 VGA") :])
    assert [g.bus_id for g in rig.gpus] == ["0000:0a:00.0", None]
    assert rig.gpus[0].name == "NVIDIA GeForce RTX 3090"
    assert "0<USER>:00.0" in rig.gpus[1].unavailable["bus_id"]
