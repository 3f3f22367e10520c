"""The "simple" tables are laid out without tabulate (importing it cost more than a plan's whole table), and must
print byte for byte what tabulate printed: the oracle here is tabulate itself (tabulate 0.9+, tablefmt "simple",
stralign "left", disable_numparse, MIN_PADDING 0: https://github.com/astanin/python-tabulate#table-format)."""

from __future__ import annotations

import random
import string

import pytest
import tabulate as tb

from gpuadvisor.render.text import width
from gpuadvisor.render.text.width import fit_table, simple_table

# Cells tabulate treats specially unless told not to: numbers (disable_numparse), booleans (typed bool), empty
# cells (typed None), surrounding spaces (stripped), dashes (its own rule line); characters one column wide
# (laid out here) and others: wide, combining, no-break space, soft hyphen (left to tabulate, which measures them
# its own way, with wcwidth where it is installed).
TOKENS = ["", " ", "True", "False", "1e9", "-3.5", "0", " padded ", "-", "--", "N/A", "x y", "a  b"]
TOKENS += ["µs", "PP=2 × TP=8", "—", "é", "≤ 8", "→", "Ω", "…"]
OTHERS = ["✓", "漢字", "e\u0301", "a\u00a0b", "\u00ad", "\u200b", "\u3000x"]


def _cell(rng: random.Random, tokens: list[str]) -> str:
    k = rng.random()
    if k < 0.4:
        return rng.choice(tokens)
    alphabet = string.ascii_letters + string.digits + string.punctuation + "    "
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24 if k < 0.9 else 70)))


def _tables(seed: int, count: int, fitted: bool = False):
    """Random tables; for ``fitted`` ones (fit_table), some with OTHERS cells and none with "1,000": tabulate's
    own wrapping of a too-wide last column takes it for an int and fails to parse it."""
    rng = random.Random(seed)
    for _ in range(count):
        n, m = rng.randint(0, 6), rng.randint(1, 7)
        tokens = TOKENS + (OTHERS if rng.random() < 0.3 else []) if fitted else TOKENS + ["1,000"]
        rows = [[_cell(rng, tokens) for _ in range(m)] for _ in range(n)]
        heads = [_cell(rng, tokens) for _ in range(m)]
        yield rows, heads


def _tabulated(rows: list[list[str]], heads: list[str]) -> str:
    padding = tb.MIN_PADDING
    tb.MIN_PADDING = 0
    try:
        text = tb.tabulate(rows, headers=heads, tablefmt="simple", disable_numparse=True, stralign="left")
    finally:
        tb.MIN_PADDING = padding
    return text


def test_simple_table_prints_what_tabulate_prints():
    for rows, heads in _tables(0, 3000):
        assert simple_table(rows, heads) == _tabulated(rows, heads), (rows, heads)


def test_a_table_without_rows_is_its_headers_and_dashes():
    assert simple_table([], ["GPU", " x "]) == "GPU   x\n---  ---"
    assert simple_table([], ["GPU", " x "]) == _tabulated([], ["GPU", " x "])


@pytest.mark.parametrize("columns", [40, 60, 80, 120, 200])
def test_fit_table_prints_the_same_with_or_without_tabulate(monkeypatch, columns):
    """Whole fitted tables (split into column groups, a last column wrapped), with the linear layout and with
    tabulate alone: the same lines. Tables with OTHERS cells take tabulate's path either way."""
    seed = columns
    linear = []
    monkeypatch.setattr(width, "simple_table", lambda *a: linear.append(1) or simple_table(*a))
    ours = [fit_table(rows, heads, columns, keep=1 + seed % 2) for rows, heads in _tables(seed, 400, fitted=True)]
    assert len(linear) > 300  # most tables (and column groups) took the linear layout
    monkeypatch.setattr(width, "_narrow_text", lambda cells, headers: False)
    theirs = [fit_table(rows, heads, columns, keep=1 + seed % 2) for rows, heads in _tables(seed, 400, fitted=True)]
    assert ours == theirs


def test_the_characters_laid_out_here_are_one_column_wide():
    """The linear layout counts one column per character: every character it takes is printable, neither white
    space (str.strip, as tabulate strips cells) nor a line end (str.splitlines), and one column wide for wcwidth
    (https://github.com/jquast/wcwidth), which tabulate uses where it is installed."""
    taken = [chr(i) for i in range(0x110000) if not width._NOT_NARROW.search(chr(i))]
    assert "×" in taken and "—" in taken and "µ" in taken and "✓" not in taken and "\u00a0" not in taken
    for c in taken[1:]:  # after the space
        assert c.isprintable() and c.strip() == c and c.splitlines() == [c], hex(ord(c))
    try:
        import wcwidth
    except ImportError:
        return
    assert all(wcwidth.wcwidth(c) == 1 for c in taken)
