"""A GPU's brand (NVML's nvmlBrandType_t, nvidia-smi -q "Product Brand"), and the brand a table name shows.

NVML numbers the brands (nvml.h, nvmlBrandType_t); nvidia-smi -q prints them as words ("GeForce", "Tesla",
"Quadro", "Titan", "NVIDIA", "NVIDIA RTX", "NVIDIA Virtual Compute Server"). The brand is kept as nvidia-smi
prints it. A desktop brand (GeForce, Titan) is a consumer card: no ECC, usually a display attached.
"""

from __future__ import annotations

import re

# nvmlBrandType_t -> nvidia-smi's word for it (NVML API Reference, "Device Enums", nvmlBrandType_t).
NVML_BRANDS = {
    1: "Quadro",
    2: "Tesla",
    3: "NVS",
    4: "Grid",
    5: "GeForce",
    6: "Titan",
    7: "NVIDIA Virtual Applications",
    8: "NVIDIA Virtual PC",
    9: "NVIDIA Virtual Compute Server",
    10: "NVIDIA RTX Virtual Workstation",
    11: "NVIDIA Cloud Gaming",
    12: "Quadro RTX",
    13: "NVIDIA RTX",
    14: "NVIDIA",
    15: "GeForce RTX",
    16: "Titan RTX",
}
NVML_BRAND_UNKNOWN = 0

# The brand words a product name starts with (after an optional "NVIDIA "): "GeForce GTX 1080 Ti",
# "NVIDIA GeForce RTX 4090", "Tesla V100-SXM2-16GB", "Quadro RTX 8000", "TITAN Xp", "NVIDIA TITAN V". A word must be
# whole (a space after it): a name cut inside its brand word shows none. Names with no such word ("NVIDIA H100 80GB
# HBM3", "NVIDIA RTX A6000", "NVIDIA A10") do not say their brand: NVIDIA and NVIDIA RTX share that prefix.
_NAME_BRAND = re.compile(r"(?:NVIDIA\s+)?(GeForce|Quadro|Tesla|TITAN|Titan|NVS|GRID)\s", re.IGNORECASE)
_CANONICAL = {w.lower(): w for w in ("GeForce", "Quadro", "Tesla", "Titan", "NVS", "Grid")}
DESKTOP = frozenset({"GeForce", "GeForce RTX", "Titan", "Titan RTX"})


def from_nvml(code: int) -> str | None:
    """nvmlBrandType_t -> the brand's word; None for NVML_BRAND_UNKNOWN or a number this table does not know."""
    return NVML_BRANDS.get(int(code))


def from_text(printed: str) -> str | None:
    """nvidia-smi -q's "Product Brand" value as printed (case kept); None for N/A, Unknown or empty."""
    s = printed.strip()
    return None if not s or s.lower() in {"n/a", "unknown", "[n/a]"} else s


def from_name(name: str) -> str | None:
    """The brand word a product name (whole or cut short with '...') starts with, or None if it shows none."""
    m = _NAME_BRAND.match(name.strip())
    return _CANONICAL[m.group(1).lower()] if m else None


def desktop(brand: str | None) -> bool:
    """A consumer brand: GeForce or Titan (nvidia-smi prints "Titan"; product names say "TITAN")."""
    return brand is not None and brand.strip().lower() in {b.lower() for b in DESKTOP}


def of(brand: str | None, name: str | None) -> str | None:
    """A GPU's brand: the brand word its name shows (the name and the brand are one product's), else the brand read
    (NVML, nvidia-smi -q: the only word for a data-centre part, or a name cut short before its brand word)."""
    return (from_name(name) if name else None) or brand
