"""CUDA's and NVML's return codes as applications print them in their own formats, and the GPU Operator's driver
container logs: real public pastes (each thread's URL above it, the text as posted), each judged by hand before the
tool ran on it (the expected codes and the worst severity below were written first). An application's own fault
(an illegal address, a launch failure) is info, never a failure of the node; a driver stack that does not match
itself (803) fails it; a driver older than the program's CUDA (35), no device visible (100) warn; a driver container
that could not install or load the driver is the driver's install problem (GA820's driver-install sign)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.corpus_cases import run_import

# (source, paste, codes that must fire at their severity, worst severity, the driver version read or None)
CASES = [
    # llama.cpp's CUDA backend under ollama: libcuda and the kernel module of different versions
    ("https://github.com/ollama/ollama/issues/5573",
     "ggml_cuda_init: failed to initialize CUDA: system has unsupported display driver / cuda driver combination\n",
     {"GA507": "fail"}, "fail", None),
    # PyTorch under Easy Diffusion: error 803, the program falls back to the CPU
    ("https://github.com/easydiffusion/easydiffusion/issues/379",
     "/home/drink/Software/stable-diffusion-ui/stable-diffusion/env/lib/python3.8/site-packages/torch/cuda/__init__.py"
     ":82: UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
     "functions before calling NumCudaDevices() that might have already set an error? Error 803: system has "
     "unsupported display driver / cuda driver combination (Triggered internally at  /opt/conda/conda-bld/"
     "pytorch_1646755903507/work/c10/cuda/CUDAFunctions.cpp:112.)\n"
     "  return torch._C._cuda_getDeviceCount() > 0\n"
     "WARNING: No compatible GPU found. Using the CPU, but this will be very slow!\n",
     {"GA507": "fail"}, "fail", None),
    # MXNet's CHECK macro in a container
    ("https://github.com/NVIDIA/nvidia-docker/issues/1256",
     "CUDA: Check failed: e == cudaSuccess (803 vs. 0) : system has unsupported display driver / cuda driver "
     "combination\n",
     {"GA507": "fail"}, "fail", None),
    # PyTorch's NCCL watchdog under vLLM: the job's illegal address
    ("https://github.com/vllm-project/vllm/issues/8177",
     "model_runner_base.py:120] Writing input of failed execution to /tmp/err_execute_model_input_20250219-121443.pkl"
     "...\n"
     "[rank0]:[E219 12:14:43.351647859 ProcessGroupNCCL.cpp:1595] [PG ID 2 PG GUID 3 Rank 0] Process group watchdog "
     "thread terminated with exception: CUDA error: an illegal memory access was encountered\n"
     "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
     "incorrect.\n"
     "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
     "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n",
     {"GA828": "info"}, "info", None),
    # vLLM's engine log, carriage returns shown as ^M
    ("https://github.com/vllm-project/vllm/issues/11366",
     "2024-12-19 21:40:35 ERROR 56542 [async_llm_engine.py:64]     raise type(err)(f\"Error in model execution: \"^M\n"
     "2024-12-19 21:40:35 ERROR 56542 [async_llm_engine.py:64] RuntimeError: Error in model execution: CUDA error: an "
     "illegal memory access was encountered^M\n"
     "2024-12-19 21:40:35 ERROR 56542 [async_llm_engine.py:64] CUDA kernel errors might be asynchronously reported at "
     "some other API call, so the stacktrace below might be incorrect.^M\n",
     {"GA828": "info"}, "info", None),
    # JAX (XLA's runtime): the driver API's name and text
    ("https://github.com/jaxleyverse/jaxley/issues/53",
     "INTERNAL: Failed to execute XLA Runtime executable: run time error: custom call 'xla.gpu.func.launch' failed: "
     "Failed to launch CUDA kernel: fusion_1560 with block dimensions: 160x1x1 and grid dimensions: 1x1x1: "
     "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered.\n",
     {"GA828": "info"}, "info", None),
    # a miner's own check macro: cudaError 719, then its respawn
    ("https://github.com/alephium/gpu-miner/issues/9",
     "cudaError 719 (unspecified launch failure) calling 'cudaMemcpyAsync(worker->device_hasher, worker->hasher, "
     "sizeof(blake3_hasher), cudaMemcpyHostToDevice, worker->stream)' (src/mining.h line 13)\n"
     "Miner crashed with exit code 1. Respawning..\n",
     {"GA828": "info"}, "info", None),
    # PaddlePaddle's enforce message
    ("https://github.com/PaddlePaddle/PaddleClas/issues/2571",
     "OSError: (External) CUDA error(719), unspecified launch failure. \n"
     "  [Hint: Please search for the error code(719) on website (https://docs.nvidia.com/cuda/cuda-runtime-api/"
     "group__CUDART__TYPES.html#group__CUDART__TYPES_1g3f51e3575c2178246db0a94a430e0038) to get Nvidia's official "
     "solution and advice about CUDA Error.] (at /paddle/paddle/phi/backends/gpu/cuda/cuda_info.cc:259)\n",
     {"GA828": "info"}, "info", None),
    # TensorFlow on Windows, driver 368.71 older than its CUDA 8 runtime
    ("https://github.com/tensorflow/tensorflow/issues/8526",
     "Failed to initialize CUDA device #105: CUDA driver version is insufficient for CUDA runtime version\n"
     "Failed to initialize CUDA device #106: CUDA driver version is insufficient for CUDA runtime version\n"
     "Failed to initialize CUDA device #107: CUDA driver version is insufficient for CUDA runtime version\n"
     "Failed to initialize CUDA device #108: CUDA driver version is insufficient for CUDA runtime version\n"
     "Failed to initialize CUDA device #109: CUDA driver version is insufficient for CUDA runtime version\n"
     "Failed to initialize CUDA device #110: CUDA driver version is insufficient for CUDA runtime version\n"
     "Failed to initialize CUDA device #111: CUDA driver version is insufficient for CUDA runtime version\n"
     "3.0\n",
     {"GA507": "warn"}, "warn", None),
    # TensorFlow's cuInit without sudo: no device visible to the program
    ("https://github.com/tensorflow/tensorflow/issues/7653",
     "2017-08-14 07:28:29.379866: E tensorflow/stream_executor/cuda/cuda_driver.cc:406] failed call to cuInit: "
     "CUDA_ERROR_NO_DEVICE\n",
     {"GA507": "warn"}, "warn", None),
    # NBMiner's crash line
    ("https://github.com/NebuTech/NBMiner/issues/22",
     "Cuda Error: unspecified launch failure (err_no=4)\n",
     {"GA828": "info"}, "info", None),
    # xmrig-nvidia's error line
    ("https://github.com/xmrig/xmrig-nvidia/issues/203",
     '[CUDA] Error gpu 0: <cryptonight_extra_cpu_final>:391 "unspecified launch failure"\n',
     {"GA828": "info"}, "info", None),
    # the driver container started again while the old modules are loaded: the driver is in use (version elided)
    ("https://github.com/NVIDIA/nvidia-docker/issues/1242",
     "========== NVIDIA Software Installer ==========\n"
     "Starting installation of NVIDIA driver version 440.xx for Linux kernel version 4.15.0-70-generic\n"
     "Stopping NVIDIA persistence daemon...\n"
     "Unloading NVIDIA driver kernel modules...\n"
     "Could not unload NVIDIA driver kernel modules, driver is in use\n"
     "Stopping NVIDIA persistence daemon...\n"
     "Unloading NVIDIA driver kernel modules...\n"
     "Could not unload NVIDIA driver kernel modules, driver is in use\n",
     {"GA820": "warn"}, "warn", None),
    # the GPU Operator's driver container: nvidia-installer could not load the module it built (no driver running)
    ("https://github.com/NVIDIA/gpu-operator/issues/8",
     "========== NVIDIA Software Installer ==========\n\n"
     "Starting installation of NVIDIA driver version 418.40.04 for Linux kernel version 4.15.0-66-generic\n\n"
     "Stopping NVIDIA persistence daemon...\n"
     "Unloading NVIDIA driver kernel modules...\n"
     "Unmounting NVIDIA driver rootfs...\n"
     "Checking NVIDIA driver packages...\n"
     "Updating the package cache...\n"
     "Resolving Linux kernel version...\n"
     "Proceeding with Linux kernel version 4.15.0-66-generic\n"
     "Installing Linux kernel headers...\n"
     "Installing Linux kernel module files...\n"
     "Generating Linux kernel version string...\n"
     "Compiling NVIDIA driver kernel modules...\n"
     "Relinking NVIDIA driver kernel modules...\n"
     "Building NVIDIA driver package nvidia-modules-4.15.0...\n"
     "Cleaning up the package cache...\n"
     "Installing NVIDIA driver kernel modules...\n\n"
     "WARNING: The nvidia-drm module will not be installed. As a result, DRM-KMS\n"
     "         will not function with this installation of the NVIDIA driver.\n\n\n"
     "ERROR: Unable to open 'kernel/dkms.conf' for copying (No such file or\n"
     "       directory)\n\n\n"
     "ERROR: Unable to load the kernel module 'nvidia.ko'.  This happens most\n"
     "       frequently when this kernel module was built against the wrong or\n"
     "       improperly configured kernel sources, with a version of gcc that\n"
     "       diff\n",
     {"GA820": "warn"}, "warn", None),
]  # fmt: skip

ORDER = ("ok", "info", "warn", "fail")


def _scan(tmp_path: Path, text: str) -> dict | None:
    path = tmp_path / "paste.txt"
    path.write_text(text, encoding="utf-8")
    rc, scan = run_import([path])
    return scan if rc == 0 else None


@pytest.mark.parametrize(("source", "text", "codes", "worst", "driver"), CASES, ids=[c[0][19:] for c in CASES])
def test_a_public_paste_reads_as_judged_by_hand(
    tmp_path: Path, source: str, text: str, codes: dict[str, str], worst: str, driver: str | None
) -> None:
    scan = _scan(tmp_path, text)
    assert scan is not None, f"{source}: refused"
    found = {f["code"]: f["severity"] for f in scan["findings"] if f["severity"] in ORDER[1:]}
    for code, severity in codes.items():
        assert found.get(code) == severity, f"{source}: {code} {found.get(code)}, expected {severity}"
    top = max((ORDER.index(s) for s in found.values()), default=0)
    assert ORDER[top] == worst, f"{source}: worst {ORDER[top]}, expected {worst} ({found})"
    assert scan["software"]["driver_version"] == driver


def test_an_application_fault_never_fails_the_node(tmp_path: Path) -> None:
    faults = "".join(text for _, text, codes, _, _ in CASES if codes == {"GA828": "info"})
    scan = _scan(tmp_path, faults)
    assert scan is not None and not [f for f in scan["findings"] if f["severity"] == "fail"]
