"""The classes of input held-out set 32 found misread, each on its corpus paste and on another real public sample of
the same form (cited where it is copied)."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor import rules
from gpuadvisor.facts import Rig
from gpuadvisor.importers import import_files, import_texts

CORPUS = Path(__file__).resolve().parent / "corpus"


def _one(folder: str, stem: str) -> Path:
    (path,) = sorted((CORPUS / folder).glob(f"{stem}*.txt"))
    return path


def _raised(rig: Rig) -> list[str]:
    return sorted(f.code for f in rules.evaluate(rig) if f.severity in ("warn", "fail"))


# --- 1. PyTorch Lightning's environment report (collect_env_details.py, the bug-report form) -------------------------

# https://github.com/Lightning-AI/pytorch-lightning/issues/20682 (the report's CUDA and Lightning sections, cut after
# the torch row; the tabs of the paste as GitHub shows them, eight spaces)
LIGHTNING_4090 = """\
* CUDA:
        - GPU:
                - NVIDIA GeForce RTX 4090
                - NVIDIA GeForce RTX 4090
                - NVIDIA GeForce RTX 4090
                - NVIDIA GeForce RTX 4090
        - available:         True
        - version:           11.8
* Lightning:
        - lightning:         2.5.1
        - lightning-utilities: 0.14.2
        - pytorch-lightning: 2.5.1
        - pytorch3d:         0.7.8
        - raytorch:          0.1.0+aeaaf25
        - torch:             2.6.0+cu118
"""


def test_lightning_s_report_gives_its_four_blackwell_gpus_and_torch_s_build() -> None:
    rig = import_files([_one("s32-collect-env", "lightning-collect-env-4x-rtx-pro-6000")])
    assert [g.name for g in rig.gpus] == ["NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"] * 4
    assert [g.index for g in rig.gpus] == [0, 1, 2, 3]
    assert all(g.bus_id is None and g.memory_total_bytes is None for g in rig.gpus)
    assert rig.software.torch_version == "2.10.0+cu130" and rig.software.torch_cuda_version == "13.0"
    assert rig.software.driver_version is None and "driver" in rig.software.why("driver_version")


def test_lightning_s_report_of_four_rtx_4090_reads_alike() -> None:
    rig = import_texts([("env.txt", LIGHTNING_4090)])
    assert [g.name for g in rig.gpus] == ["NVIDIA GeForce RTX 4090"] * 4
    assert rig.software.torch_version == "2.6.0+cu118" and rig.software.torch_cuda_version == "11.8"
    assert "GA301" not in _raised(rig)


# --- 2. PaddleSeg's environment summary (paddleseg/utils get_sys_env, logged at each run's start) ------------------


def test_paddleseg_s_summary_gives_its_eight_a100_of_unknown_bus_and_memory() -> None:
    rig = import_files([_one("s32-collect-env", "paddleseg-env-info-8x-a100-pcie-40gb")])
    assert [g.name for g in rig.gpus] == ["NVIDIA A100-PCIE-40GB"] * 8
    assert [g.index for g in rig.gpus] == list(range(8))
    assert all(g.bus_id is None and g.memory_total_bytes is None for g in rig.gpus)
    assert rig.software.python_version == "3.8.16" and rig.software.env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"


# https://github.com/PaddlePaddle/PaddleSeg/issues/964 (the summary as posted, its ruler's dashes and the line after)
PADDLESEG_RTX = """\
-----------Environment Information-------------
platform: Linux-5.10.18-amd64-desktop-x86_64-with-debian-10.8
Python: 3.7.10 (default, Feb 26 2021, 18:47:35) [GCC 7.3.0]
Paddle compiled with cuda: True
NVCC: Build cuda_11.1.TC455_06.29069683_0
cudnn: 8.0
GPUs used: 0
CUDA_VISIBLE_DEVICES: 0
GPU: ['GPU 0: GeForce RTX']
GCC: gcc (Uos 8.3.0.3-3+rebuild) 8.3.0
PaddlePaddle: 2.0.1
OpenCV: 4.5.1

----------
"""


def test_a_name_paddleseg_cut_at_four_words_is_not_read_as_a_gpu_model() -> None:
    """PaddleSeg keeps the first four words of `nvidia-smi -L`'s 'GPU 0: GeForce RTX ...': one GPU, its
    name unknown, not 'GeForce RTX'."""
    rig = import_texts([("env.txt", PADDLESEG_RTX)])
    (gpu,) = rig.gpus
    assert gpu.index == 0 and gpu.name is None and "four words" in gpu.why("name")
    assert rig.software.python_version == "3.7.10" and rig.software.env["CUDA_VISIBLE_DEVICES"] == "0"


# --- 3. mlxlink's port report: a web page's copy (its heading's anchor kept), an Ethernet port's AN state -----------


def _ports(rig: Rig) -> list[tuple[str, int | None, str | None, str | None, float | None]]:
    return [(p.device, p.port, p.state, p.link_layer, p.rate_gbps) for p in rig.network.rdma_ports or []]


def test_a_blog_s_copy_of_mlxlink_reads_one_200g_ethernet_port_up_of_unnamed_device() -> None:
    rig = import_files([_one("s32-rdma", "mlxlink-cx6-operational-info-200g-4x")])
    assert _ports(rig) == [("", None, "ACTIVE", "Ethernet", 200.0)]  # no command line: no -d, no -p
    (port,) = rig.network.rdma_ports or []
    assert port.device == "" and "-d" in port.why("device") and "-p" in port.why("port")
    assert port.phys_state is None and "ETH_AN_FSM_ENABLE" in port.why("phys_state")
    assert "GA803" not in _raised(rig)


# https://github.com/echuawu/sonic-mgmt/blob/014e0c3a79beb6a0ca9d1d1e4d1ddc26c6d182b9/ngts/cli_wrappers/sonic/
# sonic_interface_clis.py (parse_port_mlxlink_status's docstring: the command and its output, indent removed)
MLXLINK_SPECTRUM = """\
sudo mlxlink -d /dev/mst/mt53100_pciconf0 -m -p 35

Operational Info
----------------
State                           : Active
Physical state                  : ETH_AN_FSM_ENABLE
Speed                           : 1G
Width                           : 1x
FEC                             : No FEC
Loopback Mode                   : No Loopback
Auto Negotiation                : ON
"""


def test_mlxlink_s_command_line_names_the_device_and_port_of_an_ethernet_port_up() -> None:
    rig = import_texts([("mlxlink.txt", MLXLINK_SPECTRUM)])
    assert _ports(rig) == [("/dev/mst/mt53100_pciconf0", 35, "ACTIVE", "Ethernet", 1.0)]
    (port,) = rig.network.rdma_ports or []
    assert "device" not in port.unavailable and "port" not in port.unavailable
    assert "GA803" not in _raised(rig)
