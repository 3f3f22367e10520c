"""check --since DURATION: only kernel-log events within the window are judged; events whose age the log does not
give are kept; the default (no --since) judges every event since boot."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from gpuadvisor.cli import cli
from gpuadvisor.facts import KernelEvent, Rig
from gpuadvisor.rules.gate import keep_since, parse_duration

BEYOND = Path(__file__).resolve().parent / "fixtures" / "beyond"


def test_durations() -> None:
    assert [parse_duration(t) for t in ("90s", "30m", "24h", "7d", "2w")] == [90, 1800, 86400, 604800, 1209600]


def test_live_ages_come_from_the_uptime_and_unknown_ones_are_kept() -> None:
    rig = Rig()
    rig.kernel.uptime_s = 400_000.0
    rig.kernel.events = [
        KernelEvent(code=94, uptime_s=100.0),  # 111 h before the scan
        KernelEvent(code=79, uptime_s=399_000.0),  # 17 min before
        KernelEvent(code=13),  # no time at all
    ]
    note = keep_since(rig, parse_duration("24h"))
    assert [e.code for e in rig.kernel.events] == [79, 13]
    assert note == "--since: 1 kernel-log event(s) older than 24 h left out; 1 of unknown age kept (the log gives no " \
        "date or uptime for them)"  # fmt: skip


def test_a_dated_log_line_older_than_the_window_no_longer_fails_the_gate(tmp_path: Path) -> None:
    scan = tmp_path / "s.json"
    r = CliRunner().invoke(cli, ["import", str(BEYOND / "dmesg-x-iso-sxid12028-data-only.txt"), "--json", str(scan)])
    assert r.exit_code == 0
    # the lone Data line of SXid 12028 warns (its fatality not shown); the gate set to fail on warnings acts on it
    gate = ["check", "--from", str(scan), "-q", "--fail-on", "warn"]
    assert CliRunner().invoke(cli, gate).exit_code == 1  # default: since boot
    assert CliRunner().invoke(cli, [*gate, "--since", "7d"]).exit_code == 0  # the line is from 2025


def test_a_bad_duration_is_one_line_exit_2(capsys) -> None:
    import pytest

    from gpuadvisor.cli import main

    with pytest.raises(SystemExit) as e:
        main(["check", "--simulate", "h100-pcie", "--since", "soon"])
    err = capsys.readouterr().err
    assert (
        e.value.code == 2 and err == "gpuadvisor: error: --since 'soon': expected a duration such as 30m, 24h or 7d\n"
    )
