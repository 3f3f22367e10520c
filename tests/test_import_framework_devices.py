"""The GPU list an ML framework prints (llama.cpp, ollama, TensorFlow, PyTorch) and gpustat's table, read from real
pastes in public issues (each cited above its text; excerpts, the lines kept as pasted). Values asserted are the
pastes' own: names, compute capabilities, bus ids and MiB counts as printed there."""

from __future__ import annotations

import pytest

from gpuadvisor.importers import parse_text
from gpuadvisor.importers.merge import merge
from gpuadvisor.importers.sections import split_sections

MIB = 1048576

# https://github.com/ikawrakow/ik_llama.cpp/issues/514 (ik_llama.cpp's server, one RTX 5090, CUDA_VISIBLE_DEVICES=1)
LLAMA_514 = """(base) mukul@jarvis:~/dev-ai/ik_llama.cpp$ CUDA_VISIBLE_DEVICES="1" ./build/bin/llama-server --model x.gguf
ggml_cuda_init: GGML_CUDA_FORCE_MMQ:    no
ggml_cuda_init: GGML_CUDA_FORCE_CUBLAS: no
ggml_cuda_init: found 1 CUDA devices:
  Device 0: NVIDIA GeForce RTX 5090, compute capability 12.0, VMM: yes
INFO [                    main] build info | tid="134548031524864" timestamp=1749567558 build=3739 commit="3c1f2c68"
llama_model_loader: additional 2 GGUFs metadata loaded.
"""  # noqa: E501
# https://github.com/noonghunna/club-3090/issues/58 (llama.cpp b9014: the VRAM form, then load_backend)
LLAMA_VRAM = """main: exiting due to model loading error
ggml_cuda_init: found 1 CUDA devices (Total VRAM: 24123 MiB):
  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes, VRAM: 24123 MiB
load_backend: loaded CUDA backend from /app/libggml-cuda.so
load_backend: loaded CPU backend from /app/libggml-cpu-icelake.so
build_info: b9014-d4b0c22f9
"""
# https://github.com/ggml-org/llama.cpp/issues/6758 (Windows llama-server, a laptop RTX 4050)
LLAMA_6758 = """ggml_cuda_init: GGML_CUDA_FORCE_MMQ:    no
ggml_cuda_init: GGML_CUDA_FORCE_CUBLAS: no
ggml_cuda_init: found 1 CUDA devices:
  Device 0: NVIDIA GeForce RTX 4050 Laptop GPU, compute capability 8.9, VMM: yes
build: 4393 (d79d8f39) with MSVC 19.29.30157.0 for
system info: n_threads = 8, n_threads_batch = 8, total_threads = 16
"""
# https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/1360 (LM Studio's llama.cpp: the loader's line, bus id and
# free memory)
LLAMA_LMSTUDIO = """2026-01-07 17:36:53 [DEBUG]
 llama_model_load_from_file_impl: using device CUDA0 (NVIDIA GeForce RTX 5060 Ti) (0000:01:00.0) - 15055 MiB free
2026-01-07 17:36:53 [DEBUG]
"""
# https://github.com/ollama/ollama/issues/6637 (ollama's runner: ggml's lines inside the service's journal)
LLAMA_OLLAMA_6637 = """Sep 04 14:24:56 FORGE ollama[1461072]: llm_load_print_meta: max token length = 256
Sep 04 14:24:56 FORGE ollama[1461072]: ggml_cuda_init: GGML_CUDA_FORCE_MMQ:    no
Sep 04 14:24:56 FORGE ollama[1461072]: ggml_cuda_init: GGML_CUDA_FORCE_CUBLAS: no
Sep 04 14:24:56 FORGE ollama[1461072]: ggml_cuda_init: found 1 CUDA devices:
Sep 04 14:24:56 FORGE ollama[1461072]:   Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes
Sep 04 14:24:56 FORGE ollama[1461072]: llm_load_tensors: ggml ctx size =    0.27 MiB
"""
# https://github.com/ollama/ollama/pull/6279 (journal, four RTX 4090s; the paste is cut inside the fourth line)
OLLAMA_6279 = """Sep 11 01:16:08 lena ollama[1884]: time=2024-09-11T01:16:08.786Z level=INFO source=gpu.go:200 msg="looking for compatible GPUs"
Sep 11 01:16:09 lena ollama[1884]: time=2024-09-11T01:16:09.799Z level=INFO source=types.go:107 msg="inference compute" id=GPU-14ff63f7-3db2-f0c8-0386-ee74c3102582 library=cuda variant=v12 compute=8.9 driver=12.5 name="NVIDIA GeForce RTX 4090" total="23.6 GiB" available="23.2 GiB"
Sep 11 01:16:09 lena ollama[1884]: time=2024-09-11T01:16:09.799Z level=INFO source=types.go:107 msg="inference compute" id=GPU-c2ad8aa7-1764-2264-b2d4-12a4f841949c library=cuda variant=v12 compute=8.9 driver=12.5 name="NVIDIA GeForce RTX 4090" total="23.6 GiB" available="23.2 GiB"
Sep 11 01:16:09 lena ollama[1884]: time=2024-09-11T01:16:09.799Z level=INFO source=types.go:107 msg="inference compute" id=GPU-3717dee8-b06c-49cd-b691-f37475b93fcd library=cuda variant=v12 compute=8.9 driver=12.5 name="NVIDIA GeForce RTX 4090" total="23.6 GiB" available="23.2 GiB"
Sep 11 01:16:09 lena ollama[1884]: time=2024-09-11T01:16:09.799Z level=INFO source=types.go:107 msg="inference compute" id=GPU-6d039662-e064-69ae-db0f-9aa77ffb9caf library=cuda variant=v12 compute=8.9 driver=12.5 name="N"""  # noqa: E501
# https://github.com/batteries-included/batteries-included/pull/1663 (an A10G)
OLLAMA_1663 = """time=2025-02-26T21:01:22.814Z level=INFO source=gpu.go:226 msg="looking for compatible GPUs"
time=2025-02-26T21:01:23.251Z level=INFO source=types.go:131 msg="inference compute" id=GPU-dd1f9e61-27e0-16ad-dd71-766641270fd6 library=cuda variant=v12 compute=8.6 driver=12.2 name="NVIDIA A10G" total="22.0 GiB" available="21.7 GiB"
"""  # noqa: E501
# https://github.com/tensorflow/tensorflow/issues/31969 (TF 1.14: Created ... for GPU 7, then Found device 0-3)
TF_31969 = """2019-08-26 11:51:18.215580: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1326] Created TensorFlow device (/job:localhost/replica:0/task:0/device:GPU:7 with 20545 MB memory) -> physical GPU (device: 7, name: Tesla M40 24GB, pci bus id: 0000:89:00.0, compute capability: 5.2)
W0826 11:51:18.218294 140208701863744 deprecation_wrapper.py:119] From /data1/username/models/official/utils/misc/keras_utils.py:155: The name tf.keras.backend.set_session is deprecated. Please use tf.compat.v1.keras.backend.set_session instead.

2019-08-26 11:51:18.221324: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1640] Found device 0 with properties:
name: Tesla M40 24GB major: 5 minor: 2 memoryClockRate(GHz): 1.112
pciBusID: 0000:04:00.0
2019-08-26 11:51:18.222757: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1640] Found device 1 with properties:
name: Tesla M40 24GB major: 5 minor: 2 memoryClockRate(GHz): 1.112
pciBusID: 0000:05:00.0
"""  # noqa: E501
# https://github.com/deepspeedai/DeepSpeed/issues/61 (TF 2.1 on Summit: the same device printed by several ranks)
TF_DEEPSPEED_61 = """name: Tesla V100-SXM2-16GB major: 7 minor: 0 memoryClockRate(GHz): 1.53
pciBusID: 0035:04:00.0
2020-02-28 05:04:04.798643: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1618] Found device 4 with properties:
name: Tesla V100-SXM2-16GB major: 7 minor: 0 memoryClockRate(GHz): 1.53
pciBusID: 0035:04:00.0
2020-02-28 05:04:04.798800: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1618] Found device 4 with properties:
name: Tesla V100-SXM2-16GB major: 7 minor: 0 memoryClockRate(GHz): 1.53
pciBusID: 0035:04:00.0
2020-02-28 05:04:04.816072: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1618] Found device 5 with properties:
name: Tesla V100-SXM2-16GB major: 7 minor: 0 memoryClockRate(GHz): 1.53
pciBusID: 0035:05:00.0
2020-02-28 05:04:04.816097: I tensorflow/stream_executor/platform/default/dso_loader.cc:44] Successfully opened dynamic library libcudart.so.10.1
"""  # noqa: E501
# https://github.com/NVIDIA/DeepLearningExamples/issues/1262 (TF 2.x's property lines; device 0 printed twice)
TF_DLE_1262 = """pciBusID: 0000:17:00.0 name: NVIDIA A100 80GB PCIe computeCapability: 8.0
coreClock: 1.41GHz coreCount: 108 deviceMemorySize: 79.21GiB deviceMemoryBandwidth: 1.76TiB/s
2023-02-03 05:23:24.687408: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1746] Found device 1 with properties:
pciBusID: 0000:65:00.0 name: NVIDIA A100 80GB PCIe computeCapability: 8.0
coreClock: 1.41GHz coreCount: 108 deviceMemorySize: 79.21GiB deviceMemoryBandwidth: 1.76TiB/s
2023-02-03 05:23:24.689699: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1746] Found device 2 with properties:
pciBusID: 0000:ca:00.0 name: NVIDIA A100 80GB PCIe computeCapability: 8.0
coreClock: 1.41GHz coreCount: 108 deviceMemorySize: 79.21GiB deviceMemoryBandwidth: 1.76TiB/s
2023-02-03 05:23:24.690663: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1746] Found device 0 with properties:
pciBusID: 0000:17:00.0 name: NVIDIA A100 80GB PCIe computeCapability: 8.0
coreClock: 1.41GHz coreCount: 108 deviceMemorySize: 79.21GiB deviceMemoryBandwidth: 1.76TiB/s
2023-02-03 05:23:24.692511: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1746] Found device 3 with properties:
pciBusID: 0000:e3:00.0 name: NVIDIA A100 80GB PCIe computeCapability: 8.0
coreClock: 1.41GHz coreCount: 108 deviceMemorySize: 79.21GiB deviceMemoryBandwidth: 1.76TiB/s
"""
# https://github.com/tensorflow/models/issues/6812 (a T4, its Created line printed twice by two tests)
TF_6812 = """2019-05-18 07:48:30.444480: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1115] Created TensorFlow device (/job:localhost/replica:0/task:0/device:GPU:0 with 4523 MB memory) -> physical GPU (device: 0, name: Tesla T4, pci bus id: 0000:00:04.0, compute capability: 7.5)
ok
testForwardpassDeepLabv3plus (__main__.DeeplabModelTest) ... 2019-05-18 07:48:32.974262: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1512] Adding visible gpu devices: 0
2019-05-18 07:48:32.974639: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1115] Created TensorFlow device (/job:localhost/replica:0/task:0/device:GPU:0 with 4523 MB memory) -> physical GPU (device: 0, name: Tesla T4, pci bus id: 0000:00:04.0, compute capability: 7.5)
ok
"""  # noqa: E501
# https://github.com/ultralytics/yolov3/issues/633 (YOLOv3's train.py names the CUDA device: "device0")
TORCH_633 = """Namespace(accumulate=2, adam=False, arc='default', batch_size=32, bucket='', cache_images=False)
Using CUDA device0 _CudaDeviceProperties(name='GeForce GTX 1080 Ti', total_memory=11176MB)

PATH: ../coco/trainvalno5k.txt
"""
# https://github.com/PaddlePaddle/Paddle/pull/35661 (the repr PyTorch prints, as Paddle's docstring quotes it for an
# A100-SXM4-40GB)
TORCH_PADDLE = (
    "_CudaDeviceProperties(name='A100-SXM4-40GB', major=8, minor=0, total_memory=40536MB, multi_processor_count=108)\n"
)
# https://github.com/wookayin/gpustat/issues/130 (four P100s, driver 515.65.01)
GPUSTAT_130 = """anamaria@gpu-a-11.extreme:~ $ gpustat
gpu-a-11.extreme         Mon Aug 22 15:23:57 2022  515.65.01
[0] Tesla P100-PCIE-16GB | 27'C,   0 % |   103 / 16384 MB |
[1] Tesla P100-PCIE-16GB | 27'C,   0 % |   103 / 16384 MB |
[2] Tesla P100-PCIE-16GB | 28'C,   0 % |   103 / 16384 MB |
[3] Tesla P100-PCIE-16GB | 27'C,   2 % |   103 / 16384 MB |
"""
# https://github.com/wookayin/gpustat/issues/97 (one row quoted by the maintainer, its header not pasted)
GPUSTAT_97 = "[0] GeForce GTX Titan X | 77'C,  96 % | 11848 / 12287 MB | python/52046(11821M)\n"


def _read(text: str) -> tuple[list, object]:
    parts = parse_text(text, "paste.txt")
    return parts, merge(parts, ["paste.txt"])


def _gpus(text: str) -> list:
    return _read(text)[1].gpus  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (LLAMA_514, "llama-devices"),
        (LLAMA_VRAM, "llama-devices"),
        (LLAMA_6758, "llama-devices"),
        (LLAMA_LMSTUDIO, "llama-devices"),
        (LLAMA_OLLAMA_6637, "llama-devices"),
        (OLLAMA_6279, "ollama-devices"),
        (OLLAMA_1663, "ollama-devices"),
        (TF_31969, "tf-devices"),
        (TF_DEEPSPEED_61, "tf-devices"),
        (TF_6812, "tf-devices"),
        (TF_DLE_1262, "tf-devices"),
        (TORCH_633, "torch-devices"),
        (TORCH_PADDLE, "torch-devices"),
        (GPUSTAT_130, "gpustat"),
        (GPUSTAT_97, "gpustat"),
    ],
)
def test_each_paste_is_recognised_as_its_framework(text: str, kind: str) -> None:
    """Recognised by its device lines; a journal line before them (ollama's service) is the service log's."""
    kinds = [s.kind for s in split_sections(text)]
    assert kinds in ([kind], ["daemon-log", kind])


def test_llama_cpp_device_lines() -> None:
    (g,) = _gpus(LLAMA_514)
    assert (g.index, g.name, g.compute_capability) == (0, "NVIDIA GeForce RTX 5090", "12.0")
    assert g.memory_total_bytes is None and "VRAM" in g.unavailable["memory_total_bytes"]
    (g,) = _gpus(LLAMA_6758)
    assert (g.name, g.compute_capability) == ("NVIDIA GeForce RTX 4050 Laptop GPU", "8.9")


def test_llama_cpp_vram_is_the_cards_memory_in_mib() -> None:
    (g,) = _gpus(LLAMA_VRAM)
    assert (g.name, g.compute_capability, g.memory_total_bytes) == ("NVIDIA GeForce RTX 3090", "8.6", 24123 * MIB)


def test_llama_cpp_loader_line_gives_the_bus_id_and_free_memory_only() -> None:
    (g,) = _gpus(LLAMA_LMSTUDIO)
    assert (g.index, g.name, g.bus_id, g.memory_total_bytes) == (0, "NVIDIA GeForce RTX 5060 Ti", "0000:01:00.0", None)


def test_llama_cpp_lines_inside_a_service_journal() -> None:
    (g,) = _gpus(LLAMA_OLLAMA_6637)
    assert (g.index, g.name, g.compute_capability) == (0, "NVIDIA GeForce RTX 4090", "8.9")


def test_llama_cpp_other_lines_are_listed_as_not_read() -> None:
    rig = _read(LLAMA_514)[1]
    assert any("lines 6-7: not llama.cpp (ggml) log device lines, not read" in p for p in rig.problems), rig.problems


def test_ollama_four_gpus_the_cut_fourth_line_not_shown() -> None:
    rig = _read(OLLAMA_6279)[1]
    assert [g.uuid for g in rig.gpus] == [
        "GPU-14ff63f7-3db2-f0c8-0386-ee74c3102582",
        "GPU-c2ad8aa7-1764-2264-b2d4-12a4f841949c",
        "GPU-3717dee8-b06c-49cd-b691-f37475b93fcd",
    ]
    assert {(g.name, g.compute_capability) for g in rig.gpus} == {("NVIDIA GeForce RTX 4090", "8.9")}
    assert rig.software.cuda_driver_version == "12.5"
    assert any("line 5: cut short where the paste ends: not shown" in p for p in rig.problems), rig.problems
    assert any("numbered in the order listed" in p for p in rig.problems)
    g = rig.gpus[0]
    assert g.memory_total_bytes is None and "not the card's memory" in g.unavailable["memory_total_bytes"]


def test_ollama_one_a10g() -> None:
    (g,) = _gpus(OLLAMA_1663)
    assert (g.index, g.name, g.uuid, g.compute_capability) == (
        0,
        "NVIDIA A10G",
        "GPU-dd1f9e61-27e0-16ad-dd71-766641270fd6",
        "8.6",
    )


def test_ollama_newer_keys_name_the_cuda_number_and_bus_id() -> None:
    """ollama 0.12's discovery (ml/device.go): ``name=CUDA0 description="..." pci_id=...``."""
    line = (
        'time=2025-10-01T10:00:00.000Z level=INFO source=types.go:42 msg="inference compute" '
        "id=GPU-dd1f9e61-27e0-16ad-dd71-766641270fd6 library=CUDA compute=8.9 name=CUDA1 "
        'description="NVIDIA GeForce RTX 4090" libdirs=ollama,cuda_v12 driver=12.8 pci_id=0000:41:00.0 '
        'type=discrete total="24.0 GiB" available="23.5 GiB"\n'
    )
    (g,) = _gpus(line)
    assert (g.index, g.name, g.bus_id, g.compute_capability) == (1, "NVIDIA GeForce RTX 4090", "0000:41:00.0", "8.9")


def test_tensorflow_one_gpu_per_device_number() -> None:
    gpus = sorted(_gpus(TF_31969), key=lambda g: g.index)
    assert [(g.index, g.name, g.bus_id, g.compute_capability) for g in gpus] == [
        (0, "Tesla M40 24GB", "0000:04:00.0", "5.2"),
        (1, "Tesla M40 24GB", "0000:05:00.0", "5.2"),
        (7, "Tesla M40 24GB", "0000:89:00.0", "5.2"),
    ]
    assert all(g.memory_total_bytes is None for g in gpus)


def test_tensorflow_the_same_device_printed_again_is_one_gpu() -> None:
    gpus = _gpus(TF_DEEPSPEED_61)
    assert [(g.index, g.bus_id) for g in gpus] == [(4, "0035:04:00.0"), (5, "0035:05:00.0")]
    (g,) = _gpus(TF_6812)
    assert (g.index, g.name, g.bus_id, g.compute_capability) == (0, "Tesla T4", "0000:00:04.0", "7.5")


def test_tensorflow_2_property_lines() -> None:
    """TF 2.x: ``pciBusID: .. name: .. computeCapability: ..`` under each ``Found device N``; the first property
    lines (their ``Found device 0`` above the paste) are not read; device 0 printed again is one GPU."""
    rig = _read(TF_DLE_1262)[1]
    gpus = sorted(rig.gpus, key=lambda g: g.index)
    assert [(g.index, g.bus_id) for g in gpus] == [
        (0, "0000:17:00.0"),
        (1, "0000:65:00.0"),
        (2, "0000:ca:00.0"),
        (3, "0000:e3:00.0"),
    ]
    assert {(g.name, g.compute_capability, g.memory_total_bytes) for g in gpus} == {
        ("NVIDIA A100 80GB PCIe", "8.0", None)
    }
    notes = _read(TF_DLE_1262)[0][0].notes
    assert any("lines 1-2: not recognised, not read" in n for n in notes), notes


def test_pytorch_yolo_device_line() -> None:
    (g,) = _gpus(TORCH_633)
    assert (g.index, g.name, g.memory_total_bytes) == (0, "GeForce GTX 1080 Ti", 11176 * MIB)
    assert g.compute_capability is None


def test_pytorch_device_properties() -> None:
    rig = _read(TORCH_PADDLE)[1]
    (g,) = rig.gpus
    assert (g.name, g.compute_capability, g.memory_total_bytes) == ("A100-SXM4-40GB", "8.0", 40536 * MIB)
    assert any("numbered in the order shown" in p for p in rig.problems)


def test_gpustat_table() -> None:
    rig = _read(GPUSTAT_130)[1]
    assert [(g.index, g.name, g.memory_total_bytes) for g in rig.gpus] == [
        (i, "Tesla P100-PCIE-16GB", 16384 * MIB) for i in range(4)
    ]
    assert rig.software.driver_version == "515.65.01"
    (g,) = _gpus(GPUSTAT_97)
    assert (g.name, g.memory_total_bytes) == ("GeForce GTX Titan X", 12287 * MIB)


def test_a_framework_log_without_device_lines_is_still_refused() -> None:
    with pytest.raises(Exception, match="not recognised"):
        parse_text("load_backend: loaded CUDA backend from /app/libggml-cuda.so\n", "paste.txt")


# nvitop -1, written by hand from nvitop's own format strings (nvitop/tui/screens/main/panels/device.py at
# https://github.com/XuehaiPan/nvitop: header_lines, formats_full, formats_compact; no text paste of it was found in
# a public issue): two H800s, the second's name cut by nvitop, then the compact form's row
NVITOP = """Wed Feb 19 11:44:37 2025
╒═════════════════════════════════════════════════════════════════════════════╕
│ NVITOP 1.4.2       Driver Version: 550.90.12      CUDA Driver Version: 12.4 │
├───────────────────────────────┬──────────────────────┬──────────────────────┤
│ GPU  Name        Persistence-M│ Bus-Id        Disp.A │ MIG M.   Uncorr. ECC │
│ Fan  Temp  Perf  Pwr:Usage/Cap│         Memory-Usage │ GPU-Util  Compute M. │
╞═══════════════════════════════╪══════════════════════╪══════════════════════╡
│   0  H800                Off  │ 00000000:18:00.0 Off │ Disabled           0 │
│ N/A   36C    P0    85W / 700W │   3.50MiB / 79.65GiB │      0%      Default │
├───────────────────────────────┼──────────────────────┼──────────────────────┤
│   1  NVIDIA H800 PCIe…   Off  │ 00000000:2A:00.0 Off │ Disabled           0 │
│ N/A   35C    P0    84W / 700W │   3.50MiB / 79.65GiB │      0%      Default │
╘═══════════════════════════════╧══════════════════════╧══════════════════════╛
"""


def test_nvitop_table() -> None:
    assert [s.kind for s in split_sections(NVITOP)] == ["nvitop"]
    rig = _read(NVITOP)[1]
    assert (rig.software.driver_version, rig.software.cuda_driver_version) == ("550.90.12", "12.4")
    assert [(g.index, g.name, g.bus_id, g.memory_total_bytes) for g in rig.gpus] == [
        (0, "H800", "0000:18:00.0", None),
        (1, None, "0000:2a:00.0", None),
    ]
    assert "cut the name short" in rig.gpus[1].unavailable["name"]
    assert "0.01 GiB" in rig.gpus[0].unavailable["memory_total_bytes"]
