"""Which lines could start an output: the section splitter's cheap pre-filter.

Trying every row's detector on every line made a 1M-line ibstat paste cost half a minute. Each row below names
what a line must hold for that row's detector to fire on it, read off the detector itself: a necessary condition,
never a sufficient one (the detector still decides). A line that holds none of them is tried only by the rows not
listed here, so the split is the same as trying every detector, at the cost of one regular expression per line.
Inside no output yet (``current`` is None) every detector is tried: some start a paste on any log line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from gpuadvisor.importers import (
    beyond,
    beyond_tools,
    collect_env,
    cupy_config,
    env_generic,
    error_codes,
    gpu_burn,
    nccl,
    smi_query,
    verbs_wc,
)
from gpuadvisor.importers.registry import FORMATS, Format

# a word each of the kernel log's signs (probes/kmsg_signs.py's SIGN_RE) holds
SIGNS = (
    *("RmInitAdapter failed", "NV_ERR_RESET_REQUIRED", "eset ", "eartbeat timed out", "rpcSendMessage failed"),
    *("Timeout waiting for RPC from GSP", "PCIe Bus Error: severity=", "AER: can't recover", ": Link ", " carrier"),
    *("blocked for more than", "soft lockup - CPU#", "probe routine ", "failed with error"),
    *("NV_ERR_GPU_IS_LOST", "GPU lost from the bus", "NVRM: BAR", "(PCI ID: ", "No done completion"),
    *("leak of a command resource", "health compromised", "mlx5_enter_error_state", "mlx5_load_one failed"),
    *("insufficient power on the PCIe slot", "failed to wait for GFW", "unknown chipset (ffffffff)"),
    *("BUG: unable to handle kernel", "BUG: kernel NULL pointer", "BUG: unable to handle page fault"),
    "general protection fault",
    *("can't assign; no space", ": no space for [mem"),
    "PCIe Bus Error: serverity=",  # the AER line retyped by hand
    "Failed to query display engine channel state: 0x",
    *(
        "IP: ",
        "EIP is at ",
        "pc : ",
        "PC is at ",
    ),  # an oops report's code address in an NVIDIA module (probes/kmsg_oops.py)
)

_SCOPED = {re.IGNORECASE: "i", re.MULTILINE: "m", re.DOTALL: "s", re.VERBOSE: "x"}


def _words(*words: str) -> str:
    return "|".join(re.escape(w) for w in words)


_LOWER = "(?#lower-cased)"  # a part tried on the line lower-cased (cheaper than a case-blind match)
_GPU_KEY = _LOWER + r"^\s*(?:" + _words(*sorted(smi_query._GPU_KEYS, key=len, reverse=True)) + r")(?:\s+:(?:\s|$)|\s*$)"
_PROCESS_KEY = _LOWER + r"^\s+(?:" + _words(*sorted(smi_query._PROCESS_KEYS, key=len, reverse=True)) + r")\s+:"
_SPACE = r"^\s*"  # parts after it hold after the line's indent, if any
# What a line must hold for each row's detector to fire on it inside another output (see the module's text), read
# off the detector: parts that begin with _SPACE hold after the indent, those with "^" at the start, those with
# _LOWER at the start of the line lower-cased, the others anywhere in it. A part may be looser than the detector's
# own expression (a word of it, its case aside): it must never be stricter.
NEEDS: dict[str, tuple[str, ...]] = {
    "smi-q": ("NVSMI LOG", r"^(?:Timestamp|Driver Version|GPU )", _GPU_KEY, _PROCESS_KEY),
    "smi-xml": ("<",),  # elements run together on one line may follow a prompt
    "topo-m": (_SPACE + "GPU0", r"\|.*GPU0"),  # or a docs page's pipe table of it
    "nvlink": (r"^GPU \d",),
    "smi-mig": (_SPACE + r"\|\s*GPU (?:instances:|\s+Name\s+Profile)",),
    "smi-summary": (_words("NVIDIA-SMI", "|", "infoROM", "No devices were found"), r"^\W*Unable to "),  # a row: "|"
    "smi-csv": (",", r"\S(?: {2,}|\t)\S"),  # or the ``--query-gpu`` command above its header: see :func:`sift`;
    # through column -t: its cells two spaces (or a tab) apart
    "dcgmi-dmon": (r"^\s*#\s*Entity\s", "Long Name"),  # or -l's catalogue header
    "smi-dmon": (r"#\s*(?:Date|Time|gpu|YYYYMMDD|HH:MM:SS|Idx)\s",),  # "# gpu  pwr ...", "# Idx  W ..." ("\#" too)
    "collect-env": (
        _words(*collect_env._START, *collect_env.CUDNN_HEADS, collect_env.DRIVER_KEY),
        _SPACE + "(?:GPU |`?(?:" + _words(*collect_env.MM_KEYS) + "))",
        r"^\s*={10,}\s*$",  # vLLM's sectioned report's first banner
    ),
    # a device line: a bus id and a space (after prefixes of many forms); grepped -vv lines
    "lspci": (r"[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7] ", _SPACE + "(?:Capabilities: |LnkCap:|LnkSta:|ACSC)"),
    # a result row's type or a first line, after launcher tags ("[0] ", "[1,0]<stdout>:") that only a "[digit" brings
    "nccl-tests": (r"int|half|float|double|fp8_", nccl._FIRST_LINES, r"\[\d", r"Rank\s", "in-place"),
    "ib-sysfs": ("/infiniband/",),  # /sys/class/infiniband/..., /sys/devices/.../infiniband/...
    "sysfs-pci": (r"/sys/\S*_link_|/sys/\S*/(?:vendor|class|numa_node)",),  # PATH:VALUE, or cat PATH
    "dcgm": (
        _words("NvLink Link Status", "Device Information", "GPUs:", "DCGM_FI_", "Diagnostic", " Detected"),
        r"GPUs? found",
        r"^[+|]-----",
        "GPU ID:",
        "MIG configuration is incompatible",
    ),
    "proc-info": (r"Model:",),
    "nvc-info": (r"NVRM version:", "listing device /dev/nvidia"),
    "incus-gpu": (r"^\s*GPUs?:",),
    "club3090": ("club-3090 rig report", " MiB | driver "),
    "akash-gpu": (r"^\s*(?:\{|\"cards\")",),
    "fah-lspci": (r"^\s*0x[0-9a-fA-F]{4}:0x",),
    # its progress and closing lines, and its own messages a paste may start with (its detector's patterns)
    "gpu-burn": ("proc'd:", r"Tested \d+ GPUs:", gpu_burn.OWN.pattern),
    "dcgmi-profile": ("Group.Subgroup",),
    "dcgm-json": (_words('"DCGM GPU Diagnostic"', '"DCGM Diagnostic"', '"test_categories"'), r"^\s*\{\s*$"),
    "detect-gpu": (r'^\s*(?:[\[{]\s*$|\[?\{\s*")',),
    "numba-detect": (_SPACE + "(?:Found |id 0)",),
    "llama-devices": (
        _words("ggml_cuda_init: found", "ggml_init_cublas: found", ", compute capability ", "using device CUDA"),
    ),
    "ollama-devices": ("inference compute",),
    "tf-devices": (
        _words("Found device ", "TensorFlow device (", "StreamExecutor device ("),
        _words(
            "Adding visible gpu devices", "Device peer to peer matrix", " edge matrix:", "] DMA:", "Peer access not"
        ),
    ),
    "torch-devices": (r"_CudaDeviceProperties\(",),
    "hf-env": (r"-\s+\S+ version:",),
    "ds-report": (
        _words("DeepSpeed C++/CUDA extension op report", "DeepSpeed general environment info:"),
        r"torch version \.\.",
    ),
    "jax-env": (r"jax:\s",),
    "cupy-config": (_SPACE + "(?:" + _words(*cupy_config.KEYS) + r")\s*:",),
    "pip-list": (
        _LOWER + r"^\s*(?:torch|pytorch|nvidia.nccl|package\s|# packages in)",
        _SPACE + r"(?:Versions of relevant libraries|\[(?:pip3?|conda)\])",  # collect_env's part
    ),
    "nvitop": ("NVITOP ",),
    "gpustat": (r"^\s*\S+\s+(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ", r"^\s*\[\d"),
    "cuda-bw": (_words("CUDA Bandwidth Test", "Running on...", "Device 0: "),),
    "cuda-p2p": (_words("[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]"), _SPACE + "(?:Device:|P2P|Uni|Bi)"),
    "cuda-simplep2p": (_words("simpleP2P] - Starting", "GPU0 = ", "(GPU0) -> "),),
    "detectron2-env": (r"^\s*(?:-{4,}\s|sys\.platform\s)",),
    "lightning-env": (_SPACE + r"\*\s+CUDA:", _SPACE + r"-\s+GPU:"),
    "paddle-env": (_SPACE + "platform: ",),
    "devicequery": (_words("deviceQuery Starting", "CUDA Device Query", "CUDA Capable device", "Device 0: "),),
    "digits-devices": (r"Device #\d",),
    "cuda-memtest": (r"^\s*\[\d\d/\d\d/\d{4} ",),
    "libgpu-devices": (r"^\s*(?:Found \d+ GPUs in |Available devices:)",),
    "pair-matrix": (r"^\s*\d{1,3}[ \t]+\d+\.\d\d",),
    "latency-rows": (_SPACE + r"GPU\s",),  # p2pBandwidthLatencyTest's "   GPU     0      1 ..." header
    "nvbandwidth": (_SPACE + "(?:nvbandwidth Version:|Built from Git version:|memcpy |>|Running )",),
    # the signs' own words, their case and word bounds aside
    "kernel-log": (_words("NVRM", "Xid", "nvidia", *SIGNS), _SPACE + r"(?:mlx[45]_core|mlx[45]_ib|mce)\d"),
    "ibstat": (r"^CA '", _SPACE + "ibpanic:"),
    "ibv-devinfo": (r"^hca_id:", _SPACE + r"port:\s*\d", _SPACE + r"(?:phys_state:|GID\[)"),
    "ibstatus": (r"^Infiniband device '", "Fatal error:"),
    "fabric-manager": (r"^\W*nvidia-fabricmanager", _SPACE + r"\[[A-Z][a-z]{2} ", _words(*beyond.FM_WORDS)),
    "smi-fabric": (_SPACE + r"Fabric\s*$",),
    "smi-lost": (r"^\W*Unable to d",),
    "rdma-link": (_SPACE + r"link\s",),
    "rdma-res": (r"^\s*\d+: [\w.-]+: (?:pd|cq|qp|cm_id|mr|ctx|srq) \d", _SPACE + r"link\s"),
    "lsmod": (_SPACE + r"(?:Module\s|filename:)", f"^(?:{_words(*beyond_tools.OF_INTEREST)})", "lsmod"),
    "nccl-debug": (_SPACE + r"#\s*Rank", "NCCL", "NVLink SHARP", "watchdog thread", "NET/OFI"),
    "perfquery": (_SPACE + "# Port ",),
    "ibqueryerrors": (_SPACE + "(?:GUID|Errors for)",),
    "ibdev2netdev": (" port ",),
    "show-gids": (_SPACE + r"DEV\s", r"[0-9a-fA-F]{4}:[0-9a-fA-F]{4}:[0-9a-fA-F]{4}"),
    "nhc": ("Health check failed:", "Node Health Check failed"),
    "nvsentinel": ("ErrorCode:",),
    "scontrol-node": ("NodeName=",),
    "k8s-node": (r"^Name:\s", _SPACE + r"(?:Labels:\s+)?nvidia\.com/", _SPACE + "(?:[Cc]apacity|[Aa]llocatable):"),
    "k8s-pods": (_SPACE + r"(?:NAMESPACE\s+)?NAME\s+READY\s",),
    "driver-container": (
        _words("Accelerated Graphics Driver for Linux", "Starting installation of NVIDIA driver", " NVIDIA "),
        "Done, now waiting for signal",
    ),
    "container-errors": (
        _words(
            "could not select device driver",
            "nvml error: driver not loaded",
            "Failed to initialize NVML: Unknown",
            "load library failed: libnvidia-ml",
        ),
    ),
    "gpud": (
        '"accelerator-nvidia-fabric-manager"',
        _words("fabric state", "fabric manager found", "NVSwitch not detected", "fabric manager supported"),
        '"caller":"fabric-manager/',
    ),
    "cuda-not-ready": (_words("system not yet initiali", "SystemNotReady", "SYSTEM_NOT_READY", "802"),),
    "cuda-ecc": ("ECC", "NVL[Ii][Nn][Kk]"),
    # the library named, a code's name, or a tool's message for one: what the error-code table can read on a line
    "cuda-error": (error_codes.MAY_PRINT.pattern,),
    "gpu-mr-failed": ("ibv_reg_",),
    "nvvs": ("MIG configuration is incompatible",),
    "nv-hostengine": (r"(?:VERBOSE|DEBUG|INFO|WARN|ERROR|FATAL)\w*\s+\[\d",),
    "fio-json": (_SPACE + r"\{",),
    "fio": (r": \((?:g=|groupid=)", _SPACE + r"fio-\d"),
    "lsblk-json": (_SPACE + r"\{",),
    "iblinkinfo": (r"^\s*(?:CA|Switch): ",),
    "lsblk": (_SPACE + r"NAME\s", _SPACE + r'(?:K?NAME|PATH)="'),  # its header, or -P's pairs
    "nvme-list-json": (_SPACE + r"\{",),
    # its header, the whole listing on one line, or 2015's "/dev/nvme0n1 : NVM Express - 0x144d - ..." rows
    "nvme-list": (_SPACE + r"(?:Node|Device)\s", r"Node\s+(?:Generic\s+)?SN\s", ": NVM Express - "),
    "nvme-id-ctrl": ("NVME Identify Controller:",),
    "smartctl-nvme": (
        r"^\s*smartctl \d",
        "START OF INFORMATION SECTION",
        "START OF SMART DATA SECTION",
        "SMART/Health",
    ),
    "gdscheck": ("GDS release version", r"^\s*(?:ENVIRONMENT|DRIVER CONFIGURATION)\s*:", r"^\s*(?:\*\*\s*)?NVMe\s*:"),
    "df": (_SPACE + r"Filesystem\s",),
    "busgrind": ("Host/Device Bandwidth Matrix",),
    "perftest": (
        "Port number ",
        _words("BW Test", "Latency Test", "initializing CUDA", "Perftest doesn't", "Waiting for"),
        _words("Completion with error", "Failed to complete run_iter_"),
    ),
    "daemon-log": (r"\d\d:\d\d:\d\d", r"^\s*\[\s*[A-Z]{2,6}\s*\] "),  # a clock time, or systemd's console mark
    "nccl-topo-xml": (_SPACE + "<",),
    "torch-config": ("PyTorch built with:",),
    "ip-link": (r": <[A-Z0-9_,-]*> mtu ",),
    "ifconfig": (r": flags=\d+<", "Link encap:"),
    "go-log": (r"^\s*(?:\d{4}/\d\d/\d\d \d\d:\d\d:\d\d|\{)", r" \| \d{4}/\d\d/\d\d "),
    "verbs-qp": (_words("Verifying port state:", "RoCE detected (Ethernet)", "Remote LID: 0x"),),
    "verbs": (
        _words("libibverbs: ", "No IB devices found", "Failed to get IB devices list", "node GUID", "/infiniband"),
        _words("Did not detect devices"),
    ),
    "ibv-pingpong": (_SPACE + r"(?:local address:|Failed status )",),
    "ucx-log": ("ib_mlx5_log.c:",),
    "verbs-wc": (
        r"(?i:status)",
        _words("IBV_WC_", "Got completion"),
        "(?i:" + _words(*(words for _, words in verbs_wc.WC_STATUS.values())) + ")",
    ),
    "lshca": (_SPACE + r"PCI_addr\s*\|",),
    "mst-status": ("DEVICE_TYPE",),
    "paddle-devices": ("Capability: ", "Cannot enable P2P access from"),
    "memlock": (_words("Please set max locked memory", "max locked memory limit (", "RLIMIT_MEMLOCK is "),),
    "mlxlink": (_SPACE + "Operational Info", "mlxlink "),
    "smi-version": ("NVIDIA-SMI version",),
    "proc-version": ("NVRM version:",),
    "cuda-toolkit": (_words("Cuda compiler driver", "Cuda compilation tools", '"cuda"'), _SPACE + "CUDA Version "),
    "driver-packages": ("Desired=", "nvidia", "cuda-drivers"),
    "smi-vgpu": ("NVIDIA-SMI", r"GPU\s+Name"),
    "proc-power": ("Runtime D3 status:",),
    "dcgm-proftester": (_words("since DCGM validation is disabled", ", dcgm ", "from RunTests()"),),
    "ucc-perftest": (r"^\s*(?:Collective:|Count\s+Size\s+Time)",),
    "gpu-tools": ("NVIDIA GPU Tools version", r"^\s*\d{4}-\d\d-\d\d,\d\d:\d\d:\d\d\.\d{3} "),
    "comfyui": ("Total VRAM ", "Device: cuda:", r"\*\*(?:ComfyUI Version|Name):\*\*"),
    "env-generic": (  # a vocabulary key's first word after a bullet, "**" or a quote ("name" before ":" or a column)
        _LOWER + r"""^[\s{"']*(?:[-*\u2022]\s+)*(?:\*\*)?(?:gpu|device|graphics|vram|total|memory|cuda|torch|pytorch"""
        r"|nvidia|driver|python|nccl|cudnn|name(?:\W*:|\s\s|\t))",
        # inside a log, a sentence's or a log line's clause: a vocabulary word anywhere in it
        f"(?i:{env_generic.CLAUSE})",
    ),
    "app-log": (r"(?i:cuda|nvml|nccl|nvidia|gpu)",),  # (a paste's first output only: never inside another)
    "xid-relay": (
        "[Xx][Ii][Dd]",
        _words("device marked unhealthy", "ERROR_GPU_IS_LOST", "GPU is lost", "Skipping "),
        r"NVML\b.*\b(?:error|return)(?: code)?\s*[:=]?\s*15\b",
        _words("ERROR_RESET_REQUIRED", "GPU requires restart"),
        r"NVML\b.*(?:\b(?:error|return)(?: code)?\s*[:=]?\s*16\b|\(16\))",
    ),
}


@dataclass(frozen=True)
class _Test:
    """Parts of conditions as three expressions: at the line's start, anywhere in it, at the start lower-cased (None:
    no part of that kind)."""

    at: re.Pattern[str] | None
    anywhere: re.Pattern[str] | None
    low: re.Pattern[str] | None

    @classmethod
    def of(cls, parts: Iterable[str]) -> _Test:
        parts = list(dict.fromkeys(parts))
        low = [p.removeprefix(_LOWER) for p in parts if p.startswith(_LOWER)]
        indented = [p.removeprefix(_SPACE) for p in parts if p.startswith(_SPACE)]
        at = [p for p in parts if p.startswith("^") and not p.startswith(_SPACE)]
        at += [_SPACE + "(?:" + "|".join(indented) + ")"] if indented else []
        anywhere = [p for p in parts if not p.startswith(("^", _LOWER))]
        return cls(*(re.compile("|".join(f"(?:{p})" for p in x)) if x else None for x in (at, anywhere, low)))

    def holds(self, line: str) -> bool:
        return bool(
            (self.at is not None and self.at.match(line))
            or (self.anywhere is not None and self.anywhere.search(line))
            or (self.low is not None and self.low.match(line.lower()))
        )


_ANY = _Test.of(p for parts in NEEDS.values() for p in parts)
_BY_KIND = {kind: _Test.of(parts) for kind, parts in NEEDS.items()}


@dataclass(frozen=True)
class Sift:
    """The rows tried on a line no row's condition holds for (``always``), in the rows' order."""

    always: tuple[Format, ...]

    def rows(self, line: str) -> tuple[Format, ...]:
        """The rows to try on ``line`` inside an output, in the rows' order: ``always``, and those whose condition
        the line holds."""
        if not _ANY.holds(line):
            return self.always
        return tuple(f for f in FORMATS if f in self.always or (f.kind in _BY_KIND and _BY_KIND[f.kind].holds(line)))


def sift(text: str) -> Sift:
    """The pre-filter for ``text``: a ``--query-gpu`` command makes its CSV's one-field header (no comma) a start."""
    untested = {"smi-csv"} if "query-gpu" in text else set()
    return Sift(tuple(f for f in FORMATS if f.starts is not None and (f.kind not in NEEDS or f.kind in untested)))
