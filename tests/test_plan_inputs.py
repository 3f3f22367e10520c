"""gpuadvisor plan's inputs: the shipped price table (every row dated and sourced), a buyer's prices file and
build files — each mistake one line naming what, where and what to do, exit 2, the input untouched."""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from gpuadvisor.catalog.platforms import load_prices, months_old
from gpuadvisor.cli import main


def cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(list(args))
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def _shipped_rows() -> list[tuple[str, dict]]:
    data = tomllib.loads((resources.files("gpuadvisor.catalog") / "prices.toml").read_text(encoding="utf-8"))
    return [(kind, row) for kind, rows in data.items() for row in rows]


def test_every_shipped_price_row_has_a_source_url_and_a_date():
    rows = _shipped_rows()
    assert len(rows) >= 20
    for kind, row in rows:
        where = f"{kind} {row.get('id') or row.get('gpu')}"
        assert re.fullmatch(r"https://\S+", row.get("url", "")), f"{where}: no source URL"
        assert re.fullmatch(r"\d{4}(-\d{2})?", row.get("date", "")), f"{where}: no date (YYYY-MM)"
        assert row.get("kind") in ("launch MSRP", "street", "used", "on-demand", "capacity block"), where
        assert row.get("source"), where


def test_cloud_prices_come_from_several_providers_and_consumer_gpus_can_be_rented():
    p = load_prices()
    providers = {o.provider for offers in p.cloud_offers.values() for o in offers}
    assert {"Lambda", "AWS", "RunPod"} <= providers
    for gpu in ("rtx-3090", "rtx-4090", "rtx-5090"):  # a homelab build gets a break-even against renting
        assert gpu in p.cloud
    # the rent used is the cheapest on-demand offer: H100 SXM at RunPod Secure Cloud's 8x US$2.79 (2026-04) over
    # Lambda's US$2.99 (2025) and RunPod's single H100 at US$4.76
    assert p.cloud["h100-sxm5-80gb"].usd == 2.79


def test_launch_prices_are_labelled_as_such():
    p = load_prices()
    assert p.gpu["rtx-5090"].label() == "launch MSRP reference price, 2025-01"
    assert p.gpu["rtx-3090"].kind == "used" and p.gpu["rtx-3090"].usd == 700


def test_price_age_in_months():
    assert months_old("2026-05", "2026-11-26") == pytest.approx(209 / 30.44)
    assert months_old("2025", "2026-01-01") == pytest.approx(184 / 30.44)  # a year alone: mid-year
    assert months_old("date not given") is None


def test_an_old_reference_price_is_flagged(capsys):
    code, out, _ = cli(
        capsys, "plan", "8xa100-sxm-used", "--model", "llama-3-8b", "--tokens", "1e9", "--format", "json"
    )
    assert code == 0
    data = json.loads(out)
    assert any("system price is from 2020-05" in a and "check a current price" in a for a in data["assumptions"])


@pytest.mark.parametrize(
    "text,msg",
    [
        ('[gpu]\nid = "rtx-4090"\nusd = 1500\n', "[gpu] must be an array of tables: write [[gpu]]"),
        ('[[gpu]]\nid = "rtx-4090"\nusd = -3\n', "gpu[0].usd: expected a positive number of US dollars"),
        ('[[cloud]]\ngpu = "h100-sxm9"\nusd_per_gpu_hour = 2\n', "unknown GPU 'h100-sxm9'"),
    ],
)
def test_a_bad_prices_file_is_one_line_and_exit_2(capsys, tmp_path, text, msg):
    f = tmp_path / "prices.toml"
    f.write_text(text)
    code, out, err = cli(capsys, "plan", "2x4090-7950x", "--model", "llama-3-8b", "--prices", str(f))
    assert code == 2 and out == "" and msg in err and len(err.strip().splitlines()) == 1
    assert f.read_text() == text


def test_a_prices_file_overrides_a_cloud_offer(tmp_path):
    f = tmp_path / "prices.toml"
    f.write_text('[[cloud]]\ngpu = "h100-sxm5-80gb"\nusd_per_gpu_hour = 6.5\ndate = "2026-11"\nsource = "ours"\n')
    p = load_prices(str(f))
    assert p.cloud["h100-sxm5-80gb"].usd == 6.5  # the buyer's own price wins, even when dearer
    assert [o.source for o in p.cloud_offers["h100-sxm5-80gb"]] == ["ours"]


def test_a_build_with_an_empty_name_is_refused(capsys, tmp_path):
    f = tmp_path / "b.toml"
    f.write_text('name = ""\ngpu = "rtx-4090"\ncount = 2\ncpu = "ryzen-9-7950x"\n')
    code, _, err = cli(capsys, "plan", str(f), "--model", "llama-3-8b")
    assert code == 2 and f"{f}:1: name: expected a non-empty name" in err


def test_an_ambiguous_gpu_name_asks_with_the_choices(capsys, tmp_path):
    f = tmp_path / "b.toml"
    f.write_text('name = "x"\ngpu = "H100"\ncount = 8\ncpu = "xeon-platinum-8480"\nsockets = 2\n')
    code, _, err = cli(capsys, "plan", str(f), "--model", "llama-3-8b")
    assert code == 2
    assert f"{f}:2: gpu: 'H100' is ambiguous: one of h100-nvl, h100-pcie, h100-sxm5-80gb" in err
    f.write_text('name = "x"\ngpu = "RTX 4090"\ncount = 2\ncpu = "ryzen-9-7950x"\n')  # one catalog GPU fits
    code, _, err = cli(capsys, "plan", str(f), "--model", "llama-3-8b", "--format", "json")
    assert code == 0, err


def test_a_rig_description_with_thousands_of_gpus_is_refused_at_once(capsys, tmp_path, monkeypatch):
    src = (Path(__file__).parent.parent / "probes" / "presets" / "4x4090-pcie.toml").read_text()
    head = src[: src.index("[[ports]]")]
    ports = '[[ports]]\nid = "rp0"\nkind = "root-port"\nbdf = "0000:00:01.1"\nhost_bridge = "pci0000:00"\n'
    gpus = "".join(
        f'[[gpus]]\nbus_id = "0000:{i // 256 % 256:02x}:{i % 32:02x}.{i % 8}"\nparent = "rp0"\n' for i in range(10_000)
    )
    f = tmp_path / "big.toml"
    f.write_text(head + ports + gpus)
    from gpuadvisor.probes import rigdesc

    def built(*a, **k):  # "at once": refused on the count, before a single GPU of the description is built
        raise AssertionError("the description was built before its GPU count was checked")

    monkeypatch.setattr(rigdesc, "parse_description", built)
    code, _, err = cli(capsys, "plan", str(f), "--model", "llama-3-8b")
    assert code == 2 and "10000 GPUs: a planned build has 1 to 64 GPUs" in err


def test_an_offered_machine_takes_its_asking_price_and_assumes_missing_ram(capsys, tmp_path):
    src = Path(__file__).parent / "fixtures" / "import" / "samples" / "smi-q_a100sxmx4_thamada.txt"
    shutil.copy(src, tmp_path / src.name)
    code, out, err = cli(
        capsys,
        "plan",
        "--from-nvidia-smi",
        str(tmp_path),
        "--offer-price",
        "42000",
        "--model",
        "llama-3-8b",
        "--task",
        "full",
        "--tokens",
        "1e9",
        "--format",
        "json",
    )
    assert code == 0, err
    b = json.loads(out)["builds"][0]
    assert b["cost"]["purchase_usd"] == 42000
    # nvidia-smi -q has no host RAM: assumed (2x the 4 x 80 GB of GPU memory), said, never dropped
    assert b["ram_gib"] == pytest.approx(2 * 4 * 81920 / 1024)
    assert any("host RAM not in the seller's outputs: assumed 640 GiB" in n for n in b["layout_notes"])
    code, _, err = cli(
        capsys,
        "plan",
        "--from-nvidia-smi",
        str(tmp_path),
        "--offer-price",
        "1",
        "--offer-price",
        "2",
        "--model",
        "llama-3-8b",
    )
    assert code == 2 and "--offer-price given 2 times for 1 --from-nvidia-smi machine(s)" in err
