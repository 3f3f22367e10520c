"""GA101-GA103: PCIe links of each GPU and of every hop on its path to the CPU root port (GA104-GA105, link
errors, are in pcie_errors)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from gpuadvisor.facts import Finding, Gpu, Measurement, Rig
from gpuadvisor.physics import links
from gpuadvisor.rules.engine import Context
from gpuadvisor.rules.helpers import gpu_list, missing, norm, subject
from gpuadvisor.rules.registry import rule

PORTS_ABOVE = ("downstream-port", "root-port")  # ports whose link register describes the link below them
LINK_OWNERS = ("upstream-port", "endpoint", "bridge", "unknown")  # devices whose register is the link above


def _known_min(*values: int | None) -> int | None:
    known = [v for v in values if v is not None]
    return min(known) if known else None


@dataclass
class LinkView:
    """One physical link on a GPU's way to the CPU, with what both of its ends allow."""

    gpu: Gpu
    is_gpu_link: bool
    where: str  # "GPU link" or the BDF of the device below the link
    port_type: str
    parent: str | None  # BDF of the port above the link, when known
    current_gen: int | None
    current_width: int | None
    device_max_gen: int | None  # what the device below the link supports
    device_max_width: int | None
    allowed_gen: int | None  # the lower of both ends' maximum (and NVML's, for the GPU link)
    allowed_width: int | None

    @property
    def subject(self) -> str:
        if self.is_gpu_link:
            return subject(self.gpu)
        above = f" to {self.parent}" if self.parent else ""
        return f"{self.gpu.label} path: {self.port_type} {self.where} (link{above})"

    @property
    def label(self) -> str:
        return (
            f"{subject(self.gpu)}"
            if self.is_gpu_link
            else f"the {self.port_type} {self.where} on {self.gpu.label}'s path"
        )


def link_views(gpu: Gpu) -> list[LinkView]:
    """The GPU's own link first, then each distinct upstream link (switch uplinks), GPU side to CPU side.

    Root and downstream ports are not links of their own here: their link register describes the link below
    them, which the device below already reported; their maxima cap that link's allowed width and generation.
    """
    p = gpu.pcie
    path = p.path
    views: list[LinkView] = []
    ep = path[0] if path else None
    parent = path[1] if len(path) > 1 and path[1].port_type in PORTS_ABOVE else None
    current_gen = p.current_gen if p.current_gen is not None else (ep.current_gen if ep else None)
    current_width = p.current_width if p.current_width is not None else (ep.current_width if ep else None)
    dev_gen = p.gpu_max_gen if p.gpu_max_gen is not None else (ep.max_gen if ep else None)
    dev_width = ep.max_width if ep and ep.max_width is not None else p.max_width
    views.append(
        LinkView(
            gpu=gpu,
            is_gpu_link=True,
            where="GPU link",
            port_type="endpoint",
            parent=parent.bdf if parent else None,
            current_gen=current_gen,
            current_width=current_width,
            device_max_gen=dev_gen,
            device_max_width=dev_width,
            allowed_gen=_known_min(p.max_gen, dev_gen, parent.max_gen if parent else None),
            allowed_width=_known_min(p.max_width, dev_width, parent.max_width if parent else None),
        )
    )
    for i in range(1, len(path)):
        hop = path[i]
        if hop.port_type not in LINK_OWNERS:
            continue
        up = path[i + 1] if i + 1 < len(path) and path[i + 1].port_type in PORTS_ABOVE else None
        if hop.current_gen is None and hop.current_width is None:
            continue  # a host bridge or a device without a link register: nothing to judge
        views.append(
            LinkView(
                gpu=gpu,
                is_gpu_link=False,
                where=hop.bdf,
                port_type=hop.port_type,
                parent=up.bdf if up else None,
                current_gen=hop.current_gen,
                current_width=hop.current_width,
                device_max_gen=hop.max_gen,
                device_max_width=hop.max_width,
                allowed_gen=_known_min(hop.max_gen, up.max_gen if up else None),
                allowed_width=_known_min(hop.max_width, up.max_width if up else None),
            )
        )
    return views


# NVIDIA's P-state classes (NVAPI reference, GPU performance states): P0/P1 maximum performance, P2/P3
# balanced performance-power, P8 basic video playback, P12 minimum idle power.
WORKING_PSTATE_MAX = 3
IDLE_PSTATE_MIN = 8


def gpu_is_idle(gpu: Gpu) -> bool | None:
    """Whether the GPU was idle when its link was read: True, False (working), or None (unknown).

    True: NVML's GPU-idle clocks-event reason, or a power-saving performance state (P8 or lower power: idle
    GPUs sit at P8). False: no idle reason while in a working state (P0-P3). Without the performance state a
    missing idle reason proves nothing: NVML says that reason "may be removed in a later release", and idle
    A40s report SW Power Cap in its place.
    """
    reasons = gpu.clocks_event_reasons
    if reasons is not None and any("idle" in norm(r) for r in reasons):
        return True
    ps = gpu.performance_state
    if ps is None:
        return None
    if ps >= IDLE_PSTATE_MIN:
        return True
    if ps <= WORKING_PSTATE_MAX and reasons is not None:
        return False
    return None


def _pstate(gpu: Gpu) -> str:
    return f" (P{gpu.performance_state})" if gpu.performance_state is not None else ""


def slot_known(rig: Rig, pos: int) -> bool:
    """Whether the GPU link's maximum includes its slot's (port above it), or is the card's own alone.

    NVML's maximum ("possible with this device and system") and a path with the port above the GPU include
    the slot; an ``lspci -vv -s <GPU>`` import has only the card's LnkCap.
    """
    gpu = rig.gpus[pos]
    path = gpu.pcie.path
    if len(path) > 1 and path[1].port_type in PORTS_ABOVE:
        return True
    # lspci without the port above (a fragment grepped out of context: no path at all) shows the card's LnkCap only
    return not rig.origins.get(f"gpus[{pos}].pcie.max_width", "").endswith("(lspci -vv)")


_NO_SLOT = " (its slot's maximum is not in this scan: lspci of the GPU alone)"


def _slot(width: int) -> str:
    """Where a card that should train at x``width`` belongs: "an x16 slot", "a slot wired for x8 or more"."""
    return "an x16 slot" if width >= 16 else f"a slot wired for x{width} or more"


def _copy_measurements(rig: Rig, gpu: Gpu) -> Iterator[Measurement]:
    for m in rig.measurements:
        if (
            m.kind in ("h2d", "d2h")
            and m.gpus == [gpu.index]
            and m.memory != "pageable"
            and not m.concurrent
            and m.value_gbps is not None
            and m.status in ("ok", "partial")
        ):
            yield m


LSPCI_DOWNGRADED = (
    "lspci marks a LnkSta value '(downgraded)' when it is below the device's own LnkCap "
    "(pciutils ls-caps.c, link_compare)"
)


def _marked_downgraded(ctx: Context, gpu: Gpu, what: str, now: str) -> Finding:
    """lspci's own "(downgraded)" marker where the LnkCap line is not shown: below the card's capability by
    how much, and whether the slot allows more, is not shown. Width: warn (lanes are not a power-saving
    state); speed: info (idle GPUs lower their generation)."""
    width = what == "width"
    return ctx.finding(
        f"{subject(gpu)} link {what} {now} is marked (downgraded) by lspci: it trained below the card's own "
        f"maximum; the maximum (LnkCap) and the slot are not shown"
        + (
            ""
            if width
            else "; idle GPUs lower their PCIe speed to save power, run gpuadvisor bench to see it under load"
        ),
        severity="warn" if width else "info",
        gpus=[gpu.index],
        subject=subject(gpu),
        observed={f"current_link_{'width' if width else 'gen'}": now, "lspci": "downgraded"},
        expected={"max_link_width" if width else "max_link_gen": None},
        expected_source=LSPCI_DOWNGRADED,
        fix=(
            f"paste the full lspci -vv -s {gpu.bus_id or 'BUS_ID'} (LnkCap) and the port above it; "
            + (
                "reseat the card or move it to an x16 slot if the slot is wider"
                if width
                else "check the link under load; if it stays low, set the slot's PCIe generation in the BIOS"
            )
        ),
    )


@rule("GA101", "pcie-link-downgraded", area="pcie", severity="fail")
def pcie_link_downgraded(rig: Rig, ctx: Context):
    """A GPU's PCIe link, or a switch uplink on its path, runs with fewer lanes than both its ends support.

    What it checks
        For every GPU: the current link width of the GPU's own link (NVML, or sysfs current_link_width)
        against the lower of the GPU's maximum width and its slot's (the port above it); then the same for
        every PCIe switch uplink between the GPU and the CPU root port (sysfs, walking the parent bridges).
    Why it matters
        Lanes do not come back by themselves: a link that trained at x8 where x16 is possible halves every
        host<->device copy and every P2P transfer routed over it, at idle and under load. It is the classic
        symptom of a badly seated card, a damaged riser or a slot wired for fewer lanes than it looks.
    Threshold
        Any width below the allowed maximum is a fault (no tolerance). A width drop, unlike a generation
        drop, is not a power-saving state.
    Source
        PCI-SIG base specification (link width negotiation; LnkCap vs LnkSta); NVIDIA DCGM's PCIe plugin
        fails a GPU below min_pci_width (docs.nvidia.com/datacenter/dcgm/latest/reference/diagnostics/
        plugins/pcie.html); nvidia-smi reports current vs maximum width (pcie.link.width.current/max).
    How to fix
        Power off, reseat the card (and its riser), move it to a slot wired x16, check the BIOS lane
        bifurcation setting for that slot; if a switch uplink is narrow, check the switch board's cabling.
    """
    for pos, gpu in enumerate(rig.gpus):
        views = link_views(gpu)
        first = views[0]
        if first.current_width is not None and first.allowed_width is None and "width" in gpu.pcie.downgraded:
            yield _marked_downgraded(ctx, gpu, "width", f"x{first.current_width}")
            continue
        if first.current_width is None or first.allowed_width is None:
            yield ctx.not_checked(missing(gpu.pcie, "current_width", "PCIe link width"), gpus=[gpu.index])
            continue
        for v in views:
            if v.current_width is None or v.allowed_width is None or v.current_width >= v.allowed_width:
                continue
            where = "runs" if v.is_gpu_link else "has a switch uplink that runs"
            both = not v.is_gpu_link or slot_known(rig, pos)
            support = (
                f"its slot and card support x{v.allowed_width}"
                if both
                else f"the card supports x{v.allowed_width}{_NO_SLOT}: a fault, or a slot wired for fewer lanes"
            )
            yield ctx.finding(
                f"{subject(gpu)} {where} at x{v.current_width} where {support}"
                f" (current_link_width={v.current_width}, max_link_width={v.allowed_width})"
                + ("" if v.is_gpu_link else f" at {v.where}"),
                severity=None if both else "warn",
                gpus=[gpu.index],
                subject=v.subject,
                observed={"current_link_width": v.current_width},
                expected={"max_link_width": v.allowed_width},
                expected_source="the lower of the device's and the port's maximum link width (NVML / nvidia-smi Link "
                "Width Max, sysfs max_link_width, lspci LnkCap)",
                fix=f"reseat the card or move it to {_slot(v.allowed_width)}; check the riser and the slot's BIOS "
                "bifurcation setting"
                if v.is_gpu_link
                else "check the PCIe switch board's uplink cable and seating",
            )


@rule("GA102", "pcie-gen-below-max", area="pcie", severity="info", thresholds=("bandwidth_warn_ratio",))
def pcie_gen_below_max(rig: Rig, ctx: Context):
    """A PCIe link runs below the generation both of its ends support.

    What it checks
        The current link generation of each GPU's link and of each switch uplink on its path, against the
        lower of both ends' maximum generation. The severity depends on the evidence:
        info when the GPU is idle (or its state is unknown) and nothing was measured; warn when the GPU was
        working (no GPU-idle clocks reason and performance state P0-P3), or the slow link is a switch
        uplink (these do not normally down-clock); fail when a host<->device copy measured on that GPU
        stayed below bandwidth_warn_ratio of what the link gives at its maximum generation, i.e. the link
        stayed slow under load. A GPU at P8 or a lower-power state (where idle GPUs sit) counts as idle;
        a missing idle reason alone does not make a GPU busy (NVML: that reason "may be removed in a
        later release").
    Why it matters
        An idle NVIDIA GPU lowers its PCIe generation to save power and raises it again under load: that
        alone is harmless. A link that stays at a lower generation under load halves (Gen4 -> Gen3) or
        worse every host<->device transfer.
    Threshold
        Generation below the allowed maximum; under-load confirmation uses bandwidth_warn_ratio of the
        copy bandwidth expected at the maximum generation (PCI-SIG per-lane rate x width x 0.85 copy efficiency).
    Source
        NVIDIA nvidia-smi documentation: "The current link generation and width. These may be reduced when
        the GPU is not in use." (nvidia-smi(1) manual, GPU Link Info; --help-query-gpu says the same of
        pcie.link.gen.current); nvidia-smi(1), Performance State: "States range from P0 (maximum
        performance) to P12 (minimum performance)"; NVIDIA NVAPI reference, GPU performance states (P0/P1
        maximum, P2/P3 balanced performance-power, P8 basic video playback, P12 minimum idle power);
        NVML nvmlClocksEventReasonGpuIdle
        (docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html); PCI-SIG base specification
        for the per-generation transfer rates.
    How to fix
        Run `gpuadvisor bench` (or scan --bench) to see the link under load. If it stays low: set the slot
        to the right generation (or Auto) in the BIOS, reseat the card and riser, replace a riser that is not
        rated for the generation, update the BIOS/firmware of the board or switch.
    """
    warn_ratio = ctx.t("bandwidth_warn_ratio")
    idle_drops: dict[tuple, list[Gpu]] = {}  # info findings of GPU links, grouped: one line for ten idle GPUs
    for pos, gpu in enumerate(rig.gpus):
        views = link_views(gpu)
        if views[0].current_gen is not None and views[0].allowed_gen is None and "speed" in gpu.pcie.downgraded:
            yield _marked_downgraded(ctx, gpu, "speed", f"Gen{views[0].current_gen}")
            continue
        if views[0].current_gen is None or views[0].allowed_gen is None:
            yield ctx.not_checked(missing(gpu.pcie, "current_gen", "PCIe link generation"), gpus=[gpu.index])
            continue
        slow = [
            v
            for v in views
            if v.current_gen is not None and v.allowed_gen is not None and v.current_gen < v.allowed_gen
        ]
        if not slow:
            continue
        exp = links.expected_copy_gbps(gpu, at_max=True)
        under_load = None
        exp_gbps = exp[0] if exp is not None else 0.0
        if exp is not None:
            for m in _copy_measurements(rig, gpu):
                if m.value_gbps is not None and m.value_gbps < warn_ratio * exp[0]:
                    under_load = m
                    break
        idle = gpu_is_idle(gpu)
        for v in slow:
            if under_load is not None:
                sev = "fail"
                why = (
                    f"and it stayed slow under load: {under_load.kind} measured {under_load.value_gbps:.1f} GB/s, "
                    f"below {warn_ratio:g} x {exp_gbps:.1f} GB/s expected at Gen{v.allowed_gen}"
                )
            elif not v.is_gpu_link:
                sev = "warn"
                why = (
                    "on a switch uplink, which does not lower its generation to save power; confirm with gpuadvisor "
                    "bench"
                )
            elif idle is False:
                sev = "warn"
                why = f"while the GPU was not idle{_pstate(gpu)}; confirm under load with gpuadvisor bench"
            else:
                sev = "info"
                why = (
                    f"while the GPU was idle{_pstate(gpu)}: idle GPUs lower their PCIe generation to save power"
                    if idle
                    else "(GPU idle state unknown: idle GPUs lower their PCIe generation to save power)"
                ) + "; run gpuadvisor bench to see it under load"
            ends = "both ends support" if not v.is_gpu_link or slot_known(rig, pos) else "the GPU supports"
            if sev == "info" and v.is_gpu_link:
                idle_drops.setdefault((v.current_gen, v.allowed_gen, ends, idle, why), []).append(gpu)
                continue
            yield _gen_finding(
                ctx,
                v.label,
                v.subject,
                [gpu.index],
                v.current_gen,
                v.allowed_gen,
                ends,
                idle,
                why,
                sev,
                under_load.value_gbps if under_load else None,
            )
    for (cur, allowed, ends, idle, why), gpus in idle_drops.items():
        one = len(gpus) == 1
        label = subject(gpus[0]) if one else gpu_list(g.index for g in gpus)
        if not one:
            ends = ends.replace("the GPU supports", "the GPUs support")
            why = why.replace("the GPU was idle", "the GPUs were idle").replace(
                "GPU idle state", "the GPUs' idle state"
            )
        yield _gen_finding(
            ctx,
            label,
            label,
            [g.index for g in gpus],
            cur,
            allowed,
            ends,
            idle,
            why,
            "info",
            None,
            verb="runs" if one else "run",
        )


def _gen_finding(
    ctx: Context,
    label: str,
    subj: str,
    gpus: list[int],
    cur: int | None,
    allowed: int | None,
    ends: str,
    idle: bool | None,
    why: str,
    sev: str,
    measured: float | None,
    verb: str = "runs",
):
    return ctx.finding(
        f"{label} {verb} at PCIe Gen{cur} where {ends} Gen{allowed}"
        + ("" if ends.startswith("both") else _NO_SLOT)
        + f" (current_link_gen={cur}, max_link_gen={allowed}) {why}",
        gpus=gpus,
        subject=subj,
        observed={"current_link_gen": cur, "gpu_idle": idle, "measured_gbps": measured},
        expected={"max_link_gen": allowed},
        expected_source="the lower of the device's and the port's maximum link generation (NVML / nvidia-smi PCIe "
        "Generation Max, sysfs max_link_speed, lspci LnkCap)",
        fix="if it stays low under load: set the slot to the right PCIe generation (or Auto) in the BIOS, reseat the "
        "card and riser",
        severity=sev,
    )


# GA103's two limits of the slot (or platform), width first and the generation only when the width is whole:
# (the GPU's own maximum, what the link allows, the message after "supports", observed key,
# expected key, expected source, fix, severity: None for the rule's own).
_SLOT_LIMITS = (
    (
        "device_max_width",
        "allowed_width",
        "x{device} but its slot allows only x{allowed} (gpu_max_link_width={device}, slot_max_link_width={allowed}): "
        "half or less of its host bandwidth is available",
        "slot_max_link_width",
        "gpu_max_link_width",
        "the GPU's own maximum link width (sysfs max_link_width of the GPU)",
        "move the GPU to a slot wired for all its lanes, or accept the lower host bandwidth",
        None,
    ),
    (
        "device_max_gen",
        "allowed_gen",
        "PCIe Gen{device} but the platform allows Gen{allowed} (gpu_max_link_gen={device}, max_link_gen={allowed})",
        "max_link_gen",
        "gpu_max_link_gen",
        "NVML maximum PCIe generation of the GPU alone (nvmlDeviceGetGpuMaxPcieLinkGeneration)",
        "check the BIOS PCIe generation setting for the slot; otherwise the platform is the limit",
        "info",
    ),
)


@rule("GA103", "pcie-slot-limits-gpu", area="pcie", severity="warn")
def pcie_slot_limits_gpu(rig: Rig, ctx: Context):
    """The slot (or platform) offers fewer lanes, or an older generation, than the GPU supports.

    What it checks
        The GPU's own maximum link width and generation (sysfs max_link_width of the GPU, NVML's maximum
        generation of the GPU alone) against what the port above it allows (the root or switch downstream
        port's maximum, and NVML's "maximum with this device and system"). Narrower: warn. Older
        generation only: info.
    Why it matters
        This is not a failure of the link (it trained at everything the slot offers), but the GPU cannot use
        its full host bandwidth: an x16 card in an x8 slot gets half of its host<->device bandwidth, a Gen5
        card on a Gen4 platform half of what it could.
    Threshold
        Any difference between the GPU's own maximum and the link's allowed maximum.
    Source
        NVML nvmlDeviceGetMaxPcieLinkWidth/Generation ("possible with this device and system", e.g. an x16
        device on an x8 bus reports x8) vs nvmlDeviceGetGpuMaxPcieLinkGeneration (the GPU alone); PCI-SIG
        LnkCap of both ends.
    How to fix
        Move the GPU to a slot wired for all its lanes (check the board manual: slots shared with M.2 or
        other slots drop to x8), or accept the lower host bandwidth knowingly.
    """
    for gpu in rig.gpus:
        v = link_views(gpu)[0]
        if v.device_max_width is None or v.allowed_width is None:
            yield ctx.not_checked(missing(gpu.pcie, "max_width", "maximum PCIe link width"), gpus=[gpu.index])
            continue
        for dev_attr, allowed_attr, text, key, max_key, source, fix, severity in _SLOT_LIMITS:
            device, allowed = getattr(v, dev_attr), getattr(v, allowed_attr)
            if device is not None and allowed is not None and device > allowed:
                yield ctx.finding(
                    f"{subject(gpu)} supports {text.format(device=device, allowed=allowed)}",
                    gpus=[gpu.index],
                    subject=v.subject,
                    observed={key: allowed},
                    expected={max_key: device},
                    expected_source=source,
                    fix=fix,
                    severity=severity,
                )
                break
