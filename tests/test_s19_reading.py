"""Held-out set 19's reading classes, each on its s19 paste and another real public sample of the same format.

Values are the pastes' own (quoted in each test), never this tool's output."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers import import_texts

TESTS = Path(__file__).parent
CUDA_S19 = TESTS / "corpus" / "s19-cuda-samples"


def _read(path: Path):
    return import_texts([(path.name, path.read_text(encoding="utf-8"))])


def test_devicequery_cut_after_three_detected_reads_the_one_shown():
    # https://github.com/torch/cutorch/issues/273: 'Detected 3 CUDA Capable device(s)', only Device 0 shown
    rig = _read(CUDA_S19 / "devicequery-unfenced-3-detected-titan-x-12288mb-cut_cominger.txt")
    assert [(g.name, g.memory_total_bytes, g.compute_capability) for g in rig.gpus] == [
        ("GeForce GTX TITAN X", 12884705280, "5.2")
    ]
    assert rig.software.cuda_driver_version == "7.5"
    assert rig.gpus[0].bus_id is None and "bus_id" in rig.gpus[0].unavailable
    assert any("Detected 3" in p for p in rig.problems)


def test_devicequery_with_a_translation_after_each_row():
    # https://chiemon.github.io/2024/12/25/...: curly quotes, Chinese notes after each row, indentation lost
    rig = _read(CUDA_S19 / "devicequery-tesla-t4-chinese-annotations-per-line-cut_chiemon.txt")
    assert [(g.name, g.memory_total_bytes, g.compute_capability) for g in rig.gpus] == [
        ("Tesla T4", 15843721216, "7.5")
    ]
    assert rig.software.cuda_driver_version == "11.0"


def test_devicequery_whole_a100_with_pci_row():
    # https://github.com/router-gao/cuda-demo/blob/0e81cdd/cuda-samples/01-cuda-deviceQuery.md (A100 block):
    # 'Device PCI Domain ID / Bus ID / location ID:   0 / 0 / 4' -> 0000:00:04.0
    rig = _read(TESTS / "fixtures" / "import" / "found" / "devicequery_a100-sxm4-40gb_router-gao.txt")
    assert [(g.name, g.memory_total_bytes, g.compute_capability, g.bus_id) for g in rig.gpus] == [
        ("NVIDIA A100-SXM4-40GB", 42481811456, "8.0", "0000:00:04.0")
    ]
    assert rig.software.cuda_driver_version == "12.2"
    assert not any("Detected" in p for p in rig.problems)


SMI_S19 = TESTS / "corpus" / "s19-smi"
SMI_L_4X3090 = TESTS / "corpus" / "smi" / "smi-L_4x3090-prompt_alexanderjacuna.txt"


def test_smi_l_of_two_srun_tasks_each_gpu_0_is_two_gpus_by_uuid():
    # https://github.com/NVIDIA/deepops/issues/1102: 'srun --ntasks=2 --gpus-per-task=1 nvidia-smi -L', each task's
    # cgroup shows its GPU as 'GPU 0'; the UUIDs differ: two GPUs
    rig = _read(SMI_S19 / "srun-two-tasks-smi-L-both-gpu-0-p100-distinct-uuids_ajdecon.txt")
    assert sorted((g.name, g.uuid) for g in rig.gpus) == [
        ("Tesla P100-SXM2-16GB", "GPU-6fb6d3db-aafb-f8da-a089-89b8077580fe"),
        ("Tesla P100-SXM2-16GB", "GPU-b668a901-6b19-5c0c-554c-cce49d58af0a"),
    ]


def test_smi_l_printed_twice_is_still_its_gpus_once():
    # https://github.com/psalias2006/gpu-hot/issues/64 (4x RTX 3090): the same -L pasted twice is the same 4 GPUs
    text = SMI_L_4X3090.read_text(encoding="utf-8")
    rig = import_texts([("twice.txt", text + "\n" + text)])
    assert [g.uuid for g in rig.gpus] == [
        "GPU-e1924eea-b9bb-d537-39f2-b345087fa145",
        "GPU-899c71bf-27be-b6a0-ae8f-d8afe5ba0f85",
        "GPU-acd314e9-4c7a-4824-eb0f-b6e38b1ec38c",
        "GPU-2639988f-1756-0583-db8f-faee38effce2",
    ]
    assert [g.index for g in rig.gpus] == [0, 1, 2, 3]


ENV_S19 = TESTS / "corpus" / "s19-collect-env"
# https://github.com/facebookresearch/detectron2/issues/5135 (gobears21): the table's first rows, copied unchanged
DETECTRON2_2X2080TI = """\
-------------------------------  --------------------------------------------------------------------------------
sys.platform                     linux
Python                           3.8.18 | packaged by conda-forge | (default, Oct 10 2023, 15:44:36) [GCC 12.3.0]
numpy                            1.23.1
detectron2                       0.6 @/root/detectron2/detectron2
detectron2._C                    not built correctly: No module named 'detectron2._C'
Compiler ($CXX)                  c++ (Ubuntu 9.3.0-17ubuntu1~20.04) 9.3.0
CUDA compiler                    Build cuda_11.5.r11.5/compiler.30411180_0
DETECTRON2_ENV_MODULE            <not set>
PyTorch                          1.10.0 @/opt/conda/envs/detectron2/lib/python3.8/site-packages/torch
PyTorch debug build              False
torch._C._GLIBCXX_USE_CXX11_ABI  False
GPU available                    Yes
GPU 0,1                          NVIDIA GeForce RTX 2080 Ti (arch=7.5)
Driver version                   535.113.01
CUDA_HOME                        /usr/local/cuda
TORCH_CUDA_ARCH_LIST             5.2 6.0 6.1 7.0 7.5 8.0 8.6+PTX
Pillow                           9.4.0
"""


def test_detectron2_env_one_gpu_row_with_arch_and_driver():
    # https://github.com/facebookresearch/detectron2/issues/4854: 'GPU 0  Tesla T4 (arch=7.5)', 'Driver version
    # 525.85.12'; the paste is cut inside torch's 'PyTorch built with:' list
    rig = _read(ENV_S19 / "detectron2-collect-env-tesla-t4-driver-525-torch-built-with-cut_ettore9x9.txt")
    assert [(g.index, g.name, g.compute_capability) for g in rig.gpus] == [(0, "Tesla T4", "7.5")]
    assert (rig.software.driver_version, rig.software.python_version, rig.software.torch_version) == (
        "525.85.12",
        "3.9.16",
        "1.13.1+cu116",
    )


def test_detectron2_env_sixteen_gpus_on_one_row_no_driver_row():
    # https://github.com/facebookresearch/detectron2/issues/722: 'GPU 0,1,...,15  Tesla K80', no driver row
    rig = _read(ENV_S19 / "detectron2-collect-env-gpu-0-to-15-tesla-k80-one-row-no-driver-cut_yustaub.txt")
    assert [(g.index, g.name) for g in rig.gpus] == [(i, "Tesla K80") for i in range(16)]
    assert rig.software.driver_version is None and "driver_version" in rig.software.unavailable


def test_detectron2_env_two_gpus_on_one_row_with_arch():
    rig = import_texts([("env.txt", DETECTRON2_2X2080TI)])
    assert [(g.index, g.name, g.compute_capability) for g in rig.gpus] == [
        (0, "NVIDIA GeForce RTX 2080 Ti", "7.5"),
        (1, "NVIDIA GeForce RTX 2080 Ti", "7.5"),
    ]
    assert (rig.software.driver_version, rig.software.torch_version) == ("535.113.01", "1.10.0")


def test_lspci_line_in_markdown_bold_rev_ff():
    # https://github.com/KittyKatt/screenFetch/issues/335: '**01:00.0 3D controller: NVIDIA Corporation GM107M
    # [GeForce GTX 860M] (rev ff)**' as the paste's last line: the closing marks show the line whole
    rig = _read(TESTS / "corpus" / "s19-lspci" / "lspci-k-grep-860m-01-00-rev-ff-bold-markdown_zoutiyx.txt")
    assert [g.bus_id for g in rig.gpus] == ["0000:01:00.0"]
    assert rig.gpus[0].name is not None and "860M" in rig.gpus[0].name


def test_nccl_tests_old_layout_out_of_bounds_failed_marks_the_rows_wrong():
    # https://github.com/NVIDIA/nccl-tests/issues/37: the old layout's 'error' column (1e+00 in both halves) and
    # 'Out of bounds values : 2 FAILED' under a bare command line: the 4 GiB row's check failed
    rig = _read(
        TESTS
        / "corpus"
        / "s19-nccl-tests"
        / "all-gather-4g-out-of-bounds-2-failed-then-topo-8x-v100-tabs_shaochuang-wsc.txt"
    )
    (m,) = [x for x in rig.measurements if x.kind == "all_gather"]
    assert [(r.size_bytes, r.busbw_gbps, r.correct) for r in m.rows] == [(4294967296, 129.05, False)]


def test_nccl_tests_old_layout_small_errors_with_zero_out_of_bounds_are_right():
    # github.com/rcgsheffield/sheffield_hpc bessemer/software/libs/cuda.rst (fixture's header): errors of 3e-08 to
    # 2e-07 in the 'error' column with 'Out of bounds values : 0 OK': no row is wrong
    rig = _read(TESTS / "fixtures" / "import" / "found" / "nccl-allreduce_4xv100-pcie-e128m_sheffield-bessemer.txt")
    (m,) = [x for x in rig.measurements if x.kind == "all_reduce"]
    assert m.rows and all(r.correct is not False for r in m.rows)


# https://github.com/Breakend/experiment-impact-tracker/pull/80 (J-HowHuang): "the output snippet from
# `nvidia-smi -x -q` with driver version 525.125.06", between its '...' lines, copied unchanged
POWER_READINGS_525 = """<power_readings>
\t<power_state>P5</power_state>
\t<power_management>Supported</power_management>
\t<power_draw>37.29 W</power_draw>
\t<power_limit>420.00 W</power_limit>
\t<default_power_limit>420.00 W</default_power_limit>
\t<enforced_power_limit>420.00 W</enforced_power_limit>
\t<min_power_limit>100.00 W</min_power_limit>
\t<max_power_limit>450.00 W</max_power_limit>
</power_readings>
"""


def test_lone_gpu_power_readings_is_its_one_gpu_with_its_limit():
    # https://github.com/SimonFair/gpustat-unraid/pull/73: '<current_power_limit>250.00 W' (the newer tag)
    rig = _read(
        TESTS
        / "corpus"
        / "s19-smi-q"
        / "smi-q-x-gpu-power-readings-fragment-2080ti-current-power-limit-250_artur-ag.txt"
    )
    assert [(g.power_limit_w, g.power_default_limit_w, g.bus_id, g.name) for g in rig.gpus] == [
        (250.0, 250.0, None, None)
    ]


def test_lone_power_readings_of_an_older_driver_is_its_one_gpu():
    rig = import_texts([("power.xml", POWER_READINGS_525)])
    assert [(g.power_limit_w, g.power_default_limit_w) for g in rig.gpus] == [(420.0, 420.0)]
