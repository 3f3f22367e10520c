"""An application's own log of GPU work that no other row reads (importers/app_log.py), and the syslog time of any
locale (fragments.SYSLOG_TIME): values from public pastes, each cited."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuadvisor.importers import app_log
from gpuadvisor.importers.fragments import SYSLOG_TIME
from gpuadvisor.importers.sections import split_sections
from tests.corpus_cases import CORPUS, import_paste, run_import

# ethminer 0.17 on eight GPUs (https://github.com/ethereum-mining/ethminer/issues/1785)
ETHMINER = CORPUS / "fixlog-app-logs" / "ethminer-0-17-8-gpus-opencl-222-mhs-temps-61-77c-accepted-healthy_gennadiv.txt"
# nanominer on one GPU, its date with a month name (https://github.com/nanopool/nanominer/issues/194)
NANOMINER = CORPUS / "fixlog-app-logs" / "nanominer-one-gpu0-25-8-mhs-82c-121w-zero-shares-terminating_mborisagar.txt"
# ACEMD's log: energy rows and '# NVML : 0 : ...' status lines (https://github.com/Acellera/htmd/issues/251)
ACEMD = CORPUS / "s35-app-logs" / "acemd-log-nvml-lines-then-nan-simulation-unstable-no-gpu-fault_rcrehuet.txt"


def _kinds(text: str) -> list[str]:
    return [s.kind for s in split_sections(text)]


@pytest.mark.parametrize("path", [ETHMINER, NANOMINER, ACEMD], ids=["ethminer", "nanominer", "acemd"])
def test_an_application_log_is_read_not_refused(tmp_path: Path, path: Path) -> None:
    scan = import_paste(tmp_path, path.read_text(encoding="utf-8"))
    assert scan["findings"] == [] or all(f["severity"] in ("ok", "info", "not-checked") for f in scan["findings"])
    assert scan["gpus"] == []  # a log names GPUs by number, no device table: no GPU fact
    assert _kinds(path.read_text(encoding="utf-8")) == ["app-log"]


def test_the_note_counts_what_was_read() -> None:
    from gpuadvisor.importers.merge import parse_text

    parts = parse_text(ETHMINER.read_text(encoding="utf-8"), "x.txt")
    (note,) = [n for n in parts[0].notes if "read as" in n]
    assert "9 lines" in note and "none reports a failure" in note  # the paste's nine lines, none a failure


def test_a_failure_in_words_no_rule_judges_is_listed(tmp_path: Path) -> None:
    """ethminer's CUDA error lines (https://github.com/ethereum-mining/ethminer/issues/2078, as quoted in set 36):
    listed as not judged (GA828, info), never a failure of the fallback's own."""
    text = (
        " m 00:04:01 ethminer 252.44 Mh - cu0 31.56, cu1 31.55, cu2 31.56, cu3 31.55\n"
        " i 00:04:01 stratum  Job: #0b5ba3b8 eth-eu1.nanopool.org [51.89.96.43:9999]\n"
        " X 00:04:02 cuda-0   Exception thrown in Worker thread: GPU error: CUDA error in func search at line 353"
        " unspecified launch failure\n"
        " X 00:04:02 cuda-1   Exception thrown in Worker thread: GPU error: CUDA error in func search at line 353"
        " unspecified launch failure\n"
    )
    scan = import_paste(tmp_path, text)
    assert all(f["severity"] != "fail" for f in scan["findings"])


# what is not a log, though it names GPU work: a systemd unit (https://github.com/ollama/ollama/issues/11565), the
# container toolkit's config.toml (https://github.com/NVIDIA/nvidia-container-toolkit/issues/104), an issue's prose
# (https://github.com/ethereum-mining/ethminer/issues/1340), a Kubernetes manifest and Python source (this project's)
UNIT = """[Unit]
Description=Ollama Service
After=network-online.target

[Service]
#use_gpu = true
#gpu_devices = 0,1,2
ExecStart=/usr/local/bin/ollama serve
User=ollama
Group=ollama
Restart=always
RestartSec=3
Environment="PATH=$PATH"
Environment="OLLAMA_MODELS=/mnt/extdisk/ollama/.ollama/models"

[Install]
WantedBy=multi-user.target
"""
TOML = """disable-require = false
#swarm-resource = "DOCKER_RESOURCE_GPU"
#accept-nvidia-visible-devices-envvar-when-unprivileged = true
#accept-nvidia-visible-devices-as-volume-mounts = false

[nvidia-container-cli]
#root = "/run/nvidia/driver"
#path = "/usr/bin/nvidia-container-cli"
environment = []
debug = "/var/log/nvidia-container-toolkit.log"
#ldcache = "/etc/ld.so.cache"
load-kmods = true
#no-cgroups = false
#user = "root:video"
ldconfig = "@/sbin/ldconfig"

[nvidia-container-runtime]
debug = "/var/log/nvidia-container-runtime.log"
log-level = "debug"
"""
PROSE = """Hi!

I think I hove some problem. Please help me
I have 2 cards: GPU0 1066 and GPU1 1063
I mine ETC on etc.ethermine.org
After a lot of time I see that counter of accepted shares increased only for GPU0. but GPU1 never found shares.
Averege hashrate on the pool is 24 instead of reported is 48

If i try to run miner with --cuda-devices 1 then 1063 cards works fine

is there solution for this?
"""
ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "text",
    [
        UNIT,
        TOML,
        PROSE,
        (ROOT / "examples" / "k8s" / "node-check-daemonset.yaml").read_text(encoding="utf-8"),
        (ROOT / "gpuadvisor" / "importers" / "app_log.py").read_text(encoding="utf-8"),
    ],
    ids=["systemd-unit", "config-toml", "prose", "k8s-manifest", "source-code"],
)
def test_what_is_not_a_log_is_not_read_as_one(text: str) -> None:
    assert "app-log" not in _kinds(text)


def test_a_pip_freeze_is_not_an_application_log(tmp_path: Path) -> None:
    text = "nvidia-cublas-cu12==12.1.3.1\nnvidia-cuda-runtime-cu12==12.1.105\nnvidia-nccl-cu12==2.18.1\ntorch==2.1.0\n"
    assert "app-log" not in _kinds(text)


def test_a_journal_in_a_cjk_locale_reads_as_a_service_log(tmp_path: Path) -> None:
    """journalctl in zh_CN writes the month as '1月' (https://github.com/ollama/ollama/issues/8372)."""
    path = CORPUS / "fixlog-app-logs" / "journal-zh-month-1-ollama-server-config-no-blobs-gin-warning-cut_ajunyo.txt"
    assert _kinds(path.read_text(encoding="utf-8")) == ["daemon-log"]
    rc, scan = run_import([path])
    assert rc == 0 and scan is not None


@pytest.mark.parametrize(
    ("stamp", "month"),
    [
        ("7月 21 14:47:28", "7月"),
        ("Jul 21 14:47:28", "Jul"),
        ("juil. 21 14:47:28", "juil."),
        (" 7월 21 14:47:28", "7월"),
    ],
)
def test_one_syslog_time_grammar_reads_each_locale(stamp: str, month: str) -> None:
    m = re.match(rf"^\s*({SYSLOG_TIME})", stamp)
    assert m is not None and m.group(1).startswith(month)


def test_a_number_is_not_a_month() -> None:
    assert re.match(SYSLOG_TIME, "12 21 14:47:28") is None


def test_the_detector_looks_at_a_bounded_window() -> None:
    """Tried on a paste's first lines only: a long paste nobody reads costs a fixed number of lines per try."""
    lines = ["x"] * 100
    assert not app_log.starts(lines, 80, None)


def test_a_gpu_named_with_its_number_glued_is_a_subject_of_failure() -> None:
    """EWBF's 'ERROR: Looks like GPU1 are stopped. Restart attempt.' (https://github.com/nanopool/ewbf-miner/issues/44,
    set 35) names GPU 1: a failure line of the GPU stack no rule judges (GA828 lists it), not a line about nothing."""
    from gpuadvisor.probes.kmsg_unjudged import reports_failure

    assert reports_failure("ERROR: Looks like GPU1 are stopped. Restart attempt.")
    assert not reports_failure("ERROR: Looks like the pool are stopped. Restart attempt.")
