"""Held-out set 17's misreads in pastes, as classes (files in tests/corpus/s17-*, gathered and read by hand before the
tool ran on them; each case names its source thread), each also checked on another public sample of its format."""

from __future__ import annotations

from gpuadvisor.importers.beyond import smi_processes
from tests.corpus_cases import corpus_file as _one
from tests.corpus_cases import warn_findings as _found

# https://github.com/XuehaiPan/nvitop/issues/152 (eyalroz): a 535-era Processes table, compute and graphics rows
_NVITOP_152 = """\
+---------------------------------------------------------------------------------------+
| Processes:                                                                            |
|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |
|        ID   ID                                                             Usage      |
|=======================================================================================|
|    0   N/A  N/A     10734      C   ...-x86_64-Release/abcdefgh/foo_bar         160MiB |
|    0   N/A  N/A     58661      G   .../abcdefgh/123456/bin/abcde/bazbaz          3MiB |
|    1   N/A  N/A     10734      C   ...-x86_64-Release/abcdefgh/foo_bar         160MiB |
|    2   N/A  N/A     18243      G   /usr/bin/X                                   64MiB |
|    2   N/A  N/A     22720      G   /usr/bin/gnome-shell                         34MiB |
+---------------------------------------------------------------------------------------+
"""


def test_the_process_tables_type_is_read_and_display_processes_are_no_memory_held() -> None:
    procs = smi_processes(_NVITOP_152)
    assert procs is not None
    assert [(p.gpu_index, p.pid, p.kind, p.used_bytes) for p in procs] == [
        (0, 10734, "C", 160 * 2**20),
        (0, 58661, "G", 3 * 2**20),
        (1, 10734, "C", 160 * 2**20),
        (2, 18243, "G", 64 * 2**20),
        (2, 22720, "G", 34 * 2**20),
    ]
    # https://github.com/CFSworks/nvml_fix/issues/11: X, kwin_x11 and krunner ('G') hold 1341 MiB on the GTX 1070
    # that drives the display: the desktop's own use, not a job's leftover
    path = _one("s17-smi/smi-396-unfenced-*.txt")
    assert "GA811" not in {code for code, _sev, _subject in _found(path)}
