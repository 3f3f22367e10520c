# ruff: noqa: E501  (real pastes, quoted as their threads show them)
"""A paste whose first recognisable line reports a failure of the GPU stack (an exception, a tool's error) is read
as a log, its lines listed by GA828, not refused; a command's usage error is no such report; another vendor's
tools (rccl-tests, rocm-smi) are refused as theirs whatever else the paste holds."""

from __future__ import annotations

import pytest
from gpuadvisor.probes.kmsg_unjudged import reports_failure

from tests.corpus_cases import corpus_file, import_paste, run_import

# https://github.com/pytorch/pytorch/issues/34220 (the poster's "complete error report")
TRACEBACK = """The following is a complete error report：
Traceback (most recent call last):
  File "/home/penuoz/Celldetection/train.py", line 34, in <module>
    loss_tmp += np.array(model.get_current_losses())
  File "/home/penuoz/Celldetection/models/base_model.py", line 152, in get_current_losses
    errors_ret.append(float(getattr(self, 'loss_' + name)))  # float(...) works for both scalar tensor and float number
RuntimeError: CUDA error: an illegal memory access was encountered
"""


def test_an_exception_about_cuda_is_read_and_listed(tmp_path):
    scan = import_paste(tmp_path, TRACEBACK)
    (f,) = [f for f in scan["findings"] if f["code"] == "GA828"]
    assert [x["line"] for x in f["observed"]["lines"]] == [7]
    assert not [f for f in scan["findings"] if f["severity"] in ("warn", "fail")]


@pytest.mark.parametrize(
    ("pattern", "lines"),
    [
        ("s26-lost-gpu/smi-gpu-reset-refused-in-use-by-another-client-*.txt", [2]),  # "could not be reset"
        ("s26-nccl-debug/deepspeed-interleaved-traceback-nccl-2193-*.txt", None),
    ],
)
def test_set_26s_error_reports_are_read(tmp_path, pattern, lines):
    scan = import_paste(tmp_path, corpus_file(pattern).read_text(encoding="utf-8"))
    (f,) = [f for f in scan["findings"] if f["code"] == "GA828" and "not judged" in f["message"]]
    if lines is not None:
        assert [x["line"] for x in f["observed"]["lines"]] == lines


@pytest.mark.parametrize(
    ("line", "reports"),
    [
        ("RuntimeError: CUDA error: an illegal memory access was encountered", True),
        ("The following GPUs could not be reset:", True),
        ("ERROR: Option -m is missing its value. Please run 'nvidia-smi -h' for help.", False),  # usage
        ("# note: an older nccl-tests (no Group column, 'error' instead of '#wrong')", False),  # a comment
        ("Epoch 3: loss 0.51, no errors", False),
    ],
)
def test_which_lines_report_a_failure_of_the_gpu_stack(line, reports):
    assert reports_failure(line) is reports


@pytest.mark.parametrize(
    "pattern",
    [
        "s26-not-read/rccl-tests-reduce-scatter-perf-2018-*.txt",  # "# RCCL Tests compiled with RCCL 1.0"
        "s18-not-read/rccl-tests-all-reduce-8x-mi300x-*.txt",  # "rccl-tests: Version develop:..."
        "s25-not-read/tf-rocm-two-rx6800xt-*.txt",  # a TensorFlow log on ROCm above rocm-smi --showtopo
    ],
)
def test_another_vendors_tools_are_refused_as_theirs(tmp_path, pattern):
    path = tmp_path / "paste.txt"
    path.write_text(corpus_file(pattern).read_text(encoding="utf-8"), encoding="utf-8")
    rc, scan = run_import([path])
    assert rc == 2 and scan is None
