"""Set 32's log misreads read as classes: each corpus case (tests/corpus/s32-logs, s32-lost-gpu: read by hand
before the tool ran on it, its thread in INDEX.toml) and another public sample of its form, the sample's URL above it.
"""

from __future__ import annotations

from pathlib import Path

from tests.corpus_cases import corpus_file, import_paste, run_import


def _scan(pattern: str) -> dict:
    """The scan of the one corpus file ``pattern`` names, imported as a user imports it (it must be read)."""
    rc, scan = run_import([corpus_file(pattern)])
    assert rc == 0 and scan is not None, f"{pattern}: refused (exit {rc})"
    return scan


# --- NVML's return code 15 by number: NVML_ERROR_GPU_IS_LOST (nvml.h), the GPU the line numbers is lost ----------

# https://github.com/trexminer/T-Rex/issues/1276 (T-Rex v0.25.9 on HiveOS, one RTX 3080 Ti; the screen goes black
# and the rig must be rebooted): its stats block, then the NVML warnings, as posted
TREX_1276 = """\
--------------------20220503 13:50:42 ---------------------
Mining at rvn.2miners.com:6060 [51.89.99.172], diff: 4.29 G
GPU #0: RTX 3080 Ti - 53.38 MH/s, [T:64/90C, P:349W, F:74%, E:153kH/W], 23/23 R:0% I:0%
Shares/min: 0.504 (Avg. 0.516)
Max diff share was found by GPU #0, diff: 51.94 G
Uptime: 44 mins 34 secs | Algo: kawpow | T-Rex v0.25.9

20220503 13:51:11 WARN: NVML: can't get temperature for GPU #0, error code 15
20220503 13:51:11 WARN: NVML: can't get fan speed for GPU #0, error code 15
"""
# https://github.com/trexminer/T-Rex/issues/321 (T-Rex v0.19.11, a GTX 1080 and an RTX 3060; "this warn is not
# fatal, my mining continues", gone after an update): NVML's 999 is NVML_ERROR_UNKNOWN, no sign of a lost GPU
TREX_321 = "WARN: NVML: can't get GPU #1, error code 999\n"
# https://github.com/LSSI-ETH/plmfit/issues/40 (a multi-GPU job on TITAN RTX under Slurm; "NVML Failed, GPU is
# lost"): slurmstepd's line, the code in brackets and nvmlErrorString's text; no GPU number on it
SLURM_PLMFIT_40 = "slurmstepd: error: NVML: Failed to get usage(15): GPU is lost\n"


def _lost(scan: dict) -> list[dict]:
    return [f for f in scan["findings"] if f["code"] == "GA820" and f["severity"] == "fail"]


def test_nvml_error_code_15_is_the_gpu_the_line_numbers_lost(tmp_path: Path) -> None:
    for scan in (
        _scan("s32-lost-gpu/trex-miner-stats-nvml-error-code-15-*.txt"),
        _scan("s32-lost-gpu/trex-miner-warn-nvml-error-code-15-*.txt"),
        import_paste(tmp_path, TREX_1276),
    ):
        (lost,) = _lost(scan)
        assert lost["gpus"] == [0] and lost["expected"]["action"] == "reboot"
        assert scan["gpus"] == []


def test_nvml_code_15_in_brackets_and_words_is_a_lost_gpu_of_no_number(tmp_path: Path) -> None:
    (lost,) = _lost(import_paste(tmp_path, SLURM_PLMFIT_40))
    assert lost["gpus"] == [] and lost["expected"]["action"] == "reboot"


def test_other_nvml_codes_are_not_a_lost_gpu(tmp_path: Path) -> None:
    scan = import_paste(tmp_path, TREX_321)
    assert _lost(scan) == [] and not [f for f in scan["findings"] if f["severity"] == "fail"]


# --- CUDA's uncorrectable-NVLink error (cudaErrorNvlinkUncorrectable, 220) in a job's log: an NVLink fault --------

# https://github.com/MIC-DKFZ/nnUNet/issues/1519 (an nnU-Net training run; the title, PyTorch's error line)
NNUNET_1519 = "RuntimeError: CUDA error: uncorrectable NVLink error detected during the execution\n"


def test_cuda_uncorrectable_nvlink_error_is_an_nvlink_fault_to_reset(tmp_path: Path) -> None:
    for scan in (
        _scan("s32-logs/trtllm-warmup-cuda-uncorrectable-nvlink-error-*.txt"),
        import_paste(tmp_path, NNUNET_1519),
    ):
        (event,) = [e for e in scan["kernel"]["events"] if e["kind"] == "cuda-nvlink-uncorrectable"]
        assert event["code"] == 220
        (fault,) = [f for f in scan["findings"] if f["code"] == "GA820"]
        assert fault["severity"] == "fail" and fault["expected"]["action"] == "reset"
        assert "nvlink -e" in fault["fix"] and scan["gpus"] == []


# --- NVSentinel's health event carrying an Xid (a JSON log line of its modules): the Xid, judged by the catalog ----

# https://github.com/NVIDIA/NVSentinel/issues/762 (the syslog health monitor's Xid 13 event, as the platform
# connector logged it: the Xid in errorCode, the GPU by its PCI address)
SENTINEL_762 = (
    '{"time":"2026-01-29T21:41:30.541341628Z","level":"INFO","msg":"Health events received","module":'
    '"platform-connectors","version":"dev","events":{"version":1,"events":[{"version":1,"agent":'
    '"syslog-health-monitor","componentClass":"GPU","checkName":"SysLogsXIDError","isFatal":true,'
    '"recommendedAction":15,"errorCode":["13"],"entitiesImpacted":[{"entityType":"PCI","entityValue":"0001:00:00"},'
    '{"entityType":"GPU_UUID","entityValue":"GPU-11111111-1111-1111-1111-111111111111"},{"entityType":"GPC",'
    '"entityValue":"0"},{"entityType":"TPC","entityValue":"1"},{"entityType":"SM","entityValue":"2"}],'
    '"generatedTimestamp":{"seconds":1769722890,"nanos":540645786},"nodeName":"kwok-node-0"}]}}\n'
)


def _xids(scan: dict) -> list[tuple[int, str | None]]:
    return [(e["code"], e["bus_id"]) for e in scan["kernel"]["events"] if e["kind"] == "xid"]


def test_nvsentinel_health_events_carry_their_xid(tmp_path: Path) -> None:
    scan = _scan("s32-logs/nvsentinel-fault-quarantine-json-xid95-*.txt")
    assert _xids(scan) == [(95, "0002:00:00.0")]
    (xid,) = [f for f in scan["findings"] if f["code"] == "GA801"]
    assert xid["severity"] == "fail" and scan["gpus"] == []
    scan = import_paste(tmp_path, SENTINEL_762)
    assert _xids(scan) == [(13, "0001:00:00")]  # as the kernel writes it, no function
    assert "GPU-11111111-1111-1111-1111-111111111111" in scan["kernel"]["events"][0]["text"]


def test_a_healthy_nvsentinel_event_carries_no_xid() -> None:
    # the syslog monitor's event clearing an Xid after a GPU reset (isHealthy true, "No Health Failures")
    scan = _scan("s21-logs/kubectl-logs-nvsentinel-syslog-health-monitor-gpu-reset-ack-*.txt")
    assert _xids(scan) == [] and not [f for f in scan["findings"] if f["severity"] in ("warn", "fail")]


# --- a bus error in NCCL's own thread: its /dev/shm segment the container's tmpfs could not back (GA812) ----------

# https://github.com/msr-fiddle/pipedream/issues/76 (a run in Docker; the thread's answer: docker's default 64 MB of
# shared memory, fixed by --shm-size): UCX's signal line and backtrace through NCCL, as posted
PIPEDREAM_76 = """\
[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)
==== backtrace (tid:   3095) ====
 0 0x0000000000043090 killpg()  ???:0
 1 0x000000000018bb41 __nss_database_lookup()  ???:0
 2 0x000000000007587d ncclGroupEnd()  ???:0
 3 0x000000000007b0ef ncclGroupEnd()  ???:0
 4 0x0000000000059e97 ncclGetUniqueId()  ???:0
 5 0x00000000000489b1 ???()  /usr/lib/x86_64-linux-gnu/libnccl.so.2:0
 6 0x000000000004a655 ???()  /usr/lib/x86_64-linux-gnu/libnccl.so.2:0
 7 0x0000000000063dcc ncclRedOpDestroy()  ???:0
 8 0x0000000000008609 start_thread()  ???:0
 9 0x000000000011f133 clone()  ???:0
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
"""


def test_a_bus_error_in_nccls_thread_is_its_dev_shm_not_a_gpu(tmp_path: Path) -> None:
    for scan in (_scan("s32-logs/deepspeed-8gpu-nccl-sigbus-*.txt"), import_paste(tmp_path, PIPEDREAM_76)):
        (shm,) = [f for f in scan["findings"] if f["code"] == "GA812"]
        assert shm["severity"] == "warn" and "Bus error: nonexistent physical address" in shm["message"]
        assert "--shm-size" in shm["fix"] and scan["gpus"] == [] and scan["kernel"]["events"] == []
        assert not [f for f in scan["findings"] if f["severity"] == "fail"]


# --- ffmpeg's NVDEC errors (its "[hevc @ 0x...] ...cuvid...() failed -> CUDA_ERROR_...") are a log, not a fault ----

# https://github.com/RomanArzumanyan/VALI/issues/122 (VALI's decoder over ffmpeg's h264_cuvid; the thread finds the
# caller's surface format wrong: an application error), its two lines as posted
VALI_122 = (
    "[h264_cuvid @ 0x558a8aac76c0] ctx->cvdl->cuvidParseVideoData(ctx->cuparser, &cupkt) failed -> "
    "CUDA_ERROR_UNKNOWN: unknown error\n"
    "Error while sending a packet to the decoder. Error description: Generic error in an external library\n"
)


def test_ffmpeg_nvdec_errors_are_read_as_a_log_with_no_gpu_fault(tmp_path: Path) -> None:
    for scan in (_scan("s32-logs/ffmpeg-hevc-nvdec-*.txt"), import_paste(tmp_path, VALI_122)):
        # CUDA_ERROR_UNKNOWN (999) is the error table's: judged with the driver's stack at info (GA507), else GA828
        said = [f["severity"] for f in scan["findings"] if f["code"] in ("GA828", "GA507")]
        assert [s for s in said if s != "not-checked"] == ["info"]
        assert not [f for f in scan["findings"] if f["severity"] in ("warn", "fail")]
        assert scan["gpus"] == []
