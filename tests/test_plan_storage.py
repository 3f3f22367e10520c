"""gpuadvisor plan with a build's data drives ([storage]): the drives' price added to the build, the checkpoint
stall on the array added to the time to train, and a note where a build names no drives."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest

from gpuadvisor.cli import main
from gpuadvisor.errors import InputError
from gpuadvisor.plan.build import load_build
from gpuadvisor.plan.storage import Storage, array_write, checkpoint_stall, load_drives, parse_storage

BASE = (resources.files("gpuadvisor.plan.builds") / "8xh100-sxm.toml").read_text(encoding="utf-8")


def cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(list(args))
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def _build(tmp_path: Path, name: str, storage: str | None, price: str = "[price]\nsystem_usd = 300000\n") -> str:
    head, _, _ = BASE.partition("\n[")
    text = re.sub(r'(?m)^name = ".*"$', f'name = "{name}"', head) + "\n" + price + (storage or "")
    p = tmp_path / f"{name}.toml"
    p.write_text(text, encoding="utf-8")
    return str(p)


def test_every_drive_row_is_sourced_dated_and_says_what_is_missing():
    drives = load_drives()
    assert len(drives) >= 4
    kinds = {d.interface.split()[0] + (" 5.0" if "5.0" in d.interface else "") for d in drives.values()}
    assert {"SATA", "PCIe", "PCIe 5.0"} <= kinds
    assert any("U.3" in d.interface or "U.2" in d.interface for d in drives.values())
    for d in drives.values():
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", d.accessed or ""), d.id
        if d.seq_write_mbps or d.seq_read_mbps:
            assert re.search(r"https?://\S+", d.spec_source or ""), d.id
        if d.sustained_write_mbps:
            assert d.slc_cache_gb and re.search(r"https?://\S+", d.sustained_source or ""), d.id
        if d.price_usd is not None:
            assert d.price_date and re.search(r"https?://\S+", d.price_source or ""), d.id
        lacks = d.seq_write_mbps is None or d.price_usd is None or d.sustained_write_mbps is None
        assert not lacks or d.missing, f"{d.id}: a figure is left out and the row does not say so"


def _stall(storage: Storage, total: int, hours: float, every: float = 3600.0):
    return checkpoint_stall(storage, total, total, hours, every, "every 60 min")


def test_stall_of_a_70b_full_fine_tune_checkpoint_to_the_second():
    # 70e9 parameters x 14 B (bf16 weights + fp32 master + Adam moments) = 980 GB; one 990 Pro at its datasheet
    # 6,900 MB/s: 980e9 / 6.9e9 = 142.03 s per save; 48 h of training with hourly saves = 48 saves
    st = parse_storage("t", {"drive": "samsung-990-pro-2tb", "count": 1})
    s = _stall(st, 70_000_000_000 * 14, 48.0)
    assert s.counted and s.write_gbps == pytest.approx(6.9)
    assert round(s.save_seconds) == 142
    assert s.checkpoints == 48
    assert round(s.stall_seconds) == round(48 * 980e9 / 6.9e9) == 6817
    assert s.hours_with_stall * 3600 == pytest.approx(48 * 3600 + 48 * 980e9 / 6.9e9)


def test_past_the_slc_cache_the_sustained_write_is_used():
    st = parse_storage("t", {"drive": "samsung-980-pro-1tb"})
    gbps, basis = array_write(st, 980_000_000_000)  # 980 GB > the 113 GB cache
    assert gbps == pytest.approx(1.5) and "sustained" in basis
    s = _stall(st, 980_000_000_000, 10.0)
    assert round(s.save_seconds) == 653  # 980e9 / 1.5e9 = 653.3 s
    small, why = array_write(st, 50_000_000_000)  # inside the cache: no sourced datasheet write
    assert small is None and "datasheet" in why
    assert not checkpoint_stall(st, 50_000_000_000, 50_000_000_000, 10.0, 3600, "x").counted


def test_raid0_of_two_drives_halves_the_stall_raid1_does_not():
    one = _stall(parse_storage("t", {"drive": "crucial-t700-2tb"}), 980_000_000_000, 24.0)
    r0 = _stall(parse_storage("t", {"drive": "crucial-t700-2tb", "count": 2, "raid": 0}), 980_000_000_000, 24.0)
    r1 = _stall(parse_storage("t", {"drive": "crucial-t700-2tb", "count": 2, "raid": 1}), 980_000_000_000, 24.0)
    assert r0.stall_seconds == pytest.approx(one.stall_seconds / 2)
    assert r1.stall_seconds == pytest.approx(one.stall_seconds)
    single_raid0 = parse_storage("t", {"drive": "crucial-t700-2tb", "count": 1, "raid": 0})  # allowed
    assert array_write(single_raid0, 10**9)[0] == pytest.approx(11.8)


def test_plan_adds_drive_prices_and_the_stall_in_json_text_and_html(tmp_path, capsys):
    one = _build(tmp_path, "one-drive", '[storage]\ndrive = "samsung-990-pro-2tb"\nprice_usd = 180\n')
    two = _build(
        tmp_path, "two-raid0", '[storage]\ndrive = "samsung-990-pro-2tb"\ncount = 2\nraid = 0\nprice_usd = 180\n'
    )
    sata = _build(tmp_path, "sata", '[storage]\ndrive = "samsung-870-evo-2tb"\ncount = 3\n')
    bare = _build(tmp_path, "no-drives", None)
    html = tmp_path / "plan.html"
    common = ("--model", "llama-3-70b", "--task", "full", "--tokens", "1e9")
    code, out, err = cli(capsys, "plan", one, two, sata, bare, *common, "--format", "json", "--html", str(html))
    assert code in (0, None), err
    rows = {r["build"]: r for r in json.loads(out)["builds"]}
    assert rows["no-drives"]["cost"]["purchase_usd"] == 300000
    assert rows["one-drive"]["cost"]["purchase_usd"] == 300000 + 180
    assert rows["two-raid0"]["cost"]["purchase_usd"] == 300000 + 2 * 180
    assert rows["sata"]["cost"]["purchase_usd"] == pytest.approx(300000 + 3 * 249.99)
    s1, s2 = rows["one-drive"]["storage"], rows["two-raid0"]["storage"]
    assert s1["counted"] and s2["counted"]
    assert s2["stall_seconds"] == pytest.approx(s1["stall_seconds"] / 2)
    assert s1["interval_seconds"] == 3600 and "assumed" in s1["interval_source"]
    assert rows["one-drive"]["job"]["hours"] == pytest.approx(s1["hours_with_stall"])
    assert s1["hours_with_stall"] == pytest.approx(s1["train_hours"] + s1["stall_seconds"] / 3600)
    assert s1["train_hours"] == pytest.approx(rows["no-drives"]["job"]["hours"])
    assert rows["two-raid0"]["job"]["hours"] < rows["one-drive"]["job"]["hours"]
    assert rows["two-raid0"]["job"]["hours"] > s1["train_hours"]
    bare_st = rows["no-drives"]["storage"]
    assert not bare_st["counted"] and "not counted" in bare_st["note"] and bare_st["stall_seconds"] is None
    page = html.read_text(encoding="utf-8")
    assert "time to train with the checkpoint stall" in page and "not counted" in page
    code, text, _ = cli(capsys, "plan", one, bare, *common, "--checkpoint-every", "30m")
    assert code in (0, None)
    assert "Checkpoint stall on the build's data drives:" in text
    assert "every 30 min" in text and "not counted" in text


@pytest.mark.parametrize(
    ("table", "what"),
    [
        ('drive = "no-such-ssd"', "unknown drive"),
        ('drive = "samsung-990-pro-2tb"\ncount = 0', "at least 1"),
        ('drive = "samsung-990-pro-2tb"\nraid = 5', "expected 0, 1"),
        ('drive = "samsung-990-pro-2tb"\nraid = "jbod"', "expected 0, 1"),
        ('drive = "samsung-990-pro-2tb"\nspeed = 3', "unknown key"),
        # hostile sizes: a count past any chassis, a price that overflows when added up (two drives)
        ('drive = "samsung-990-pro-2tb"\ncount = 9223372036854775807', "at most 64"),
        ('drive = "samsung-990-pro-2tb"\ncount = 2\nprice_usd = 1e308', "0 to 1,000,000"),
        ('drive = "samsung-990-pro-2tb"\nprice_usd = nan', "only finite numbers"),
    ],
)
def test_bad_storage_is_one_line_exit_2(tmp_path, capsys, table, what):
    path = _build(tmp_path, "bad", "[storage]\n" + table + "\n")
    with pytest.raises(InputError):
        load_build(path)
    code, _, err = cli(capsys, "plan", path, "--model", "llama-3-8b", "--task", "full", "--tokens", "1e8")
    assert code == 2
    lines = [line for line in err.strip().splitlines() if line]
    assert len(lines) == 1 and what in lines[0], err


def test_a_drive_without_a_public_price_is_not_added_and_says_so(tmp_path, capsys):
    path = _build(tmp_path, "unpriced", '[storage]\ndrive = "crucial-t700-2tb"\ncount = 4\nraid = 0\n')
    code, out, _ = cli(
        capsys, "plan", path, "--model", "llama-3-70b", "--task", "full", "--tokens", "1e9", "--format", "json"
    )
    assert code in (0, None)
    row = json.loads(out)["builds"][0]
    assert row["cost"]["purchase_usd"] == 300000
    assert any("no public price" in n and "not added" in n for n in row["cost"]["notes"])
    assert row["storage"]["counted"] and row["storage"]["write_gbps"] == pytest.approx(4 * 11.8)
