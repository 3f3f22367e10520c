"""The Akash provider's GPU inventory: ``provider-services tools psutil list gpu`` (JSON), whole or through jq.

The provider (akash-network/provider, ``tools psutil list gpu``) prints the GPU information of the ghw library as
JSON: ``{"cards": [{"address": "0000:00:05.0", "index": 1, "pci": {"driver": "nvidia", "address": ..., "vendor":
{"id": "10de", "name": "NVIDIA Corporation"}, "product": {"id": "20b7", "name": "GA100GL [A30 PCIe]"}, "revision":
..., "subsystem": {...}, "class": {...}, ...}}]}``, one card per display device (a BMC's ASPEED chip, a VM's virtio
display, an integrated GPU too; ``"pci": null`` for a device without PCI). Akash's docs have providers pipe it
through ``jq '.cards[] | .pci | {vendor: .vendor, product: .product}'``, which prints one ``{vendor, product}``
object per card, without the address.

Read: each NVIDIA card (vendor 10de) as a GPU: its bus id (when shown) and its name (the product name's bracketed
model, ``Tesla V100 SXM3 32GB`` from ``GV100GL [Tesla V100 SXM3 32GB]``; none when the PCI ids list did not know it:
``unknown``). Another vendor's card is named in a note, not read. The keys are read one by one, not as a JSON
document, so a paste cut inside a card still counts the cards it shows.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, outside
from gpuadvisor.importers.values import normalize_bus_id

WHAT = "Akash provider-services tools psutil list gpu"
# one key with its value: an object opens, null, a string or a number
_KEY = re.compile(r'"([a-z_]{1,30})"\s*:\s*(\{|null|"([^"\n]{0,200})"|-?\d{1,6})')
_PCI = re.compile(r"(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]")
_VENDOR = re.compile(r'"vendor"\s*:\s*\{\s*"id"\s*:\s*"[0-9a-fA-F]{4}"\s*,\s*"name"\s*:')
_MODEL = re.compile(r"\[([^\]]{2,80})\]")
_OPENS = ("{", '"cards"', '{"')


@outside("akash-gpu")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A JSON object's first line (``{``, ``"cards": [``) with a ``"vendor": {"id": "xxxx", "name": ...`` below,
    and its ``"product"`` key."""
    if not lines[i].strip().startswith(_OPENS):
        return False
    below = " ".join(x.strip() for x in lines[i : i + 24])
    return bool(_VENDOR.search(below)) and '"product"' in below


def parse_akash_gpu(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Each NVIDIA card of the inventory as a GPU, another vendor's in a note."""
    rig = Rig()
    cards: list[dict[str, tuple[str, int]]] = []
    address: tuple[str, int] | None = None
    block = ""  # the object the next "id" and "name" belong to: vendor, product or another
    for m in _KEY.finditer(text):
        key, value, line = m.group(1), m.group(3), first_line + text.count("\n", 0, m.start())
        if key == "address" and value and _PCI.fullmatch(value):
            address = (value, line)
        elif key == "vendor" and m.group(2) == "{":
            cards.append({"address": address} if address else {})
            address, block = None, "vendor"
        elif m.group(2) == "{":
            block = key
        elif key in ("id", "name") and value is not None and cards and block in ("vendor", "product"):
            cards[-1].setdefault(f"{block} {key}", (value, line))
    for card in cards:
        _card(rig, card, source)
    if not rig.gpus and not rig.problems:
        raise ImportParseError(source, first_line, f"{WHAT}: no card with its vendor id")
    return rig


def _card(rig: Rig, card: dict[str, tuple[str, int]], source: str) -> None:
    if "vendor id" not in card:
        return  # cut before its vendor id: not known to be a GPU
    vendor, line = card["vendor id"]
    if vendor.lower() != "10de":
        name = card.get("product name", card.get("vendor name", ("", 0)))[0]
        rig.problems.append(f"{source}: line {line}: another vendor's display device ({vendor}: {name}): not read")
        return
    g = Gpu(index=len(rig.gpus))
    if "address" in card:
        g.bus_id = normalize_bus_id(card["address"][0])
    else:
        g.unavailable["bus_id"] = "not printed (jq kept only the vendor and product)"
    rig.origins[f"gpus[{g.index}]"] = f"{source}:{card.get('address', (0, line))[1]}"
    rig.gpus.append(g)
    product = card.get("product name", ("", 0))[0]
    model = _MODEL.search(product)
    if model:
        g.name = model.group(1)
    elif product and product != "unknown":
        g.name = product
    elif "product name" in card:
        g.unavailable["name"] = f"the PCI ids list did not know product {card.get('product id', ('?', 0))[0]}"
    else:
        g.unavailable["name"] = "the paste ends before this card's product"
    for fact in ("memory_total_bytes", "power_limit_w"):
        g.unavailable.setdefault(fact, f"not printed by {WHAT}")
