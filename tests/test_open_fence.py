"""A paste that ends inside the markdown fence around its last output (the fence is opened and never closed) may be
cut at a line boundary: rows may follow that it does not show. The GPUs another output lists are then kept, and the
comparison of lspci's GPUs with nvidia-smi's (GA810, a GPU lost from the driver) is not made on the cut list.

The paste: lspci -nn and nvidia-smi --query-gpu of two L40S, https://github.com/akash-network/provider-configs
(tests/corpus/s21-smi-csv)."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor import rules
from gpuadvisor.importers import import_texts
from gpuadvisor.importers.sections import split_sections

PASTE = next((Path(__file__).parent / "corpus" / "s21-smi-csv").glob("lspci-nn-and-query-gpu-csv*.txt")).read_text()
LINES = PASTE.splitlines(keepends=True)


def _read(text: str):
    rig = import_texts([("paste.txt", text)])
    return rig, {f.code: f for f in rules.evaluate(rig)}


def test_the_whole_paste_closes_its_fence_and_is_judged():
    assert not any(s.open_end for s in split_sections(PASTE))
    rig, found = _read(PASTE)
    assert [g.bus_id for g in rig.gpus] == ["0000:01:00.0", "0000:91:00.0"]
    assert rig.node.nvidia_pci_functions == ["0000:01:00.0", "0000:91:00.0"]
    assert "GA810" not in found  # both GPUs on the bus are the driver's


def test_cut_inside_the_open_fence_keeps_lspcis_gpu_and_judges_no_loss():
    cut = "".join(LINES[:8])  # the fence, lspci's two GPUs, the CSV header and its first row only
    assert cut.endswith("00000000:01:00.0, 0x26B910DE\n")
    assert [s.open_end for s in split_sections(cut)][-1] is True
    rig, found = _read(cut)
    assert [g.bus_id for g in rig.gpus] == ["0000:01:00.0", "0000:91:00.0"]
    assert rig.gpus[0].memory_total_bytes == 46068 * 1048576 and rig.gpus[1].memory_total_bytes is None
    assert any("0000:91:00.0 kept as GPU 1" in p for p in rig.problems)
    assert rig.node.nvidia_pci_functions is None
    assert "cut short" in rig.node.unavailable["nvidia_pci_functions"]
    assert "GA810" not in {c for c, f in found.items() if f.severity in ("warn", "fail")}


def test_a_closed_fence_with_a_gpu_missing_from_the_driver_still_fails():
    # the same paste with the second CSV row taken out but the fence closed: the driver's list is whole, so the GPU
    # lspci shows and nvidia-smi does not is lost (GA810 fails)
    text = "".join(x for x in LINES if "00000000:91:00.0" not in x)
    assert text.rstrip().endswith("```")
    rig, found = _read(text)
    assert [g.bus_id for g in rig.gpus] == ["0000:01:00.0"]
    assert found["GA810"].severity == "fail" and "0000:91:00.0" in found["GA810"].message


def test_a_fence_with_a_language_opens_and_a_bare_one_closes():
    text = "```bash\n" + "".join(LINES[1:8])
    assert split_sections(text)[-1].open_end is True
    assert split_sections(text + "```\n")[-1].open_end is False
