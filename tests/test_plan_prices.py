"""Prices you can trust: a buyer's prices file says when and where each price was read, or it is refused in one
line; a recommendation driven by a price older than six months says so in the recommendation itself."""

from __future__ import annotations

import pytest
from test_plan_offer import cli


@pytest.mark.parametrize(
    ("row", "what"),
    [
        ('id = "rtx-4090"\nusd = 1650\nsource = "local shop"\n', "gpu[0].date: None: every price needs the date"),
        ('id = "rtx-4090"\nusd = 1650\ndate = "last week"\nsource = "x"\n', "gpu[0].date: 'last week'"),
        ('id = "rtx-4090"\nusd = 1650\ndate = "2026"\nsource = "x"\n', "gpu[0].date: '2026'"),
        ('id = "rtx-4090"\nusd = 1650\ndate = "2099-01"\nsource = "x"\n', "is in the future"),
        ('id = "rtx-4090"\nusd = 1650\ndate = "2026-11"\n', "gpu[0].source: missing"),
    ],
)
def test_an_undated_or_unsourced_price_is_refused_in_one_line(tmp_path, capsys, row, what):
    f = tmp_path / "prices.toml"
    f.write_text("[[gpu]]\n" + row)
    code, _, err = cli(capsys, "plan", "1x4090-7950x", "--model", "llama-3-8b", "--task", "qlora", "--prices", str(f))
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and what in lines[0], err


def test_a_recommendation_driven_by_an_old_price_says_so(tmp_path, capsys):
    # a quote read in 2025-01 is more than six months old on any day this test runs
    f = tmp_path / "prices.toml"
    f.write_text('[[system]]\nid = "1x4090-7950x"\nusd = 3000\ndate = "2025-01"\nsource = "a shop quote"\n')
    code, out, err = cli(capsys, "plan", "1x4090-7950x", "--model", "llama-3-8b", "--task", "qlora", "--prices", str(f))
    assert code == 0, err
    rec = " ".join(out.split()).split("Recommendation:")[1].split(" - ")[1]
    assert rec.startswith("Recommended:") and "system price is from 2025-01" in rec and "check a current price" in rec


def test_the_default_catalogue_says_when_its_rent_drives_the_recommendation(capsys):
    # the shipped H100 SXM rows are from 2026-04 at the newest: more than six months old from 2026-11 on
    code, out, err = cli(capsys, "plan", "rent-8xh100", "--model", "llama-3-8b", "--task", "qlora", "--tokens", "1e8")
    assert code == 0, err
    rec = " ".join(out.split()).split("Recommendation:")[1].split(" - ")[1]
    assert rec.startswith("Recommended:") and "cloud price of NVIDIA H100 SXM5 80GB is from 2026-04" in rec
