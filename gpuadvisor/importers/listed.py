"""A GPU named on a listing line (``GPU N: NAME``, ``Device N: NAME``) that may be the paste's cut last line; the GPUs
a tool's count line says are there but the paste does not show."""

from __future__ import annotations

from gpuadvisor import facts
from gpuadvisor.facts import Gpu


def listed_gpu(index: int, name: str | None, before: list[Gpu], lineno: int, last: bool) -> Gpu:
    """GPU ``index`` named ``name`` on line ``lineno``. On the paste's last line (``last``) of a listing that the
    tool always follows with more lines, the paste was cut there and the name may be a stub: it is shown only as a
    name an earlier line of the listing gave whole, else it is not shown."""
    if not last or name is None or any(g.name == name for g in before):
        return Gpu(index=index, name=name)
    gpu = Gpu(index=index)
    gpu.unavailable["name"] = f"{facts.ELIDED} (line {lineno} ends the paste inside the GPU listing: may be cut short)"
    return gpu


def add_counted(rig: facts.Rig, count: int, said: str, shown_as: str) -> None:
    """The GPUs a count line (nvidia-smi -q's "Attached GPUs : 8", dcgmi discovery's "8 GPUs found.") says are there
    beyond those shown: numbered after them, no fact of theirs known (a GPU not shown is not a GPU lost). Only when
    those shown are the tool's first ones, 0 to N-1. ``said``: the line's place and words, for the note;
    ``shown_as``: what was shown ("record(s) shown")."""
    shown = len(rig.gpus)
    if not 0 < shown < count or sorted(g.index for g in rig.gpus) != list(range(shown)):
        return
    rest = list(range(shown, count))
    rig.gpus += [Gpu(index=i) for i in rest]
    rig.problems.append(
        f"{said} but {shown} {shown_as}: GPU(s) {', '.join(map(str, rest))} counted, their facts not shown"
    )
