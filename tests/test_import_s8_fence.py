"""A markdown fence around a pasted output changes nothing: the closing fence ends the output, and one that ends the
text ends it where the paste ended (the line above may be cut short, the fence having added its newline). Text
written by hand in the layout of nvidia-smi topo -m (two GPUs, the second row cut inside a cell)."""

from __future__ import annotations

from gpuadvisor.importers import import_texts
from gpuadvisor.importers.sections import split_sections

TOPO = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV12\t0-23\t0\nGPU1\tNV12\t X \t0-23\t0\n"
CUT = TOPO[: TOPO.rindex("NV12") + 2]  # "GPU1\tNV" : cut inside a link cell


def test_a_fence_closing_a_cut_paste_marks_its_last_line_as_possibly_cut():
    (plain,) = split_sections(CUT)
    (fenced,) = split_sections("```\n" + CUT + "\n```\n")
    assert plain.cut and fenced.cut and fenced.lines == plain.lines


def test_a_fence_followed_by_more_text_closes_the_output_uncut():
    (fenced,) = [s for s in split_sections("```\n" + TOPO + "```\nthanks for any help\n") if s.kind != "_after"]
    assert not fenced.cut and fenced.lines == TOPO.splitlines()


def test_a_cut_topo_reads_the_same_in_a_fence():
    def reading(text: str):
        rig = import_texts([("paste.txt", text)])
        return len(rig.gpus), rig.topology.matrix

    assert reading("```\n" + CUT + "\n```\n") == reading(CUT)
    assert reading("```\n" + TOPO + "```\n") == reading(TOPO)
