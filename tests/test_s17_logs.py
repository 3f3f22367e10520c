"""Held-out set 17's log misreads, as classes (files in tests/corpus/s17-logs, s17-lost-gpu, s17-fabric,
s17-rdma-logs and s17-nccl-debug, gathered and read by hand before the tool ran on them; each case names its source
thread), each also checked on another public sample of the same form (its URL beside it)."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.facts import Rig
from gpuadvisor.importers.merge import import_files
from gpuadvisor.rules import evaluate
from tests.corpus_cases import corpus_file as _one
from tests.corpus_cases import warn_findings as _found


def _pasted(tmp_path: Path, text: str, name: str = "paste.txt") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _rig(tmp_path: Path, text: str) -> Rig:
    return import_files([_pasted(tmp_path, text)])


def _warned(rig: Rig) -> list[tuple[str, str, str]]:
    return sorted((f.code, f.severity, f.subject) for f in evaluate(rig) if f.severity in ("warn", "fail"))


# https://github.com/MrMEEE/ironhide/issues/41 (2011, the older wording, every line stamped)
IRONHIDE_NOT_PROBED = """\
[ 9687.215135] NVRM: The NVIDIA probe routine was not called for 1 device(s).
[ 9687.215145] NVRM: This can occur when a driver such as nouveau, rivafb,
[ 9687.215149] NVRM: nvidiafb, or rivatv was loaded and obtained ownership of
[ 9687.215153] NVRM: the NVIDIA device(s).
[ 9687.215161] NVRM: Try unloading the conflicting kernel module (and/or
[ 9687.215165] NVRM: reconfigure your kernel without the conflicting
[ 9687.215168] NVRM: driver(s)), then try loading the NVIDIA kernel module
[ 9687.215172] NVRM: again.
[ 9687.215178] NVRM: No NVIDIA graphics adapter probed!
"""


def test_gpus_another_driver_took_first_are_lost_to_cuda_and_the_fix_is_the_driver_binding(tmp_path: Path) -> None:
    # https://github.com/mattshma/bigdata/issues/133: "The NVIDIA probe routine was not called for 3 device(s)."
    # (open-gpu-kernel-modules, kernel-open/nvidia/nv.c: printed when num_probed_nv_devices != count)
    path = _one("s17-lost-gpu/dmesg-probe-not-called-3-*.txt")
    assert _found(path) == [("GA820", "fail", "3 GPU(s) held by another driver (no bus id logged)")]
    (finding,) = [f for f in evaluate(import_files([path])) if f.code == "GA820"]
    assert finding.expected == {"action": "fix-config"}
    assert "lspci" in finding.fix and "blacklist nouveau" in finding.fix
    assert _warned(_rig(tmp_path, IRONHIDE_NOT_PROBED)) == [
        ("GA820", "fail", "1 GPU(s) held by another driver (no bus id logged)")
    ]
