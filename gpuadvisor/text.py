"""Small wording helpers shared by every renderer."""

from __future__ import annotations


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word`` agreeing in number: "1 GPU", "4 GPUs", "1 measurement", "0 switches" (``many`` when the
    plural is not ``word`` + "s")."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def pcie_link(gen: int | None, width: int | None, missing: str = "?") -> str:
    """A PCIe link's generation and width as every view writes it: "Gen4 x16"; ``missing`` for a figure not known
    ("Gen? x16")."""
    return f"Gen{missing if gen is None else gen} x{missing if width is None else width}"
