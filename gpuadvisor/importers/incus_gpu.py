"""The GPU section of ``incus info --resources`` (and LXD's ``lxc info --resources``, the same code), as container
users paste it.

The client (cmd/incus/info.go, ``renderGPU``) prints, under ``GPU:`` (one card) or ``GPUs:`` with a ``Card N:`` per
card: ``NUMA node: 0``, ``Vendor: NVIDIA Corporation (10de)``, ``Product: GA104 [...] (2489)``, ``PCI address:
0000:01:00.0``, ``Driver: nvidia (560.35.03)`` (the kernel driver and its version), a ``DRM:`` block, and, when the
server found the card through the NVIDIA container library, ``NVIDIA information:`` with ``Architecture`` (the
compute capability), ``Brand``, ``Model``, ``CUDA Version`` (the newest CUDA the driver supports), ``NVRM Version``
and ``UUID``; each printed with ``%v``, so a value the library did not give is an empty field.

Read: each NVIDIA card (vendor 10de): its bus id, NUMA node, name (``Model``, else the product's bracketed name),
compute capability and UUID; the driver version and the CUDA version the driver supports. An empty field is not
shown (unknown, with its reason), never a value; another vendor's card is named in a note, not read.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, outside, shown_lines
from gpuadvisor.importers.values import normalize_bus_id

WHAT = "incus info --resources (GPU)"
_EMPTY = "printed empty by Incus (the NVIDIA container library gave no value: its toolkit missing or failing)"
_NOT_SHOWN = "not printed by incus info --resources"
# the card's keys read (renderGPU's order); the DRM block's and SR-IOV's are not
_KEYS = ("NUMA node", "Vendor", "Product", "PCI address", "Driver", "Architecture", "Brand", "Model", "CUDA Version")
_FIELD = re.compile(rf"^\s*({'|'.join(_KEYS)}|NVRM Version|UUID):[ \t]*(.*?)\s*$")
_HEAD, _CARD = re.compile(r"^(\s*)GPUs?:\s*$"), re.compile(r"^\s*Card (\d{1,3}):\s*$")
_VENDOR = re.compile(r"\(([0-9a-fA-F]{4})\)$")  # "NVIDIA Corporation (10de)"


@outside("incus-gpu")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``GPU:`` or ``GPUs:`` over a card's ``NUMA node:`` / ``Card 0:`` and, within a few lines, its ``Vendor: ...
    (xxxx)`` and ``PCI address:``."""
    if not _HEAD.match(lines[i]):
        return False
    below = [x.strip() for x in lines[i + 1 : i + 9]]
    return (
        bool(below)
        and (below[0].startswith("NUMA node:") or bool(_CARD.match(below[0])))
        and any(x.startswith("Vendor:") and _VENDOR.search(x) for x in below)
        and any(x.startswith("PCI address:") for x in below)
    )


def parse_incus_gpu(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Each NVIDIA card of the GPU section, with the driver and its CUDA version."""
    rig = Rig()
    lines, cut = shown_lines(text)
    cards: list[dict[str, tuple[str, int]]] = []
    head = _HEAD.match(lines[0]) if lines else None
    indent = len(head.group(1)) if head else 0
    closed: set[int] = set()  # the cards something is shown after (a blank line, the next card or section)
    for k, line in enumerate(lines[1:], start=1):
        if not line.strip() or _CARD.match(line) or len(line) - len(line.lstrip()) <= indent:
            closed.add(len(cards) - 1)
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break  # the next section of the listing (NIC:, Disks: ...)
        if _CARD.match(line) or not cards:
            cards.append({})
        if (m := _FIELD.match(line)) and k != cut:
            cards[-1].setdefault(m.group(1), (m.group(2), first_line + k))
    for n, card in enumerate(cards):
        _card(rig, card, source, n in closed)
    if not rig.gpus and not rig.problems:
        raise ImportParseError(source, first_line, f"{WHAT}: no card with its vendor and PCI address")
    return rig


def _card(rig: Rig, card: dict[str, tuple[str, int]], source: str, closed: bool) -> None:
    vendor, line = card.get("Vendor", ("", 0))
    m = _VENDOR.search(vendor)
    if m is None or "PCI address" not in card:
        return
    if m.group(1).lower() != "10de":
        rig.problems.append(f"{source}: line {line}: another vendor's card ({vendor}): not read")
        return
    g = Gpu(index=len(rig.gpus), bus_id=normalize_bus_id(card["PCI address"][0]))
    rig.origins[f"gpus[{g.index}]"] = f"{source}:{card['PCI address'][1]}"
    rig.gpus.append(g)
    numa = card.get("NUMA node", ("", 0))[0]
    g.numa_node = int(numa) if numa.isdigit() else None
    product = re.search(r"\[([^\]]{2,80})\]", card.get("Product", ("", 0))[0])
    g.name = _value(g, card, "Model", "name")
    if g.name is None and product and (closed or "Model" in card):  # no NVIDIA block can follow: the product's
        g.name = product.group(1)
        g.unavailable.pop("name", None)
    elif g.name is None and product:
        g.unavailable["name"] = "the paste ends inside this card: its NVIDIA block (the model) may follow"
    cc = _value(g, card, "Architecture", "compute_capability")
    g.compute_capability = cc if cc and re.fullmatch(r"\d{1,2}\.\d", cc) else None
    uuid = _value(g, card, "UUID", "uuid")
    g.uuid = uuid if uuid and uuid.startswith(("GPU-", "MIG-")) else (f"GPU-{uuid}" if uuid else None)
    for name in ("memory_total_bytes", "power_limit_w"):
        g.unavailable.setdefault(name, _NOT_SHOWN)
    driver = re.fullmatch(r"nvidia \((\d{2,4}(?:\.\d{1,3}){1,2})\)", card.get("Driver", ("", 0))[0])
    _software(rig, "driver_version", driver.group(1) if driver else None, card.get("Driver", ("", 0))[1], source)
    _software(rig, "cuda_driver_version", *card.get("CUDA Version", ("", 0)), source)


def _value(g: Gpu, card: dict[str, tuple[str, int]], key: str, fact: str) -> str | None:
    """The card's ``key`` value; an empty one (``key`` printed, nothing after it) is ``fact`` not shown."""
    if key not in card:
        return None
    value = card[key][0]
    if not value:
        g.unavailable[fact] = f"{key}: {_EMPTY}"
    return value or None


def _software(rig: Rig, fact: str, value: str | None, line: int, source: str) -> None:
    if value and getattr(rig.software, fact) is None:
        setattr(rig.software, fact, value)
        rig.origins[f"software.{fact}"] = f"{source}:{line}"
        rig.software.unavailable.pop(fact, None)
    elif not value and line and getattr(rig.software, fact) is None:
        rig.software.unavailable[fact] = _EMPTY
