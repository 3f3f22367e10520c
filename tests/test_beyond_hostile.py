"""Hostile and odd pastes beyond the GPU: each is read as far as it goes, never an internal error, never inf or a
placeholder stored as a value, and rules stay linear in the number of ports. Pastes are written by hand in the
tools' documented layouts (ibstat, dmesg); the real ones are in tests/fixtures/beyond/ (SOURCES.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuadvisor.cli import cli
from gpuadvisor.facts import RdmaPort, Rig
from gpuadvisor.importers import import_files
from gpuadvisor.rules import evaluate

IBSTAT = """CA 'mlx5_0'
\tCA type: MT4129
\tNumber of ports: 1
\tFirmware version: {fw}
\tHardware version: 0
\tNode GUID: 0x...
\tPort 1:
\t\tState: Active
\t\tPhysical state: LinkUp
\t\tRate: {rate}
\t\tLink layer: InfiniBand
"""

HOSTILE = {  # name -> (paste, what must be read)
    "rate-400-digits": (IBSTAT.format(fw="28.39.1002", rate="9" * 400), {"rate_gbps": None}),
    "rate-1.2.3": (IBSTAT.format(fw="28.39.1002", rate="1.2.3"), {"rate_gbps": None}),
    "firmware-elided": (IBSTAT.format(fw="...", rate="400"), {"firmware": None, "rate_gbps": 400.0}),
    "firmware-redacted": (IBSTAT.format(fw="<redacted>", rate="400"), {"firmware": None}),
    "timestamp-400-digits": ("[" + "9" * 400 + ".000001] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off\n", {}),
    "kmsg-400-digits": ("6,1," + "9" * 400 + ",-;NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off\n", {}),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_paste_imports_and_checks_without_inf_or_placeholders(tmp_path: Path, name: str) -> None:
    text, want = HOSTILE[name]
    paste = tmp_path / f"{name}.txt"
    paste.write_text(text)
    scan = tmp_path / "s.json"
    r = CliRunner().invoke(cli, ["import", str(paste), "--json", str(scan)])
    assert r.exit_code == 0 and "internal error" not in r.output, r.output
    doc = json.loads(scan.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in the scan"))
    ports = (doc["network"]["rdma_ports"] or [{}])[0]
    for key, value in want.items():
        assert ports[key] == value, (key, ports)
    for ev in doc["kernel"]["events"] or []:
        assert ev["uptime_s"] is None  # 400 digits: no uptime, the event itself kept
    r = CliRunner().invoke(cli, ["check", "--from", str(scan), "--format", "json"])
    assert r.exit_code in (0, 1) and "internal error" not in r.output, r.output


def test_an_ibpanic_line_is_a_failed_adapter_not_a_port_value(tmp_path: Path) -> None:
    paste = tmp_path / "ibstat.txt"
    paste.write_text("ibpanic: [2557] main: stat of IB device 'mlx5_3' failed: No such file or directory\n")
    rig = import_files([paste])
    (p,) = rig.network.rdma_ports or []
    assert (p.device, p.state) == ("mlx5_3", None) and (p.why("state") or "").startswith("ibpanic:")
    (f,) = [f for f in evaluate(rig) if f.code == "GA803"]
    assert (f.severity, f.subject) == ("warn", "mlx5_3")


def test_the_port_rate_rule_is_linear_in_the_number_of_adapters() -> None:
    # 20,000 adapters: the old rule compared every port with every other (4e8 steps); one pass now
    rig = Rig()
    rig.network.rdma_ports = [
        RdmaPort(device=f"mlx5_{i}", port=1, state="ACTIVE", phys_state="LinkUp", rate_gbps=400.0 if i else 2.5,
                 link_layer="InfiniBand", ca_type="MT4129")
        for i in range(20_000)
    ]  # fmt: skip
    slow = [f for f in evaluate(rig) if f.code == "GA804" and f.severity == "warn"]
    assert [(f.subject, f.observed, f.expected) for f in slow] == [
        ("mlx5_0 port 1", {"rate_gbps": 2.5}, {"rate_gbps": 400.0})
    ]


def test_a_port_up_but_initializing_names_the_subnet_manager() -> None:
    rig = Rig()
    rig.network.rdma_ports = [RdmaPort(device="mlx5_1", state="INIT", phys_state="LinkUp")]
    (f,) = [f for f in evaluate(rig) if f.code == "GA803"]
    assert f.severity == "warn" and "no subnet manager has activated the port" in f.message


BEYOND = Path(__file__).resolve().parent / "fixtures" / "beyond"


def test_a_flapping_mlx5_port_warns_with_its_device() -> None:
    rig = import_files([BEYOND / "journal-mlx5-link-flaps.txt"])
    (f,) = [f for f in evaluate(rig) if f.code == "GA822"]
    assert (f.severity, f.subject, f.observed["flaps"], f.observed["link_up"]) == ("warn", "RDMA 0000:01:00.1", 3, 4)


def test_a_link_down_within_the_window_fails_live() -> None:
    from gpuadvisor.facts import KernelEvent

    rig = Rig()
    rig.kernel.uptime_s = 10_000.0
    rig.kernel.events = [
        KernelEvent(kind="link-down", bus_id="0000:17:00.0", uptime_s=9_000.0, text="mlx5_core ...: Link down"),
        KernelEvent(kind="link-up", bus_id="0000:17:00.0", uptime_s=9_010.0, text="mlx5_core ...: Link up"),
    ]
    (f,) = [f for f in evaluate(rig) if f.code == "GA822"]
    assert f.severity == "fail" and f.observed["flaps"] == 1 and "over 0 min of log" in f.message


def test_dmesg_iso_and_human_times_are_kept_as_the_log_gives_them(tmp_path: Path) -> None:
    # dmesg --time-format iso and dmesg -H (util-linux dmesg(1)): a header "[Jan21 10:00]", then "[  +0.000844]"
    iso = tmp_path / "iso.txt"
    iso.write_text("2025-01-25T10:34:54,859532+00:00 NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n")
    human = tmp_path / "h.txt"
    human.write_text(
        "[Jan21 10:00] NVRM: Xid (PCI:0000:3b:00): 48, An uncorrectable double bit error\n"
        "[  +0.000844] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
    )
    got = [(e.code, e.time, e.uptime_s) for f in (iso, human) for e in import_files([f]).kernel.events or []]
    assert got == [(79, "2025-01-25T10:34:54,859532+00:00", None), (48, "Jan21 10:00", None), (79, None, None)]
