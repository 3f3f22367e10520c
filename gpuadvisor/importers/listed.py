"""A GPU named on a listing line (``GPU N: NAME``, ``Device N: NAME``) that may be the paste's cut last line."""

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
