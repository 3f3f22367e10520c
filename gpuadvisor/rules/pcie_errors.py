"""GA104-GA105: errors on a GPU's PCIe link: replays and AER-reported errors."""

from __future__ import annotations

from gpuadvisor.facts import Rig
from gpuadvisor.rules.engine import Context
from gpuadvisor.rules.helpers import missing, subject
from gpuadvisor.rules.registry import rule


@rule("GA104", "pcie-replay-errors", area="pcie", severity="warn", thresholds=("pcie_replay_max",))
def pcie_replay_errors(rig: Rig, ctx: Context):
    """A GPU's PCIe link has retransmitted many packets (replay counter).

    What it checks
        NVML's PCIe replay counter of each GPU against pcie_replay_max.
    Why it matters
        Every replay is a packet the link had to send again after a CRC error: a rising counter means a
        marginal link (riser, slot, signal integrity) that costs bandwidth and can end in the GPU falling off
        the bus (Xid 79).
    Threshold
        pcie_replay_max replays (NVML counts since the driver loaded; DCGM allows that many during one
        diagnostic run, so on a long-running node this is stricter: check whether the count still rises).
    Source
        NVIDIA DCGM PCIe plugin default max_pcie_replays = 80 ("maximum PCIe replays allowed per device while
        the plugin runs"); NVML nvmlDeviceGetPcieReplayCounter.
    How to fix
        Reseat the card and riser, avoid riser cables not rated for the PCIe generation, or lower the slot's
        generation in the BIOS; watch whether the counter keeps rising under load.
    """
    limit = ctx.t("pcie_replay_max")
    for gpu in rig.gpus:
        n = gpu.pcie.replay_counter
        if n is None:
            yield ctx.not_checked(missing(gpu.pcie, "replay_counter", "PCIe replay counter"), gpus=[gpu.index])
            continue
        if n > limit:
            yield ctx.finding(
                f"{subject(gpu)} PCIe replay counter is {n} since the driver loaded (above {limit:g}): the link is "
                "retransmitting packets; see whether it keeps rising under load",
                gpus=[gpu.index],
                subject=subject(gpu),
                observed={"replay_counter": n},
                expected={"replay_counter_max": limit},
                expected_source="DCGM PCIe plugin default max_pcie_replays = 80",
                fix="reseat the card and its riser; use a riser rated for the PCIe generation or lower the slot's "
                "generation",
            )


@rule("GA105", "pcie-aer-errors", area="pcie", severity="warn", thresholds=("pcie_aer_correctable_max",))
def pcie_aer_errors(rig: Rig, ctx: Context):
    """A device on a GPU's PCIe path has logged uncorrectable, or many correctable, AER errors.

    What it checks
        The Advanced Error Reporting totals Linux keeps for the GPU and every bridge up to its root port
        (sysfs aer_dev_correctable, aer_dev_nonfatal, aer_dev_fatal): any non-fatal or fatal error fails, a
        correctable total above pcie_aer_correctable_max warns. Switch uplinks are covered, which NVML's
        replay counter (GA104) is not.
    Why it matters
        Correctable errors (bad TLPs and DLLPs, replays) cost bandwidth and announce a marginal link; an
        uncorrectable one means a transaction was lost or poisoned, which ends in Xid errors or a GPU falling
        off the bus.
    Threshold
        Non-fatal or fatal > 0 fails; correctable > pcie_aer_correctable_max warns (counts since boot).
    Source
        PCIe base specification, Advanced Error Reporting; Linux Documentation/PCI/pcieaer-howto.rst and the
        sysfs ABI (Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats); tolerance as DCGM's replays.
    How to fix
        Reseat the card and any riser or retimer on the path, check cabling to PCIe switches, update the
        BIOS and switch firmware, and see whether the counts still rise under load (dmesg shows AER events).
    """
    limit = ctx.t("pcie_aer_correctable_max")
    seen = False
    reasons: list[str] = []
    for gpu in rig.gpus:
        for hop in gpu.pcie.path:
            if hop.aer_correctable is None and hop.aer_nonfatal is None and hop.aer_fatal is None:
                reasons.append(hop.why("aer_correctable") or "no AER counters")
                continue
            seen = True
            where = f"{subject(gpu)} path: {hop.bdf} ({hop.port_type})" if hop.port_type != "endpoint" else subject(gpu)
            observed = {
                "bdf": hop.bdf,
                "aer_correctable": hop.aer_correctable,
                "aer_nonfatal": hop.aer_nonfatal,
                "aer_fatal": hop.aer_fatal,
            }
            uncorrectable = (hop.aer_nonfatal or 0) + (hop.aer_fatal or 0)
            if uncorrectable:
                yield ctx.finding(
                    f"{where} has logged {hop.aer_nonfatal or 0} non-fatal and {hop.aer_fatal or 0} fatal "
                    "uncorrectable "
                    "PCIe errors since boot",
                    gpus=[gpu.index],
                    subject=where,
                    observed=observed,
                    expected={"aer_nonfatal": 0, "aer_fatal": 0},
                    expected_source="PCIe AER: uncorrectable errors are not recovered by the link (pcieaer-howto)",
                    fix="reseat the card, riser or retimer on this hop; update BIOS and switch firmware; check dmesg "
                    "for AER events",
                    severity="fail",
                )
            elif (hop.aer_correctable or 0) > limit:
                yield ctx.finding(
                    f"{where} has logged {hop.aer_correctable} correctable PCIe errors since boot (above {limit:g}): "
                    "a marginal link; see whether the count keeps rising under load",
                    gpus=[gpu.index],
                    subject=where,
                    observed=observed,
                    expected={"aer_correctable_max": limit},
                    expected_source="AER correctable errors include replays: DCGM's max_pcie_replays = 80 tolerance",
                    fix="reseat the card and any riser on this hop; use cables and risers rated for the PCIe "
                    "generation",
                )
    if rig.gpus and not seen:
        yield ctx.not_checked(
            f"PCIe AER counters: {sorted(set(reasons))[0] if reasons else 'no PCIe path in this scan'}"
        )
