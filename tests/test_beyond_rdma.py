"""RDMA port error counters (live from /sys/class/infiniband/*/ports/*/counters) and firmware across adapters."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.probes.rdma import read_ports

from gpuadvisor.facts import RdmaPort, Rig
from gpuadvisor.rules import evaluate


def _port(root: Path, dev: str, counters: dict[str, str], fw: str = "28.39.1002") -> None:
    d = root / "sys" / "class" / "infiniband" / dev
    (d / "ports" / "1" / "counters").mkdir(parents=True)
    (d / "fw_ver").write_text(fw + "\n")
    (d / "hca_type").write_text("MT4129\n")
    for name, text in {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "rate": "400 Gb/sec (4X NDR)",
                       "link_layer": "InfiniBand"}.items():  # fmt: skip
        (d / "ports" / "1" / name).write_text(text + "\n")
    for name, value in counters.items():
        (d / "ports" / "1" / "counters" / name).write_text(value + "\n")


def test_counters_are_read_live_and_a_bad_value_is_left_out(tmp_path: Path) -> None:
    _port(tmp_path, "mlx5_0", {"symbol_error": "0", "link_downed": "37", "port_rcv_errors": "9" * 400})
    ports, why = read_ports(tmp_path)
    assert why is None
    (p,) = ports or []
    assert p.counters == {"symbol_error": 0, "link_downed": 37}  # 400 digits is no count


def test_high_counters_warn_with_the_cited_thresholds(tmp_path: Path) -> None:
    _port(tmp_path, "mlx5_0", {"symbol_error": "11", "link_downed": "10", "link_error_recovery": "3"})
    _port(tmp_path, "mlx5_1", {"symbol_error": "0", "link_downed": "0"})
    rig = Rig()
    rig.network.rdma_ports, _ = read_ports(tmp_path)
    (f,) = [f for f in evaluate(rig) if f.code == "GA823"]
    assert (f.severity, f.subject, f.observed, f.expected) == (
        "warn",
        "mlx5_0 port 1",
        {"symbol_error": 11},
        {"symbol_error": 10},
    )  # link_downed 10 is at the limit, not above it


def test_counters_not_read_say_not_checked() -> None:
    rig = Rig()
    rig.network.rdma_ports = [RdmaPort(device="mlx5_0", state="ACTIVE")]
    (f,) = [f for f in evaluate(rig) if f.code == "GA823"]
    assert f.severity == "not-checked"


def test_one_adapter_on_other_firmware_warns_and_names_it() -> None:
    rig = Rig()
    rig.network.rdma_ports = [
        RdmaPort(
            device=f"mlx5_{i}", state="ACTIVE", ca_type="MT4129", firmware="28.39.1002" if i != 5 else "28.36.1010"
        )
        for i in range(8)
    ]
    (f,) = [f for f in evaluate(rig) if f.code == "GA824"]
    assert (f.severity, f.expected) == ("warn", {"firmware": "28.39.1002"})
    assert f.message == "MT4129 adapters run 2 firmware versions: most 28.39.1002, mlx5_5 on 28.36.1010"
