"""GA9xx: the data path: NVMe links, the filesystems the dataset and checkpoints live on, free space, page cache.

The rules read ``rig.storage`` (probes.storage, bench --storage) and, for what the job needs, the checkpoint
plan the advisor stores in ``rig.advice["checkpoint"]`` (gpuadvisor.advisor.checkpoint). A scan without
storage facts (simulated, imported, or saved before they existed) gets no storage findings; a fact that is
missing gets a not-checked finding with its reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpuadvisor.facts import BlockDevice, Finding, Gpu, Pcie, Rig, StoragePath
from gpuadvisor.rules.engine import Context
from gpuadvisor.rules.helpers import GB
from gpuadvisor.rules.pcie import link_views
from gpuadvisor.rules.registry import rule

GiB = 2**30
# A save that blocks training for more than this share of the time is worth making asynchronous or sharded.
STALL_WARN = 0.05


# GA901's two link checks: (current attribute, allowed attribute, what it runs at, observed key, expected key,
# expected source, fix), width first.
_DRIVE_LINK_CHECKS = (
    (
        "current_width",
        "allowed_width",
        "x{current} where both ends support x{best}",
        "current_link_width",
        "max_link_width",
        "the lower of the drive's and the port's maximum link width (sysfs)",
        "move the drive to a slot wired x4 to the CPU; check bifurcation in the BIOS; reseat it",
    ),
    (
        "current_gen",
        "allowed_gen",
        "PCIe Gen{current} where both ends support Gen{best}",
        "current_gen",
        "max_gen",
        "the lower of the drive's and the port's maximum link speed (sysfs)",
        "set the slot's link speed to Auto/GenN in the BIOS; reseat the drive or its cable",
    ),
)


def _drives(devices: list[BlockDevice]) -> Iterator[BlockDevice]:
    for d in devices:
        yield d
        yield from _drives(d.members)


def _paths(rig: Rig) -> list[StoragePath]:
    return [p for p in rig.storage.paths if p.role in ("data", "checkpoint", "working")]


def _plan(rig: Rig) -> dict[str, Any] | None:
    plan = rig.advice.get("checkpoint") if rig.advice is not None else None
    return plan if isinstance(plan, dict) else None


def _subject(sp: StoragePath) -> str:
    return f"{sp.role} dir {sp.path}"


@rule("GA901", "storage-nvme-link-degraded", area="storage", severity="warn")
def storage_nvme_link_degraded(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """An NVMe drive under the data or checkpoint directory runs its PCIe link below what both ends support.

    What it checks
        For every NVMe drive under a named directory (md and LVM members included): the link width and
        generation of the drive and of every switch uplink on its path to the CPU, against the lower of both
        ends' maxima (sysfs current_link_width/speed vs max_link_width/speed), as GA101/GA102 do for GPUs.
    Why it matters
        An NVMe drive moves at most its link's rate: a Gen4 x4 drive trained at x2 (a bifurcated slot, a
        riser, an M.2 slot wired x2 on the chipset) or at Gen3 loses half its sequential read and write,
        and with it data loading and checkpoint saves.
    Threshold
        Any width or generation below the allowed maximum (NVMe links do not slow down to save power the
        way GPU links do).
    Source
        PCI-SIG base specification (link negotiation; LnkCap vs LnkSta); the NVMe drive's datasheet lists its
        interface (PCIe Gen4 x4, Gen5 x4).
    How to fix
        Move the drive to a slot or carrier wired x4 to the CPU, check the slot's BIOS bifurcation and
        link-speed settings, reseat the drive or its cable (U.2/E1.S backplanes).
    """
    seen: set[str] = set()
    for sp in _paths(rig):
        for drive in _drives(sp.devices):
            if drive.kind != "nvme" or not drive.pcie_path or drive.name in seen:
                continue
            seen.add(drive.name)  # a drive under two directories is reported once
            views = link_views(Gpu(index=-1, pcie=Pcie(path=drive.pcie_path)))
            for v in views:
                where = "its link" if v.is_gpu_link else f"the uplink at {v.where}"
                for cur, allowed, text, key, max_key, source, fix in _DRIVE_LINK_CHECKS:
                    current, best = getattr(v, cur), getattr(v, allowed)
                    if current is not None and best is not None and current < best:
                        yield ctx.finding(
                            f"NVMe drive {drive.name} ({drive.model or 'model unknown'}) under {sp.path}: {where} "
                            f"runs at {text.format(current=current, best=best)}",
                            subject=f"{drive.name} {drive.pcie_bdf}",
                            observed={key: current},
                            expected={max_key: best},
                            expected_source=source,
                            fix=fix,
                        )


@rule("GA902", "storage-network-or-slow-fs", area="storage", severity="info")
def storage_network_or_slow_fs(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """The dataset or checkpoint directory is on a network filesystem or a spinning disk.

    What it checks
        The filesystem type of each named directory (NFS, Lustre, GPFS, CIFS, Ceph, object-store FUSE are
        network filesystems) and whether its drives are rotational (sysfs queue/rotational).
    Why it matters
        Reads and writes then cross the network or wait on a disk head: fine for a parallel filesystem
        sized for the job, slow for a home-directory NFS share, an object-store FUSE mount (no random reads
        to speak of) or an HDD. Checkpoint saves and shuffled data loading suffer most.
    Threshold
        Reported as information; GA903 compares the measured rate with what the job needs.
    Source
        NVIDIA GPUDirect Storage design guide and DALI documentation (local NVMe or a parallel filesystem
        for training data); MLPerf Storage (DLIO) measures exactly this: whether storage keeps GPUs fed.
    How to fix
        Stage the dataset to local NVMe (or a RAID 0 of several) before the run and write checkpoints
        locally, copying them off asynchronously; or measure the share with gpuadvisor bench --storage.
    """
    for sp in _paths(rig):
        if sp.network:
            yield ctx.finding(
                f"{sp.role} directory {sp.path} is on a network filesystem ({sp.fs_type} from {sp.fs_source})",
                subject=_subject(sp),
                observed={"fs_type": sp.fs_type, "network": True},
                expected={"network": False},
                expected_source="local NVMe for training data and checkpoints",
                fix="stage data to local NVMe; write checkpoints locally and copy them off in the background",
            )
            continue
        spinning = [d.name for d in _drives(sp.devices) if d.rotational and d.kind not in ("md", "lvm", "dm", "virtio")]
        if spinning:
            yield ctx.finding(
                f"{sp.role} directory {sp.path} is on a rotational disk ({', '.join(spinning)})",
                subject=_subject(sp),
                observed={"rotational": spinning},
                expected={"rotational": []},
                expected_source="NVMe or SATA SSD for training data and checkpoints",
                fix="move the data and checkpoints to an SSD/NVMe filesystem",
            )


@rule("GA903", "storage-read-below-need", area="storage", severity="warn")
def storage_read_below_need(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """The data directory's measured read rate is below what the data loader needs at the predicted speed.

    What it checks
        The sequential read GB/s measured on the data directory (bench --storage, or imported fio output)
        against the advisor's data-loader need: tokens/s x bytes per token for text, or samples/s x
        --sample-bytes for images and video.
    Why it matters
        When storage cannot deliver samples as fast as the GPUs consume them, the GPUs wait: the step time
        becomes the read time however fast the GPUs are ("slow data loading will starve your GPUs").
    Threshold
        The measured rate below the need (the page cache may cover a dataset that fits in RAM: see GA905).
    Source
        MLPerf Storage benchmark (DLIO): a storage system passes when it keeps the simulated accelerators
        above 90% busy, i.e. reads at least what they consume.
    How to fix
        Faster or more drives (RAID 0 over NVMe), a local copy of the dataset, more loader workers and
        prefetching, or pre-packed shards (WebDataset, Megatron's indexed datasets) read sequentially.
    """
    plan = _plan(rig)
    if plan is None or plan.get("data_read_needed_gbps") is None:
        return
    need = float(plan["data_read_needed_gbps"])
    got = plan.get("data_read_measured_gbps")
    if got is None:
        yield ctx.not_checked(
            f"no read rate measured on the data directory (needs {need * 1000:.3g} MB/s; run "
            "gpuadvisor bench --storage DATA_DIR)",
            subject="data directory",
        )
        return
    if float(got) < need:
        yield ctx.finding(
            f"the data directory reads {got:g} GB/s but the job needs {need:.3g} GB/s at the predicted speed",
            subject="data directory",
            observed={"read_gbps": got},
            expected={"read_gbps": round(need, 4)},
            expected_source=str(plan.get("data_read_source")),
            fix="stage the dataset to local NVMe or RAID 0, add loader workers, read pre-packed shards",
        )


@rule("GA904", "storage-checkpoint-space", area="storage", severity="warn")
def storage_checkpoint_space(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """The checkpoint directory has room for fewer than two checkpoints of this job.

    What it checks
        Free space (statvfs f_bavail) of the checkpoint directory (else the working directory) against twice
        the checkpoint size the advisor computes for the model, optimizer and strategy.
    Why it matters
        A save must not overwrite the last good checkpoint until it completes: two must fit. A disk that
        fills during a save fails the job at the worst moment and can leave no usable checkpoint.
    Threshold
        Free space below 2 x the checkpoint size.
    Source
        torch.distributed.checkpoint and DeepSpeed write a new directory per save and keep the old one until
        the new one is complete (checkpoint rotation keeps the last N).
    How to fix
        Free space, write checkpoints to a larger filesystem, keep fewer old checkpoints, or save the
        optimizer states less often than the weights.
    """
    plan = _plan(rig)
    if plan is None:
        return
    total = int(plan["total_bytes"])
    targets = [sp for sp in rig.storage.paths if sp.role == "checkpoint"] or [
        sp for sp in rig.storage.paths if sp.role == "working"
    ]
    for sp in targets:
        if sp.free_bytes is None:
            yield ctx.not_checked(
                f"free space of {sp.path}: {sp.why('free_bytes') or 'not recorded'}", subject=_subject(sp)
            )
            continue
        if sp.free_bytes < 2 * total:
            yield ctx.finding(
                f"{sp.path} has {sp.free_bytes / GiB:,.0f} GiB free: room for {sp.free_bytes / total:.1f} "
                "checkpoint(s) "
                f"of {total / GiB:,.0f} GiB; two are needed (the one being written and the last good one)",
                subject=_subject(sp),
                observed={"free_bytes": sp.free_bytes},
                expected={"free_bytes": 2 * total},
                expected_source="2 x the checkpoint size (gpuadvisor.advisor.checkpoint)",
                fix="free space or point --checkpoint-dir at a larger filesystem; keep fewer old checkpoints",
            )


@rule("GA905", "storage-page-cache", area="storage", severity="info")
def storage_page_cache(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """The memory the page cache can use is below 2 GB per GB of GPU memory.

    What it checks
        MemAvailable (/proc/meminfo: free memory plus the page cache the kernel can reclaim) against
        2 GB per GB of the GPUs' total memory, when storage facts were probed.
    Why it matters
        A dataset read more than once (epochs, shuffling) comes from RAM when it fits in the page cache and
        from the drives when it does not; loader workers, pinned buffers and checkpoint staging take RAM too.
    Threshold
        2 GB of available RAM per GB of GPU memory.
    Source
        "2 GB of RAM per GB of GPU memory for heavy data loading": a rule of thumb of GPU workstation build
        guides, not a measured limit (the same guideline as GA402, here against the RAM actually available).
    How to fix
        Add RAM, stop other memory users on the node, or rely on fast storage (see GA903) instead of the cache.
    """
    if not rig.storage.paths or not rig.gpus:
        return
    avail = rig.storage.memory_available_bytes
    if avail is None:
        yield ctx.not_checked(
            f"available memory: {rig.storage.why('memory_available_bytes') or 'not recorded'}", subject="host"
        )
        return
    mem = [g.memory_total_bytes for g in rig.gpus]
    if any(m is None for m in mem):
        yield ctx.not_checked("GPU memory size unknown for some GPUs", subject="host")
        return
    need = 2 * sum(m for m in mem if m is not None)
    if avail < need:
        yield ctx.finding(
            f"{avail / GB:,.0f} GB of RAM available for the page cache and loaders, below 2 GB per GB of GPU memory "
            f"({need / GB:,.0f} GB)",
            subject="host",
            observed={"memory_available_gb": round(avail / GB, 1)},
            expected={"memory_available_gb": round(need / GB, 1)},
            expected_source="2 GB RAM per GB of GPU memory (rule of thumb of GPU build guides)",
            fix="add RAM or free memory on the node; keep the dataset on fast local NVMe",
        )


@rule("GA906", "checkpoint-stall", area="storage", severity="warn")
def checkpoint_stall(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """Blocking checkpoint saves take more than 5% of training time at the chosen interval.

    What it checks
        The advisor's save time (checkpoint size / write rate of the checkpoint directory, per node when
        the states are sharded) over the checkpoint interval (--checkpoint-every, else hourly).
    Why it matters
        A synchronous save stops every GPU until the last byte is written: for a 70B model with its
        optimizer states (about 1 TB) that is minutes per save at a few GB/s.
    Threshold
        5% of training time (save time / (interval + save time)).
    Source
        PyTorch's torch.distributed.checkpoint async_save documentation (saving in the background to hide
        checkpoint time); the 5% is gpuadvisor's choice of a stall worth acting on.
    How to fix
        Save asynchronously (dcp.async_save, Megatron --async-save), shard the save across all ranks,
        write to faster local NVMe, or checkpoint less often.
    """
    plan = _plan(rig)
    if plan is None:
        return
    share = float(plan["stall_fraction"])
    if share > STALL_WARN:
        assumed = " (write rate assumed, not measured)" if plan.get("write_provenance") == "assumed" else ""
        yield ctx.finding(
            severity="info" if assumed else None,  # an assumed rate informs; a measured one warns
            message=f"each checkpoint ({plan['total_bytes'] / GiB:,.0f} GiB) takes {plan['save_seconds']:,.0f} s "
            "to save at "
            f"{plan['write_gbps']:g} GB/s{assumed}: {share:.1%} of training time, {plan['interval_source']}",
            subject="checkpoints",
            observed={"stall_fraction": share},
            expected={"stall_fraction": STALL_WARN},
            expected_source="gpuadvisor: a stall above 5% is worth an asynchronous or faster save",
            fix="use dcp.async_save (or Megatron --async-save), write to local NVMe, or checkpoint less often",
        )


@rule("GA907", "storage-nvme-shares-gpu-switch", area="storage", severity="info")
def storage_nvme_shares_gpu_switch(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """An NVMe drive under a named directory sits behind the same PCIe switch as GPUs.

    What it checks
        The PCIe path of every NVMe drive under a named directory against every GPU's path: a switch
        upstream port both pass through means they share that switch and its uplink to the CPU.
    Why it matters
        Both ways: with GPUDirect Storage (cuFile) the drive reads straight into those GPUs through the
        switch, never touching host memory, the layout NVIDIA recommends; without it, every byte read goes
        up the shared uplink to host memory and back down to the GPUs, competing with their host<->device
        copies.
    Threshold
        Reported as information when a switch is shared.
    Source
        NVIDIA GPUDirect Storage design guide (docs.nvidia.com/gpudirect-storage/design-guide): place NVMe
        drives and GPUs under the same PCIe switch for peer-to-peer DMA.
    How to fix
        Nothing to fix: use GPUDirect Storage (or DALI with GDS) to benefit from it, or expect the drive's
        reads to share the switch uplink with those GPUs' copies.
    """
    switch_gpus: dict[str, list[int]] = {}
    for g in rig.gpus:
        for hop in g.pcie.path[1:]:
            if hop.port_type == "upstream-port":
                switch_gpus.setdefault(hop.bdf, []).append(g.index)
    if not switch_gpus:
        return
    seen: set[str] = set()
    for sp in _paths(rig):
        for drive in _drives(sp.devices):
            if drive.kind != "nvme" or drive.name in seen:
                continue
            seen.add(drive.name)
            shared = [(h.bdf, switch_gpus[h.bdf]) for h in drive.pcie_path[1:] if h.bdf in switch_gpus]
            if shared:
                bdf, gpus = shared[0]
                yield ctx.finding(
                    f"NVMe drive {drive.name} under {sp.path} shares the PCIe switch at {bdf} with "
                    f"{'GPU' if len(gpus) == 1 else 'GPUs'} {', '.join(map(str, gpus))}: GPUDirect Storage can read "
                    "straight into them; without it the reads share the switch uplink with their copies",
                    gpus=gpus,
                    subject=f"{drive.name} {drive.pcie_bdf}",
                    observed={"switch": bdf, "gpus": gpus},
                    expected_source="NVIDIA GPUDirect Storage design guide (drives and GPUs under one PCIe switch)",
                )
