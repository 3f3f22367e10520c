"""Outputs' facts into one Rig: which GPU of an output is which GPU of the Rig (UUID, then PCI bus id, then
nvidia-smi index), the first output to give a fact keeping it, and the matrices put in the Rig's GPU order."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from gpuadvisor import facts
from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers import beyond_merge
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.part import Part
from gpuadvisor.importers.section import OPEN_END


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, list | dict) and not value)


class _Ids:
    """The rig's GPUs by UUID, bus id, PCI bus number and index (the first GPU of each, as a scan in order finds
    it): one pass to build, so matching an output's GPUs costs their count, not its product with the rig's."""

    def __init__(self, gpus: list[Gpu]) -> None:
        self.uuid: dict[str, Gpu] = {}
        self.bus: dict[str, Gpu] = {}
        self.bus_number: dict[int, list[Gpu]] = {}
        self.index: dict[int, Gpu] = {}
        for t in gpus:
            self.add(t)

    def add(self, t: Gpu) -> None:
        if t.uuid:
            self.uuid.setdefault(t.uuid, t)
        if t.bus_id:
            self.bus.setdefault(t.bus_id, t)
            self.bus_number.setdefault(int(t.bus_id[5:7], 16), []).append(t)
        self.index.setdefault(t.index, t)


class Merger:
    """The Rig being built from parsed outputs, and which GPU of each output is which GPU of the Rig."""

    def __init__(self) -> None:
        self.part_maps: dict[int, dict[int, Gpu]] = {}
        self.rig = Rig()
        self.gpus: list[Gpu] = []
        self.origins: dict[int, dict[str, str]] = {}  # id(gpu) -> field path -> origin
        self.other_origins: dict[str, str] = {}

    # GPU identity ---------------------------------------------------------------------------------------
    def _find(self, g: Gpu, part: Part, by_index: bool, bus_number: int | None, ids: _Ids) -> Gpu | None:
        if g.uuid and (t := ids.uuid.get(g.uuid)) is not None:
            return t
        if g.bus_id:
            if (t := ids.bus.get(g.bus_id)) is not None:
                return t
            if ids.bus:
                return None  # a bus id no other output lists
        if bus_number is not None:
            same = ids.bus_number.get(bus_number, [])
            if len(same) == 1:
                return same[0]
        if by_index and (t := ids.index.get(g.index)) is not None:
            if (t.uuid and g.uuid and t.uuid != g.uuid) or (t.bus_id and g.bus_id and t.bus_id != g.bus_id):
                self.rig.problems.append(
                    f"{part.origin}: GPU {g.index} is {g.uuid or g.bus_id} here but {t.uuid or t.bus_id} "
                    "elsewhere "
                    "(outputs from different machines?); not merged"
                )
                return None
            return t
        return None

    def map_gpus(self, part: Part) -> dict[int, Gpu]:
        """Fragment GPU position -> the rig's GPU (created when new)."""
        mapping: dict[int, Gpu] = {}
        frag = part.rig.gpus
        if part.kind in ("lspci", "sysfs-pci"):  # both give links without GPU indices
            return self._map_lspci(part)
        bus_numbers: dict[int, int | None] = {}
        if part.nccl is not None:
            local = part.nccl.local_ranks()
            bus_numbers = {k: r.bus_number for k, r in enumerate(local)}
        had = bool(self.gpus)
        self._same_machine(part)
        new: list[int] = []
        ids = _Ids(self.gpus)
        mapped: set[int] = set()  # id() of the rig's GPUs this output's GPUs are
        for k, g in enumerate(frag):
            t = self._find(g, part, by_index=True, bus_number=bus_numbers.get(k), ids=ids)
            twin = t is not None and id(t) in mapped  # an output's two GPUs are two GPUs
            if t is None or twin:
                if not twin and g.index in ids.index:
                    if not any(f"GPU {g.index} is" in p and part.origin in p for p in self.rig.problems):
                        self.rig.problems.append(
                            f"{part.origin}: GPU {g.index} ({g.uuid or g.bus_id}) matches no GPU of the outputs read "
                            "before it "
                            "(outputs from different machines?); not merged"
                        )
                    continue
                t = Gpu(index=g.index)
                self.gpus.append(t)
                ids.add(t)
                new.append(g.index)
            mapping[k] = t
            mapped.add(id(t))
        if had and new:
            self.rig.problems.append(
                f"{part.origin}: lists GPU {', '.join(map(str, new))} that the outputs read before it do not"
            )
        return mapping

    def _same_machine(self, part: Part) -> None:
        """Refuse outputs whose GPUs all carry ids (UUID, bus id) and none of which the others list."""
        known = {x for t in self.gpus for x in (t.uuid, t.bus_id) if x}
        theirs = [g for g in part.rig.gpus if g.uuid or g.bus_id]
        if not known or not theirs or any(x in known for g in theirs for x in (g.uuid, g.bus_id) if x):
            return
        uuids = any(t.uuid for t in self.gpus), any(g.uuid for g in theirs)
        buses = any(t.bus_id for t in self.gpus), any(g.bus_id for g in theirs)
        if not all(uuids) and not all(buses):
            return  # one side shows UUIDs only (nvidia-smi -L), the other bus ids only: nothing to compare
        mine = sorted(t.bus_id or t.uuid or "" for t in self.gpus)
        other = sorted(g.bus_id or g.uuid or "" for g in theirs)
        raise ImportParseError(
            part.file,
            part.line,
            f"its GPUs ({', '.join(other[:3])}{', ...' if len(other) > 3 else ''}) are none of those in the outputs "
            "read before "
            f"({', '.join(mine[:3])}{', ...' if len(mine) > 3 else ''}): outputs of different machines? Import each "
            "machine on its own",
        )

    def _map_lspci(self, part: Part) -> dict[int, Gpu]:
        frag = part.rig.gpus
        mapping: dict[int, Gpu] = {}
        if not self.gpus:
            for k in range(len(frag)):
                t = Gpu(index=k)
                self.gpus.append(t)
                mapping[k] = t
            if any(g.bus_id for g in frag):
                self.rig.problems.append(
                    f"{part.origin}: GPU indices taken from PCI bus order (nvidia-smi's default), as no nvidia-smi "
                    "output names them"
                )
            return mapping
        self._same_machine(part)
        if any(g.bus_id is None for g in frag):  # lines without their device line: which GPU is not shown
            self.rig.problems.append(
                f"{part.origin}: its device is not shown (no lspci device line), so it is not "
                "attached to any GPU of the other outputs"
            )
            return mapping
        if not any(t.bus_id for t in self.gpus) and len(frag) == len(self.gpus):
            for k, t in enumerate(sorted(self.gpus, key=lambda x: x.index)):
                mapping[k] = t
            self.rig.problems.append(
                f"{part.origin}: matched its {len(frag)} GPUs to GPU 0..{len(frag) - 1} by PCI bus order (nvidia-smi's "
                "default order)"
            )
            return mapping
        ids = _Ids(self.gpus)
        cut = any(OPEN_END in p for p in self.rig.problems)  # the driver's list is cut: GPUs it lacks are kept
        for k, g in enumerate(frag):
            found = ids.bus.get(g.bus_id) if g.bus_id else None
            if found is None and cut:
                found = Gpu(index=max(ids.index, default=-1) + 1, bus_id=g.bus_id)
                self.gpus.append(found)
                ids.add(found)
                self.rig.problems.append(
                    f"{part.origin}: NVIDIA GPU {g.bus_id} kept as GPU {found.index}: lspci lists it, and the "
                    "nvidia-smi output that could list it is cut short"
                )
            if found is None:
                why = (
                    "no nvidia-smi output lists it (driver not bound, GPU lost, or another machine)"
                    if ids.bus
                    else "the other outputs give no bus ids to match it by (add nvidia-smi -q)"
                )
                self.rig.problems.append(f"{part.origin}: NVIDIA GPU {g.bus_id} not used: {why}")
                continue
            mapping[k] = found
        return mapping

    # fields -----------------------------------------------------------------------------------------
    def _fill(
        self, target: Any, source: Any, prefix: str, where: Callable[[str], str], origins: dict[str, str]
    ) -> None:
        for f in dataclasses.fields(source):
            name = f.name
            if name in ("unavailable", "index"):
                continue
            sv, tv = getattr(source, name), getattr(target, name)
            if isinstance(sv, facts.Pcie):
                self._fill(tv, sv, f"{prefix}{name}.", where, origins)
                continue
            # A list that may be None (clocks_event_reasons) is a fact when empty: "none active" read from the source.
            optional = f.default is None
            empty = (lambda x: x is None) if optional else _is_empty
            if empty(sv):
                if empty(tv) and name in source.unavailable and name not in target.unavailable:
                    target.unavailable[name] = source.unavailable[name]
                continue
            if empty(tv):
                setattr(target, name, sv)
                target.unavailable.pop(name, None)
                if name in source.unavailable:  # a list the source shows only part of (links elided in a paste)
                    target.unavailable[name] = source.unavailable[name]
                origins[f"{prefix}{name}"] = where(f"{prefix}{name}")

    def add(self, part: Part) -> None:
        mapping = self.map_gpus(part)
        self.part_maps[id(part)] = mapping
        for k, t in mapping.items():

            def where(path: str, k: int = k) -> str:
                return part.at(f"gpus[{k}].{path}", f"gpus[{k}]")

            self._fill(t, part.rig.gpus[k], "", where, self.origins.setdefault(id(t), {}))
        for section in ("host", "software"):
            target, source = getattr(self.rig, section), getattr(part.rig, section)
            origins: dict[str, str] = {}
            self._fill(target, source, f"{section}.", lambda path: part.at(path), origins)
            self.other_origins.update(origins)
        self.rig.problems.extend(part.rig.problems)
        frag_to_merged = {part.rig.gpus[k].index: t.index for k, t in mapping.items()}
        beyond_merge.merge_into(self.rig, part.rig, frag_to_merged, part.origin)  # kernel log, RDMA ports, fabric
        if part.rig.node.health_checks is not None:  # other checkers' verdicts add up (their GPU ids are theirs)
            self.rig.node.health_checks = (self.rig.node.health_checks or []) + part.rig.node.health_checks
            self.rig.node.unavailable.pop("health_checks", None)
        by_frag_index = {part.rig.gpus[k].index: t for k, t in mapping.items()}
        for i, m in enumerate(part.rig.measurements):
            m.gpus = [by_frag_index[g].index for g in m.gpus if g in by_frag_index]
            self.other_origins[f"measurements[{len(self.rig.measurements)}]"] = part.at(f"measurements[{i}]")
            self.rig.measurements.append(m)

    def add_topology(self, part: Part) -> None:
        """A matrix output's pairs into the Rig's topology, once every output's GPUs are known (its rows put in
        the Rig's GPU order)."""
        topo = self.rig.topology
        order = {id(g): pos for pos, g in enumerate(self.gpus)}
        n = len(self.gpus)
        mapping = self.part_maps[id(part)]
        pt = part.rig.topology
        perm = [order[id(mapping[k])] for k in range(len(part.rig.gpus)) if k in mapping]
        full = len(perm) == n == len(part.rig.gpus)

        def remap(matrix: list[list[str]], perm: list[int] = perm) -> list[list[str]]:
            out = [[""] * n for _ in range(n)]
            for a, pa in enumerate(perm):
                for b, pb in enumerate(perm):
                    out[pa][pb] = matrix[a][b]
            return out

        fields = ["matrix", "pcie_matrix"] if part.kind == "topo-m" else ["p2p_read", "p2p_write"]
        if part.kind == "cuda-p2p" and not full:
            return  # the sample ran on some of the GPUs (CUDA_VISIBLE_DEVICES): its pairs stay measurements
        for name in fields:
            value = getattr(pt, name)
            if _is_empty(value):
                if name in pt.unavailable and _is_empty(getattr(topo, name)):
                    topo.unavailable.setdefault(name, pt.unavailable[name])
                continue
            if not full:
                self.rig.problems.append(
                    f"{part.origin}: its {name} covers {len(part.rig.gpus)} GPUs, the scan has {n}; left out"
                )
                topo.unavailable.setdefault(name, f"{part.origin} covers {len(part.rig.gpus)} GPUs of {n}")
                continue
            new = remap(value)
            if _is_empty(getattr(topo, name)):
                setattr(topo, name, new)
                topo.unavailable.pop(name, None)
                if name in pt.unavailable:  # a partial matrix (pairs not shown are U): its reason stays with it
                    topo.unavailable[name] = pt.unavailable[name]
                self.other_origins[f"topology.{name}"] = part.at("topology")
            elif getattr(topo, name) != new:
                self.rig.problems.append(f"{part.origin}: a second {name} that differs from the first; the first kept")
        if part.kind == "topo-m" and pt.nics and not topo.nics and full:
            topo.nics = list(pt.nics)
            if pt.nic_matrix:
                rows = [[] for _ in range(n)]  # type: list[list[str]]
                for a, pa in enumerate(perm):
                    rows[pa] = pt.nic_matrix[a]
                topo.nic_matrix = rows
            self.other_origins["topology.nics"] = part.at("topology")
        for key in ("nic_matrix",):
            if key in pt.unavailable:
                topo.unavailable.setdefault(key, pt.unavailable[key])
