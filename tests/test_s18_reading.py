"""Held-out set 18's misreads in pastes, as classes (files in tests/corpus/s18-*, gathered and read by hand before the
tool ran on them; each case names its source thread), each also checked on another public sample of its format."""

from __future__ import annotations

from gpuadvisor.importers.merge import import_files, parse_text
from tests.corpus_cases import corpus_file as _one
from tests.corpus_cases import warn_findings as _found


def test_a_lost_gpu_line_with_its_index_before_the_bus_id_is_the_gpu_at_that_bus() -> None:
    # https://github.com/microsoft/WSL/issues/13027: WSL2's nvidia-smi, "for GPU0: 0000:C1:00.0: Unknown Error"
    path = _one("s18-smi/smi-wsl2-unable-device-handle-*.txt")
    rig = import_files([path])
    assert [g.bus_id for g in rig.gpus] == ["0000:c1:00.0", "0000:e1:00.0"]
    assert ("GA315", "fail") in {(code, sev) for code, sev, _subject in _found(path)}
    # https://github.com/cihlab/fics-cluster-guide/issues/53 (its title): the older form, the domain glued to "GPU";
    # its leading zeros are the bus's domain, not an index
    (part,) = parse_text("Unable to determine the device handle for GPU0000:20:00.0: Unknown Error\n", "smi")
    assert [g.bus_id for g in part.rig.gpus] == ["0000:20:00.0"]
    (part,) = parse_text("Unable to determine the device handle for GPU12: 0000:B1:00.0: Unknown Error\n", "smi")
    assert [g.bus_id for g in part.rig.gpus] == ["0000:b1:00.0"]
