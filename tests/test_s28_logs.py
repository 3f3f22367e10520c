"""Held-out set 28's reading classes (a GPU's brand as a fact, judged by GA313 and the fabric rules; the fabric
manager log's errors that leave the fabric unconfigured), each on its s28 paste and another real public sample of the
same form.

Values are the pastes' own (quoted in each test), never this tool's output."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.catalog import brands
from gpuadvisor.importers import import_texts
from gpuadvisor.rules import evaluate
from tests.corpus_cases import CORPUS

FIXTURES = Path(__file__).parent / "fixtures"


def _read(path: Path | str, text: str | None = None):
    name = Path(path).name
    return import_texts([(name, Path(path).read_text(encoding="utf-8") if text is None else text)])


def _findings(rig, code: str) -> list[tuple[str, str]]:
    return [(f.severity, f.subject) for f in evaluate(rig) if f.code == code]


# --- class 1: a GPU's brand (NVML nvmlDeviceGetBrand, nvidia-smi -q Product Brand, a cut table name's brand word) ---


def test_table_names_cut_short_still_show_the_geforce_brand_and_persistence_off_is_info():
    # https://github.com/pytorch/pytorch/issues/18431: '|   0  GeForce GTX 108...  Off  | 00000000:1A:00.0  On |'
    # and GPU 1 'GeForce GTX 108...  Off  | 00000000:1B:00.0 Off' (ten GTX 1080 Ti, a display on GPU 0)
    rig = _read(CORPUS / "s28-smi" / "smi-390-116-gtx1080ti-display-on-gpu0-cut-in-second-gpu-power_houweidong.txt")
    assert [(g.name, g.brand) for g in rig.gpus] == [(None, "GeForce"), (None, "GeForce")]
    assert [sev for sev, _ in _findings(rig, "GA313")] == ["info"]


def test_another_table_of_cut_geforce_names_with_a_prompt():
    # https://github.com/ronghanghu/snmn/issues/2: '[jalal@goku snmn]$ nvidia-smi', driver 410.48,
    # '|   0  GeForce GTX 108...  Off  | 00000000:05:00.0  On |', GPU 1 at 06:00.0 cut after its first line
    rig = _read(CORPUS / "s28-smi" / "smi-410-48-prompt-2x-gtx1080ti-display-on-cut-in-second-gpu_monajalal.txt")
    assert [g.brand for g in rig.gpus] == ["GeForce", "GeForce"]
    assert all(sev == "info" for sev, _ in _findings(rig, "GA313"))


def test_a_tesla_table_name_is_no_desktop_brand():
    # https://github.com/pytorch/pytorch/issues/1637 (nvidia-smi 375.66): '|   0  Tesla K80           On   |' at
    # 0000:06:00.0, 57W / 149W, 0MiB / 11439MiB: brand Tesla (a server card: persistence off there would warn)
    text = (
        "+-----------------------------------------------------------------------------+\n"
        "| NVIDIA-SMI 375.66                 Driver Version: 375.66                    |\n"
        "|-------------------------------+----------------------+----------------------+\n"
        "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
        "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n"
        "|===============================+======================+======================|\n"
        "|   0  Tesla K80           On   | 0000:06:00.0     Off |                    0 |\n"
        "| N/A   41C    P0    57W / 149W |      0MiB / 11439MiB |      0%      Default |\n"
        "+-------------------------------+----------------------+----------------------+\n"
    )
    rig = _read("smi.txt", text)
    assert [(g.name, g.brand, g.persistence_mode) for g in rig.gpus] == [("Tesla K80", "Tesla", True)]
    assert not brands.desktop(rig.gpus[0].brand)


def test_smi_q_product_brand_is_read_and_judges_persistence():
    # https://github.com/NVIDIA/nvidia-docker/issues/1004: driver 384.130, 'Product Name : GeForce GTX 1080 Ti',
    # 'Product Brand : GeForce', 'Display Active : Enabled', 'Persistence Mode : Disabled'
    shown = [
        ("Product Name", "GeForce GTX 1080 Ti"),
        ("Product Brand", "GeForce"),
        ("Display Mode", "Enabled"),
        ("Display Active", "Enabled"),
        ("Persistence Mode", "Disabled"),
    ]
    text = "==============NVSMI LOG==============\n\nDriver Version : 384.130\n\nAttached GPUs : 1\n"
    text += "GPU 00000000:06:00.0\n" + "".join(f"    {k:<31} : {v}\n" for k, v in shown)
    rig = _read("smi-q.txt", text)
    assert [(g.bus_id, g.brand, g.persistence_mode) for g in rig.gpus] == [("0000:06:00.0", "GeForce", False)]
    assert [sev for sev, _ in _findings(rig, "GA313")] == ["info"]


def test_smi_q_titan_brand_as_nvidia_smi_prints_it():
    # https://github.com/microsoft/WSL/issues/7852: 'Product Name : NVIDIA TITAN RTX', 'Product Brand : Titan'
    rig = _read(CORPUS / "s13-smi-q" / "smi-q-wsl-4-attached-titan-rtx-wddm-cut-at-part-number_yes89929.txt")
    assert rig.gpus[0].brand == "Titan"
    assert brands.desktop(rig.gpus[0].brand)


def test_smi_q_x_product_brand():
    # tests/fixtures/h100-vm/smi-q.xml (an H100 VM's nvidia-smi -q -x): '<product_brand>NVIDIA</product_brand>';
    # netdata's rtx-4090-driver-535.xml: '<product_brand>GeForce</product_brand>'
    h100 = _read("smi-q.xml", (FIXTURES / "h100-vm" / "smi-q.xml").read_text(encoding="utf-8"))
    assert {g.brand for g in h100.gpus} == {"NVIDIA"}
    rtx = _read(FIXTURES / "import" / "samples" / "smi-q-x_rtx4090-gen3-host.txt")
    assert [g.brand for g in rtx.gpus] == ["GeForce"]


def test_brand_words_in_names():
    # nvidia-smi's table names: 'GeForce GTX 108...', 'NVIDIA GeForce RTX 4' (cut inside the model), 'Tesla
    # V100-SXM2...', 'Quadro RTX 8000', 'NVIDIA TITAN V'; data-centre names carry no brand word ('NVIDIA H100 80GB
    # HBM3': brand NVIDIA; 'NVIDIA RTX A6000': brand NVIDIA RTX, nvidia-smi -q), and a cut brand word is no brand
    assert brands.from_name("GeForce GTX 108...") == "GeForce"
    assert brands.from_name("NVIDIA GeForce RTX 4") == "GeForce"
    assert brands.from_name("Tesla V100-SXM2...") == "Tesla"
    assert brands.from_name("Quadro RTX 8000") == "Quadro"
    assert brands.from_name("NVIDIA TITAN V") == "Titan"
    assert brands.from_name("NVIDIA H100 80GB HBM3") is None
    assert brands.from_name("NVIDIA RTX A6000") is None
    assert brands.from_name("NVIDIA GeFor...") is None
    # nvml.h nvmlBrandType_t: 5 GeForce, 2 Tesla, 14 NVIDIA, 13 NVIDIA RTX; 0 unknown
    assert [brands.from_nvml(c) for c in (5, 2, 14, 13, 0)] == ["GeForce", "Tesla", "NVIDIA", "NVIDIA RTX", None]


def test_nvml_probe_reads_the_brand_from_the_simulated_library(preset):
    # the simulated NVML answers nvmlDeviceGetBrand as the real one does for these parts: an RTX 4090
    # (nvidia-docker #1671's 2080 Ti alike: 'Product Brand : GeForce'), an H100 ('<product_brand>NVIDIA')
    assert {g.brand for g in preset("4x4090-pcie").gpus} == {"GeForce"}
    assert {g.brand for g in preset("dgx-h100").gpus} == {"NVIDIA"}


# --- class 2: the fabric manager log's errors that leave the fabric unconfigured (GA809), not unjudged lines ---


def _fm(rig) -> tuple[str | None, bool | None]:
    return rig.fabric.manager_state, rig.fabric.nvswitches


def test_fabric_manager_config_error_lines_are_the_fabric_not_configured():
    # https://github.com/pytorch/ci-infra/pull/552: '[ERROR] not all local fabric manager instances finished their
    # configuration', '[ERROR] fabric manager error handler is called for unhandled config error type 8', '[ERROR]
    # failed to configure all the available GPUs or NVSwitches' (H100/B200 nodes, FM started before the GPUs)
    rig = _read(
        CORPUS
        / "s28-fabric"
        / "fabricmanager-log-not-all-local-fm-instances-config-error-type-8-three-lines_huydhn.txt"
    )
    assert _fm(rig) == ("failed", True)
    found = _findings(rig, "GA809")
    assert [sev for sev, _ in found] == ["fail"]
    assert not _findings(rig, "GA828")


def test_a_running_fabric_manager_whose_log_shows_an_nvswitch_error_is_not_unconfigured():
    # gpud's recorded fabricmanager.log line: '[Jul 09 2024 18:14:07] [ERROR] [tid 12727] detected NVSwitch non-fatal
    # error 12028 on fid 0 on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 61': an error it handled, no
    # configuration failure: the fabric manager's state stays unknown, the line an SXid
    text = (
        "[Jul 09 2024 18:14:07] [ERROR] [tid 12727] detected NVSwitch non-fatal error 12028 on fid 0 on NVSwitch "
        "pci bus id 00000000:86:00.0 physical id 3 port 61\n"
    )
    rig = _read("fabricmanager.log", text)
    assert rig.fabric.manager_state is None
    assert [e.kind for e in rig.kernel.events or []] == ["sxid"]


# --- class 3: a verdict over a service's or a program's own log names it so, not "kernel log" ---


def _why(rig) -> str:
    from gpuadvisor.rules.summary import rig_verdict

    rig.findings = evaluate(rig)
    return rig_verdict(rig).why or ""


def test_a_klog_application_log_is_named_as_such_in_the_verdict():
    # https://github.com/kubernetes-sigs/dra-driver-nvidia-gpu/pull/630: 'kubectl logs' of the DRA kubelet plugin,
    # klog lines 'nvlib.go:243] identified fabric clique UUID/ID (device 0/GPU-6328b923-...)': no kernel line
    rig = _read(
        CORPUS / "s28-fabric" / "kubectl-logs-dra-kubelet-plugin-fabric-clique-id-identified-healthy-cut_jgehrcke.txt"
    )
    why = _why(rig)
    assert "service or application log" in why
    assert "kernel log" not in why


def test_another_application_log_with_unjudged_cuda_errors():
    # https://github.com/SystemPanic/vllm-windows/issues/72: '(EngineCore pid=12244) ERROR 07-15 21:01:01
    # [core.py:1240] RuntimeError: Worker failed with error 'CUDA error: an illegal memory access was encountered',
    # '... [multiproc_executor.py:284] Worker proc VllmWorker-0 died unexpectedly (exit code: -15), ...'
    text = (
        "(EngineCore pid=12244) ERROR 07-15 21:01:01 [core.py:1240]     raise RuntimeError(\n"
        "(EngineCore pid=12244) ERROR 07-15 21:01:01 [core.py:1240] RuntimeError: Worker failed with error 'CUDA "
        "error: an illegal memory access was encountered\n"
        "(EngineCore pid=12244) ERROR 07-15 21:01:01 [multiproc_executor.py:284] Worker proc VllmWorker-0 died "
        "unexpectedly (exit code: -15), shutting down executor.\n"
    )
    rig = _read("vllm.log", text)
    assert rig.kernel.source == "imported service or application log"
    why = _why(rig)
    assert "service or application log" in why and "kernel log" not in why


def test_kernel_lines_keep_the_kernel_log_name():
    # https://github.com/QubesOS/qubes-issues/issues/9552: a serial console's dmesg lines '[ 1034.481903] nouveau
    # 0000:27:00.0: gr: ...' read among a service's lines are the kernel's: still "kernel log"
    rig = _read(CORPUS / "s28-logs" / "dmesg-xen-nouveau-gr-trap-illegal-mthd-garbled-serial-console-cut_biergaizi.txt")
    assert rig.kernel.source == "imported"
    assert "kernel log" in _why(rig)
