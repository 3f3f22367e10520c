"""One table of the documented error codes a program (not the kernel) prints when NVML or CUDA fails, and what each
means for the node; the readers that judge such a line look the code up here, so one table decides.

Sources: NVML's ``nvmlReturn_t`` (nvml.h; NVML API Reference, "Device Queries / Error reporting": each code's
value, its ``NVML_ERROR_*`` name and ``nvmlErrorString``'s text) and CUDA's ``cudaError_t`` / ``CUresult``
(cuda_runtime_api.h, driver_types.h, cuda.h; CUDA Runtime API, "Data types used by CUDA Runtime": each value, its
``cudaErrorXxx`` and ``CUDA_ERROR_XXX`` names and ``cudaGetErrorString``'s text).

A code is read only on a line that names its library: NVML by the word ``NVML`` (or one of its code names), CUDA by
``cuda``/``CUDA`` or a ``cu*`` call; a bare number ("exit code 15", "error 802" in an HTTP log) is no code. An
application's own error (out of memory, an illegal address, a launch failure) is the application's, never a fault
of the node: at most a warning, as the Xid catalog treats Xid 13, 31 and 43 (GA801).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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


def _nvml(code: int, name: str, text: str, meaning: str, kind: str | None, rule: str, verdict: str) -> ErrorCode:
    """An NVML return code: go-nvml's and nvml.h's names (ERROR_X, NVML_ERROR_X), nvmlErrorString's text."""
    return ErrorCode("NVML", code, (f"NVML_ERROR_{name}", f"ERROR_{name}"), (text,), meaning, kind, rule, verdict,
                     NVML_H)  # fmt: skip


def _cuda(code: int, names: tuple[str, ...], texts: tuple[str, ...], meaning: str, kind: str | None, rule: str,
          verdict: str) -> ErrorCode:  # fmt: skip
    return ErrorCode("CUDA", code, names, texts, meaning, kind, rule, verdict, CUDA_H)


_APP = "the application's own error, not a fault of the node"
_GA507 = ("GA507", "warn")  # the driver's install or version: judged with the driver's stack, never a GPU fault
# fmt: off
CODES: tuple[ErrorCode, ...] = (
    # NVML's return codes with a meaning for the node (nvml.h's values; nvmlErrorString's texts)
    _nvml(9, "DRIVER_NOT_LOADED", "Driver Not Loaded", "the NVIDIA kernel driver is not loaded", None, *_GA507),
    _nvml(12, "LIBRARY_NOT_FOUND", "NVML Shared Library Not Found",
          "the NVML library (libnvidia-ml, the driver's user-space part) is not where the program looks", None,
          *_GA507),
    _nvml(15, "GPU_IS_LOST", "GPU is lost", "the GPU has fallen off the bus or is otherwise inaccessible",
          "gpu-is-lost", "GA820", "fail"),
    _nvml(16, "RESET_REQUIRED", "GPU requires restart", "the GPU needs a reset before it can be used again",
          "gpu-reset-required", "GA820", "fail"),
    ErrorCode("NVML", 18, ("NVML_ERROR_LIB_RM_VERSION_MISMATCH", "ERROR_LIB_RM_VERSION_MISMATCH"),
              ("RM has detected an NVML/RM version mismatch", "Driver/library version mismatch"),
              "the NVML library and the loaded kernel driver (RM) are of different versions (a driver upgraded "
              "without a reboot)", None, *_GA507, NVML_H),
    _nvml(999, "UNKNOWN", "Unknown Error", "an internal error NVML does not name: says nothing of the GPU", None,
          "GA828", "info"),
    # CUDA's errors with a meaning for the node (cudaError_t's values; cudaGetErrorString's texts)
    _cuda(214, ("cudaErrorECCUncorrectable", "CUDA_ERROR_ECC_UNCORRECTABLE"), ("uncorrectable ECC error encountered",),
          "an uncorrectable ECC error was detected during execution: the GPU's memory failed under the job",
          "cuda-ecc-uncorrectable", "GA302", "fail"),
    _cuda(220, ("cudaErrorNvlinkUncorrectable", "CUDA_ERROR_NVLINK_UNCORRECTABLE"), ("uncorrectable NVLink error",),
          "an uncorrectable NVLink error was detected during the execution (the kernel logs it as Xid 74)",
          "cuda-nvlink-uncorrectable", "GA820", "fail"),
    _cuda(802, ("cudaErrorSystemNotReady", "CUDA_ERROR_SYSTEM_NOT_READY"),
          ("system not yet initialized", "system not yet initialised"),
          "the system is not yet ready to start any CUDA work (its driver daemons, on an NVSwitch system the fabric "
          "manager, not running)", "cuda-not-ready", "GA809", "fail"),
    _cuda(100, ("cudaErrorNoDevice", "CUDA_ERROR_NO_DEVICE"), ("no CUDA-capable device is detected",),
          "no CUDA-capable device is visible to the program (none present, the driver not loaded, or hidden by "
          "CUDA_VISIBLE_DEVICES)", None, "GA828", "warn"),
    _cuda(46, ("cudaErrorDevicesUnavailable",),
          ("CUDA-capable device(s) is/are busy or unavailable", "all CUDA-capable devices are busy or unavailable"),
          "the devices are busy or unavailable (exclusive-process mode held by another process, or a GPU that needs "
          "a reset)", None, "GA828", "warn"),
    _cuda(35, ("cudaErrorInsufficientDriver",), ("CUDA driver version is insufficient for CUDA runtime version",),
          "the installed driver is older than the CUDA runtime needs", None, *_GA507),
    _cuda(803, ("cudaErrorSystemDriverMismatch", "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"),
          ("system has unsupported display driver / cuda driver combination",),
          "the display driver and the CUDA driver (libcuda) are of different versions", None, *_GA507),
    _cuda(804, ("cudaErrorCompatNotSupportedOnDevice", "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"),
          ("forward compatibility was attempted on non supported HW",),
          "the CUDA forward-compatibility package was used on a GPU that does not support it (a driver older than "
          "the container's CUDA)", None, *_GA507),
    _cuda(999, ("cudaErrorUnknown", "CUDA_ERROR_UNKNOWN"), ("unknown error",),
          "an unknown internal error: says nothing of the GPU by itself", None, "GA828", "info"),
    # the application's own errors: never a hardware fault (as the Xid catalog's 13, 31, 43)
    _cuda(2, ("cudaErrorMemoryAllocation", "CUDA_ERROR_OUT_OF_MEMORY"), ("out of memory",),
          _APP + " (out of memory)", None, "GA828", "info"),
    _cuda(700, ("cudaErrorIllegalAddress", "CUDA_ERROR_ILLEGAL_ADDRESS"), ("an illegal memory access was encountered",),
          _APP + " (an illegal memory access, as Xid 13/31)", None, "GA828", "warn"),
    _cuda(719, ("cudaErrorLaunchFailure", "CUDA_ERROR_LAUNCH_FAILED"), ("unspecified launch failure",),
          _APP + " (a kernel that faulted, as Xid 13/31/43)", None, "GA828", "warn"),
)
# fmt: on

BY_NAME = {name.lower(): e for e in CODES for name in e.names}
_TEXTS = [(text.lower(), e) for e in CODES for text in e.texts]  # a text may be two libraries' ("unknown error")
_NAMES_NVML = re.compile(r"\bNVML\b|\bnvml[A-Z]\w*|NVMLError")
_NAMES_CUDA = re.compile(r"(?i:cuda)|\bcu[A-Z][a-z]\w*")
_NAMES = {"NVML": _NAMES_NVML, "CUDA": _NAMES_CUDA}
# a code by number after an error word, on a line that names the library: "cuInit err: 802", "CUDA ERROR 802",
# "cuda runtime error (802)", "returned 802", "code=700(cudaErrorIllegalAddress)"
_NUMBER = re.compile(r"\b(?:err|error|failure|failed|returned|code)\b[\s:=(]*(?P<n>\d{1,4})\b", re.IGNORECASE)


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
    return [int(m.group("n")) for m in _NUMBER.finditer(line)]


def lookup(line: str, library: str) -> ErrorCode | None:
    """The code of ``library`` the line prints: by name anywhere, by text or number only on a line that names the
    library; None when it prints none of the table's."""
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
_SIGNED = [e for e in CODES if e.library == "NVML" and e.kind is not None]
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
