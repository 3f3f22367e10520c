"""The N² spots of a many-GPU rig, fixed without changing what is printed (timings: benchmarks/big_rig.py)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from tabulate import tabulate

from gpuadvisor.collect import nvlink_count, simulate
from gpuadvisor.render.html import environment, matrix_view, p2p_view
from gpuadvisor.render.text.rig import plain_table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))


def test_plain_table_prints_what_tabulate_printed():
    rng = random.Random(0)
    for _ in range(2000):
        n, m = rng.randint(1, 6), rng.randint(1, 7)
        rows = [
            [rng.choice(["X", "NV18", "PIX", "", "0-55,112-167", "-", "SYS", "0", "N/A"]) for _ in range(m)]
            for _ in range(n)
        ]
        heads = [rng.choice(["", "GPU0", "CPU Affinity", "NUMA Affinity", "NIC1"]) for _ in range(m)]
        assert plain_table(rows, heads) == tabulate(
            rows, headers=heads, tablefmt="plain", stralign="left", disable_numparse=True
        )


@pytest.mark.parametrize("name", ["dgx-h100", "dgx2-v100", "2x3090-nvlink", "4x4090-pcie", "big-24"])
def test_matrix_counts_links_as_before(name, tmp_path):
    if name == "big-24":
        import big_rig

        p = tmp_path / "big.toml"
        p.write_text(big_rig.description(24))
        rig = simulate(str(p))
    else:
        rig = simulate(name)
    g, n = rig.gpus, len(rig.gpus)
    want = [
        [
            "X" if i == j else (f"NV{c}" if (c := nvlink_count(g[i], g[j])) else rig.topology.pcie_matrix[i][j])
            for j in range(n)
        ]
        for i in range(n)
    ]
    assert rig.topology.matrix == want


def test_html_matrix_rows_are_the_cells_the_template_printed():
    rig = simulate("dgx-h100")
    env = environment()
    old = env.from_string('{% for c in row.cells %}<td class="{{ c.css }}">{{ c.code }}</td>{% endfor %}')
    old_p2p = env.from_string(
        '{% for c in row.cells %}<td class="{{ c.css }}" title="{{ c.tip }}">{{ c.code }}</td>{% endfor %}'
    )
    for row in matrix_view(rig)["rows"]:
        assert str(row["html"]) == old.render(row=row)
    for rows in p2p_view(rig)["tables"].values():
        for row in rows:
            assert str(row["html"]) == old_p2p.render(row=row)


def test_templates_are_compiled_once_and_cached_on_disk(monkeypatch):
    assert environment() is environment()
    assert environment().bytecode_cache is not None  # a new process loads compiled templates, not sources
