"""GA2xx: GPU-to-GPU paths: sockets, host bridges, NVLink, peer-to-peer."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from gpuadvisor import catalog, facts
from gpuadvisor.facts import Finding, Gpu, Rig
from gpuadvisor.rules.engine import Context
from gpuadvisor.rules.helpers import cell, gpu_list, is_nvlink, missing, pairs, subject
from gpuadvisor.rules.nvlink_wiring import unexplained_severity, unused_text, why_up
from gpuadvisor.rules.registry import rule
from gpuadvisor.text import plural

P2P_OK = ("X", "OK")
P2P_MEANING = {
    "CNS": "chipset not supported",
    "GNS": "GPU not supported",
    "TNS": "topology not supported",
    "NS": "not supported",
    "DIS": "disabled (registry key)",
    "U": "unknown",
}


def _pair_label(rig: Rig, i: int, j: int) -> str:
    return f"{rig.gpus[i].index}-{rig.gpus[j].index}"


def _pair_labels(rig: Rig, found: list[tuple[int, int]]) -> list[str]:
    return [_pair_label(rig, i, j) for i, j in found]


def _pairs_finding(ctx: Context, rig: Rig, found: list[tuple[int, int]], message: str, **kw: Any) -> Finding:
    """A finding about GPU pairs (indices into rig.gpus): every GPU of them, named as the finding's subject."""
    gpus = {rig.gpus[i].index for p in found for i in p}
    return ctx.finding(message, gpus=gpus, subject=gpu_list(gpus), **kw)


def _by_code(
    rig: Rig, groups: dict[str, list[tuple[int, int]]], name: Callable[[str], str] = str
) -> tuple[list[tuple[int, int]], dict[str, list[str]], str]:
    """GPU pairs grouped by their matrix code: every pair, the finding's observed value (code -> pair labels, in
    code order) and its text ('PHB 0-1, 2-3; NODE ...', each code as ``name`` words it)."""
    observed = {code: _pair_labels(rig, found) for code, found in sorted(groups.items())}
    text = "; ".join(f"{name(code)} {', '.join(labels)}" for code, labels in observed.items())
    return [p for found in groups.values() for p in found], observed, text


def _pairs_with(rig: Rig, codes: tuple[str, ...]) -> list[tuple[int, int]]:
    return [(i, j) for i, j in pairs(rig) if (cell(rig.topology.matrix, i, j) or "").upper() in codes]


def _matrix_missing(rig: Rig) -> bool:
    n = len(rig.gpus)
    m = rig.topology.matrix
    return len(m) < n or any(len(row) < n for row in m) or any(c == "?" for row in m for c in row)  # ?: not shown


@rule("GA201", "p2p-across-sockets", area="topology", severity="warn")
def p2p_across_sockets(rig: Rig, ctx: Context):
    """GPU pairs that can only reach each other across the CPU sockets' interconnect (topology SYS).

    What it checks
        The nvidia-smi topo -m level of every GPU pair: SYS means the path crosses the SMP interconnect
        between sockets (QPI/UPI, Infinity Fabric) and has no NVLink.
    Why it matters
        Peer-to-peer traffic between such GPUs is slow or impossible (NCCL does not use P2P across sockets by
        default and stages through host memory); collectives spanning both sockets run at the inter-socket
        link's pace. Keep tensor-parallel groups on one socket.
    Threshold
        Any pair at SYS.
    Source
        nvidia-smi topo -m legend (SYS = PCIe + SMP interconnect between NUMA nodes); NCCL documentation,
        NCCL_P2P_LEVEL (default: no P2P across the SMP interconnect;
        docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html).
    How to fix
        Place communicating GPUs on the same socket (CUDA_VISIBLE_DEVICES, or tensor/pipeline groups that
        follow the topology); for heavy GPU-to-GPU traffic prefer NVLink or a single-socket PCIe switch board.
    """
    if len(rig.gpus) < 2:
        return
    partial = _matrix_missing(rig)  # pairs not shown (a cut paste): the pairs shown are judged, the others not
    if not rig.topology.matrix:
        yield ctx.not_checked(missing(rig.topology, "matrix", "GPU topology matrix"))
        return
    sys_pairs = _pairs_with(rig, ("SYS",))
    if partial and not sys_pairs:
        yield ctx.not_checked(missing(rig.topology, "matrix", "GPU topology matrix"))
    # The legend says SYS crosses the interconnect between NUMA nodes; when the same scan puts both GPUs on one
    # NUMA node (a VM's flat virtual topology, or a board whose affinity columns say so), it does not show that.
    numa = [g.numa_node for g in rig.gpus]
    one_node = [(i, j) for i, j in sys_pairs if numa[i] is not None and numa[i] == numa[j]]
    sys_pairs = [p for p in sys_pairs if p not in one_node]
    if one_node:
        labels = _pair_labels(rig, one_node)
        nodes = sorted({n for i, _ in one_node if (n := numa[i]) is not None})
        yield _pairs_finding(
            ctx,
            rig,
            one_node,
            f"{len(one_node)} GPU pair(s) marked SYS whose GPUs are on the same NUMA node "
            f"({', '.join(map(str, nodes))}) "
            f"by the same scan's affinity: not shown to cross CPU sockets: {', '.join(labels)}",
            severity="info",
            observed={"SYS, same NUMA node": labels},
            expected="SYS only between GPUs on different NUMA nodes",
            expected_source="nvidia-smi topo -m legend and its NUMA Affinity column",
            fix="nothing to fix from this evidence; in a VM, the host's real topology decides the P2P path",
        )
    if sys_pairs:
        labels = _pair_labels(rig, sys_pairs)
        known = all(numa[i] is not None and numa[j] is not None for i, j in sys_pairs)
        yield _pairs_finding(
            ctx,
            rig,
            sys_pairs,
            f"{len(sys_pairs)} GPU pair(s) talk across the interconnect between NUMA nodes (topology SYS: the CPU "
            f"sockets' link, no NVLink"
            + ("; the GPUs are on different NUMA nodes" if known else "")
            + f"): {', '.join(labels)}"
            + (" (pairs the paste does not show are not judged)" if partial else ""),
            observed={"SYS": labels},
            expected="NV# (NVLink) or a path within one socket",
            expected_source="nvidia-smi topo -m legend",
            fix="keep communicating GPUs (tensor-parallel groups) on one socket; set CUDA_VISIBLE_DEVICES per socket",
        )


@rule("GA202", "p2p-through-host-bridge", area="topology", severity="info")
def p2p_through_host_bridge(rig: Rig, ctx: Context):
    """GPU pairs whose traffic goes through the CPU's host bridge (topology PHB or NODE) instead of a switch.

    What it checks
        The nvidia-smi topo -m level of every GPU pair: PHB (through one PCIe host bridge) or NODE (across
        host bridges within one NUMA node), with no NVLink.
    Why it matters
        P2P through the CPU's root complex is slower than through a PCIe switch (PIX/PXB) and competes with
        host<->device traffic; some platforms do not support it at all. It is how most workstation boards
        connect GPUs, so it is information, not a fault.
    Threshold
        Any pair at PHB or NODE.
    Source
        nvidia-smi topo -m legend; NCCL_P2P_LEVEL documentation (PHB: "Traffic will go through the CPU";
        docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html).
    How to fix
        Nothing to fix; for GPU-heavy communication choose a board with PCIe switches or NVLink bridges.
    """
    if len(rig.gpus) < 2:
        return
    if not rig.topology.matrix:
        yield ctx.not_checked(missing(rig.topology, "matrix", "GPU topology matrix"))
        return
    found = _pairs_with(rig, ("PHB", "NODE"))
    if _matrix_missing(rig) and not found:  # the pairs shown are judged; none of them is PHB or NODE
        yield ctx.not_checked(missing(rig.topology, "matrix", "GPU topology matrix"))
    if found:
        by_level: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for i, j in found:
            by_level[(cell(rig.topology.matrix, i, j) or "").upper()].append((i, j))
        _, observed, text = _by_code(rig, by_level)
        yield _pairs_finding(
            ctx,
            rig,
            found,
            f"{len(found)} GPU pair(s) communicate through the CPU host bridge: {text}"
            + (" (pairs the paste does not show are not judged)" if _matrix_missing(rig) else ""),
            observed=observed,
            expected="PIX/PXB (PCIe switch) or NV# (NVLink)",
            expected_source="nvidia-smi topo -m legend",
            fix="nothing to fix; a PCIe-switch or NVLink board gives faster GPU-to-GPU paths",
        )


def _nvlink_state(rig: Rig) -> tuple[bool, str | None]:
    """(any NVLink seen, the reason NVLink facts are incomplete or None).

    A complete topology matrix without NV# means no NVLink. Otherwise an empty ``nvlinks`` list with no reason,
    with "not supported" or with "all links are inactive" (nvidia-smi nvlink -s), means the GPU has no active
    NVLink; any other recorded reason (no permission, function not found, not in the source) means we do not
    know.
    """
    if any(is_nvlink(c) for row in rig.topology.matrix for c in row):
        return True, None
    if any(g.active_nvlinks() for g in rig.gpus):
        return True, None
    if rig.topology.matrix and not _matrix_missing(rig):
        return False, None  # a complete topo -m matrix shows NV# for every NVLink-connected pair
    for g in rig.gpus:
        reason = g.why("nvlinks")
        if not g.nvlinks and reason and reason not in (facts.NOT_SUPPORTED, facts.NVLINKS_ALL_INACTIVE):
            return False, f"NVLink state of {g.label}: {reason}"
    return False, None


@rule("GA203", "no-nvlink", area="nvlink", severity="warn", thresholds=("no_nvlink_min_gpus",))
def no_nvlink(rig: Rig, ctx: Context):
    """A rig with several GPUs and no NVLink at all: every GPU-to-GPU byte crosses PCIe.

    What it checks
        With no_nvlink_min_gpus GPUs or more: whether any GPU pair is connected by NVLink (topo -m NV#) or
        any GPU has an active NVLink.
    Why it matters
        Training a large model on several GPUs is communication-bound on PCIe: gradient all-reduce and
        especially tensor parallelism (four collectives per layer) run at PCIe speed, 10-20x below NVLink.
        Data parallelism with large batches and gradient accumulation still scales; tensor parallelism beyond
        2 GPUs rarely pays.
    Threshold
        no_nvlink_min_gpus GPUs or more without any NVLink.
    Source
        Tensor parallelism belongs within an NVLink domain (Megatron-LM paper, Narayanan et al. 2021,
        section 3); NVLink vs PCIe figures: NVIDIA NVLink generations and PCI-SIG per-lane rates.
    How to fix
        Prefer data parallel (DDP/FSDP with gradient accumulation) over tensor parallel on this rig; for large
        models use NVLink-bridged pairs or an SXM (NVSwitch) node.
    """
    n = len(rig.gpus)
    limit = ctx.t("no_nvlink_min_gpus")
    if n < limit:
        return
    seen, unknown = _nvlink_state(rig)
    if seen:
        return
    if unknown:
        yield ctx.not_checked(unknown)
        return
    yield ctx.finding(
        f"{n} GPUs and no NVLink: every GPU-to-GPU transfer crosses PCIe; large-model training will be bound by PCIe",
        gpus=[g.index for g in rig.gpus],
        subject=gpu_list(g.index for g in rig.gpus),
        observed={"gpus": n, "nvlink_pairs": 0},
        expected=f"NVLink between GPUs on rigs of {limit:g}+ GPUs used for large-model training",
        expected_source="tensor parallel within an NVLink domain (Megatron-LM, Narayanan et al. 2021, section 3)",
        fix="use data parallel (DDP/FSDP + gradient accumulation) rather than tensor parallel; for large models pick "
        "an NVLink/NVSwitch node",
    )


def links_not_shown(g: Gpu) -> str | None:
    """Why some of this GPU's NVLinks are not in the source, or None when what it lists is its whole state.

    An import whose paste elides links (``...``, a cut) records the reason under a key starting with "nvlinks"
    in the GPU's ``unavailable`` map while keeping the links it did show; a link listed without a state (error
    counters only) carries its reason in the link's own map. "Not supported" and "all links inactive" are
    facts, not gaps.
    """
    if g.nvlinks:
        for key, reason in g.unavailable.items():
            if key.startswith("nvlinks") and reason not in (facts.NOT_SUPPORTED, facts.NVLINKS_ALL_INACTIVE):
                return reason
        for n in g.nvlinks:
            if n.active is None:
                return f"link {n.link}: {n.why('active') or 'state not recorded'}"
    return None


def _spec_links(g: Gpu) -> tuple[int | None, catalog.GpuSpec | None]:
    spec = catalog.find_gpu(g.name)
    return (spec.nvlink_links if spec else None), spec


def _alone(rig: Rig) -> bool:
    """The only GPU of its host, as far as the source shows: one GPU listed, and it is GPU 0 (a paste of GPU 2 alone
    comes from a host with three or more: no single-GPU VM)."""
    return len(rig.gpus) == 1 and not rig.gpus[0].index


@rule("GA204", "nvlink-link-down", area="nvlink", severity="fail")
def nvlink_link_down(rig: Rig, ctx: Context):
    """A GPU has fewer active NVLinks than its model has, or than its identical peers, or none at all where its peers
    are all joined by NVLink.

    What it checks
        The active NVLinks of each GPU against what its model has (the GPU catalog: 18 on H100/H200/B200 SXM,
        12 on A100 SXM4, 6 on V100 SXM2, 4 on GA102 bridged boards, each with its datasheet) and against the
        most any GPU of the same model in this rig has; on a topology matrix, a GPU with no NV# to any peer
        while its peers are all NV# to each other. Fewer links than the model has is a fault only against what
        says they should be up: GPUs of the model with more, error counts on the inactive link, a board that
        wires every link (NVSwitch baseboards: A100, H100, H200, B200 SXM; the 8-GPU V100 SXM2 cube mesh) or an
        NVSwitch in the scan; without it, info (a two-GPU V100 board joins two of six links). On such boards a
        missing link is a link down (fail), even on every GPU alike; an SXM GPU with no active link at all warns
        only when it is the source's one GPU and GPU 0 (a VM's only GPU, passed through without its NVLinks). On
        bridged PCIe cards a card with no active link beside bridged peers is a missing or unseated bridge, or a
        card without a partner (warn). Links the source does not show (elided, cut, or listed without a state)
        are not judged.
    Why it matters
        NVLink bandwidth is per link: an 18-link H100 with one link down loses 1/18 of its bandwidth and
        NCCL may route around it with an extra hop; a bridged card whose bridge is off falls back to PCIe,
        and a ring or tree collective runs at the pace of its slowest GPU.
    Threshold
        Any shown inactive link, or fewer active links than the model's count or the peers' maximum, with the
        evidence above (else info); a GPU the source names no model for whose every listed link is down (dcgmi
        nvlink -s all "D") warns.
    Source
        NVML nvmlDeviceGetNvLinkState; nvidia-smi nvlink -s shows inactive links; link counts per model: the
        datasheets and architecture whitepapers named in the GPU catalog (each product's
        nvlink_links_source); Azure HPC NHC check_nvlink_status fails a node with an inactive link
        (github.com/Azure/azurehpc-health-checks customTests/azure_gpu_nvlink.nhc), which its issues report failing
        H100 PCIe VMs on links unused by design (12 of 18 wired); boards that wire every link:
        NVIDIA Fabric Manager User Guide, NVIDIA DGX-1 System Architecture whitepaper.
    How to fix
        Reseat the NVLink bridge (PCIe cards) or have the baseboard serviced (SXM); check `nvidia-smi nvlink
        -s` and, on NVSwitch systems, that nvidia-fabricmanager is running.
    """
    by_model: dict[str, list[Gpu]] = defaultdict(list)
    for g in rig.gpus:
        by_model[g.name or "?"].append(g)
    isolated = list(_isolated_in_matrix(rig, ctx))
    by_matrix = {i for f in isolated for i in f.gpus}
    for model, gpus in by_model.items():
        complete = [g for g in gpus if g.nvlinks and links_not_shown(g) is None]
        best = max((len(g.active_nvlinks()) for g in complete), default=0)
        switched = any(n.remote_device_type == "switch" for g in complete for n in g.active_nvlinks())
        for g in gpus:
            model_links, spec = _spec_links(g)
            sxm = spec is not None and spec.form_factor == "sxm"
            gap = links_not_shown(g)
            down = [n.link for n in g.nvlinks if n.active is False]
            active = len(g.active_nvlinks())
            if gap is not None:
                if down:  # peers have more only if they do with every link not shown up
                    hidden = max(model_links or 0, *(len(p.nvlinks) for p in gpus)) - len(g.nvlinks)
                    up = why_up(rig, g, best > active + hidden)
                    yield ctx.finding(
                        f"{subject(g)} NVLink{'s' if len(down) > 1 else ''} {', '.join(str(x) for x in down)} inactive "
                        f"(its other links are not shown: {gap})"
                        + ("" if up else ": the board's wiring or links down; nothing in the source tells which"),
                        severity=("fail" if sxm or best else "warn") if up else unexplained_severity(rig, g),
                        gpus=[g.index],
                        subject=subject(g),
                        observed={"active_links_shown": active, "inactive_links": down},
                        expected={"inactive_links": []},
                        expected_source="every NVLink of a GPU active (nvidia-smi nvlink -s)",
                        fix="reseat the NVLink bridge (PCIe cards) or have the baseboard serviced (SXM); on NVSwitch "
                        "systems check nvidia-fabricmanager",
                    )
                else:
                    yield ctx.not_checked(f"NVLink state not shown for every link: {gap}", gpus=[g.index])
                continue
            if not g.nvlinks:
                reason = g.why("nvlinks")
                if reason and reason not in (facts.NOT_SUPPORTED, facts.NVLINKS_ALL_INACTIVE):
                    if g.index not in by_matrix:
                        yield ctx.not_checked(f"NVLink state: {reason}", gpus=[g.index])
                    continue
                if reason != facts.NVLINKS_ALL_INACTIVE and not best:
                    # no link listed and none on its peers: NVLink not reported (GA203 judges a rig without it)
                    continue
            listed = len(g.nvlinks)
            named = "GPU" if model == "?" else model  # "?": GPUs whose name the source does not show
            want, source, sev, why_text = best, f"the most active NVLinks of any {named} in this rig", None, ""
            if model_links and spec is not None and (g.nvlinks or g.why("nvlinks") == facts.NVLINKS_ALL_INACTIVE):
                # A short listing is "not shown" unless peers of the same model list more (then it is judged
                # against them, as for a GPU the catalog does not know).
                if g.nvlinks and listed < model_links and not down and active == listed and listed >= best:
                    yield ctx.not_checked(
                        f"the source lists {listed} of the {model_links} NVLinks a {spec.name} has: the others not "
                        "shown",
                        gpus=[g.index],
                    )
                    continue
                if sxm and active < model_links:
                    want, source = (
                        max(model_links, best),
                        f"{spec.name}: {model_links} NVLinks ({spec.nvlink_links_source})",
                    )
                    if active == 0:
                        alone = _alone(rig)
                        sev = "warn" if alone else "fail"
                        why_text = ": it is off the NVLink fabric" + (
                            " (or in a VM that does not pass NVLink through)" if alone else ""
                        )
                elif not sxm and 0 < active < model_links and active >= best:
                    want, source, sev = (
                        model_links,
                        f"{spec.name}: {model_links} NVLinks with every bridge fitted ({spec.nvlink_links_source})",
                        "warn",
                    )
                    why_text = ": a bridge is missing or partly seated"
            if want == 0 and spec is None and (own := _all_listed_down(g, active, down)) is not None:
                want, source, sev, why_text = own
            if active >= want or want == 0:
                continue
            if sev is None:
                unbridged = active == 0 and not switched and not sxm
                sev = "warn" if unbridged else "fail"
                if unbridged:
                    why_text = ": its bridge is missing or unseated, or it has no partner card"
            if spec is not None and source.startswith(spec.name):  # the model's count: what says the links are wired
                up = why_up(rig, g, best > active)
                sev, why_text = (sev, why_text) if up else (unexplained_severity(rig, g), unused_text(active, want))
                source += f"; {up}" if up else ""
            who = (
                "it lists"
                if source.startswith(LISTED)
                else f"the {spec.name} has"
                if spec is not None and source.startswith(spec.name)
                else f"other {model} GPUs have"
                if model != "?"
                else "other GPUs (their names not shown) have"
            )
            yield ctx.finding(
                f"{subject(g)} has {plural(active, 'active NVLink')} where {who} {want}"
                + (f" (inactive links: {', '.join(str(x) for x in down)})" if down else "")
                + why_text,
                severity=sev,
                gpus=[g.index],
                subject=subject(g),
                observed={"active_links": active, "inactive_links": down},
                expected={"active_links": want},
                expected_source=source,
                fix="reseat the NVLink bridge (PCIe cards) or have the baseboard serviced (SXM); on NVSwitch systems "
                "check nvidia-fabricmanager",
            )
    yield from isolated


LISTED = "the NVLinks the source lists for it"


def _all_listed_down(g: Gpu, active: int, down: list[int]) -> tuple[int, str, str, str] | None:
    """(links, source, severity, why) when every NVLink a GPU of no known model lists is down and nothing else judges
    it (no peer with a link up): listed Down (not Not Supported), the links exist and none is up, so the GPU reaches
    its peers over PCIe only; a warning, the GPU still runs (a known PCIe card without a bridge is its owner's
    choice: GA203 judges a rig without NVLink)."""
    if not g.nvlinks or active or len(down) != len(g.nvlinks):
        return None
    why = ": every link it lists is down, so it reaches its peers over PCIe only: fitted NVLink bridges are unseated "
    why += "or not working, or the GPU is off its NVLink fabric (a PCIe card with no bridge fitted lists its links "
    why += "down too: nothing to fix then)"
    return len(g.nvlinks), f"{LISTED} (listed as down, not as not supported: present, none up)", "warn", why


def _isolated_in_matrix(rig: Rig, ctx: Context):
    """A GPU with no NV# to any peer while its peers are all NV# to each other, or while other cards of its
    model are bridged in pairs (topo -m: 0-1 NV12, 2-3 NODE is a missing bridge), when its own NVLink facts do
    not already tell (no links listed)."""
    n = len(rig.gpus)
    if n < 3 or _matrix_missing(rig):
        return
    nv = [[is_nvlink(cell(rig.topology.matrix, i, j)) for j in range(n)] for i in range(n)]
    for i, g in enumerate(rig.gpus):
        if g.nvlinks or g.why("nvlinks") == facts.NVLINKS_ALL_INACTIVE:
            continue  # its own link list is judged instead
        others = [j for j in range(n) if j != i]
        if any(nv[i][j] for j in others):
            continue
        joined = [(a, b) for a in others for b in others if a < b and nv[a][b]]
        if not joined:
            continue
        mesh = len(joined) == len(others) * (len(others) - 1) // 2
        if not mesh and any(rig.gpus[x].name != g.name for pair in joined for x in pair):
            continue  # bridged pairs of another model: nothing says this card should have one
        model_links, spec = _spec_links(g)
        if spec is not None and not model_links:
            continue  # a model without NVLink beside NVLink peers: nothing to fix on it
        sxm = spec is not None and spec.form_factor == "sxm"
        codes = sorted({cell(rig.topology.matrix, i, j) or "?" for j in others})
        peers = (
            f"{gpu_list(rig.gpus[j].index for j in others)} are all joined by NVLink"
            if mesh
            else "GPU pair(s) "
            + ", ".join(
                f"{rig.gpus[a].index}-{rig.gpus[b].index} ({cell(rig.topology.matrix, a, b)})" for a, b in joined
            )
            + " are joined by NVLink"
        )
        what = (
            "it is off the NVLink fabric"
            if sxm
            else "its NVLink bridge is missing or unseated, or it has no partner card"
            + ("" if spec else " (or its model has no NVLink: the scan does not name it)")
        )
        yield ctx.finding(
            f"{subject(g)} has no NVLink to any other GPU ({'/'.join(codes)}) while {peers}: {what}",
            severity="fail" if sxm else "warn",
            gpus=[g.index],
            subject=subject(g),
            observed={"nvlink_peers": 0, "levels": codes},
            expected={"nvlink_peers": len(others)},
            expected_source=(
                "nvidia-smi topo -m: its peers are all NV# to each other"
                if mesh
                else "nvidia-smi topo -m: bridged pairs of the same model beside it"
            )
            + (f"; {spec.name}: {model_links} NVLinks ({spec.nvlink_links_source})" if spec and model_links else ""),
            fix="reseat or fit the NVLink bridge (PCIe cards) or have the baseboard serviced (SXM); on NVSwitch "
            "systems check nvidia-fabricmanager",
        )


@rule("GA205", "nvlink-errors", area="nvlink", severity="warn", thresholds=("nvlink_error_max",))
def nvlink_errors(rig: Rig, ctx: Context):
    """An NVLink link has counted replay, recovery or CRC errors.

    What it checks
        The NVLink error counters of every link (replay, recovery, crc_flit, crc_data) against
        nvlink_error_max.
    Why it matters
        Replays and CRC errors mean retransmissions on a marginal link; recovery errors mean the link
        retrained. Both cost bandwidth, and a link with recoveries is a link on its way down.
    Threshold
        Any counter above nvlink_error_max.
    Source
        NVIDIA DCGM PCIe/NVLink plugin default max_nvlink_recovery_errors = 0; Meta GCM NVLink health check
        defaults 0 for CRC, replay and recovery errors (facebookresearch.github.io/gcm, check-dcgmi nvlink).
    How to fix
        Reset the counters (nvidia-smi nvlink -e -r) and watch whether they grow under load; if they do,
        reseat the bridge or have the baseboard serviced.
    """
    limit = ctx.t("nvlink_error_max")
    for g in rig.gpus:
        if g.nvlinks and not any(n.errors for n in g.nvlinks):
            yield ctx.not_checked("NVLink error counters not recorded in this scan", gpus=[g.index])
            continue
        bad = {}
        for n in g.nvlinks:
            over = {k: v for k, v in n.errors.items() if v is not None and v > limit}
            if over:
                bad[n.link] = over
        if bad:
            total = {k: sum(b.get(k, 0) for b in bad.values()) for k in sorted({k for b in bad.values() for k in b})}
            yield ctx.finding(
                f"{subject(g)} NVLink errors on link(s) {', '.join(str(x) for x in sorted(bad))}: "
                + ", ".join(f"{k}={v}" for k, v in total.items()),
                gpus=[g.index],
                subject=subject(g),
                observed={str(k): v for k, v in sorted(bad.items())},
                expected={"max_per_counter": limit},
                expected_source="DCGM max_nvlink_recovery_errors = 0; Meta GCM NVLink thresholds 0",
                fix="reset the counters (nvidia-smi nvlink -e -r) and watch them under load; reseat the bridge or "
                "service the baseboard if they grow",
            )


@rule("GA206", "p2p-not-supported", area="topology", severity="warn")
def p2p_not_supported(rig: Rig, ctx: Context):
    """GPU pairs that cannot read or write each other's memory directly (peer-to-peer not supported).

    What it checks
        The nvidia-smi topo -p2p read and write capability of every GPU pair: anything but OK (CNS chipset,
        GNS GPU, TNS topology not supported, NS, DIS disabled).
    Why it matters
        Without P2P, every GPU-to-GPU transfer is staged through host memory: NCCL falls back to its shared
        memory transport, collectives slow down and the CPU's memory bandwidth becomes the limit. GeForce
        cards such as the RTX 4090 have P2P disabled by the driver.
    Threshold
        Any pair without read or write P2P.
    Source
        nvidia-smi topo -p2p legend; NCCL transports (P2P vs SHM; NCCL_P2P_DISABLE in
        docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html); RTX 4090 owners report no P2P with
        NVIDIA's driver (github.com/NVIDIA/nccl/issues/1127), which is why tinygrad ships a P2P-patched
        open kernel module (github.com/tinygrad/open-gpu-kernel-modules).
    How to fix
        Nothing to change in software on GeForce cards: expect host-staged transfers and prefer data
        parallelism; on data-center cards check the BIOS (ACS/IOMMU settings) and the virtualisation setup.
    """
    if len(rig.gpus) < 2:
        return
    t = rig.topology
    if t.p2p_read is None and t.p2p_write is None:
        yield ctx.not_checked(missing(t, "p2p_read", "P2P capability matrix"))
        return
    bad: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for i, j in pairs(rig):
        codes = {
            c.upper()
            for c in (cell(t.p2p_read, i, j), cell(t.p2p_write, i, j), cell(t.p2p_read, j, i), cell(t.p2p_write, j, i))
            if c
        }
        worst = sorted(codes - set(P2P_OK) - {"U"})
        if worst:
            bad[worst[0]].append((i, j))
    if bad:
        bad_pairs, observed, text = _by_code(rig, bad, lambda code: f"{code} ({P2P_MEANING.get(code, code)})")
        yield _pairs_finding(
            ctx,
            rig,
            bad_pairs,
            f"P2P not supported between {len(bad_pairs)} GPU pair(s): {text}"
            + (f" ({t.unavailable['p2p_read']})" if t.p2p_read and t.unavailable.get("p2p_read") else ""),
            observed=observed,
            expected="OK for every pair",
            expected_source="nvidia-smi topo -p2p r/w",
            fix="expect host-staged GPU-to-GPU transfers (prefer data parallel); on data-center cards check BIOS "
            "ACS/IOMMU settings",
        )
