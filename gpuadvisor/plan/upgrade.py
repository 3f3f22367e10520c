"""Upgrading what the buyer owns: the owned machine as it is (zero cost: nothing to buy), and the same machine
with cards added (``--add 2x rtx-3090``), priced as the cards plus the platform changes they need: a second
power supply when the power budget outgrows the owned one, risers and an open frame for cards beyond the CPU's
slots, a workstation platform when the board has no slot left for them. Selling the owned cards to buy another
build is priced by the other builds (owned.apply_owned), so the three are compared on one basis."""

from __future__ import annotations

import dataclasses
from typing import Any

from gpuadvisor.errors import InputError
from gpuadvisor.plan.build import Build, load_build, pace_card

# Platform changes, assumed (no public list price read): give yours with [price] in an owned build file.
PSU_STEP_W = 1600.0
PSU_USD = 400.0  # a 1600 W ATX PSU and an add2psu adapter
RISER_USD = 100.0  # a PCIe 4.0 riser cable per card beyond the CPU-attached slots
OPEN_FRAME_USD = 150.0  # an open mining-style frame: four double-width cards do not fit a tower
WORKSTATION = "4x4090-tr-pro"  # the platform a board with no slot left moves to: its CPU, board, RAM, PSUs


def owned_machine(ref: str | None, have: tuple[tuple[str, int], ...]) -> Build | None:
    """The machine the buyer owns: a build file (or built-in build) given to --have; with only GPUs given, the
    built-in build of exactly those GPUs (its platform assumed owned too), else None."""
    if ref is not None:
        b = load_build(ref)
        if b.rent:
            raise InputError(f"--have {ref}: a rented build is not owned: give the machine you own")
        return dataclasses.replace(b, name=f"owned:{b.name}", title=f"your {b.title} (owned, as it is)", owned=True)
    if len(have) != 1:
        return None
    from gpuadvisor.catalog.platforms import resolve_gpu
    from gpuadvisor.plan.build import builtin_builds

    gid, n = have[0]
    same = [b for b in builtin_builds() if not b.rent and not b.mixed and b.count == n and b.nodes == 1 and b.cpu]
    exact = [b for b in same if b.gpu.id == gid]
    if not exact:  # the platform of a built-in build of as many cards, with the owned cards in it
        same = [b for b in same if b.cpu is not None and b.cpu.kind == "desktop"] or same
        if not same:
            return None
        g = resolve_gpu(gid, "--have")
        b = dataclasses.replace(same[0], gpu=g, fabric="none", nvlink_links=None)
        title = f"{n}x {g.name} in {same[0].title.split(', ', 1)[-1]}"
    else:
        b, title = exact[0], exact[0].title
    return dataclasses.replace(
        b,
        name=f"owned:{n}x{gid}",
        title=f"your {title} (owned, as it is; platform assumed as built-in {b.name}'s)",
        owned=True,
    )


def upgraded(base: Build, add: tuple[tuple[Any, int], ...], prices: Any) -> Build:
    """``base`` with the cards ``add`` ((GpuSpec, count), ...) added and the platform changes they need."""
    from gpuadvisor.plan.rigspec import lane_split
    from gpuadvisor.power import power_budget

    kinds: dict[str, tuple[Any, int]] = {g.id: (g, n) for g, n in base.kinds}
    for g, n in add:
        kinds[g.id] = (g, kinds[g.id][1] + n if g.id in kinds else n)
    mix = tuple(kinds.values())
    count = sum(n for _, n in mix)
    added = " + ".join(f"{n}x {g.name}" for g, n in add)
    b = dataclasses.replace(
        base,
        name=f"upgrade:{base.name.removeprefix('owned:')}+" + "+".join(f"{n}x{g.id}" for g, n in add),
        title=f"your {base.title.removeprefix('your ').split(' (owned')[0]} + {added} (upgrade)",
        gpu=pace_card(g for g, _ in mix),
        count=count,
        mix=mix if len(mix) > 1 else (),
        fabric="none" if len(mix) > 1 else base.fabric,
        slots=None,
        owned=True,
        extra_cost=[],
        rig_description=None,
        layout="direct" if base.layout == "given" else base.layout,
    )
    for g, n in add:
        ref = prices.gpu.get(g.id)
        if ref is None:
            raise InputError(f"--add {n}x {g.id}: no reference price for {g.name}: give one with --prices")
        b.extra_cost.append((ref.usd * n, f"{n} x US${ref.usd:,.0f} {g.name} ({ref.label()}: {ref.source})"))
    if b.cpu is not None and not lane_split(b).buildable:
        _workstation(b, prices)
    elif b.cpu is not None and b.cpu.kind == "desktop" and count > b.cpu.gpu_slots:
        extra = count - b.cpu.gpu_slots
        b.extra_cost.append(
            (
                extra * RISER_USD + OPEN_FRAME_USD,
                f"{extra} x US${RISER_USD:,.0f} riser + US${OPEN_FRAME_USD:,.0f} open frame (assumed: cards beyond "
                f"the {b.cpu.gpu_slots} CPU-attached slots sit in chipset slots at x4)",
            )
        )
        b.chassis = "open frame with riser cables"
    cpu_w = b.cpu.tdp_w if b.cpu else None
    need = power_budget([g.tdp_w or 0.0 for g in b.cards], [g.id for g in b.cards], cpu_w, b.sockets).psu_needed_w
    have_w = float(b.psu_watts or 0.0)
    if need and need > have_w:
        more = -(-(need - have_w) // PSU_STEP_W)
        b.psu_watts = have_w + more * PSU_STEP_W
        psus = (b.psus if b.chassis and "PSU" in b.chassis else 1) + int(more)
        b.chassis = f"{b.chassis or 'case'}; {psus} PSUs"
        b.extra_cost.append(
            (
                more * PSU_USD,
                f"{more:g} x US${PSU_USD:,.0f} added {PSU_STEP_W:,.0f} W PSU (assumed: the power budget needs "
                f"{need:,.0f} W, the owned supply gives {have_w:,.0f} W)",
            )
        )
    return b


def _workstation(b: Build, prices: Any) -> None:
    """A board with no slot left for the cards: the workstation platform of the built-in build, bought."""
    ws = load_build(WORKSTATION)
    cpu = prices.cpu.get(ws.cpu.id) if ws.cpu else None
    b.cpu, b.sockets, b.ram_gib, b.psu_watts, b.chassis = ws.cpu, ws.sockets, ws.ram_gib, ws.psu_watts, ws.chassis
    b.extra_cost.append(
        (
            float(ws.price["platform_usd"]) + (cpu.usd if cpu else 0.0),
            f"a new platform: the owned board has no slot left for {b.count} GPUs: "
            + (f"US${cpu.usd:,.0f} {ws.cpu.name if ws.cpu else ''} ({cpu.label()}) + " if cpu else "")
            + f"US${ws.price['platform_usd']:,.0f} ({ws.price.get('platform_note', 'assumed')}); the old platform "
            "is not sold here",
        )
    )


def parse_add(items: tuple[str, ...]) -> tuple[tuple[Any, int], ...]:
    from gpuadvisor.plan.build import parse_gpu_kinds

    return parse_gpu_kinds(list(items), "--add") if items else ()
