"""The storage section of the HTML report: the rows gpuadvisor.render.text.storage reads, as a table."""

from __future__ import annotations

from typing import Any

from gpuadvisor.advice_model import checkpoint_plan
from gpuadvisor.facts import Rig
from gpuadvisor.render.text.storage import cache_line, checkpoint_line, storage_rows


def html_view(rig: Rig) -> dict[str, Any] | None:
    """What the HTML report's storage section shows (the template escapes it); None without storage facts."""
    if not rig.storage.paths:
        return None
    notes = [line for line in (cache_line(rig),) if line]
    plan = checkpoint_plan(rig.advice)
    if plan is not None:
        notes.append(checkpoint_line(plan))
    return {"paths": storage_rows(rig), "notes": notes}
