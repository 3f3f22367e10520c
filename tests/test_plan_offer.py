"""A machine on offer from the seller's files (plan --from-nvidia-smi): one unrelated file in the directory is
skipped and said, never the end of the plan; the seller's RAM figure (--offer-ram); a machine short only of host
RAM for CPU offload is told to add RAM, not to buy a bigger GPU.

Fixtures: nvidia-smi -q of a 2x RTX 3090 machine and of a 1x L4 machine (thamada's public outputs, in
tests/fixtures/import/samples with their sources); the notes file and the photo are written by hand.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gpuadvisor.cli import main

SAMPLES = Path(__file__).parent / "fixtures" / "import" / "samples"


def cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(list(args))
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


@pytest.fixture
def seller(tmp_path: Path) -> Path:
    d = tmp_path / "seller"
    d.mkdir()
    shutil.copy(SAMPLES / "smi-q_rtx3090_thamada.txt", d)
    shutil.copy(SAMPLES / "smi-q_l4_thamada.txt", d / "zz-other-box.txt")  # another machine's output
    (d / "notes.txt").write_text("Pickup only. Cash. Both cards repasted in 2025.\n")
    (d / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00")
    return d


def test_one_unrelated_file_does_not_stop_the_offer(capsys, seller):
    code, out, err = cli(
        capsys, "plan", "--from-nvidia-smi", str(seller), "--model", "llama-3-8b", "--task", "qlora", "--format", "json"
    )
    assert code == 0, err
    b = json.loads(out)["builds"][0]
    assert b["gpu_count"] == 2 and "3090" in b["gpu"]  # the machine most files show, not the L4 box
    notes = " ".join(b["layout_notes"])
    assert "notes.txt: skipped" in notes and "photo.jpg: skipped" in notes
    assert "zz-other-box.txt: skipped (another machine's output: 1 GPU)" in notes


def test_the_sellers_ram_and_add_ram_before_a_bigger_gpu(capsys, seller):
    # 8B full fine-tune on 2x 24 GB needs ZeRO-3 with CPU offload: about 200 GiB of host RAM, not 16
    code, out, err = cli(
        capsys,
        "plan",
        "--from-nvidia-smi",
        str(seller),
        "--offer-ram",
        "16",
        "--model",
        "llama-3-8b",
        "--task",
        "full",
        "--tokens",
        "1e8",
    )
    assert code == 0, err
    text = " ".join(out.split())
    assert "host RAM 16 GiB, as the seller reports it (--offer-ram)" in text
    rec = text.split("Recommendation:")[1].split("Why:")[0]
    assert "add RAM: with" in rec and "the same GPUs fit" in rec and "B200" not in rec


def test_offer_ram_bounds_are_one_line(capsys, seller):
    code, _, err = cli(capsys, "plan", "--from-nvidia-smi", str(seller), "--offer-ram", "0", "--model", "llama-3-8b")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--offer-ram 0" in err
