"""Set 37's GPU-output classes, each read by what the paste shows (values from the public pastes cited).

- a diff's line marks are a prefix like a quote's: nccl-tests rows quoted in a code review
  (https://github.com/GoogleCloudPlatform/ai-infra-cluster-provisioning/pull/376);
- an lspci line cut inside pci.ids' vendor name is no name (https://github.com/akash-network/provider-configs/pull/53);
- Ultralytics' ``yolo checks`` and nnDetection's env report read by their values' shapes
  (https://github.com/SunOner/sunone_aimbot/issues/36, https://github.com/ultralytics/ultralytics/issues/19084);
- fio 2.x's run status groups (``aggrb=``) without the job lines: totals noted, no sequential rate or IOPS guessed
  (fio's HOWTO, "Interpreting the output": aggrb is the group's aggregate bandwidth, KB = 1024 bytes by default).
"""

from __future__ import annotations

import pytest

from gpuadvisor.importers import import_texts
from gpuadvisor.importers.fio import from_text
from gpuadvisor.importers.prefixed import uncommented

REVIEW = """```diff
+     4194304       1048576     float     sum      -1   1701.3    2.47    4.62    N/A   1691.6    2.48    4.65    N/A
+     8388608       2097152     float     sum      -1   1891.3    4.44    8.32    N/A   1911.9    4.39    8.23    N/A
+  2147483648     536870912     float     sum      -1    45662   47.03   88.18    N/A    45522   47.17   88.45    N/A
+  4294967296    1073741824     float     sum      -1    90227   47.60   89.25    N/A
"""


def test_a_review_diffs_added_rows_read_as_nccl_tests() -> None:
    rig = import_texts([("paste.txt", REVIEW)])
    [m] = rig.measurements
    assert (m.kind, m.value_gbps) == ("all_reduce", pytest.approx(89.25))
    assert [r.size_bytes for r in m.rows] == [4194304, 8388608, 2147483648, 4294967296]


def test_a_diff_keeps_its_new_side_and_line_numbers() -> None:
    diff = "@@ -1,2 +1,3 @@\n-old row one\n+new row one\n+new row two\n+new row three\n context\n"
    assert uncommented(diff) == "\n\nnew row one\nnew row two\nnew row three\ncontext\n"


@pytest.mark.parametrize(
    "text",
    [
        "+-----------------------------------------+\n| NVIDIA-SMI 535.104.05 |\n+-----------+\n",  # a table's borders
        "-[0000:00]-+-00.0  Intel\n           +-01.0-[01]----00.0  NVIDIA\n           \\-02.0\n",  # lspci -t
        "+ one\n+ two\n",  # too few lines to be a diff
    ],
)
def test_what_is_no_diff_is_left_alone(text: str) -> None:
    assert uncommented(text) is None


@pytest.mark.parametrize("stub", ["NVIDIA Corpor", "NVIDIA", "NVIDIA Corporation"])
def test_an_lspci_name_cut_in_the_vendor_is_null_with_the_cut_said(stub: str) -> None:
    paste = f"```\nroot@node4:~# lspci -nn | grep -i '10de'\n01:00.0 VGA compatible controller [0300]: {stub}\n"
    rig = import_texts([("paste.txt", paste)])
    assert [(g.bus_id, g.name) for g in rig.gpus] == [("0000:01:00.0", None)]
    assert "cut" in rig.gpus[0].unavailable["name"]


def test_an_lspci_name_is_never_given_its_vendor_twice() -> None:
    line = (
        "01:00.0 VGA compatible controller [0300]: NVIDIA Corporation AD102 [GeForce RTX 4090] [10de:2684] (rev a1)\n"
    )
    assert [g.name for g in import_texts([("paste.txt", line)]).gpus] == ["NVIDIA GeForce RTX 4090"]


ULTRALYTICS = """Ultralytics YOLOv8.0.221 \U0001f680 Python-3.11.6 torch-2.1.1+cu121 \
CUDA:0 (NVIDIA GeForce GTX 1650 SUPER, 4096MiB)
Setup complete \u2705 (12 CPUs, 15.9 GB RAM, 101.6/111.2 GB disk)

OS                  Windows-10-10.0.18363-SP0
Python              3.11.6
CUDA                12.1

torch               \u2705 2.1.1+cu121>=1.8.0
"""


def test_ultralytics_checks_read_by_their_shapes() -> None:
    rig = import_texts([("paste.txt", ULTRALYTICS)])
    assert [(g.name, g.memory_total_bytes) for g in rig.gpus] == [("NVIDIA GeForce GTX 1650 SUPER", 4096 * 2**20)]
    sw = rig.software
    assert (sw.torch_version, sw.torch_cuda_version, sw.python_version, sw.driver_version) == (
        "2.1.1+cu121",
        "12.1",
        "3.11.6",
        None,
    )


def test_a_key_of_torchs_and_cudas_words_is_torchs_cuda() -> None:
    # nnDetection's env report (https://github.com/MIC-DKFZ/nnDetection, set 37's paste)
    text = (
        "----- PyTorch Information -----\nPyTorch Version: 1.13.0\nPyTorch Debug: False\nPyTorch CUDA: 11.7\n"
        "PyTorch Backend cudnn: 8500\nPyTorch Current Device Capability: (8, 6)\nPyTorch CUDA available: True\n"
    )
    sw = import_texts([("paste.txt", text)]).software
    assert (sw.torch_version, sw.torch_cuda_version) == ("1.13.0", "11.7")


FIO2 = """Run status group 3 (all jobs):
  WRITE: io=984576KB, aggrb=16406KB/s, minb=16406KB/s, maxb=16406KB/s, mint=60011msec, maxt=60011msec

Run status group 4 (all jobs):
   READ: io=301308KB, aggrb=5021KB/s, minb=5021KB/s, maxb=5021KB/s, mint=60001msec, maxt=60001msec
"""


def test_fio_2_run_status_groups_alone_are_noted_not_guessed() -> None:
    bench = from_text(FIO2, "paste.txt")
    assert (bench.seq_read_gbps, bench.seq_write_gbps, bench.rand_read_iops) == (None, None, None)
    assert "seq_read_gbps" in bench.unavailable
    note = bench.notes[0]
    assert "group 3: write 16.8 MB/s over 60.0 s" in note  # 16406 KiB/s
    assert "group 4: read 5.14 MB/s over 60.0 s" in note  # 5021 KiB/s
