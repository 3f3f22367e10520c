"""GA8xx (beyond the GPU) on simulated rigs: every fault planted through a rig description fires its rule with
the severity its evidence supports; the healthy presets raise none; facts that were not read are not-checked."""

from __future__ import annotations

import copy
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from gpuadvisor.probes.rigdesc import parse_description

from gpuadvisor import facts
from gpuadvisor.collect import simulate_description
from gpuadvisor.rules import evaluate


def _dgx_h100() -> dict:
    return tomllib.loads((resources.files("gpuadvisor.probes.presets") / "dgx-h100.toml").read_text())


def planted() -> dict:
    data = _dgx_h100()
    data["name"] = "planted"
    data["kernel_events"] = [
        {"code": 79, "gpu": 3, "uptime_s": 259000, "text": "GPU has fallen off the bus."},
        {
            "code": 13,
            "gpu": 1,
            "uptime_s": 258000,
            "pid": 4242,
            "process": "python3",
            "text": "Graphics SM Warp Exception on (GPC 1, TPC 2, SM 0): Out Of Range Address",
        },
        {
            "code": 94,
            "gpu": 2,
            "uptime_s": 250000,
            "repeat": 3,
            "pid": 77,
            "process": "python3",
            "text": "Contained: SM (0x1). RST: No, D-RST: No",
        },
        {"code": 48, "gpu": 5, "uptime_s": 1000, "text": "An uncorrectable double bit error (DBE) has been detected"},
        {
            "kind": "sxid",
            "code": 20034,
            "bus_id": "0000:05:00.0",
            "uptime_s": 259100,
            "text": "Fatal, Link 60 LTSSM Fault Up",
        },
    ]
    data["nics"][6] |= {"state": "DOWN", "phys_state": "Polling"}
    data["nics"][5]["rate_gbps"] = 200
    data["ports"][3]["acs"] = ["SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd"]  # sw1: GPU 1 and mlx5_1
    data["gpus"][4]["fabric_state"] = "in-progress"
    data["gpus"][7]["fabric_degraded_bandwidth"] = True
    data["node"] = {
        "iommu": "translated",
        "peermem": False,
        "memlock_kib": 8192,
        "shm_gib": 0.0625,
        "lost_gpus": ["0000:e0:00.0"],
        "fabric_manager": "failed",
        "processes": [{"gpu": 0, "pid": 4242, "name": "python", "used_mib": 30000}],
    }
    return data


def _run(data: dict) -> list[facts.Finding]:
    rig = simulate_description(parse_description(data, "test"))
    return [f for f in evaluate(rig) if f.code.startswith("GA8")]


@pytest.fixture(scope="module")
def findings() -> list[facts.Finding]:
    return _run(planted())


def test_every_planted_fault_fires_with_its_severity(findings: list[facts.Finding]) -> None:
    got = sorted((f.code, f.severity, tuple(f.gpus)) for f in findings)
    all8 = tuple(range(8))
    assert got == sorted(
        [
            ("GA801", "fail", (3,)),  # Xid 79 3 min ago: RESTART_BM
            ("GA801", "warn", (5,)),  # Xid 48, 72 h old: fail lowered one step
            ("GA801", "info", (1,)),  # Xid 13: an application fault, not a hardware fail
            ("GA801", "fail", (2,)),  # Xid 94 three times: warn raised by repetition
            ("GA802", "fail", ()),  # fatal SXid
            ("GA803", "warn", ()),  # mlx5_6 DOWN / Polling
            ("GA804", "warn", ()),  # mlx5_5 at 200 among 400s
            ("GA805", "warn", (6,)),  # GPU 6's own NIC is down: nearest active one is NODE
            ("GA806", "warn", (1,)),  # ACS redirect on the switch shared by GPU 1 and mlx5_1
            ("GA807", "warn", all8),  # IOMMU translating
            ("GA808", "info", all8),  # no peermem, kernel 5.15: dma-buf may stand in
            ("GA809", "fail", (4,)),  # GPU 4 fabric in progress
            ("GA809", "warn", (7,)),  # GPU 7 fabric bandwidth degraded (health mask)
            ("GA809", "fail", all8),  # fabric manager failed
            ("GA810", "fail", ()),  # 0000:e0:00.0 on the bus, not in NVML
            ("GA811", "warn", (0,)),  # 29.3 GiB held
            ("GA812", "warn", all8),  # 64 MiB /dev/shm
            ("GA813", "warn", ()),  # memlock 8 MiB
        ]
    )


def test_xid_messages_name_the_catalog_entry(findings: list[facts.Finding]) -> None:
    by = {(f.code, tuple(f.gpus)): f for f in findings}
    f79 = by[("GA801", (3,))]
    assert f79.message == (
        "GPU 3 0000:5d:00: Xid 79 x1, GPU has fallen off the bus "
        "(ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS) (last one 3 min ago)"
    )
    assert f79.expected == {"immediate_action": "RESTART_BM", "investigatory_action": "CONTACT_SUPPORT"}
    f13 = by[("GA801", (1,))]
    assert "process python3" in f13.message and "an application fault" in (f13.fix or "")
    assert by[("GA801", (2,))].observed["count"] == 3
    assert by[("GA806", (1,))].observed == {
        "acs_control": {"SrcValid": True, "ReqRedir": True, "CmpltRedir": True, "UpstreamFwd": True}
    }
    assert by[("GA811", (0,))].message == "GPU 0: 1 process(es) hold 29.3 GiB of GPU memory (PID 4242 python)"


def test_peermem_missing_warns_on_a_kernel_without_dma_buf() -> None:
    data = planted()
    data["host"]["kernel"] = "5.4.0-150-generic"
    f = next(f for f in _run(data) if f.code == "GA808")
    assert f.severity == "warn"


def test_fabric_manager_down_after_registration_only_warns() -> None:
    data = _dgx_h100()
    data["node"] = {"fabric_manager": "inactive"}
    assert [(f.code, f.severity) for f in _run(data)] == [("GA809", "warn")]


def test_an_old_application_xid_stays_info_and_a_gpu_reset_xid_fails() -> None:
    data = _dgx_h100()
    data["kernel_events"] = [
        {"code": 31, "gpu": 0, "uptime_s": 10, "pid": 1, "process": "a.out", "text": "MMU Fault"},
        {"code": 119, "gpu": 7, "uptime_s": 259100, "text": "Timeout waiting for RPC from GSP0!"},
    ]
    got = [(f.code, f.severity, f.gpus) for f in _run(data)]
    assert got == [("GA801", "fail", [7]), ("GA801", "info", [0])]


def test_xid_154_takes_the_severity_of_the_recovery_action_it_names() -> None:
    data = _dgx_h100()
    data["kernel_events"] = [
        {
            "code": 154,
            "gpu": 0,
            "uptime_s": 259100,
            "text": "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
        },
        {"code": 154, "gpu": 1, "uptime_s": 259100, "text": "GPU recovery action changed from 0x1 (x) to 0x0 (None)"},
    ]
    got = [(f.severity, f.gpus, f.message.split(", ", 1)[1]) for f in _run(data)]
    assert got == [
        ("fail", [0], "GPU recovery action changed to 'Node Reboot Required' (last one 2 min ago)"),
        ("info", [1], "GPU recovery action changed to 'None' (last one 2 min ago)"),
    ]


@pytest.mark.parametrize("name", ["dgx-h100", "dgx-a100", "h100-pcie", "dgx2-v100", "4x4090-pcie", "2x3090-nvlink"])
def test_healthy_presets_raise_nothing_beyond_the_gpu(preset: Any, name: str) -> None:
    rig = preset(name)
    assert [f for f in evaluate(rig) if f.code.startswith("GA8")] == []


def test_presets_carry_the_new_facts(preset: Any) -> None:
    rig = preset("dgx-h100")
    assert [(p.device, p.state, p.rate_gbps) for p in rig.network.rdma_ports or []][:2] == [
        ("mlx5_0", "ACTIVE", 400.0),
        ("mlx5_1", "ACTIVE", 400.0),
    ]
    assert rig.network.peermem_loaded is True and rig.network.iommu_mode == "off"
    assert {g.state for g in rig.fabric.gpus or []} == {"completed"} and rig.fabric.manager_state == "active"
    assert rig.kernel.events == [] and rig.node.gpu_processes == []
    a100 = preset("dgx-a100")
    assert {g.state for g in a100.fabric.gpus or []} == {None}  # fabric info is Hopper and later
    assert a100.fabric.gpus and a100.fabric.gpus[0].why("state") == facts.NOT_SUPPORTED


def test_a_scan_without_the_new_facts_says_what_was_not_checked() -> None:
    rig = copy.deepcopy(facts.Rig(gpus=[facts.Gpu(index=0), facts.Gpu(index=1)]))
    out = {f.code: (f.severity, f.message) for f in evaluate(rig) if f.code.startswith("GA8")}
    assert out["GA801"] == ("not-checked", "kernel log not recorded in this scan")
    assert out["GA803"] == ("not-checked", "RDMA ports not recorded in this scan")
    assert out["GA812"] == ("not-checked", "/dev/shm size not recorded in this scan")
    assert all(sev == "not-checked" for sev, _ in out.values())


def test_rig_description_rejects_a_bad_planted_event() -> None:
    from gpuadvisor.errors import InputError

    data = _dgx_h100()
    data["kernel_events"] = [{"code": 79, "gpu": 9}]
    with pytest.raises(InputError, match=r"kernel_events\[0\]\.gpu: GPU index out of range"):
        parse_description(data, "x.toml")
    data["kernel_events"] = [{"code": 79, "gpus": 1}]
    with pytest.raises(InputError, match=r"kernel_events\[0\]\.gpus: unknown key"):
        parse_description(data, "x.toml")


def _planted_toml() -> str:
    text = (Path(__file__).parent.parent / "probes" / "presets" / "README.md").read_text()
    block = text[text.index("### Planting faults on a preset") :]
    return block[block.index("```toml\n") + 8 : block.index("```", block.index("```toml\n") + 8)]


def test_the_readme_node_check_example_is_what_check_prints(tmp_path: Path) -> None:
    """The planted description in probes/presets/README.md, run through check, prints the README's excerpt."""
    import re

    from click.testing import CliRunner

    from gpuadvisor.cli import cli

    path = tmp_path / "planted-dgx-h100.toml"
    path.write_text(_planted_toml())
    res = CliRunner().invoke(cli, ["check", "--simulate", str(path)], env={"COLUMNS": "80"})
    assert res.exit_code == 1
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    block = readme[readme.index("$ gpuadvisor check --simulate examples/planted-dgx-h100.toml\n") :]
    shown = block.split("\n", 1)[1].split("$ gpuadvisor", 1)[0].splitlines()
    out = res.output.splitlines()
    assert len(shown) == 17 and all(line in out for line in shown), [x for x in shown if x not in out]
    prom = CliRunner().invoke(cli, ["check", "--simulate", str(path), "--format", "prom"]).output
    expected = [ln for ln in block.splitlines() if ln.startswith("gpuadvisor_")]
    assert expected and all(ln in prom.splitlines() for ln in expected)
    assert re.search(r"^Gate: FAIL .*GA801, GA809; exit 1$", res.output, re.M)


def test_a_description_on_a_preset_is_checked(tmp_path: Path) -> None:
    from gpuadvisor.probes.rigdesc import load_description

    from gpuadvisor.errors import InputError

    path = tmp_path / "x.toml"
    path.write_text('base = "dgx-h100"\nname = "x"\n[nics.8]\nstate = "DOWN"\n')
    with pytest.raises(InputError, match=r"nics\.8: no entry 8 in preset dgx-h100 \(0\.\.7\)"):
        load_description(str(path))
    path.write_text('base = "dgx-h900"\nname = "x"\n')
    with pytest.raises(InputError, match=r"base: 'dgx-h900' is not a preset"):
        load_description(str(path))
    path.write_text('base = "dgx-h100"\nname = "x"\n[node]\nshm_gib = 0.0625\n[host]\nkernel = "5.4.0"\n')
    desc = load_description(str(path))
    assert (desc.node, desc.host["kernel"], desc.host["cpu_model"], len(desc.gpus)) == (
        {"shm_gib": 0.0625},
        "5.4.0",
        "Intel(R) Xeon(R) Platinum 8480C",
        8,
    )


@pytest.mark.parametrize(
    ("hca", "expected"),
    [
        ("mlx5_0,mlx5_1", []),
        (
            "=mlx5_6",
            [
                (
                    "fail",
                    "NCCL_IB_HCA==mlx5_6: mlx5_6 not ACTIVE; no selected port is up, so NCCL falls back to TCP sockets",
                )
            ],
        ),
        (
            "mlx5_0:1,mlx5_6,mlx4_0",
            [("warn", "NCCL_IB_HCA=mlx5_0:1,mlx5_6,mlx4_0: no adapter matches mlx4_0; mlx5_6 not ACTIVE")],
        ),
        ("mlx5", []),  # a prefix: selects every mlx5_N, some of them up
        ("^mlx5_6", []),  # an exclusion is not judged
        (
            "mlx5_0:2",
            [
                (
                    "fail",
                    "NCCL_IB_HCA=mlx5_0:2: no adapter matches mlx5_0:2; no selected port is up, so NCCL "
                    "falls back to TCP sockets",
                )
            ],
        ),
    ],
)
def test_ga814_nccl_ib_hca_against_the_ports(hca: str, expected: list[tuple[str, str]]) -> None:
    data = _dgx_h100()
    data["nics"][6] |= {"state": "DOWN", "phys_state": "Polling"}
    data["software"]["env"] = {"NCCL_IB_HCA": hca}
    got = [(f.severity, f.message) for f in _run(data) if f.code == "GA814"]
    assert got == expected


def test_peermem_missing_warns_with_the_proprietary_kernel_module() -> None:
    data = planted()
    data["node"]["open_kernel_module"] = False
    f = next(f for f in _run(data) if f.code == "GA808")
    assert f.severity == "warn" and "the proprietary NVIDIA kernel module" in f.message


def _with_events(*events: facts.KernelEvent) -> list[facts.Finding]:
    rig = simulate_description(parse_description(_dgx_h100(), "test"))
    rig.kernel.events = list(events)
    from gpuadvisor.probes.kmsg import map_gpus

    map_gpus(rig.kernel.events, rig.gpus)
    return [f for f in evaluate(rig) if f.code in ("GA820", "GA821")]


def test_ga820_a_gpu_that_failed_to_initialise_fails_on_its_bus_id() -> None:
    bus = simulate_description(parse_description(_dgx_h100(), "test")).gpus[2].bus_id or ""
    (f,) = _with_events(
        facts.KernelEvent(kind="gpu-init-failed", bus_id=bus.lower(), text=f"GPU {bus}: RmInitAdapter failed!", line=7)
    )
    assert (f.code, f.severity, f.gpus, f.expected) == ("GA820", "fail", [2], {"action": "reboot"})


def test_ga821_correctable_aer_lines_warn_only_above_the_threshold() -> None:
    one = facts.KernelEvent(kind="aer-corrected", bus_id="0000:00:01.1", text="pcieport 0000:00:01.1: PCIe Bus Error")
    (f,) = _with_events(one)
    assert (f.code, f.severity) == ("GA821", "info")
    (f,) = _with_events(*[copy.copy(one) for _ in range(81)])
    assert (f.code, f.severity, f.observed["count"]) == ("GA821", "warn", 81)


def test_ga822_an_mlx5_link_down_and_up_on_a_pasted_log_warns() -> None:
    rig = simulate_description(parse_description(_dgx_h100(), "test"))
    rig.kernel.uptime_s = None  # a pasted log: the age of the flap is unknown
    rig.kernel.events = [
        facts.KernelEvent(kind="link-down", bus_id="0000:17:00.0", text="mlx5_core 0000:17:00.0 ibp23s0: Link down"),
        facts.KernelEvent(kind="link-up", bus_id="0000:17:00.0", text="mlx5_core 0000:17:00.0 ibp23s0: Link up"),
    ]
    (f,) = [f for f in evaluate(rig) if f.code == "GA822"]
    assert (f.severity, f.subject, f.observed["flaps"]) == ("warn", "RDMA 0000:17:00.0", 1)


def test_ga823_ga824_counters_and_firmware_on_the_simulated_dgx() -> None:
    rig = simulate_description(parse_description(_dgx_h100(), "test"))
    ports = rig.network.rdma_ports or []
    assert all(p.counters == dict.fromkeys(p.counters or {}, 0) and p.counters for p in ports)  # read, all zero
    ports[2].counters = dict(ports[2].counters or {}, link_downed=11)
    ports[3].firmware = "0.0.1"
    got = {(f.code, f.severity, f.subject) for f in evaluate(rig) if f.code in ("GA823", "GA824")}
    assert got == {("GA823", "warn", f"{ports[2].device} port 1"), ("GA824", "warn", f"RDMA {ports[3].ca_type}")}


def test_ga825_a_nccl_log_that_disabled_gdr_warns() -> None:
    rig = simulate_description(parse_description(_dgx_h100(), "test"))
    rig.network.nccl_gdr_disabled = ["mlx5_0 (no module)"]
    (f,) = [f for f in evaluate(rig) if f.code == "GA825"]
    assert (f.severity, f.observed["gdr_disabled"]) == ("warn", ["mlx5_0 (no module)"])


def test_ga826_adapter_fatal_fails_and_command_timeouts_warn() -> None:
    # the mlx5_core lines as https://github.com/openucx/ucx/issues/7738 posted them (a firmware command timeout)
    rig = simulate_description(parse_description(_dgx_h100(), "test"))
    rig.kernel.events = [
        facts.KernelEvent(
            kind="hca-cmd-timeout",
            bus_id="0000:61:00.0",
            text="mlx5_core 0000:61:00.0: wait_func:1132:(pid 141181): CREATE_DCT(0x710) timeout.",
        ),
        facts.KernelEvent(
            kind="hca-fatal", bus_id=None, text="node7: NCCL NET/IB async event: local catastrophic error"
        ),
    ]
    got = sorted((f.code, f.severity, f.subject) for f in evaluate(rig) if f.code == "GA826")
    assert got == [("GA826", "fail", "RDMA adapter on node7"), ("GA826", "warn", "RDMA adapter 0000:61:00.0")]


def test_the_shipped_planted_file_is_the_documented_one() -> None:
    shipped = (Path(__file__).parent.parent / "examples" / "planted-dgx-h100.toml").read_text()
    assert shipped.endswith(_planted_toml()) and shipped.startswith("# The node check shown in the project README")


def test_ga827_another_checkers_failed_gpu_test_and_fabric_port_check_fail() -> None:
    # a dcgmi diag Hardware failure with DCGM's hardware next step, and a site's NHC check of the IB ports (the line
    # of corpus/s16-rdma-logs' NHC run: no port the site requires is up, tests/test_s29_logs.py); NHC's GPU-count
    # check fails too (tests/test_s23_logs.py)
    rig = simulate_description(parse_description(_dgx_h100(), "test"))
    rig.node.health_checks = [
        facts.HealthCheck(
            "dcgmi diag",
            "GPU Memory",
            "fail",
            "Found 4 faulty memory elements on GPU 0 Run a field diagnostic on the GPU.",
            [0],
            "Hardware",
            "diag.txt:12",
        ),  # fmt: skip
        facts.HealthCheck("NHC", "check_hw_ib", "fail", "No IB port is ACTIVE (LinkUp 100 Gb/sec).", [], None,
                          "nhc.log:2"),
    ]  # fmt: skip
    got = sorted((f.code, f.severity, f.subject, tuple(f.gpus)) for f in evaluate(rig) if f.code == "GA827")
    assert got == [
        ("GA827", "fail", "NHC check_hw_ib", ()),
        ("GA827", "fail", "dcgmi diag GPU Memory", (0,)),
    ]


def test_ga829_a_device_verbs_cannot_use_warns_and_ga827_leaves_it() -> None:
    # libibverbs' line as github.com/ofiwg/libfabric/issues/975 shows it (rdma-core libibverbs/init.c); a leftover
    # provider that did not load (github.com/NVIDIA/nccl/issues/1044) alone is a note
    rig = facts.Rig()
    no_provider = (
        "libibverbs: Warning: no userspace device-specific driver found for /sys/class/infiniband_verbs/uverbs0"
    )
    rig.node.health_checks = [facts.HealthCheck("libibverbs", "no-provider", "warn", no_provider, [], None, "p.txt:2")]
    (f,) = [f for f in evaluate(rig) if f.code in ("GA827", "GA829")]
    assert (f.code, f.severity, f.subject) == ("GA829", "warn", "host") and "ibverbs-providers" in f.fix
    leftover = "libibverbs: Warning: couldn't load driver 'libipathverbs-rdmav25.so': libipathverbs-rdmav25.so: ..."
    rig.node.health_checks = [facts.HealthCheck("libibverbs", "load-failed", "warn", leftover, [], None, "p.txt:1")]
    assert [(f.code, f.severity) for f in evaluate(rig) if f.code == "GA829"] == [("GA829", "info")]


def test_ga828_lists_the_error_lines_no_sign_judges_and_says_when_it_cannot() -> None:
    rig = facts.Rig()
    line = "2022/05/13 23:09:23 Failed to initialize NVML: could not load NVML library."
    rig.kernel = facts.KernelLog(
        source="imported", lines_read=3, events=[facts.KernelEvent(kind="unjudged", text=line, line=2, more=1)]
    )
    (f,) = [f for f in evaluate(rig) if f.code == "GA828"]
    assert (f.severity, f.subject, f.observed["count"]) == ("info", "host", 2)
    assert f.message.startswith("2 error line(s) about the GPU stack in the log match no sign this tool knows")
    rig.kernel.events = []  # a log with nothing the catalog does not judge
    assert [f for f in evaluate(rig) if f.code == "GA828"] == []
