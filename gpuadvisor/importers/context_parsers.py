"""Row parsers that read more than an output's own text: the command line above it (``nvidia-smi -q -i N``, ``topo -p2p
r``, an nccl-tests launch line) or the file's name tell them what was asked (rows of
:mod:`gpuadvisor.importers.registry`)."""

from __future__ import annotations

from gpuadvisor.importers import nccl, smi_query, topo
from gpuadvisor.importers.part import Part
from gpuadvisor.importers.section import Section


def smi_q(section: Section, source: str, filename: str) -> Part:
    """``nvidia-smi -q``; after a ``nvidia-smi -q -i N`` command line, its one GPU is nvidia-smi's GPU N."""
    rig = smi_query.parse_smi_q(section.text, source, section.start)
    hint = smi_query.index_from_context(section.context)
    if hint is not None and len(rig.gpus) == 1:
        rig.gpus[0].index = hint[0]
        for proc in rig.node.gpu_processes or []:
            proc.gpu_index = hint[0]
        rig.problems.append(f"{source}: line {section.start}: after {hint[1][:80]!r}: its one GPU is GPU {hint[0]}")
        rig.partial_gpu_list = True
    elif hint is None:  # -i N asked for one GPU: the others are not part of what was asked
        smi_query.add_unshown(rig, section.text, source, section.start)
    return Part(section.kind, source, section.start, rig)


def topo_p2p(section: Section, source: str, filename: str) -> Part:
    mode = topo.p2p_mode_hint(section.context, filename)
    return Part(section.kind, source, section.start, topo.parse_topo_p2p(section.text, source, section.start, mode))


def nccl_run(section: Section, source: str, filename: str) -> Part:
    run = nccl.read_nccl(section.text, source, section.start, hint="\n".join(section.context) + "\n" + filename)
    return Part(section.kind, source, section.start, nccl.run_to_rig(run, source), nccl=run)
