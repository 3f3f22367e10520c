"""A markdown fence around a pasted output changes nothing: the closing fence ends the output, and one that ends the
text ends the paste there: the line above it is whole (the writer closed the fence under it), not cut short. Text
written by hand in the layout of nvidia-smi topo -m (two GPUs, the second row cut inside a cell)."""

from __future__ import annotations

from gpuadvisor.importers import import_texts
from gpuadvisor.importers.sections import split_sections

TOPO = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV12\t0-23\t0\nGPU1\tNV12\t X \t0-23\t0\n"
CUT = TOPO[: TOPO.rindex("NV12") + 2]  # "GPU1\tNV" : cut inside a link cell


def test_a_fence_that_ends_the_paste_leaves_the_line_above_it_whole():
    (plain,) = split_sections(CUT)
    (fenced,) = split_sections("```\n" + CUT + "\n```\n")
    (unended,) = split_sections("```\n" + CUT + "\n```")
    assert plain.cut and not fenced.cut and not unended.cut and fenced.lines == plain.lines


def test_a_fence_followed_by_more_text_closes_the_output_uncut():
    (fenced,) = [s for s in split_sections("```\n" + TOPO + "```\nthanks for any help\n") if s.kind != "_after"]
    assert not fenced.cut and fenced.lines == TOPO.splitlines()


def test_a_cut_topo_reads_the_same_in_a_fence():
    def reading(text: str):
        rig = import_texts([("paste.txt", text)])
        return len(rig.gpus), rig.topology.matrix

    assert reading("```\n" + CUT + "\n```\n") == reading(CUT)
    assert reading("```\n" + TOPO + "```\n") == reading(TOPO)
