"""Held-out set 21's classes of job and service logs, each from a real paste (the corpus file in tests/corpus/s21-*
and one more public sample of the same form, its source URL beside it): NVML's lost-GPU error raised in Python."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers import import_files, nccl_log
from gpuadvisor.rules import evaluate

CORPUS = Path(__file__).parent / "corpus"


def _judged(tmp_path: Path, text: str) -> list[tuple[str, str, str]]:
    f = tmp_path / "paste.txt"
    f.write_text(text)
    return sorted((x.code, x.severity, x.subject) for x in evaluate(import_files([f])) if x.severity != "ok")


def _worst(found: list[tuple[str, str, str]]) -> str:
    order = ["ok", "info", "warn", "fail"]
    return max((sev for _, sev, _ in found), key=order.index, default="ok")


# https://github.com/shuvozula/eth-runner (its NVIDIA watchdog quotes the traceback a mining rig's pynvml raised)
_ETH_RUNNER = """\
Traceback (most recent call last):
  File "/home/shuvo/projects/eth-runner/metrics/collect_nvidia_metrics.py", line 54, in start_collection
    handle = nvmlDeviceGetHandleByIndex(gpu_num)
  File "/usr/local/lib/python2.7/dist-packages/pynvml.py", line 807, in nvmlDeviceGetHandleByIndex
    _nvmlCheckReturn(ret)
  File "/usr/local/lib/python2.7/dist-packages/pynvml.py", line 310, in _nvmlCheckReturn
    raise NVMLError(ret)
pynvml.NVMLError_GpuIsLost: GPU is lost
"""


def test_a_python_traceback_ending_in_nvmls_gpu_is_lost_is_a_lost_gpu_of_unknown_device(tmp_path):
    corpus = (CORPUS / "s21-lost-gpu/python-traceback-pynvml-nvmlerror-gpuislost-nvgpu_bzamecnik.txt").read_text()
    for text in (corpus, _ETH_RUNNER):
        found = [x for x in _judged(tmp_path, text) if x[0] == "GA820"]
        assert len(found) == 1 and found[0][1] == "fail"
        scan = import_files([tmp_path / "paste.txt"])
        (ev,) = scan.kernel.events
        assert (ev.kind, ev.bus_id, ev.gpu_index) == ("gpu-is-lost", None, None)  # which GPU: not on the line
        assert scan.gpus == []


def test_a_nccl_warn_line_with_its_pid_redacted_and_a_date_before_the_host_is_read_as_nccl_output(tmp_path):
    # https://github.com/NVIDIA/nccl/issues/2013: the pid (and tid) written XXXXXX, a log date before the host
    redacted = (CORPUS / "s21-nccl-debug").glob("nccl-warn-ibv-modify-qp-110-*.txt")
    text = next(redacted).read_text()
    assert ":XXXXXX [5] ibvwrap.c:262 NCCL WARN" in text
    found = _judged(tmp_path, text)
    assert _worst([x for x in found if x[1] != "not-checked"]) in ("ok", "info", "warn")
    # the same line as NCCL writes it (host:pid:tid) is judged the same: the redaction changes nothing
    plain = _judged(tmp_path, text.replace(":XXXXXX [5]", ":2152176:2152299 [5]"))
    assert found == plain
    assert nccl_log.starts("host-01:***:*** [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>")
    assert not nccl_log.starts("host-01:XX [0] NCCL INFO x")  # two letters: not a redaction NCCL's readers write
