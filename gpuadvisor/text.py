"""Small wording helpers shared by every renderer."""

from __future__ import annotations


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word`` agreeing in number: "1 GPU", "4 GPUs", "1 measurement", "0 switches" (``many`` when the
    plural is not ``word`` + "s")."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"
