"""Older and odder forms of GPU outputs, each class read on the corpus paste that showed it and on at least one
other real public sample of the same form (its URL cited), never on the tool's own output."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers import import_texts

CORPUS = Path(__file__).parent / "corpus"


def _corpus(case: str) -> str:
    return (CORPUS / case).read_text(encoding="utf-8")


def _read(text: str, name: str = "paste.txt"):  # noqa: ANN202
    return import_texts([(name, text)])


# -- nccl-tests before its 2.13 resync (2022): each test printed only its own columns (src/*.cu print_header) --

# rccl-tests (nccl-tests' fork, same print code) all_gather_perf -np 16 -g 1, "Before:" block of
# https://github.com/ROCm/rccl/pull/930 (its first rows; count is per rank: 64 B = 1 float x 16 ranks)
_RCCL_930 = """\
#                                               out-of-place                       in-place
#       size         count      type     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
          64             1     float    33.75    0.00    0.00  0e+00    33.61    0.00    0.00  0e+00
         128             2     float    33.65    0.00    0.00  0e+00    33.78    0.00    0.00  0e+00
         256             4     float    33.72    0.01    0.01  0e+00    33.83    0.01    0.01  0e+00
         512             8     float    33.97    0.02    0.01  0e+00    33.72    0.02    0.01  0e+00
        1024            16     float    33.89    0.03    0.03  0e+00    33.93    0.03    0.03  0e+00
        2048            32     float    34.12    0.06    0.06  0e+00    34.09    0.06    0.06  0e+00
        4096            64     float    34.50    0.12    0.11  0e+00    34.58    0.12    0.11  0e+00
        8192           128     float    34.81    0.24    0.22  0e+00    34.78    0.24    0.22  0e+00
"""


def test_old_layout_rows_without_redop_and_a_per_rank_count_are_all_gather() -> None:
    """No redop, no root column: all_gather or sendrecv; a count of size / (type size x ranks) is all_gather's."""
    (m,) = _read(_RCCL_930).measurements
    assert (m.kind, m.value_gbps, m.rows[-1].size_bytes) == ("all_gather", 0.22, 8192)
    # rows only, no header (https://github.com/NVIDIA/nccl-tests/issues/44): 2 GPUs, count = size / 8
    (m,) = _read(_corpus("s8-nccl-tests/rows-old-format-2x2080ti-nvlink-avg-cut_alexwang1900.txt")).measurements
    assert (m.kind, m.value_gbps) == ("all_gather", 20.34)


def test_old_layout_rows_without_redop_and_a_whole_count_are_sendrecv() -> None:
    """https://github.com/NVIDIA/nccl-tests/issues/104: header shown, one row cut in its in-place half right under
    the column header (it stays that header's row); uint8, count = size: sendrecv."""
    rig = _read(_corpus("s16-nccl-tests/sendrecv-2x-gtx1080-one-size-36m-cut-in-place_timmywanttolearn.txt"))
    (m,) = rig.measurements
    assert (m.kind, m.value_gbps, m.world_size) == ("sendrecv", 5.82, 2)
    assert not rig.problems


def test_a_second_block_with_a_blank_redop_is_alltoall() -> None:
    """https://github.com/NVIDIA/nccl-tests/issues/78: an all_reduce block, then an alltoall block whose rows leave
    the redop column blank (src/alltoall.cu passed "" as its op name): two runs, two measurements."""
    rig = _read(_corpus("s9-nccl-tests/all_reduce-and-alltoall-rows-8x8-v100-ib-two-blocks_ngc7292.txt"))
    assert [(m.kind, m.value_gbps) for m in rig.measurements] == [("all_reduce", 4.32), ("alltoall", 0.51)]
