"""Held-out set 16's misreads, as classes (files in tests/corpus/s16-*, gathered and read by hand before the tool ran
on them; each case names its source thread)."""

from __future__ import annotations

from gpuadvisor.importers.merge import import_files
from gpuadvisor.importers.prefixed import strip_prefix
from tests.corpus_cases import corpus_file as _one
from tests.corpus_cases import warn_findings as _found


def test_rev_ff_in_lspcis_short_form_is_a_gpu_that_does_not_answer_and_a_cut_name_is_no_model() -> None:
    # https://github.com/lyulyul/shine-cluster/issues/171
    path = _one("s16-lost-gpu/lspci-rev-ff-*.txt")
    rig = import_files([path])
    assert [(g.bus_id, g.name) for g in rig.gpus] == [
        ("0000:1a:00.0", "NVIDIA Quadro RTX 6000/8000"),
        ("0000:1c:00.0", "NVIDIA Quadro RTX 6000/8000"),
        ("0000:1d:00.0", "NVIDIA Quadro RTX 6000/8000"),
        ("0000:1e:00.0", None),
    ]
    assert _found(path) == [("GA315", "fail", "GPU 1 0000:1c:00.0")]  # no GA301: the cut name is no other model


def test_mpiruns_timestamped_tag_is_one_prefix() -> None:
    # https://github.com/NVIDIA/nccl/issues/957: "Fri Aug 11 12:31:45 2023[1,0]<stdout>:tomte401:..."
    lines = "".join(f"Fri Aug 11 12:31:4{k} 2023[1,0]<stdout>:h:1:2 [0] NCCL INFO x{k}\n" for k in range(3))
    out, what = strip_prefix(lines)
    assert (
        what == "mpirun --timestamp-output"
        and out == "h:1:2 [0] NCCL INFO x0\nh:1:2 [0] NCCL INFO x1\nh:1:2 [0] NCCL INFO x2\n"
    )
