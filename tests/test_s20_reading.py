"""Held-out set 20's reading classes, each on its s20 paste and another real public sample of the same format.

Values are the pastes' own (quoted in each test), never this tool's output."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor.errors import InputError
from gpuadvisor.importers import import_texts
from gpuadvisor.rules import evaluate

TESTS = Path(__file__).parent
CORPUS = TESTS / "corpus"


def _read(path: Path):
    return import_texts([(path.name, path.read_text(encoding="utf-8"))])


def _text(name: str, text: str):
    return import_texts([(name, text)])


def _xids(rig) -> list[tuple[str, int, str | None]]:
    return [(e.kind, e.code, e.bus_id) for e in rig.kernel.events or []]


# --- class 1: an Xid relayed by another tool ---


def test_gpud_event_json_relays_xid_119_once_device_unknown():
    # https://github.com/leptonai/gpud/pull/192: message 'xid 119 detected by dmesg (47 minutes ago)' and its data
    # '\"device_uuid\":\"\",\"xid\":119': one event, no device named
    rig = _read(CORPUS / "s20-logs" / "gpud-event-json-xid-119-gsp-rpc-timeout-no-uuid-cut_gyuho.txt")
    assert _xids(rig) == [("xid", 119, None)]
    assert rig.kernel.events[0].gpu_index is None and rig.gpus == []


def test_gpud_reason_xid_79_on_its_bus_and_nvml_lost_gpu_by_uuid():
    # https://github.com/leptonai/gpud/issues/604: 'XID 79(GPU has fallen off the bus) detected on PCI:0000:ae:00'
    # and '... GPU-ac896b35-5782-c478-4b2a-a661de07770f: failed to get device remapped rows: ERROR_GPU_IS_LOST'
    rig = _read(CORPUS / "s20-lost-gpu" / "gpud-reason-xid79-fallen-off-bus-ae-00-error-gpu-is-lost_eahydra.txt")
    assert _xids(rig) == [("xid", 79, "0000:ae:00")]
    assert [g.uuid for g in rig.gpus] == ["GPU-ac896b35-5782-c478-4b2a-a661de07770f"]
    assert "ERROR_GPU_IS_LOST" in rig.gpus[0].unavailable["name"]
    codes = {f.code: f.severity for f in evaluate(rig)}
    assert codes["GA801"] == "fail" and codes["GA315"] == "fail"


def test_gpud_readme_states_and_events_forms():
    # https://github.com/leptonai/gpud/blob/main/README.md (fault injection): a state's reason
    # 'XID 74 (NVLINK Error) detected on PCI:0000:04:00' and events 'XID 74(NVLINK Error) detected on PCI:0000:04:00',
    # 'XID 79(GPU has fallen off the bus) detected on PCI:0000:04:00'; gpud's tests: 'SXID 123 detected on PCI:...'
    text = (
        '        "reason": "XID 74 (NVLINK Error) detected on PCI:0000:04:00",\n'
        '        "message": "XID 79(GPU has fallen off the bus) detected on PCI:0000:04:00"\n'
        '    "reason": "SXID 123 detected on PCI:0000:9b:00",\n'
    )
    assert _xids(_text("gpud.json", text)) == [
        ("xid", 74, "0000:04:00"),
        ("xid", 79, "0000:04:00"),
        ("sxid", 123, "0000:9b:00"),
    ]


def test_k8s_device_plugin_2020_form_names_the_gpu_by_uuid():
    # https://github.com/NVIDIA/k8s-device-plugin/issues/189:
    # 'XidCriticalError: Xid=69 on Device=GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8, the device will go unhealthy.'
    rig = _read(CORPUS / "s20-logs" / "k8s-device-plugin-xid69-gpu-7540a9b3-marked-unhealthy-2020_d1ablorus.txt")
    assert _xids(rig) == [("xid", 69, None)]
    assert "GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8" in rig.kernel.events[0].text
    assert rig.gpus == []  # the plugin names the GPU; it does not show one


def test_k8s_device_plugin_klog_form_under_container_timestamps():
    # https://github.com/akash-network/support/issues/244 (nvdp pod log, 2024): klog lines behind the container
    # runtime's timestamps; 'XidCriticalError: Xid=94 on Device=GPU-3b6ec030-...; marking device as unhealthy.'
    text = (
        "2024-08-09T13:32:51.873584285Z I0809 13:32:51.873532       1 health.go:159] Processing event "
        "{Device:{Handle:0x7e590d4986e8} EventType:8 EventData:94 GpuInstanceId:4294967295 "
        "ComputeInstanceId:4294967295}\n"
        "2024-08-09T13:32:51.873588972Z I0809 13:32:51.873541       1 health.go:185] XidCriticalError: Xid=94 on "
        "Device=GPU-3b6ec030-5adc-1847-e155-79f635584b4e; marking device as unhealthy.\n"
        "2024-08-09T13:32:51.873595882Z I0809 13:32:51.873567       1 server.go:292] 'nvidia.com/gpu' device marked "
        "unhealthy: GPU-3b6ec030-5adc-1847-e155-79f635584b4e\n"
    )
    rig = _text("nvdp.log", text)
    assert _xids(rig) == [("xid", 94, None)]
    assert "GPU-3b6ec030-5adc-1847-e155-79f635584b4e" in rig.kernel.events[0].text


def test_a_relayed_xid_naming_a_uuid_lands_on_that_gpu():
    # the same plugin line with nvidia-smi -L of the node (UUID from the akash thread; the -L line in its form)
    text = (
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-3b6ec030-5adc-1847-e155-79f635584b4e)\n\n"
        "I0809 13:32:51.873541       1 health.go:185] XidCriticalError: Xid=94 on "
        "Device=GPU-3b6ec030-5adc-1847-e155-79f635584b4e; marking device as unhealthy.\n"
    )
    rig = _text("node.txt", text)
    assert [(e.code, e.gpu_index) for e in rig.kernel.events or []] == [(94, 0)]


def test_a_kernel_xid_line_stays_the_kernel_logs():
    # https://github.com/kubernetes-sigs/dra-driver-nvidia-gpu/issues/904: an NVRM line names Xid too: the kernel
    # log reads it, not the relay
    line = "[1231741.378609] NVRM: Xid (PCI:0009:01:00): 43, pid=3188489, name=trigger_xid, channel 0x0b00000a\n"
    rig = _text("dmesg.txt", line)
    assert _xids(rig) == [("xid", 43, "0009:01:00")]


# --- class 2: NCCL's topology dump XML ---


def test_nccl_topo_dump_cut_reads_two_v100s_their_links_and_nvlink_counts():
    # https://github.com/NVIDIA/nccl/issues/671: <pci busid="0000:06:00.0" ... link_speed="8 GT/s" link_width="16">
    # <gpu dev="0" sm="70" ...> with nvlinks 1+1+2+2 to 07/0a/0b/85:00.0; GPU 1: 2 to 86, 2 to 0a, then cut
    rig = _read(
        CORPUS / "s20-topo" / "nccl-topo-dump-xml-dgx1-v100-plx-switch-two-gpus-nvlink-counts-cut_xiaosong9905.txt"
    )
    assert [(g.index, g.bus_id, g.compute_capability, g.numa_node) for g in rig.gpus] == [
        (0, "0000:06:00.0", "7.0", 0),
        (1, "0000:07:00.0", "7.0", 0),
    ]
    assert [(g.pcie.max_gen, g.pcie.max_width, g.pcie.current_width) for g in rig.gpus] == [(3, 16, None)] * 2
    links = [[(n.remote_bus_id, n.remote_gpu_index) for n in g.nvlinks] for g in rig.gpus]
    assert (
        links[0]
        == [("0000:07:00.0", 1), ("0000:0a:00.0", None)] + [("0000:0b:00.0", None)] * 2 + [("0000:85:00.0", None)] * 2
    )
    assert len(links[1]) == 4 and "nvlinks" in rig.gpus[1].unavailable  # cut inside GPU 1's element
    assert "nvlinks" not in rig.gpus[0].unavailable


_PCI = 'class="0x030200" vendor="0x10de" device="0x20b5" subsystem_vendor="0x10de" subsystem_device="0x1533"'


def _ncv4_cpu(numa: int, affinity: str, bus: str, peer: str) -> str:
    """One <cpu> of NCv4's topo.xml as Azure writes it: its one A100 (dev and rank = the NUMA node) NVLinked
    12 times to its pair."""
    return (
        f'  <cpu numaid="{numa}" affinity="{affinity}" arch="x86_64" vendor="AuthenticAMD" familyid="175" '
        'modelid="1">\n'
        f'    <pci busid="{bus}" {_PCI} link_speed="" link_width="0">\n'
        f'      <gpu dev="{numa}" sm="80" rank="{numa}" gdr="1">\n'
        f'        <nvlink target="{peer}" count="12" tclass="0x030200"/>\n'
        "      </gpu>\n    </pci>\n  </cpu>\n"
    )


NCV4_TOPO = (
    '<system version="1">\n'
    + _ncv4_cpu(0, "00000000,00000000,00ffffff", "0001:00:00.0", "0002:00:00.0")
    + _ncv4_cpu(1, "00000000,0000ffff,ff000000", "0002:00:00.0", "0001:00:00.0")
    + "</system>\n"
)


def test_nccl_topo_file_of_a_vm_without_link_speeds():
    # https://github.com/Azure/azhpc-images/blob/master/customizations/ncv4.sh (NCv4's topo.xml, first two CPUs):
    # link_speed="" link_width="0" (the VM shows no link), 12 NVLinks between the pair, one GPU per NUMA node (the
    # first CPU's <nic> left out)
    rig = _text("topo.xml", NCV4_TOPO)
    assert [(g.index, g.bus_id, g.compute_capability, g.numa_node) for g in rig.gpus] == [
        (0, "0001:00:00.0", "8.0", 0),
        (1, "0002:00:00.0", "8.0", 1),
    ]
    assert [(g.pcie.max_gen, g.pcie.max_width) for g in rig.gpus] == [(None, None)] * 2
    assert "max_gen" in rig.gpus[0].pcie.unavailable
    assert [len(g.active_nvlinks()) for g in rig.gpus] == [12, 12]
    assert {n.remote_gpu_index for n in rig.gpus[0].nvlinks} == {1}


# --- class 5: a 32-bit PCI domain (Hyper-V pass-through) keeps NVML's eight digits ---


def test_azure_domain_with_a_leading_zero_keeps_eight_digits():
    # https://github.com/NVIDIA/nvidia-docker/issues/1316: 'Domain : 0x3F8CFDD', 'Bus Id : 03F8CFDD:00:00.0'
    rig = _read(
        CORPUS / "s20-smi-q" / "smi-q-fragment-azure-passthrough-p100-domain-3f8cfdd-bus-id-cut_preethamgali.txt"
    )
    assert [g.bus_id for g in rig.gpus] == ["03f8cfdd:00:00.0"]


def test_bus_id_forms_of_nvml_and_sysfs():
    from gpuadvisor.importers.values import normalize_bus_id

    # NVML's 8-digit form of domain 0 folds to sysfs's 4 digits; a 32-bit domain keeps 8, zero-padded
    assert normalize_bus_id("00000000:18:00.0") == "0000:18:00.0"
    assert normalize_bus_id("3E3F8E05:00:00.0") == "3e3f8e05:00:00.0"  # Azure, tests/test_import_s8_tables.py
    assert normalize_bus_id("3F8CFDD:00:00.0") == "03f8cfdd:00:00.0"
    assert normalize_bus_id("0001:00:00.0") == "0001:00:00.0"  # NCv4's topo.xml domains stay 4 digits


# --- class 3: DCGM's diagnostic through NVSentinel's preflight pod, and dcgmi health without watches ---


def test_preflight_dcgm_diag_json_events_give_the_failed_and_warned_tests():
    # https://github.com/NVIDIA/NVSentinel/pull/772: '"event": "Diagnostic summary"', passed 0, failed 2, warned 2;
    # '"event": "Test warn"', test 'software', error_code 29, persistence mode disabled; cut in the next key
    rig = _read(
        CORPUS / "s20-dcgm" / "k8s-preflight-dcgm-diag-jq-json-summary-2-failed-persistence-warn-cut_xrfxlp.txt"
    )
    checks = [(c.check, c.verdict) for c in rig.node.health_checks or []]
    assert checks == [("software", "warn"), ("2 test(s) not shown", "fail"), ("1 test(s) not shown", "warn")]
    assert 'running "nvidia-smi -i <gpuId> -pm 1 "' in rig.node.health_checks[0].detail
    assert "GPU-64c6592e-0317-762b-fb32-0d561ed649ae" in rig.node.health_checks[0].detail
    assert "fail" in {f.severity for f in evaluate(rig) if f.code == "GA827"}


def test_preflight_events_one_a_line_as_the_pod_writes_them():
    # the same events unformatted (the pod's log, before jq), values from the NVSentinel#772 paste
    text = (
        '{"event": "Diagnostic summary", "level": "info", "passed": 4, "failed": 0, "warned": 1, "skipped": 1, '
        '"total": 6, "module": "preflight-dcgm-diag"}\n'
        '{"event": "Test warn", "level": "warning", "gpu": "GPU-64c6592e-0317-762b-fb32-0d561ed649ae", '
        '"test": "software", "error_code": 29, "detail": "Persistence Mode: Persistence mode for GPU 0 is disabled."}\n'
    )
    rig = _text("preflight.log", text)
    assert [(c.check, c.verdict) for c in rig.node.health_checks or []] == [("software", "warn")]


def test_dcgmi_health_without_watches_is_read_as_no_verdict():
    # https://github.com/NVIDIA/DCGM/issues/176: 'Error: Health watches not enabled. Please enable watches.' (the
    # words of dcgmi/Health.cpp when no watch is set): no health check ran: a note, no GPU, no finding
    rig = _read(CORPUS / "s20-logs" / "dcgmi-health-check-health-watches-not-enabled-container_corrtia.txt")
    assert rig.gpus == [] and rig.node.health_checks is None
    assert any("health watches not enabled" in p for p in rig.problems)
    assert not [f for f in evaluate(rig) if f.severity in ("warn", "fail")]


# --- class 4: torch.__config__.show() ---


def test_torch_config_show_gives_torchs_cuda_and_nothing_of_the_machine():
    # https://github.com/junxnone/aiwiki/issues/170: 'PyTorch built with:', '  - CUDA Runtime 10.1', '  - CuDNN 7.6.3'
    rig = _read(
        CORPUS / "s20-collect-env" / "torch-config-show-pytorch-built-with-cuda-10-1-cudnn-7-6-3-cut_junxnone.txt"
    )
    assert (rig.software.torch_cuda_version, rig.software.torch_version, rig.software.driver_version) == (
        "10.1",
        None,
        None,
    )
    assert rig.gpus == [] and "driver_version" in rig.software.unavailable


def test_torch_config_show_with_torch_version_in_its_build_settings():
    # https://github.com/pytorch/pytorch/pull/18579 (the first output, 2019): '  - CUDA Runtime 9.2',
    # '  - CudNN 7.10.2  (built against CUDA 9.1)'; TORCH_VERSION as newer builds list it in 'Build settings'
    # (https://github.com/pytorch/pytorch/pull/48380 added the build settings it lists)
    text = (
        "PyTorch built with:\n  - GCC 4.8\n  - NNPACK is enabled\n  - CUDA Runtime 9.2\n"
        "  - NVCC architecture flags: -gencode;arch=compute_52,code=sm_52\n"
        "  - CudNN 7.10.2  (built against CUDA 9.1)\n  - Magma 2.5.0\n"
        "  - Build settings: BLAS=MKL, BUILD_TYPE=Release, TORCH_VERSION=1.1.0, USE_CUDA=True, USE_NCCL=True\n"
    )
    rig = _text("config.txt", text)
    assert (rig.software.torch_cuda_version, rig.software.torch_version) == ("9.2", "1.1.0")


# --- class 6: ip link show ---


def test_ip_link_show_names_the_interfaces_and_notes_ipoib_not_up():
    # https://github.com/mochi-hpc/mochi-margo/issues/235: lo, enp1s0f0 UP, enp1s0f1 and the IPoIB interfaces
    # ibp5s0, ibp12s0, ibp132s0 '<BROADCAST,MULTICAST> ... qdisc noop state DOWN' (cut in the sixth)
    rig = _read(CORPUS / "s20-rdma-logs" / "ip-link-show-four-ib-netdevs-noop-state-down-cut_thomas-bouvier.txt")
    assert rig.host.net_interfaces == ["lo", "enp1s0f0", "enp1s0f1", "ibp5s0", "ibp12s0", "ibp132s0"]
    noted = [p for p in rig.problems if "IPoIB interface never brought up" in p]
    assert [p.split(": ")[2] for p in noted] == ["ibp5s0", "ibp12s0", "ibp132s0"]
    assert rig.network.rdma_ports is None  # an interface's state is not a port's
    assert not [f for f in evaluate(rig) if f.severity == "fail"]


def test_ip_link_show_of_a_pkey_child_interface_up():
    # https://github.com/linux-mailinglist-archives/linux-rdma.vger.kernel.org.0 (the IPoIB PKey patch thread:
    # '$ ip -d link show dev mlx5_ib0.8002'): the child named with its parent after '@', UP and state UP: no note
    text = (
        "20: mlx5_ib0.8002@mlx5_ib0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 2044 qdisc mq state UP mode DEFAULT "
        "group default qlen 256\n"
        "    link/infiniband 00:00:11:7b:fe:80:00:00:00:00:00:00:24:8a:07:03:00:a3:19:64 brd "
        "00:ff:ff:ff:ff:12:40:1b:80:02:00:00:00:00:00:00:ff:ff:ff:ff promiscuity 0 minmtu 68 maxmtu 65520\n"
    )
    rig = _text("ip-link.txt", text)
    assert rig.host.net_interfaces == ["mlx5_ib0.8002"]
    assert not [p for p in rig.problems if "IPoIB" in p]


def test_an_xid_field_of_zero_is_no_xid():
    # gpud's event data with no Xid ('\"xid\":0', the field's zero value, as DCGM's XIDER 0 says none)
    with pytest.raises(InputError):  # nothing else in it: not recognised, as any text without an output
        _text("gpud.json", '{"data_source":"dmesg","device_uuid":"","xid":0}\n{"xid": 0}\n')
