"""One table of the documented error codes a program (not the kernel) prints when NVML or CUDA fails, and what each
means for the node; the readers that judge such a line look the code up here, so one table decides.

Sources: NVML's ``nvmlReturn_t`` (nvml.h; NVML API Reference, "Device Queries / Error reporting": each code's
value, its ``NVML_ERROR_*`` name and ``nvmlErrorString``'s text) and CUDA's ``cudaError_t`` / ``CUresult``
(cuda_runtime_api.h, driver_types.h, cuda.h; CUDA Runtime API, "Data types used by CUDA Runtime": each value, its
``cudaErrorXxx`` and ``CUDA_ERROR_XXX`` names and ``cudaGetErrorString``'s text).

A code is read only on a line that names its library: NVML by the word ``NVML`` (or one of its code names), CUDA by
``cuda``/``CUDA`` or a ``cu*`` call; a bare number ("exit code 15", "error 802" in an HTTP log) is no code. An
application's own error (out of memory, an illegal address, a launch failure) is the application's, never a fault
of the node: an application fault (GA828, info), as the Xid catalog treats Xid 13, 31 and 43 (GA801).

Every entry is read the same way (:func:`event`): the line that prints it becomes an event of the entry's kind, the
line its evidence, its device the PCI bus id the line names (a CUDA ordinal is the job's, not the machine's); the
rule the table names judges it, at most at the table's verdict. The meanings and actions are the CUDA Runtime API's
(cudaError_t: "the installed NVIDIA CUDA driver is older than the CUDA runtime library ... install an updated NVIDIA
display driver" for 35; "a mismatch between the versions of the display driver and the CUDA driver" for 803; "the
system was upgraded to run with forward compatibility but the visible hardware ... does not support this
configuration" for 804; 700 and 719: "the process is left in an inconsistent state ... must be terminated and
relaunched") and NVML's (nvmlReturn_t).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuadvisor.facts import KernelEvent

NVML_H = "nvml.h (NVML API Reference: nvmlReturn_t, nvmlErrorString)"
CUDA_H = "cuda_runtime_api.h / driver_types.h (CUDA Runtime API: cudaError_t, cudaGetErrorString); cuda.h (CUresult)"


@dataclass(frozen=True)
class ErrorCode:
    """One documented code: its library, number, names, the library's own texts, what it means for the node, the
    event kind (and rule) that judges it, the verdict at most, and its source."""

    library: str  # "NVML" or "CUDA"
    code: int
    names: tuple[str, ...]
    texts: tuple[str, ...]
    meaning: str
    kind: str | None  # the event kind a reader makes of it (None: not an event of the node)
    rule: str  # the rule that judges it
    verdict: str  # "fail", "warn" or "info": the most it says of the node
    source: str
    action: str = ""  # what the on-call engineer does (the entries judged by GA507 and GA828; the others' rules say)
    again: str = ""  # the verdict when the program prints it again (after its own retry): the condition persists
    # the verdict where a line shows the code returned by the device's setup for the process (its initialisation,
    # a context's creation); with it, ``again`` holds only there (elsewhere the code says nothing of the node)
    setup: str = ""


def _nvml(code: int, name: str, text: str, meaning: str, kind: str | None, rule: str, verdict: str,
          action: str = "") -> ErrorCode:  # fmt: skip
    """An NVML return code: go-nvml's and nvml.h's names (ERROR_X, NVML_ERROR_X), nvmlErrorString's text, and the
    bindings' CamelCase name (pynvml's NVMLError_GpuIsLost, .NET wrappers' GPUIsLost) read as a text (only on a line
    naming NVML: "NotFound" alone is any program's word)."""
    camel = "".join(w.capitalize() for w in name.split("_"))
    texts = (text, camel) if "_" in name else (text,)
    return ErrorCode("NVML", code, (f"NVML_ERROR_{name}", f"ERROR_{name}"), texts, meaning, kind, rule, verdict,
                     NVML_H, action)  # fmt: skip


def _cuda(code: int, names: tuple[str, ...], texts: tuple[str, ...], meaning: str, kind: str | None, rule: str,
          verdict: str, action: str = "", again: str = "", setup: str = "") -> ErrorCode:  # fmt: skip
    return ErrorCode("CUDA", code, names, texts, meaning, kind, rule, verdict, CUDA_H, action, again, setup)


_APP = "the application's own error, not a fault of the node"
DRIVER_STACK = "driver-stack"  # the event kind of a code judged with the driver's install (GA507)
APP_FAULT = "app-fault"  # the event kind of an application's own error (GA828: info)
# what to do, per class (the CUDA Runtime API's and NVML's own advice for the code, in the on-call engineer's words)
_MISMATCH = (
    "the node's driver stack does not match itself: reboot after a driver upgrade, or reinstall the driver so the "
    "kernel module and its user-space libraries (libcuda, libnvidia-ml) are one version (cat /proc/driver/nvidia/"
    "version and nvidia-smi agree); in a container, mount the host's libraries (NVIDIA Container Toolkit) instead of "
    "a copy in the image; not a GPU fault: no drain for hardware, no RMA"
)
_TOO_OLD = (
    "the driver is older than the CUDA runtime the program ships: install a driver that supports that CUDA version "
    "(the CUDA Toolkit release notes' driver table), or on a datacenter GPU the cuda-compat package of that version, "
    "or run the program's build for the driver's CUDA; not a GPU fault"
)
_COMPAT = (
    "the CUDA forward-compatibility package (cuda-compat, libcuda from the image) is not supported on this GPU (a "
    "GeForce or workstation card) or with this driver branch: remove it from the library path (or use an image "
    "without it) and install a driver that supports the image's CUDA; not a GPU fault"
)
_NOT_LOADED = (
    "load the driver: lsmod | grep nvidia; if it is missing, dmesg | grep -i nvrm and dkms status say why (a module "
    "not built for the running kernel, Secure Boot); then nvidia-smi must list the GPUs"
)
_NO_LIBRARY = (
    "install the NVIDIA driver's user-space part where the program runs (in a container: start it with the NVIDIA "
    "Container Toolkit, --gpus all or the nvidia runtime, so the host's libnvidia-ml is mounted)"
)
_NO_DEVICE = (
    "see whether the program was given a GPU: nvidia-smi on the node (the driver loaded, GPUs listed), "
    "CUDA_VISIBLE_DEVICES not empty or wrong, a container started with --gpus / the nvidia runtime; a GPU busy in "
    "exclusive-process mode: nvidia-smi -q -d COMPUTE and the process holding it"
)
_UNAVAILABLE = (
    _NO_DEVICE + "; printed again after the program's own retry, with no other process holding the GPUs "
    "(nvidia-smi lists none): the GPUs do not take a CUDA context any more: drain the node and reset them "
    "(nvidia-smi -r) or reboot, then look for the cause (overclock, power, a crashed context, the kernel log's Xid)"
)
_UNKNOWN = (
    "the library could not say what failed: read the lines around it and the kernel log (an Xid at the same time is "
    "the GPU's); a CUDA 'unknown error' after a suspend or a driver update: reload nvidia_uvm (or reboot); NVML's in a "
    "container after systemctl daemon-reload: restart the container (its device access was dropped)"
)
_DEBUG_JOB = (
    "debug the job, not the node: rerun it with CUDA_LAUNCH_BLOCKING=1 (or under compute-sanitizer) to find the "
    "kernel that faulted; the GPU is fine unless the kernel log shows an Xid of the GPU at the same time (48, 63, 64, "
    "74, 79, 94, 95: GA801 says which); 13, 31 or 43 there is the same application fault"
)
_OOM = (
    "the job asked for more GPU memory than was free: a smaller batch or model, fewer processes per GPU, or a larger "
    "GPU; nvidia-smi shows what else holds the memory; not a fault of the GPU"
)
# fmt: off
CODES: tuple[ErrorCode, ...] = (
    # NVML's return codes with a meaning for the node (nvml.h's values; nvmlErrorString's texts)
    _nvml(9, "DRIVER_NOT_LOADED", "Driver Not Loaded", "the NVIDIA kernel driver is not loaded", DRIVER_STACK,
          "GA507", "fail", _NOT_LOADED),
    _nvml(12, "LIBRARY_NOT_FOUND", "NVML Shared Library Not Found",
          "the NVML library (libnvidia-ml, the driver's user-space part) is not where the program looks", DRIVER_STACK,
          "GA507", "warn", _NO_LIBRARY),
    _nvml(15, "GPU_IS_LOST", "GPU is lost", "the GPU has fallen off the bus or is otherwise inaccessible",
          "gpu-is-lost", "GA820", "fail"),
    _nvml(16, "RESET_REQUIRED", "GPU requires restart", "the GPU needs a reset before it can be used again",
          "gpu-reset-required", "GA820", "fail"),
    ErrorCode("NVML", 18, ("NVML_ERROR_LIB_RM_VERSION_MISMATCH", "ERROR_LIB_RM_VERSION_MISMATCH"),
              ("RM has detected an NVML/RM version mismatch", "Driver/library version mismatch"),
              "the NVML library and the loaded kernel driver (RM) are of different versions (a driver upgraded "
              "without a reboot)", DRIVER_STACK, "GA507", "fail", NVML_H, _MISMATCH),
    ErrorCode("NVML", 999, ("NVML_ERROR_UNKNOWN", "ERROR_UNKNOWN"), ("Unknown Error",),
              "an internal error NVML does not name: says nothing of the GPU by itself; returned by NVML's "
              "initialisation (nvmlInit: 'Failed to initialize NVML'), no NVML tool reaches the GPUs", DRIVER_STACK,
              "GA507", "info", NVML_H, _UNKNOWN, again="fail", setup="warn"),
    # CUDA's errors with a meaning for the node (cudaError_t's values; cudaGetErrorString's texts)
    _cuda(214, ("cudaErrorECCUncorrectable", "CUDA_ERROR_ECC_UNCORRECTABLE"), ("uncorrectable ECC error encountered",),
          "an uncorrectable ECC error was detected during execution: the GPU's memory failed under the job",
          "cuda-ecc-uncorrectable", "GA302", "fail"),
    _cuda(220, ("cudaErrorNvlinkUncorrectable", "CUDA_ERROR_NVLINK_UNCORRECTABLE"), ("uncorrectable NVLink error",),
          "an uncorrectable NVLink error was detected during the execution (the kernel logs it as Xid 74)",
          "cuda-nvlink-uncorrectable", "GA820", "fail"),
    _cuda(226, ("cudaErrorContained", "CUDA_ERROR_CONTAINED"),
          ("Invalid access of peer GPU memory over nvlink or a hardware error",),
          "an exception on the device that the GPU's error containment held to this process (an invalid access of "
          "peer GPU memory over NVLink, or a hardware error): the process's CUDA context is unusable",
          "cuda-contained", "GA820", "warn"),
    _cuda(802, ("cudaErrorSystemNotReady", "CUDA_ERROR_SYSTEM_NOT_READY"),
          ("system not yet initialized", "system not yet initialised"),
          "the system is not yet ready to start any CUDA work (its driver daemons, on an NVSwitch system the fabric "
          "manager, not running)", "cuda-not-ready", "GA809", "fail"),
    _cuda(100, ("cudaErrorNoDevice", "CUDA_ERROR_NO_DEVICE"), ("no CUDA-capable device is detected",),
          "no CUDA-capable device is visible to the program (none present, the driver not loaded, or hidden by "
          "CUDA_VISIBLE_DEVICES)", DRIVER_STACK, "GA507", "warn", _NO_DEVICE),
    _cuda(46, ("cudaErrorDevicesUnavailable", "CUDA_ERROR_DEVICE_UNAVAILABLE"),
          ("CUDA-capable device(s) is/are busy or unavailable", "all CUDA-capable devices are busy or unavailable"),
          "the devices are busy or unavailable (exclusive-process mode held by another process, or a GPU that needs "
          "a reset)", DRIVER_STACK, "GA507", "warn", _UNAVAILABLE, again="fail"),
    _cuda(35, ("cudaErrorInsufficientDriver",),
          ("CUDA driver version is insufficient for CUDA runtime version",),
          "the installed driver is older than the CUDA runtime the program ships", DRIVER_STACK, "GA507", "warn",
          _TOO_OLD),
    _cuda(803, ("cudaErrorSystemDriverMismatch", "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"),
          ("system has unsupported display driver / cuda driver combination",),
          "the display driver (the kernel module) and the CUDA driver (libcuda) are of different versions: no "
          "program can use the GPUs with CUDA", DRIVER_STACK, "GA507", "fail", _MISMATCH),
    _cuda(804, ("cudaErrorCompatNotSupportedOnDevice", "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"),
          ("forward compatibility was attempted on non supported HW",),
          "the CUDA forward-compatibility package was used on a GPU that does not support it (a driver older than "
          "the container's CUDA)", DRIVER_STACK, "GA507", "warn", _COMPAT),
    _cuda(999, ("cudaErrorUnknown", "CUDA_ERROR_UNKNOWN"), ("unknown error",),
          "an unknown internal error: says nothing of the GPU by itself, unless the device's setup for a process "
          "returned it (cuCtxCreate: the CUDA Driver API's Context Management lists it among its returns): then the "
          "device takes no CUDA context", DRIVER_STACK, "GA507", "info", _UNKNOWN, again="fail", setup="warn"),
    # the application's own errors: never a hardware fault (as the Xid catalog's 13, 31, 43)
    _cuda(2, ("cudaErrorMemoryAllocation", "CUDA_ERROR_OUT_OF_MEMORY"), ("out of memory",),
          _APP + " (out of memory)", APP_FAULT, "GA828", "info", _OOM),
    _cuda(700, ("cudaErrorIllegalAddress", "CUDA_ERROR_ILLEGAL_ADDRESS"), ("an illegal memory access was encountered",),
          _APP + " (an illegal memory access, as Xid 13/31)", APP_FAULT, "GA828", "info", _DEBUG_JOB),
    _cuda(719, ("cudaErrorLaunchFailure", "CUDA_ERROR_LAUNCH_FAILED"), ("unspecified launch failure",),
          _APP + " (a kernel that faulted, as Xid 13/31/43)", APP_FAULT, "GA828", "info", _DEBUG_JOB),
)
# fmt: on

BY_NAME = {name.lower(): e for e in CODES for name in e.names}
_TEXTS = [(text.lower(), e) for e in CODES for text in e.texts]  # a text may be two libraries' ("unknown error")
_NAMES_NVML = re.compile(r"\bNVML\b|\bnvml[A-Z]\w*|NVMLError")
_NAMES_CUDA = re.compile(r"(?i:cuda)|\bcu[A-Z][a-z]\w*")
_NAMES = {"NVML": _NAMES_NVML, "CUDA": _NAMES_CUDA}
# a code by number after an error word, on a line that names the library: "cuInit err: 802", "CUDA ERROR 802",
# "cuda runtime error (802)", "returned 802", "code=700(cudaErrorIllegalAddress)"
# ; or the code ending a "failed to ..." message ("cuda driver library failed to get device context 46": ollama's
# C shim, printf("... %d\n")), after the words of what failed, not a device's or rank's number; the message may end
# the line or run into the next record written with no newline between ("...context 46time=2024-...": a key=value
# logger's record glued on)
_END = r"(?=[ \t.]*$|[a-z_]{1,20}=)"
_NUMBER = re.compile(
    rf"\b(?:err|error|failure|failed|returned|code)\b[\s:=(]*(?P<n>\d{{1,4}})(?:\b|{_END})"
    rf"|\bfailed to (?:[a-z]{{2,20}} ){{1,6}}?(?<!\bdevice )(?<!\bgpu )(?<!\brank )(?<!\bid )(?P<m>\d{{1,4}}){_END}",
    re.IGNORECASE,
)


def alternation(kind: str, library: str = "CUDA") -> str:
    """A regex that finds a code of ``kind`` by one of its texts or names."""
    found = [e for e in CODES if e.kind == kind and e.library == library]
    return "|".join(re.escape(t) for e in found for t in (*e.texts, *e.names))


def names_library(line: str, library: str) -> bool:
    """The line names the library: NVML's word or a call of its API; CUDA's word or a ``cu*`` call."""
    return bool(_NAMES[library].search(line))


def numbers(line: str, library: str) -> list[int]:
    """The codes the line prints by number after an error word, when it names ``library`` (else none)."""
    if not any(c.isdigit() for c in line) or not names_library(line, library):
        return []
    return [int(m.group("n") or m.group("m")) for m in _NUMBER.finditer(line)]


# what the driver's own tools print for a code without naming it: nvidia-smi's message when NVML cannot reach the
# kernel driver (NVML_ERROR_DRIVER_NOT_LOADED), modprobe's when the running kernel has no nvidia module to load
# (kmod's "modprobe: FATAL: Module %s not found in directory %s"; older kmod: "Module %s not found."): either way
# the NVIDIA kernel driver is not loaded and cannot be; module-init-tools' modprobe wrote it with no prefix ("FATAL:
# Module nvidia not found."), X's NVIDIA driver says so in its own words ("(EE) NVIDIA: Failed to load the NVIDIA
# kernel module", the driver README's Common Problems)
_SAYS = (
    (re.compile(r"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"
                r"|(?:\bmodprobe: |^\s*)FATAL: Module nvidia(?:[_-](?:uvm|drm|modeset|current))? not found\b"
                r"|\bNVIDIA(?:\([^)\n]{0,12}\))?: Failed to load the NVIDIA kernel module\b"), ("NVML", 9)),
)  # fmt: skip


def lookup(line: str, library: str) -> ErrorCode | None:
    """The code of ``library`` the line prints: by name anywhere, by text or number only on a line that names the
    library, or by what the driver's tools print for it; None when it prints none of the table's."""
    for pattern, (lib, code) in _SAYS:
        if lib == library and pattern.search(line):
            return next(e for e in CODES if e.library == lib and e.code == code)
    low = line.lower()
    for name, e in BY_NAME.items():
        if e.library == library and name in low and re.search(rf"\b{re.escape(name)}\b", low):
            return e
    if not names_library(line, library):
        return None
    for text, e in _TEXTS:
        if e.library == library and text in low:
            return e
    codes = {e.code: e for e in CODES if e.library == library}
    return next((codes[n] for n in numbers(line, library) if n in codes), None)


# NVML's codes a program's log reports of one GPU (the readers' signs: lost, reset required), by number after an
# error word, in brackets ("NVML: Failed to get usage(15): GPU is lost"), or by name or text, after the word NVML
_SIGNED = [e for e in CODES if e.library == "NVML" and e.rule == "GA820"]
_SIGN_NUMBERS = "|".join(str(e.code) for e in _SIGNED)
_SIGN_WORDS = "|".join(rf"\b{re.escape(w)}\b" for e in _SIGNED for w in (*e.texts, e.names[0]))
_NVML_SIGN = re.compile(
    rf"\bNVML\b[^\n]{{0,120}}?(?:\b(?:error|return)(?: code)?\s*[:=]?\s*(?P<n>{_SIGN_NUMBERS})\b(?![.\d])"
    rf"|\((?P<b>{_SIGN_NUMBERS})\)|(?P<w>{_SIGN_WORDS}))"
)


def nvml_sign(line: str) -> ErrorCode | None:
    """NVML's code of a sign of the node (a lost GPU, a reset required) the line prints after the word NVML."""
    m = _NVML_SIGN.search(line) if "NVML" in line else None
    if m is None:
        return None
    said = m.group("n") or m.group("b")
    if said:
        return next(e for e in _SIGNED if e.code == int(said))
    w = m.group("w").lower()
    return next(e for e in _SIGNED if w in (*(t.lower() for t in e.texts), e.names[0].lower()))


_LONGEST = 2000  # a longer line is not an error message a program printed


def find(line: str) -> ErrorCode | None:
    """The table's entry a line prints, of either library (CUDA's first: a line can name both)."""
    if len(line) > _LONGEST:
        return None
    return lookup(line, "CUDA") or lookup(line, "NVML")


def entry(ev: KernelEvent) -> ErrorCode | None:
    """The table's entry an event of :func:`event` stands for (its line read again: CUDA's and NVML's 999 differ)."""
    e = find(ev.text)
    return e if e is not None and e.kind == ev.kind and e.code == ev.code else None


def groups(events: list[KernelEvent] | None, kind: str) -> list[tuple[ErrorCode, list[KernelEvent]]]:
    """The events of ``kind`` by the table's entry each stands for, in the order first seen (one finding each)."""
    by: dict[tuple[str, int], tuple[ErrorCode, list[KernelEvent]]] = {}
    for ev in events or []:
        if ev.kind == kind and (e := entry(ev)) is not None:
            by.setdefault((e.library, e.code), (e, []))[1].append(ev)
    return list(by.values())


# the calls (and a program's words for them) that set a device up for a process: the driver's initialisation and a
# context's creation (CUDA Driver API: cuInit, cuCtxCreate, cuDevicePrimaryCtxRetain; the runtime's cudaSetDevice,
# cudaInitDevice; ollama's "failed to get device context", a program's "failed to create context")
_SETUP = re.compile(
    r"\b(?:cuInit|cuCtxCreate\w*|cuDevicePrimaryCtxRetain|cudaSetDevice|cudaInitDevice)\b"
    r"|\b(?:get|create|creating|init(?:ialize)?) (?:a |the )?(?:CUDA |device |primary )*context\b"
    r"|\bnvmlInit\w*|\bFailed to initiali[sz]e NVML\b",
    re.IGNORECASE,
)


def verdict(e: ErrorCode, seen: list[KernelEvent]) -> str:
    """The most the code says of the node: the table's verdict, or its verdict for a code the program printed again
    (after its own retry) where the table gives one (for some codes, only where the device's setup returned it)."""
    if e.setup and not any(_SETUP.search(ev.text) for ev in seen):
        return e.verdict  # (met elsewhere: the code says nothing of the node)
    if e.again and attempts(seen) > 1:
        return e.again
    return e.setup or e.verdict


_ECHO = 3  # a different line this close below one printing the code is the same failure told again (an exception's
# what(), a wrapper's message), not another attempt


_DIGITS = re.compile(r"\d+")


def attempts(seen: list[KernelEvent]) -> int:
    """How many times the program met the code: each line printing it (a log's repeats counted), less the lines that
    echo the one just above them (a different text within a few lines: the same failure reported by another layer);
    the same text again is the same call failing again (a retry, the next device): the same but for its numbers (a
    log's time stamps, a process id)."""
    count, last = 0, None
    for ev in sorted(seen, key=lambda ev: ev.line or 0):
        echo = (
            last is not None
            and _DIGITS.sub("#", ev.text) != _DIGITS.sub("#", last.text)
            and 0 <= (ev.line or 0) - (last.line or 0) <= _ECHO
        )
        count += (0 if echo else 1) + ev.more
        last = ev
    return count


def evidence(e: ErrorCode, seen: list[KernelEvent]) -> dict[str, object]:
    """A finding's observed value: the code, its name and each line that printed it."""
    return {"code": e.code, "name": e.names[0], "lines": [{"line": ev.line, "text": ev.text} for ev in seen]}


def said(e: ErrorCode, seen: list[KernelEvent]) -> str:
    """The code as a finding names it, with the first line that printed it: "CUDA error 803 (name: 'text') on
    line 2 (and 1 more line(s))"."""
    more = f" (and {len(seen) - 1} more line(s))" if len(seen) > 1 else ""
    return f"{e.library} error {e.code} ({e.names[0]}: '{e.texts[0]}') on line {seen[0].line}{more}"
