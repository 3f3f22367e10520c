"""Five outputs held-out set 35 refused, each read on its s35 paste and on other real public samples of its form:
dcgmi diag's JSON, GPUDirect Storage's gdscheck -p, smartctl's NVMe health log, verbs work completions in error and
an nccl-tests run whose ranks failed before listing their devices.

Values are the pastes' own (quoted in each test), never this tool's output."""

from __future__ import annotations

import json

from gpuadvisor.facts import Rig
from gpuadvisor.facts.scanfile import from_dict
from gpuadvisor.importers import import_texts
from gpuadvisor.importers.merge import import_files
from gpuadvisor.rules import evaluate
from tests.corpus_cases import corpus_file as _one


def _codes(rig: Rig) -> set[str]:
    """The codes of the findings at warn or worse."""
    return {f.code for f in evaluate(rig) if f.severity in ("warn", "fail")}


def _said(rig: Rig, words: str) -> list[str]:
    return [p for p in rig.problems if words in p]


# --- class 1: dcgmi diag -j (DCGM's diagnostic as JSON) ---


def test_dcgm_json_every_test_skipped_is_no_diagnostic_run():
    # https://github.com/NVIDIA/DCGM/issues/139: T400, 'dcgmi diag -r 3 -j', the first category elided '{"..."}',
    # PCIe, GPU Memory, Diagnostic, EUD Test, Targeted Stress each '"gpu_id" : "0", "status" : "Skip"', cut
    rig = import_files([_one("s35-logs/dcgmi-diag-r3-json-*.txt")])
    (told,) = _said(rig, "dcgmi diag (JSON)")
    assert told.endswith(
        "PCIe: Skip on GPU 0; GPU Memory: Skip on GPU 0; Diagnostic: Skip on GPU 0; EUD Test: Skip on GPU 0; "
        "Targeted Stress: Skip on GPU 0"
    )
    assert _said(rig, "no diagnostic ran: every test shown (5) was skipped on GPU 0")
    assert rig.node.health_checks is None
    assert not _codes(rig) & {"GA827", "GA801", "GA315"}


def test_dcgm_json_real_output_all_pass_on_eight_gpus():
    # DCGM's own "real output" (nvvs/src/tests/JsonResultTests.cpp at 3065572): nine Deployment tests PASS on
    # "0,1,2,3,4,5,6,7" with a null between each, then "software" PASS on each GPU (gpu_ids as numbers 0-7), 3.1.0
    rig = import_files([_one("fix35f-logs/dcgmi-diag-json-dcgm-3-1-0-*.txt")])
    (told,) = _said(rig, "dcgmi diag (JSON)")
    assert "Denylist: Pass on GPU 0, 1, 2, 3, 4, 5, 6, 7" in told
    assert told.endswith("software: Pass on GPU 0, 1, 2, 3, 4, 5, 6, 7")
    assert told.count(": Pass") == 10
    assert rig.node.health_checks is None


def test_dcgm_json_a_failed_test_is_a_health_check_with_its_warning():
    # the issue-139 paste with its Hardware/GPU Memory result turned into the failure DCGM's JsonOutput.h documents
    # ("status" : "FAIL" with a "warnings" list after it; jsoncpp writes the keys in name order)
    text = _one("s35-logs/dcgmi-diag-r3-json-*.txt").read_text()
    at = text.index('"status" : "Skip"', text.index('"GPU Memory"'))
    failed = (
        text[:at] + '"status" : "FAIL",\n"warnings" : [ { "error_id" : 83, "warning" : "GPU 0 had uncorrectable '
        'memory errors" } ]' + text[at + len('"status" : "Skip"') :]
    )
    rig = import_texts([("paste.txt", failed)])
    (check,) = rig.node.health_checks or []
    assert (check.check, check.verdict, check.gpus, check.section) == ("GPU Memory", "fail", [0], "Hardware")
    assert check.detail == "GPU 0 had uncorrectable memory errors"
    assert not _said(rig, "no diagnostic ran")


# --- class 2: gdscheck -p (GPUDirect Storage) ---


def test_gdscheck_fragment_in_markdown_bold_is_gds_not_available():
    # https://github.com/NVIDIA/DALI/issues/4009: every line one leading space, '**NVMe : Unsupported**' and
    # '**--Mellanox PeerDirect : Disabled**' in bold, 'properties.use_compat_mode : true', cut
    rig = import_files([_one("s35-storage/gdscheck-p-fragment-*.txt")])
    assert rig.network.peermem_loaded is False
    (told,) = _said(rig, "not available on this host")
    assert "(NVMe, NVMeOF, SCSI, ScaleFlux CSD, ...)" in told
    assert "use_compat_mode true" in told
    assert not _codes(rig) & {"GA801", "GA901"}


def test_gdscheck_driver_lines_alone_and_a_paste_cut_before_nvme():
    # https://github.com/NVIDIA/gds-nvidia-fs/issues/4: the ten driver lines alone, all Unsupported
    rig = import_files([_one("fix35f-storage/gdscheck-driver-lines-only-*.txt")])
    assert _said(rig, "supported: none shown: not available on this host, every storage path it lists is Unsupported")
    # https://github.com/NVIDIA/gds-nvidia-fs/issues/70: 1.15.1.6, nvidia_fs 2.26, libcufile 2.12, cut in 'NVMe : Un'
    rig = import_files([_one("fix35f-storage/gdscheck-p-1-15-1-6-*.txt")])
    assert _said(rig, "GDS release version 1.15.1.6, nvidia_fs version 2.26, libcufile version 2.12")
    assert not _said(rig, "not available")  # NVMe's line is cut: its support is not shown


# --- class 3: smartctl's NVMe health log ---


def test_smartctl_health_log_alone_is_a_drive_with_its_health():
    # https://github.com/canonical/checkbox/issues/102: smartctl -x from 'Supported Power States': PASSED, critical
    # warning 0x00, 30 Celsius, spare 100% (threshold 10%), 0% used, 3,682 unsafe shutdowns, media errors 0, 4,804
    # error-log entries, 6,726 power-on hours; no Model Number line
    rig = import_files([_one("s35-storage/smartctl-nvme-tail-*.txt")])
    (drive,) = rig.storage.paths[0].devices
    assert drive.model is None and "information section" in drive.unavailable["model"]
    h = drive.health
    assert h is not None
    assert (h.overall, h.critical_warning, h.temperature_c) == ("PASSED", 0, 30)
    assert (h.available_spare_pct, h.spare_threshold_pct, h.percentage_used) == (100, 10, 0)
    assert (h.media_errors, h.error_log_entries, h.unsafe_shutdowns, h.power_on_hours) == (0, 4804, 3682, 6726)
    assert _said(rig, "4804 error-log entries and no media error")
    assert not _codes(rig) & {"GA901", "GA903"}


def test_smartctl_critical_warning_bits_are_named():
    # https://github.com/smartmontools/smartmontools/issues/537: 'Critical Warning: 0x04', 100% used, spare 100%
    rig = import_files([_one("fix35f-storage/smartctl-nvme-health-log-alone-*.txt")])
    (drive,) = rig.storage.paths[0].devices
    assert drive.health is not None and (drive.health.critical_warning, drive.health.percentage_used) == (4, 100)
    assert _said(rig, "NVMe critical warning 0x04: reliability degraded")
    assert _said(rig, "100% of its rated endurance used")
    assert not _said(rig, "below its threshold")


def test_smartctl_health_round_trips_and_is_absent_without_one():
    rig = import_files([_one("fix35f-storage/smartctl-7-4-apple-ssd-*.txt")])
    # https://github.com/smartmontools/smartmontools/issues/308: APPLE SSD AP0512Z, 'smartctl -a /dev/nvme0', 27 C
    (drive,) = rig.storage.paths[0].devices
    assert (drive.name, drive.model) == ("nvme0", "APPLE SSD AP0512Z")
    assert drive.health is not None and drive.health.temperature_c == 27
    assert drive.health.available_spare_pct is None  # the paste ends in 'Available Spare:'
    data = json.loads(rig.to_json())
    assert json.loads(from_dict(data).to_json()) == data
    lsblk = import_files([_one("s22-storage/smartctl-7-1-nvme-intel-optane-*.txt")])
    for d in lsblk.storage.paths[0].devices:
        d.health = None  # a drive no health log was read for: written as scans were before
    written = json.loads(lsblk.to_json())
    assert "health" not in written["storage"]["paths"][0]["devices"][0]
    assert json.loads(from_dict(written).to_json()) == written


# --- class 4: verbs work completions in error ---


def test_uccl_cqe_errors_are_a_network_note_not_an_adapter_fault():
    # https://github.com/uccl-project/uccl/issues/799: eleven 'CQE ERROR ... status=12(transport retry counter
    # exceeded) ... qp_num=0x2c..' lines (the last cut in 'status=12(transp'), nine queue pairs named
    rig = import_files([_one("s35-rdma-logs/uccl-ep-cqe-error-status-12-*.txt")])
    (told,) = _said(rig, "verbs work completion status 12")
    assert "(transport retry counter exceeded, IBV_WC_RETRY_EXC_ERR) x11 on 9 queue pair(s)" in told
    assert "PFC/ECN" in told and "no adapter, port or GPU fault" in told
    assert not _codes(rig) & {"GA801", "GA803", "GA820", "GA822", "GA826"}


def test_spdk_and_nccl_forms_of_the_same_status():
    # https://github.com/spdk/spdk/issues/1651: three 'status: (12): transport retry counter exceeded' lines
    rig = import_files([_one("fix35f-rdma-logs/spdk-nvmf-tgt-*.txt")])
    assert _said(rig, "status 12 (transport retry counter exceeded, IBV_WC_RETRY_EXC_ERR) x3")
    # https://github.com/NVIDIA/nccl/issues/1814: NCCL 2.19+'s form, status 12 then the flushed ones (status 5)
    nccl = (
        "hostname-test:984:1357 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer "
        "172.36.143.59<44206> with status=12 opcode=129 len=65536 vendor err 129 (Recv) localGid ::ffff:29.87.88.182 "
        "remoteGids::ffff:29.87.4.221\n"
        "hostname-test:984:1357 [4] NCCL INFO transport/net.cc:1298 -> 6\n"
        "hostname-test:984:1357 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer "
        "172.36.143.59<44206> with status=5 opcode=32656 len=32659 vendor err 249 (Recv) localGid ::ffff:29.87.88.182 "
        "remoteGids::ffff:29.87.4.221\n"
    )
    rig = import_texts([("paste.txt", nccl)])
    assert _said(rig, "status 12 (transport retry counter exceeded, IBV_WC_RETRY_EXC_ERR) x1 from peer(s) 172.36")
    assert _said(rig, "status 5 (Work Request Flushed Error, IBV_WC_WR_FLUSH_ERR) x1")


# --- class 5: nccl-tests ranks failing before their devices ---


def test_invalid_device_ordinal_on_every_rank_is_a_launch_error():
    # https://github.com/NVIDIA/nccl-tests/issues/263: '# Using devices', then g0010 and g0016 ranks each 'Test CUDA
    # failure common.cu:941 'invalid device ordinal'' with ' .. g0010 pid 888386: Test failure common.cu:891'
    rig = import_files([_one("s35-nccl-debug/nccl-tests-two-nodes-using-devices-invalid-*.txt")])
    (m,) = rig.measurements
    assert (m.kind, m.status) == ("collective", "failed")
    assert "'invalid device ordinal' (x5) on host(s) g0010, g0016" in (m.error or "")
    assert "4 rank(s) shown failing (pids 888386, 888385, 888382, 3645592)" in (m.error or "")
    assert _said(rig, "a launch configuration error")
    assert _codes(rig) == {"GA606"}


def test_a_named_run_failing_the_same_way_says_so_too():
    # https://github.com/NVIDIA/nccl-tests/issues/165: 'mpirun ... -np 2 ... all_reduce_perf ... -g 1', the header,
    # 'majidnc24MPTXTH: Test CUDA failure common.cu:892 'invalid device ordinal''
    rig = import_files([_one("fix35f-nccl-debug/nccl-tests-mpirun-two-hosts-*.txt")])
    (m,) = rig.measurements
    assert (m.kind, m.status) == ("all_reduce", "failed")
    assert _said(rig, "'invalid device ordinal' on host(s) majidnc24MPTXTH: a launch configuration error")
    # https://github.com/NVIDIA/nccl/issues/348: ranks 8-15 behind '[1,N]<stdout>:' tags, host 192.168.0.138
    rig = import_files([_one("fix35f-nccl-debug/nccl-tests-tag-output-16-ranks-*.txt")])
    assert _said(rig, "common.cu:732 'invalid device ordinal' on host(s) 192.168.0.138")
