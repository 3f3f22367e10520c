"""The environment reports ML projects' bug templates ask for, read from real public pastes (each cited): Hugging
Face's ``accelerate env`` / ``transformers-cli env`` / ``diffusers-cli env``, DeepSpeed's ``ds_report``,
``jax.print_environment_info()`` and ``pip list`` / ``pip freeze`` / ``conda list`` pastes. The values asserted are
the pastes' own (their versions, their GPU names), never this tool's output."""

from __future__ import annotations

import re

import pytest

from gpuadvisor.errors import InputError
from gpuadvisor.facts import Rig
from gpuadvisor.importers import import_texts
from gpuadvisor.importers.merge import detect

# https://github.com/huggingface/accelerate/issues/3446 (accelerate env, a GPU type, no config)
ACC_3446 = """```Shell
- `Accelerate` version: 0.34.2\u3000(The same issue occurs even with the latest version)
- Platform: Linux-6.8.0-52-generic-x86_64-with-glibc2.31
- `accelerate` bash location: /usr/local/bin/accelerate
- Python version: 3.11.10
- Numpy version: 2.1.1
- PyTorch version (GPU?): 2.3.0+cu121 (True)
- PyTorch XPU available: False
- PyTorch NPU available: False
- PyTorch MLU available: False
- PyTorch MUSA available: False
- System RAM: 251.53 GB
- GPU type: NVIDIA RTX A6000
- `Accelerate` default config:
        Not found
```
"""
# https://github.com/huggingface/accelerate/issues/1473 (a config for GPUs 6 and 7: the machine has eight or more,
# the report names one GPU type)
ACC_1473 = """System Info : 
Copy-and-paste the text below in your GitHub issue

- `Accelerate` version: 0.20.3
- Platform: Linux-5.4.0-42-generic-x86_64-with-glibc2.27
- Python version: 3.11.3
- Numpy version: 1.24.3
- PyTorch version (GPU?): 2.0.1+cu117 (True)
- PyTorch XPU available: False
- System RAM: 1007.70 GB
- GPU type: A100-SXM4-40GB
- `Accelerate` default config:
        - compute_environment: LOCAL_MACHINE
        - distributed_type: MULTI_GPU
        - mixed_precision: no
        - use_cpu: False
        - num_processes: 2
        - machine_rank: 0
        - num_machines: 1
        - gpu_ids: 6,7
        - rdzv_backend: static
        - same_network: True
        - main_training_function: main
        - downcast_bf16: no
        - tpu_use_cluster: False
        - tpu_use_sudo: False
        - tpu_env: []
"""  # noqa: W291
# https://github.com/huggingface/accelerate/issues/2216 (its config indented by tabs)
ACC_2216 = """- `Accelerate` version: 0.25.0
- Platform: Linux-6.2.0-37-generic-x86_64-with-glibc2.35
- Python version: 3.10.12
- Numpy version: 1.24.2
- PyTorch version (GPU?): 1.13.1+cu117 (True)
- PyTorch XPU available: False
- PyTorch NPU available: False
- System RAM: 62.69 GB
- GPU type: NVIDIA GeForce RTX 3060
- `Accelerate` default config:
\t- compute_environment: LOCAL_MACHINE
\t- distributed_type: MULTI_GPU
\t- mixed_precision: fp8
\t- use_cpu: False
\t- debug: True
\t- num_processes: 2
\t- machine_rank: 0
\t- num_machines: 1
\t- gpu_ids: 0,1
"""
# https://github.com/huggingface/accelerate/issues/1048 (an older accelerate env: no GPU type)
ACC_1048 = """Here is my accelerate env:
- `Accelerate` version: 0.16.0
- Platform: Linux-5.4.15-1.el7.elrepo.x86_64-x86_64-with-glibc2.27
- Python version: 3.9.16
- Numpy version: 1.23.5
- PyTorch version (GPU?): 1.12.1+cu116 (True)
- `Accelerate` default config:
        - compute_environment: LOCAL_MACHINE
        - distributed_type: NO
"""
# https://github.com/huggingface/diffusers/pull/7403 (transformers-cli env, indented in its fence, after jax's warning)
TRANSFORMERS_7403 = """  ```sh
  An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to CPU.

  Copy-and-paste the text below in your GitHub issue and FILL OUT the two last points.

  - `transformers` version: 4.38.2
  - Platform: Linux-6.5.0-26-generic-x86_64-with-glibc2.35
  - Python version: 3.10.12
  - Huggingface_hub version: 0.21.4
  - Safetensors version: 0.4.2
  - Accelerate version: 0.28.0
  - Accelerate config:  not found
  - PyTorch version (GPU?): 2.2.1+cu121 (True)
  - Tensorflow version (GPU?): not installed (NA)
  - Flax version (CPU?/GPU?/TPU?): 0.8.2 (CPU)
  - Jax version: 0.4.25
  - JaxLib version: 0.4.25
  - Using GPU in script?: <fill in>
  - Using distributed or parallel set-up in script?: <fill in>
  ```
"""
# https://github.com/ShivamShrirao/diffusers/issues/18 (diffusers-cli env: torch did not see the GPU)
DIFFUSERS_18 = """### System Info

- `diffusers` version: 0.4.0.dev0
- Platform: Linux-4.4.0-19041-Microsoft-x86_64-with-glibc2.31
- Python version: 3.9.13
- PyTorch version (GPU?): 1.12.1+cu116 (False)
- Huggingface_hub version: 0.10.0
- Transformers version: 4.22.2
- Using GPU in script?: <fill in>
- Using distributed or parallel set-up in script?: <fill in>
"""
# https://github.com/haotian-liu/LLaVA/issues/1837 (accelerate env, then collect_env in the same paste, cut)
LLAVA_1837 = """- `Accelerate` version: 0.21.0
- Platform: Linux-5.15.0-97-generic-x86_64-with-glibc2.35
- Python version: 3.10.16
- Numpy version: 1.26.4
- PyTorch version (GPU?): 2.1.2+cu121 (True)
- PyTorch XPU available: False
- PyTorch NPU available: False
- System RAM: 1007.52 GB
- GPU type: NVIDIA GeForce RTX 4090
- `Accelerate` default config:
        Not found
Python 3.10.16 (main, Dec 11 2024, 16:24:50) [GCC 11.2.0] on linux
Type "help", "copyright", "credits" or "license" for more information.
>>> from torch.utils.collect_env import get_pretty_env_info
>>> 
>>> print(get_pretty_env_info())
PyTorch version: 2.1.2+cu121
Is debug build: False
CUDA used to build PyTorch: 12.1
ROCM used to build PyTorch: N/A

OS: Ubuntu 22.04.5 LTS (x86_64)
"""  # noqa: W291

# https://github.com/deepspeedai/DeepSpeed/pull/6762 (ds_report's environment block, as its "Before:" shows it)
DS_6762 = """DeepSpeed general environment info:
torch install path ............... ['/home/deepspeed/test/trans-venv/lib/python3.12/site-packages/torch']
torch version .................... 2.3.0+cu121
deepspeed install path ........... ['/home/deepspeed/test/trans-venv/lib/python3.12/site-packages/deepspeed']
deepspeed info ................... 0.15.5+unknown, unknown, unknown
torch cuda version ............... 12.1
torch hip version ................ None
nvcc version ..................... 12.0
deepspeed wheel compiled w. ...... torch 0.0, cuda 0.0
shared memory (/dev/shm) size .... 125.77 GB
"""
# https://github.com/deepspeedai/DeepSpeed/issues/2676 (ds_report's op table: no version in it)
DS_2676 = """ds_report
```
--------------------------------------------------
DeepSpeed C++/CUDA extension op report
--------------------------------------------------
NOTE: Ops not installed will be just-in-time (JIT) compiled at
      runtime if needed. Op compatibility means that your system
      meet the required dependencies to JIT install the op.
--------------------------------------------------
JIT compiled ops requires ninja
ninja .................. [OKAY]
--------------------------------------------------
op name ................ installed .. compatible
--------------------------------------------------
async_io ............... [NO] ....... [OKAY]
cpu_adagrad ............ [NO] ....... [OKAY]
cpu_adam ............... [NO] ....... [OKAY]
fused_adam ............. [NO] ....... [OKAY]
fused_lamb ............. [NO] ....... [OKAY]
quantizer .............. [NO] ....... [OKAY]
random_ltd ............. [NO] ....... [OKAY]
 [WARNING]  please install triton==1.0.0 if you want to use sparse attention
sparse_attn ............ [NO] ....... [NO]
spatial_inference ...... [NO] ....... [OKAY]
transformer ............ [NO] ....... [OKAY]
stochastic_transformer . [NO] ....... [OKAY]
"""

# https://github.com/jax-ml/jax/issues/21295 (8 A10G; the paste as the search excerpt shows it, cut in the table)
JAX_21295 = """>>> import jax
>>> jax.print_environment_info()

jax:    0.4.33
jaxlib: 0.4.33
numpy:  1.26.4
python: 3.10.12 (main, Sep 11 2024, 15:47:36) [GCC 11.4.0]
jax.devices (8 total, 8 local): [CudaDevice(id=0) CudaDevice(id=1) ... CudaDevice(id=6) CudaDevice(id=7)]
process_count: 1
platform: uname_result(system='Linux', node='ip-172-31-65-154', release='6.8.0-1017-aws', version='#18~22.04.1-Ubuntu SMP Thu Oct  3 19:57:42 UTC 2024', machine='x86_64')


$ nvidia-smi
Mon Nov  4 11:56:43 2024
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.127.05             Driver Version: 550.127.05     CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA A10G                    On  |   00000000:00:16.0"""  # noqa: E501
# https://github.com/conda-forge/jaxlib-feedstock/issues/285 (a CPU jaxlib on a GPU machine; the table cut)
JAX_285 = """$ python -c "import jax; jax.print_environment_info()"                                              conda:jaxtest
An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.
jax:    0.4.32
jaxlib: 0.4.32
numpy:  2.1.2
python: 3.12.7 | packaged by conda-forge | (main, Oct  4 2024, 16:05:46) [GCC 13.3.0]
jax.devices (1 total, 1 local): [CpuDevice(id=0)]
process_count: 1
platform: uname_result(system='Linux', node='iitbmp014lw015u', release='6.11.0-8-generic', version='#8-Ubuntu SMP PREEMPT_DYNAMIC Mon Sep 16 13:41:20 UTC 2024', machine='x86_64')


$ nvidia-smi
Thu Oct 17 18:57:11 2024       
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 560.35.03              Driver Version: 560.35.03      CUDA Version: 12.6     |
|-----------------------------------------+------------------------+----------------------+
"""  # noqa: E501, W291

# https://github.com/huggingface/accelerate/issues/3510 (pip list, no header; torch from PyPI without a +cu tag)
PIP_3510 = """pip list

absl-py                  2.2.2
accelerate               1.6.0
annotated-types          0.7.0
bitsandbytes             0.45.5
diffusers                0.33.0.dev0 /data/roy/diffusers
ftfy                     6.3.1
huggingface-hub          0.30.2
numpy                    2.2.4
nvidia-cublas-cu12       12.4.5.8
nvidia-cuda-cupti-cu12   12.4.127
nvidia-cuda-nvrtc-cu12   12.4.127
nvidia-cuda-runtime-cu12 12.4.127
nvidia-cudnn-cu12        9.1.0.70
nvidia-cufft-cu12        11.2.1.3
nvidia-curand-cu12       10.3.5.147
nvidia-cusolver-cu12     11.6.1.9
nvidia-cusparse-cu12     12.3.1.170
nvidia-cusparselt-cu12   0.6.2
nvidia-nccl-cu12         2.21.5
nvidia-nvjitlink-cu12    12.4.127
nvidia-nvtx-cu12         12.4.127
packaging                24.2
peft                     0.15.2
pip                      22.0.2
protobuf                 5.29.4
safetensors              0.5.3
setuptools               59.6.0
tokenizers               0.21.1
torch                    2.6.0
torchvision              0.21.0
transformers             4.51.3
triton                   3.2.0
wandb                    0.19.9
... etc
"""
# https://github.com/deepspeedai/DeepSpeed/issues/4614 (the middle of a pip list: torch's +cu121 wheel)
PIP_4614 = """tiktoken                  0.3.3
tokenizers                0.14.1
toml                      0.10.2
toolz                     0.12.0
torch                     2.1.0+cu121
torch-grammar             0.3.3
torchaudio                2.1.0+cu121
torchvision               0.16.0+cu121
tox                       4.11.3
tqdm                      4.66.1
"""


def _read(text: str, name: str = "paste.txt") -> Rig:
    return import_texts([(name, text)])


@pytest.mark.parametrize(
    ("text", "torch", "cuda", "python", "gpu"),
    [
        (ACC_3446, "2.3.0+cu121", "12.1", "3.11.10", "NVIDIA RTX A6000"),
        (ACC_1473, "2.0.1+cu117", "11.7", "3.11.3", "A100-SXM4-40GB"),
        (ACC_2216, "1.13.1+cu117", "11.7", "3.10.12", "NVIDIA GeForce RTX 3060"),
        (ACC_1048, "1.12.1+cu116", "11.6", "3.9.16", None),
        (TRANSFORMERS_7403, "2.2.1+cu121", "12.1", "3.10.12", None),
        (DIFFUSERS_18, "1.12.1+cu116", "11.6", "3.9.13", None),
    ],
)
def test_hugging_face_env_reads_python_torch_and_the_gpu_type(
    text: str, torch: str, cuda: str, python: str, gpu: str | None
) -> None:
    assert detect(text) == ["hf-env"]
    rig = _read(text)
    assert (rig.software.torch_version, rig.software.torch_cuda_version) == (torch, cuda)
    assert rig.software.python_version == python
    assert [g.name for g in rig.gpus] == ([gpu] if gpu else [])


def test_a_gpu_type_is_gpu_0_named_the_count_not_shown() -> None:
    """accelerate#1473's config runs on GPUs 6 and 7: the report's one GPU type is not the machine's GPU count."""
    rig = _read(ACC_1473)
    assert [(g.index, g.name) for g in rig.gpus] == [(0, "A100-SXM4-40GB")]
    assert rig.partial_gpu_list
    assert any("not how many GPUs" in p for p in rig.problems)
    assert rig.origins.get("software.torch_cuda_version", "").startswith("paste.txt:8 (its +cu117 tag)")


def test_the_config_under_the_report_is_not_read_as_its_items() -> None:
    """accelerate's config lines (``\\t- gpu_ids: 0,1``) are the config's, not the report's: no fact from them."""
    rig = _read(ACC_2216)
    assert len(rig.gpus) == 1


def test_accelerate_env_then_collect_env_in_one_paste() -> None:
    rig = _read(LLAVA_1837)
    assert [(g.index, g.name) for g in rig.gpus] == [(0, "NVIDIA GeForce RTX 4090")]
    assert (rig.software.torch_version, rig.software.torch_cuda_version) == ("2.1.2+cu121", "12.1")


def test_a_cut_gpu_type_line_is_not_a_name() -> None:
    text = ACC_3446.replace("RTX A6000\n- `Accelerate` default config:\n        Not found\n```\n", "RTX A6")
    rig = _read(text)
    assert [g.name for g in rig.gpus] == [None]
    assert "ends inside" in rig.gpus[0].unavailable["name"]


def test_ds_report_reads_torch_its_cuda_build_and_dev_shm() -> None:
    rig = _read(DS_6762)
    assert (rig.software.torch_version, rig.software.torch_cuda_version) == ("2.3.0+cu121", "12.1")
    assert rig.node.shm_bytes == round(125.77 * 2**30)  # ds_report's human_readable_size: 1024-based
    assert any("nvcc: 12.0" in p for p in rig.problems)
    assert rig.gpus == []


def test_ds_report_op_table_alone_is_recognised_and_invents_nothing() -> None:
    assert detect(DS_2676) == ["ds-report"]
    rig = _read(DS_2676)
    assert rig.software.torch_version is None and rig.node.shm_bytes is None and rig.gpus == []


def test_ds_report_cut_inside_its_last_line_leaves_shm_not_shown() -> None:
    rig = _read(DS_6762.rstrip("\n")[:-4])  # "125.7"
    assert rig.node.shm_bytes is None


@pytest.mark.parametrize(
    ("text", "python", "driver", "gpus"),
    [(JAX_21295, "3.10.12", "550.127.05", 1), (JAX_285, "3.12.7", "560.35.03", 0)],
)
def test_jax_environment_info_and_its_nvidia_smi_table(text: str, python: str, driver: str, gpus: int) -> None:
    assert detect(text)[:2] == ["jax-env", "smi-summary"]
    rig = _read(text)
    assert rig.software.python_version == python
    assert rig.software.driver_version == driver  # from the table nvidia-smi's reader reads
    assert len(rig.gpus) == gpus
    assert any(p.endswith("jaxlib 0.4.33 (the scan has no field for it)") for p in rig.problems) == (text == JAX_21295)
    seen = "jax sees 8 Cuda device(s), 8 of them local" if text == JAX_21295 else "jax sees 1 Cpu device(s), 1 of"
    assert any(seen in p for p in rig.problems)


def test_pip_list_torch_without_a_cuda_tag_and_nccl_from_its_wheel() -> None:
    rig = _read(PIP_3510)
    assert rig.software.torch_version == "2.6.0"
    assert rig.software.torch_cuda_version is None
    assert "no +cuXYZ tag" in rig.software.unavailable["torch_cuda_version"]
    assert rig.software.nccl_version == "2.21.5"
    assert "nvidia-nccl-cu12 wheel" in rig.origins["software.nccl_version"]


def test_pip_list_torch_wheel_tag_names_its_cuda() -> None:
    rig = _read(PIP_4614)
    assert (rig.software.torch_version, rig.software.torch_cuda_version) == ("2.1.0+cu121", "12.1")
    assert rig.software.nccl_version is None


@pytest.mark.parametrize(
    ("text", "torch", "cuda"),
    [
        ("torch==2.3.0+cu121\nnvidia-nccl-cu12==2.20.5\n", "2.3.0+cu121", "12.1"),
        ("pytorch                   2.1.0           py3.10_cuda12.1_cudnn8.9.2_0    pytorch\n", "2.1.0", "12.1"),
        ("torch==2.2.0+cpu\n", "2.2.0+cpu", None),
    ],
)
def test_pip_freeze_and_conda_rows(text: str, torch: str, cuda: str | None) -> None:
    rig = _read(text)
    assert (rig.software.torch_version, rig.software.torch_cuda_version) == (torch, cuda)


def test_a_cut_torch_row_is_not_a_version() -> None:
    rig = _read(PIP_4614.split("torch-grammar")[0].rstrip("\n")[:-3])  # "torch   2.1.0+c"
    assert rig.software.torch_version is None
    assert "ends inside" in rig.software.unavailable["torch_version"]


def test_a_bare_word_list_is_not_a_package_list() -> None:
    with pytest.raises(InputError):
        _read("torch\nnccl\nnvidia\n")


def _facts(rig: Rig) -> tuple[object, ...]:
    s = rig.software
    names = [g.name for g in rig.gpus]
    return s.torch_version, s.torch_cuda_version, s.python_version, s.nccl_version, rig.node.shm_bytes, names


def _each_line(text: str, mark: str) -> str:
    return "".join(mark + x if x.strip() else x for x in text.splitlines(keepends=True))


NOISE = {  # a paste's usual noise (as tests/test_import_properties.py applies it to the corpus)
    "CRLF": lambda t: t.replace("\n", "\r\n"),
    "tabs for spaces": lambda t: re.sub(r"(?<=\S) {2,}(?=\S)", "\t", t),
    "prompt": lambda t: "user@node01:~$ accelerate env\n" + t,
    "fence": lambda t: "```\n" + t + "```\n",
    "> quote": lambda t: _each_line(t, "> "),
    "twice": lambda t: t + "\n" + t,
}
SAMPLES = [ACC_3446, ACC_1473, ACC_2216, TRANSFORMERS_7403, DIFFUSERS_18, DS_6762, JAX_285, PIP_3510, PIP_4614]


@pytest.mark.parametrize("noise", sorted(NOISE))
@pytest.mark.parametrize("k", range(len(SAMPLES)))
def test_noise_changes_nothing(k: int, noise: str) -> None:
    text = SAMPLES[k]
    assert _facts(_read(NOISE[noise](text))) == _facts(_read(text))
