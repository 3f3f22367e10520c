"""What the buyer already owns (``--have 2x rtx-3090``): the owned GPUs a build uses cost nothing; those it does
not use are sold (their used price less the cost of selling), so "add two cards" is priced as the cards and the
platform it needs, and "sell and replace" is compared with it on the same basis."""

from __future__ import annotations

import re
from typing import Any

from gpuadvisor.errors import InputError
from gpuadvisor.plan.horizon import SELLING_COST


def parse_have(items: tuple[str, ...]) -> tuple[tuple[str, int], ...]:
    """``2x rtx-3090`` (or ``rtx-3090``, one card) -> ((catalog id, count), ...); one line if not understood."""
    from gpuadvisor.catalog.platforms import resolve_gpu

    out: dict[str, int] = {}
    for item in items:
        m = re.fullmatch(r"\s*(?:(\d{1,3})\s*x\s*)?(.+?)\s*", item)
        if not m or not m[2]:
            raise InputError(f"--have {item!r}: expected GPUs you own as NxGPU, e.g. 2x rtx-3090")
        n = int(m[1] or 1)
        if not 1 <= n <= 64:
            raise InputError(f"--have {item!r}: 1 to 64 GPUs")
        gid = resolve_gpu(m[2], f"--have {item!r}").id
        out[gid] = out.get(gid, 0) + n
    return tuple(out.items())


def apply_owned(c: Any, b: Any, prices: Any, have: tuple[tuple[str, int], ...]) -> None:
    """Take the owned GPUs out of a bought build's price (in place): those it uses at zero cost (their reference
    price subtracted), the others sold at their used price less the selling cost."""
    from gpuadvisor.plan.costs import gpu_class

    if not have or b.rent or c.purchase_usd is None:
        return
    parts: list[str] = []
    in_build = {g.id: n * b.nodes for g, n in b.kinds}
    for gid, n in have:
        ref = prices.gpu.get(gid)
        used = min(n, in_build.get(gid, 0))
        if used:
            given = b.price.get("gpu_usd") if not b.mixed else None
            unit = float(given or (ref.usd if ref else 0.0))
            if not unit:
                c.notes.append(f"owned {gid}: no reference price to take out of this build's price")
            else:
                c.purchase_usd -= used * unit
                parts.append(f"- {used} x US${unit:,.0f} for the {used} owned {gid} it uses (zero cost)")
        sold = n - used
        if sold and ref is not None:
            fee, _ = SELLING_COST[gpu_class(gid)]
            value = ref.usd * (1 - fee)
            c.purchase_usd -= sold * value
            parts.append(
                f"- {sold} x US${value:,.0f} selling the owned {gid} it does not use (US${ref.usd:,.0f} "
                f"{ref.label()} less a {fee:.1%} selling cost)"
            )
        elif sold:
            c.notes.append(f"owned {gid}: no reference price: its sale is not counted")
    if parts:
        c.purchase_usd = max(c.purchase_usd, 0.0)
        c.purchase_basis = f"{c.purchase_basis} " + " ".join(parts)
