"""The table of NVML's and CUDA's documented error codes (gpuadvisor/catalog/error_codes.py; importers/error_codes.py
reads them from logs): each entry checked
against the header's value and against a real public line that prints it (its thread's URL above it), and the lines
the table must not read: a number without its library, an application's own error."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor.catalog import error_codes as catalog_codes
from gpuadvisor.importers import error_codes
from gpuadvisor.importers.beyond_tools import cuda_not_ready
from gpuadvisor.importers.error_codes import CODES, lookup, nvml_sign
from tests.corpus_cases import run_import

# nvml.h's nvmlReturn_t and cudaError_t's values, as the headers define them (NVML API Reference; CUDA Runtime API,
# "Data types used by CUDA Runtime"): a table row with another number is wrong
HEADERS = {
    "NVML_ERROR_DRIVER_NOT_LOADED": 9,
    "NVML_ERROR_LIBRARY_NOT_FOUND": 12,
    "NVML_ERROR_GPU_IS_LOST": 15,
    "NVML_ERROR_RESET_REQUIRED": 16,
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": 18,
    "NVML_ERROR_UNKNOWN": 999,
    "cudaErrorMemoryAllocation": 2,
    "cudaErrorInsufficientDriver": 35,
    "cudaErrorDevicesUnavailable": 46,
    "cudaErrorNoDevice": 100,
    "cudaErrorECCUncorrectable": 214,
    "cudaErrorNvlinkUncorrectable": 220,
    "cudaErrorContained": 226,
    "cudaErrorIllegalAddress": 700,
    "cudaErrorLaunchFailure": 719,
    "cudaErrorSystemNotReady": 802,
    "cudaErrorSystemDriverMismatch": 803,
    "cudaErrorCompatNotSupportedOnDevice": 804,
    "cudaErrorUnknown": 999,
}


def test_each_entry_has_the_headers_value_a_source_and_a_verdict() -> None:
    for e in CODES:
        assert HEADERS[e.names[0]] == e.code, e.names[0]
        assert e.source and e.texts and e.verdict in ("fail", "warn", "info") and e.rule.startswith("GA")
    assert len({(e.library, e.code) for e in CODES}) == len(CODES) == len(HEADERS)


def test_an_applications_own_error_is_never_a_fault_of_the_node() -> None:
    for name in ("cudaErrorMemoryAllocation", "cudaErrorIllegalAddress", "cudaErrorLaunchFailure"):
        e = error_codes.BY_NAME[name.lower()]
        assert e.kind == error_codes.APP_FAULT and e.rule == "GA828" and e.verdict == "info"


# Real public lines, each printing one code (its thread's URL; the line as posted)
PUBLIC = [
    # https://github.com/NVIDIA/DIGITS/issues/2005 (Caffe under DIGITS on an HPC node, GPU 0 held by another process)
    ("Check failed: error == cudaSuccess (46 vs. 0)  all CUDA-capable devices are busy or unavailable", "CUDA", 46),
    # https://github.com/ggml-org/llama.cpp/issues/11841 (llama-bench on GRID A100D vGPUs)
    ("CUDA error: CUDA-capable device(s) is/are busy or unavailable", "CUDA", 46),
    # https://github.com/NVIDIA/TensorRT-LLM/issues/1806 (PyTorch's warning: a driver older than the container's CUDA)
    ("UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions "
     "before calling NumCudaDevices() that might have already set an error? Error 804: forward compatibility was "
     "attempted on non supported HW (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)", "CUDA", 804),
    # https://github.com/microsoft/onnxruntime/issues/21435 (ONNX Runtime's CUDA provider)
    ("CUDA failure 804: forward compatibility was attempted on non supported HW", "CUDA", 804),
    # https://github.com/tensorflow/tensorflow/issues/44869 (TensorFlow in a container without the driver)
    ("2020-11-11 10:46:37.467224: E tensorflow/stream_executor/cuda/cuda_driver.cc:314] failed call to cuInit: "
     "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected", "CUDA", 100),
    # https://github.com/espectre/Kaggle_Dogs_vs_Cats_PyTorch/issues/1 (PyTorch, model.cuda())
    ('RuntimeError: cuda runtime error (100) : no CUDA-capable device is detected at ..\\aten\\src\\THC\\'
     "THCGeneral.cpp:50", "CUDA", 100),
    # https://github.com/intel/llvm/issues/17614 (CI machines after a driver upgrade: nvidia-smi's line)
    ("Failed to initialize NVML: Driver/library version mismatch", "NVML", 18),
    # https://github.com/HPCLab-933/Vina-CUDA/issues/3 (a docking kernel's bad grid size: the application's error)
    ('CUDA error at ./inc/cuda/kernel2.cu:596 code=700(cudaErrorIllegalAddress) "cudaDeviceSynchronize()"', "CUDA",
     700),
    # https://github.com/PaddlePaddle/PaddleNLP/issues/6031 (bad input boxes: the application's error)
    ("OSError: (External) CUDA error(700), an illegal memory access was encountered.", "CUDA", 700),
    # https://github.com/ultrabug/py3status/issues/764 (nvidia-smi after a driver update, before a reboot)
    ("Failed to initialize NVML: Unknown Error", "NVML", 999),
    # https://github.com/trexminer/T-Rex/issues/1276 (already read by the lost-GPU reader; the table's entry too)
    ("20220503 13:51:11 WARN: NVML: can't get temperature for GPU #0, error code 15", "NVML", 15),
    # https://github.com/RenYurui/StructureFlow/issues/35 (PyTorch's allocator: the job's memory, not the GPU's)
    ("RuntimeError: CUDA out of memory. Tried to allocate 8.13 GiB (GPU 0; 10.76 GiB total capacity; 643.57 MiB "
     "already allocated; 8.20 GiB free; 32.43 MiB cached)", "CUDA", 2),
]  # fmt: skip


@pytest.mark.parametrize(("line", "library", "code"), PUBLIC)
def test_a_public_line_is_the_code_it_prints(line: str, library: str, code: int) -> None:
    found = lookup(line, library)
    assert found is not None and found.code == code


def test_nvml_sign_reads_the_lost_gpu_by_number_and_text() -> None:
    # https://github.com/LSSI-ETH/plmfit/issues/40 (Slurm's line)
    assert nvml_sign("slurmstepd: error: NVML: Failed to get usage(15): GPU is lost").kind == "gpu-is-lost"
    # https://github.com/trexminer/T-Rex/issues/321: NVML_ERROR_UNKNOWN says nothing of the GPU
    assert nvml_sign("WARN: NVML: can't get GPU #1, error code 999") is None


# --- negative: a number without its library, an application's error -----------------------------------------------

NOT_CODES = [
    "Process finished with exit code 15",
    "upstream: error 802 in HTTP response from 10.0.0.5",
    "ERROR: job 1234 failed with code 16 (timeout)",
    "error 214 while parsing config at line 3",
]


@pytest.mark.parametrize("line", NOT_CODES)
def test_a_number_without_its_library_is_no_code(line: str) -> None:
    assert lookup(line, "NVML") is None and lookup(line, "CUDA") is None
    assert nvml_sign(line) is None and not cuda_not_ready(line)


def _fails(tmp_path: Path, text: str) -> list[dict]:
    path = tmp_path / "paste.txt"
    path.write_text(text, encoding="utf-8")
    rc, scan = run_import([path])
    if rc != 0 or scan is None:  # read as nothing the tool knows: no finding either
        return []
    return [f for f in scan["findings"] if f["severity"] == "fail"]


def test_no_fail_from_a_number_without_its_library_or_a_cuda_oom(tmp_path: Path) -> None:
    oom = PUBLIC[-1][0]
    assert _fails(tmp_path, "\n".join([*NOT_CODES, oom]) + "\n") == []


def test_every_entry_yields_its_sign_through_one_path() -> None:
    # each entry's own text (cudaGetErrorString's, nvmlErrorString's) on a line naming its library: the event of the
    # kind the table gives it, and read back as that entry (CUDA's and NVML's 999 apart)
    for e in CODES:
        line = f"{e.library} error {e.code}: {e.texts[0]}"
        ev = error_codes.event(line, 3)
        assert ev is not None and (ev.kind, ev.code, ev.line) == (e.kind, e.code, 3), line
        assert catalog_codes.entry(ev) is e
    assert {e.rule for e in CODES if e.kind == error_codes.APP_FAULT} == {"GA828"}
    assert {e.rule for e in CODES if e.kind == error_codes.DRIVER_STACK} == {"GA507"}


def test_the_device_a_line_names_is_the_events() -> None:
    # a PCI bus id (NVML's form) on the line; a CUDA ordinal is the job's numbering, not the machine's
    ev = error_codes.event("CUDA error: an illegal memory access was encountered on 00000000:3B:00.0", None)
    assert ev is not None and ev.bus_id == "0000:3b:00.0"
    ev = error_codes.event("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 7.79 GiB total)", None)
    assert ev is not None and ev.bus_id is None and ev.gpu_index is None


def test_the_bindings_camelcase_names_are_read_on_a_line_naming_nvml() -> None:
    """NiceHash Miner's log (set 38, its source in tests/corpus/s38-lost-gpu/INDEX.toml) prints NVML's return code by
    its .NET enum name; pynvml's exception classes spell it NVMLError_GpuIsLost. A line not naming NVML is no code."""
    line = "[2019-07-25 07:05:13] [ERROR] [NVML] System.Exception: NVML power get failed with status: GPUIsLost"
    found = lookup(line, "NVML")
    assert found is not None and found.code == 15
    assert lookup("pynvml.NVMLError_GpuIsLost: the device fell off", "NVML") is found
    assert lookup("kubectl: Error from server (NotFound): pods not found", "NVML") is None
