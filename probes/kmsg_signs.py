"""Kernel-log lines that say a GPU is lost or wedged without an Xid, PCIe AER errors, and RDMA link flaps.

Each becomes a :class:`KernelEvent` whose ``kind`` names the sign (code 0, the line's message as ``text``):

- ``gpu-init-failed``: ``NVRM: GPU 0000:0a:00.0: RmInitAdapter failed! (0x24:0x72:1568)`` (the driver could
  not bring the GPU up: it is on the bus, gone for CUDA);
- ``gpu-is-lost``: ``NV_ERR_GPU_IS_LOST`` / ``GPU lost from the bus`` in an NVRM line (a call failed because the
  GPU is gone from the bus, as Xid 79; dropped beside a line naming the lost GPU);
- ``gpu-reset-required``: ``NV_ERR_RESET_REQUIRED`` or "reset required" in an NVRM line (not an Xid 154 line,
  which GA801 reads);
- ``gsp-timeout``: ``_kgspIsHeartbeatTimedOut: Heartbeat timed out``, ``GSP RM heartbeat timed out``,
  ``rpcSendMessage failed``, ``Timeout waiting for RPC from GSP`` (the GPU's firmware stopped answering), or a row
  of the RPC history the driver dumps with such a timeout (``NVRM:   -1  4124 GSP_LOCKDOWN_NOTICE 0x... 0x...``);
- ``aer-fatal``, ``aer-nonfatal``, ``aer-corrected``: ``PCIe Bus Error: severity=...`` lines, on the device
  that logged them (the GPU, ``nvidia 0000:03:00.0``, or a port, ``pcieport 0000:00:03.0``);
  ``aer-unrecovered``: ``nvidia 0000:03:00.0: AER: can't recover`` (the GPU's driver has no recovery);
- ``gsp-boot-failed``: ``kgspInitRm_IMPL: cannot bootstrap``, ``RmInitAdapter: Cannot initialize GSP firmware
  RM``, ``_kgspBootGspRm: unexpected WPR2 already up, cannot proceed with booting GSP`` (the GPU's firmware never
  started: the GPU is unusable; usually followed by the ``RmInitAdapter failed!`` line that names it);
- ``nvlink-discovery-failed``: ``knvlinkDiscoverPostRxDetLinks_GH100: Getting peer0's postRxDetLinkMask failed!``,
  ``knvlinkUpdatePostRxDetectLinkMask_IMPL: Failed to update Rx Detect Link mask!`` (NVLink discovery with a peer
  failed: the driver retries it and can wedge, as gpud's ``nvlink_driver_wedge`` check reads it);
- ``driver-hung``: ``INFO: task nvc:[driver]:5403 blocked for more than 120 seconds.`` whose call trace (the lines
  below it) runs in an NVIDIA module (``uvm_gpu_retain_by_uuid+0x1e/0x40 [nvidia_uvm]``), or a task of the driver's
  own tools (``nvidia-smi``, ``nvidia-persistenced``, ``nvc:``) blocked: the driver is wedged (the kernel's
  hung-task detector, kernel/hung_task.c), or a soft lockup of the same (``watchdog: BUG: soft lockup - CPU#12
  stuck for 22s! [nvidia-smi:4242]``, kernel/watchdog.c);
- ``gpu-probe-failed``: ``nvidia: probe of 0000:01:00.0 failed with error -1`` (newer kernels: ``nvidia
  0000:01:00.0: probe with driver nvidia failed with error -1``), ``NVRM: The NVIDIA probe routine
  failed for 1 device(s).`` (the driver did not take a GPU it found: it is unusable until the cause, named in the
  NVRM lines above, is fixed);
- ``gpu-not-probed``: ``NVRM: The NVIDIA probe routine was not called for 3 device(s).`` (nv.c: the kernel bound
  the GPUs to another driver first, nouveau, a framebuffer driver or vfio-pci: the NVIDIA driver has none of them);
- ``gpu-bar-invalid``: ``NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:`` then ``NVRM: BAR1
  is 0M @ 0x0 (PCI:0000:08:00.0)`` (the firmware gave the GPU no address window: the driver cannot map it, the
  probe fails; older drivers print the bus as ``PCI:0001:00.0``, bus 01 device 00 function 0);
- ``gpu-bar-unassigned``: ``pci 0000:01:00.0: BAR 1 [mem size 0x10000000 64bit pref]: can't assign; no space`` (older
  kernels: ``pci 0000:06:00.0: BAR 1: no space for [mem size 0x10000000 64bit pref]``, drivers/pci/setup-res.c) of a
  device the same log enumerated as an NVIDIA display controller (``pci 0000:01:00.0: [10de:2204] type 00 class
  0x030000``): the kernel found no room for the GPU's memory window, so the driver cannot map it (the same class as
  ``gpu-bar-invalid``); a bridge's windows (BAR 7-15), a ROM, an I/O BAR and an SR-IOV VF BAR are not this sign;
- ``gpu-unsupported``: ``NVRM: The NVIDIA GPU 0000:af:00.0 (PCI ID: 10de:1db5)`` followed by ``installed in this
  system is not supported by`` (the loaded driver branch or module flavour does not drive this GPU: the open
  module on a GPU without GSP, a legacy GPU on a new branch) or ``requires use of the NVIDIA open kernel modules``;
- ``hca-fatal``: ``mlx5_core 0000:61:00.0: poll_health:...: device's health compromised`` or
  ``mlx5_enter_error_state`` (the adapter's firmware stopped: every RDMA connection on it is gone);
- ``hca-cmd-timeout``: ``mlx5_core 0000:61:00.0: wait_func_handle_exec_timeout:...: cmd[22]: CREATE_DCT(0x710) No
  done completion`` / ``... timeout. Will cause a leak of a command resource`` (the adapter's firmware did not
  answer driver commands);
- ``hca-load-failed``: ``mlx5_core 0000:03:00.0: mlx5_load_one failed with error code -22`` (the adapter never
  loaded: no RDMA port of it exists); ``hca-slot-power``: ``mlx5_core 0000:5c:00.0: mlx5_pcie_event:...: Detected
  insufficient power on the PCIe slot (27W)`` (the adapter may throttle or drop);
- ``gpu-unreadable``: ``nouveau 0000:01:00.0: unknown chipset (ffffffff)`` (every register read returns all ones:
  the GPU is off the bus, unpowered or behind a broken link);
- ``driver-oops``: ``BUG: unable to handle kernel NULL pointer dereference at 0000000000000340`` (newer kernels:
  ``BUG: kernel NULL pointer dereference, address: ...``, ``BUG: unable to handle page fault for address: ...``;
  or ``general protection fault``) whose report (the lines below it: ``IP: [<ffffffffc075549f>]
  _nv011745rm+0x1f/0x170``, ``RIP: 0010:nvidia_vma_access+0x1b/0x350 [nvidia]``, a call trace) names an NVIDIA
  module or the driver's own symbols, or, cut before any code address, whose task is the driver's own (``Comm:
  nvidia-smi``): the driver crashed (the kernel's oops, arch/x86/mm/fault.c), the GPUs are unusable until a reboot;
- ``driver-install``: the driver's own install problem (INSTALL_SIGNS): ``nvidia 0000:01:00.0: Direct firmware load
  for nvidia/515.43.04/gsp.bin failed with error -2``, ``NVRM: API mismatch: the client has the version ...``,
  ``nvidia: version magic ... should be ...``, ``nvidia: Unknown symbol ...`` (GA820 reads a GPU failing after it as
  its consequence);
- ``gpu-d3cold``: ``pci 0000:01:00.0: Unable to change power state from D3cold to D0, device inaccessible`` of a
  device the line's driver (nvidia) or the log ties to NVIDIA (kmsg_d3cold): the GPU did not wake;
  ``passthrough-d3cold`` the same of a vfio-pci device the log does not tie to NVIDIA (its vendor not shown);
- ``hca-driver-panic``: ``Kernel panic - not syncing: Fatal exception`` after an oops in mlx5_core (``RIP: 0010:
  esw_port_metadata_get+0x19/0x30 [mlx5_core]``; kmsg_panic): the adapter's driver crashed the node;
- ``peermem-load-failed``: ``nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -22)``,
  ``modprobe: ERROR: could not insert 'nv_peer_mem': Unknown symbol in module`` (the GPUDirect RDMA peer-memory
  module built against another OFED or driver: it does not load; GA808 reads it, not as the driver's install);
- ``link-down``, ``link-up``: ``mlx5_core 0000:17:00.0 ibp23s0: Link down`` (an RDMA port that flaps).

The text is searched with str.find for a few anchors (C speed, one pass each: ``ANCHORS``); only the lines
holding one are cut out, and those holding a sign's keyword (``KEYWORDS``) read.
Sources of the forms: the NVIDIA driver's messages as posted in NVIDIA/gpu-operator#1146 (RmInitAdapter),
ublue-os/bazzite#4449 (GSP heartbeat), Linux drivers/pci/pcie/aer.c (``PCIe Bus Error: severity=%s``), the
mlx5_core driver (``Link down``/``Link up``, drivers/net/ethernet/mellanox/mlx5/core/en_main.c).
"""

from __future__ import annotations

import re

from gpuadvisor.facts import KernelEvent

from .busid import with_domain
from .kmsg_d3cold import ANCHOR as D3COLD
from .kmsg_d3cold import d3cold_gpu, enumerated_nvidia_display
from .kmsg_oops import OOPS, OOPS_LINES, oops_at_driver
from .kmsg_panic import ANCHOR as PANIC
from .kmsg_panic import mlx5_panic

# A line is read when it holds one of these (what the reader did before ``ANCHORS``: a str.find pass per keyword).
KEYWORDS = (
    "RmInitAdapter failed",
    "NV_ERR_RESET_REQUIRED",
    "eset required",
    "eset Required",
    "eartbeat timed out",
    "rpcSendMessage failed",
    "Timeout waiting for RPC from GSP",
    "PCIe Bus Error: severity=",
    "PCIe Bus Error: serverity=",  # the same line retyped by hand (a typist's common slip)
    "display engine channel state",
    "AER: can't recover",
    ": Link down",
    ": Link up",
    ": Lost carrier",
    ": lost carrier",
    ": Gained carrier",
    "cannot bootstrap",
    "Cannot initialize GSP firmware RM",
    "cannot proceed with booting GSP",
    "postRxDetLinkMask failed",
    "Failed to update Rx Detect Link mask",
    "blocked for more than",
    "soft lockup - CPU#",
    "NV_ERR_GPU_IS_LOST",
    "GPU lost from the bus",
    "probe routine failed for",
    "probe routine was not called for",
    "failed with error",
    "NVRM: BAR",
    "no space",  # a BAR the kernel could not assign: "can't assign; no space", older "no space for [mem"
    "(PCI ID: ",
    "No done completion",
    "leak of a command resource",
    "health compromised",
    "mlx5_enter_error_state",
    "mlx5_load_one failed",
    "insufficient power on the PCIe slot",
    "failed to wait for GFW",
    "unknown chipset (ffffffff)",
    "unable to handle kernel",
    "unable to handle page fault",  # newer kernels' (4.20+) wording of an oops on a bad address
    "kernel NULL pointer dereference",
    "general protection fault",
    *("IP: ", "EIP is at ", "pc : ", "PC is at "),  # an oops report's code address (RIP, EIP, arm64's pc: kmsg_oops)
    # the driver's own install problems (INSTALL_SIGNS): a cause of the RmInitAdapter failure after them
    "Direct firmware load for nvidia/",
    "/lib/firmware/nvidia/",
    "No firmware image found",
    "failed to load GSP firmware",
    "API mismatch: the client",
    ": version magic",
    ": Unknown symbol",
    D3COLD,  # a GPU that did not come back from D3cold (kmsg_d3cold)
    PANIC,  # a kernel panic in the adapter's driver (kmsg_panic)
    "gsp ctor failed: -",
    "NVRM:    ",  # a row of the RPC history under a GSP timeout (_RPC_ROW): indented under its header
    "NVRM:\t",  # (its indent copied as a tab)
)
# What every line giving an event holds (the condition of a branch of classify, hung_in_driver, oops_in_driver or
# unsupported_gpu; a new sign needs one here): each searched with str.find, one C-speed pass, fewer than KEYWORDS'
# (a regular expression with alternatives is ten times slower on a big log).
ANCHORS = (
    "NVRM",  # the driver's: lost, reset required, GSP, NVLink discovery, not probed, BAR, unsupported
    "failed",  # RmInitAdapter, the probe's, mlx5_load_one
    "blocked for more than",
    "general protection fault",
    "health compromised",
    "mlx5_enter_error_state",
    "No done completion",
    "leak of a command resource",
    "insufficient power on the PCIe slot",
    "unknown chipset (ffffffff)",
    "display engine channel state",  # nvidia-modeset's query of a display channel, failed with the RM's status
    ": Link ",
    "carrier",
    "no space",  # a BAR the kernel could not assign
    "firmware",  # the driver's install problems: a firmware file not loaded, "No firmware image found"
    ": version magic",
    ": Unknown symbol",
    D3COLD,
    PANIC,
    *("IP: ", "EIP is at ", "pc : ", "PC is at "),  # an oops report's code address (kmsg_oops)
)
# Anchors found by a character rare in kernel logs (a memchr pass, five times faster than a word's); where one is
# common in a log (more than RARE_LINES lines, and one per RARE_PER bytes) its words are searched from there on.
RARE = {
    "#": ("soft lockup - CPU#",),
    "B": ("BUG: ", "PCIe Bus Error: severity=", "PCIe Bus Error: serverity="),
    "'": ("AER: can't recover",),
}
RARE_LINES, RARE_PER = 1000, 2000
SIGN_RE = re.compile(
    r"RmInitAdapter failed|NV_ERR_RESET_REQUIRED|[Rr]eset [Rr]equired|[Hh]eartbeat timed out"
    r"|rpcSendMessage failed|Timeout waiting for RPC from GSP|PCIe Bus Error: ser?verity=|AER: can't recover"
    r"|: Link (?:down|up)\b|\bib\w*: (?:[Ll]ost|Gained) carrier|blocked for more than \d+ seconds"
    r"|soft lockup - CPU#|NV_ERR_GPU_IS_LOST|GPU lost from the bus|probe routine (?:failed|was not called) for"
    r"|\b(?:nvidia|nouveau)(?::| \S+:) probe (?:of|with driver) \S+ failed with error|gsp ctor failed: -"
    r"|NVRM: BAR\d+ is |NVRM: The NVIDIA GPU \S+ \(PCI ID: |No done completion|leak of a command resource"
    r"|health compromised|mlx5_enter_error_state|mlx5_load_one failed|insufficient power on the PCIe slot"
    r"|failed to wait for GFW|unknown chipset \(ffffffff\)|BUG: unable to handle kernel|BUG: kernel NULL pointer"
    r"|BUG: unable to handle page fault|general protection fault|can't assign; no space|: no space for \[mem"
    r"|Failed to query display engine channel state: 0x"
    r"|(?:\b[RE]?IP: |EIP is at |\bpc : |PC is at )[^\n]*\+0x[0-9a-f]+/0x[0-9a-f]+ \[nvidia"
)
# FreeBSD's kernel lines of the Mellanox drivers (device_printf: "<driver><unit>: "; mlx5's own levels after it,
# sys/dev/mlx5/driver.h: "mlx5_core0: INFO: mlx5_port_module_event:710:(pid 11): Module 0, status: plugged and
# enabled"; the mlx5en interface "mce0: ..."): no PCI address, no time
BSD_MLX = re.compile(r"^\s*(?:mlx[45]_core|mlx[45]_ib|mce)\d{1,3}: \S")
# a bus id retyped by hand with a colon for the function's dot ("0000:00:1c:0"): unambiguous with its domain
TYPED_BUS = r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}:[0-7]"
_DEVICE = re.compile(rf"(\S+) ((?:[0-9a-fA-F]{{4,8}}:)?[0-9a-fA-F]{{2}}:[0-9a-fA-F]{{2}}\.[0-7]|{TYPED_BUS})(?::|\s)")
_NVRM_GPU = re.compile(r"NVRM: GPU (?:at )?(?:PCI:)?([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])")
_NVRM_INDEX = re.compile(r"NVRM: (GPU\d+) ")
_SEVERITY = re.compile(
    r"ser?verity=(Corrected|Correctable|Uncorrected \(Non-Fatal\)|Uncorrectable \(Non-Fatal\)"
    r"|Uncorrected \(Fatal\)|Uncorrectable \(Fatal\))"
)
# nvidia-modeset (nvkms-evo1.c GetChannelState): "Failed to query display engine channel state: 0x%08x:%d:%d:0x%08x",
# the channel's class, instance, subdevice and the resource manager's status (nvstatuscodes.h): 0x0000000f
# NV_ERR_GPU_IS_LOST, 0x00000062 NV_ERR_RESET_REQUIRED: the GPU stopped answering. Any other status is the display's
# own trouble, left to GA828.
_MODESET_STATE = re.compile(
    r"Failed to query display engine channel state: 0x[0-9a-fA-F]{8}:\d+:\d+:0x(0000000[fF]|00000062)\b"
)
_MODESET_STATUS = {
    "0000000f": ("gpu-is-lost", "NV_ERR_GPU_IS_LOST"),
    "00000062": ("gpu-reset-required", "NV_ERR_RESET_REQUIRED"),
}
GPU_SIGNS = ("gpu-init-failed", "gpu-reset-required", "gsp-timeout", "gsp-boot-failed", "nvlink-discovery-failed")
_GSP_BOOT = re.compile(
    r"kgspInitRm\w*: cannot bootstrap|Cannot initialize GSP firmware RM|cannot proceed with booting GSP"
    r"|failed to wait for GFW"  # kgspWaitForGfwBootOk: the GPU's boot firmware never finished
)
# a row of the RPC or event history the driver dumps under a GSP RPC timeout (kernel_gsp.c, _kgspLogRpcHistory: "NVRM:
#     -1    4124 GSP_LOCKDOWN_NOTICE   0x0000000000000000 0x0000000000000000 0x00063db82e386876 ..."): entry, function
# number and name, then its data and timestamps: the tail of a report that the GPU's GSP stopped answering
# (newer drivers print a sequence number after the name: "GSP_RM_CONTROL   4124 0x...")
_RPC_ROW = re.compile(
    r"NVRM:\s+-?\d{1,3}\s+\d{1,5}\s+[A-Z][A-Z0-9_]{2,60}\s+(?:\d{1,10}\s+)?0x[0-9a-fA-F]{16}\s+0x[0-9a-fA-F]{16}\b"
)
_NVLINK_DISCOVERY = re.compile(r"postRxDetLinkMask failed|Failed to update Rx Detect Link mask")
# The kernel's hung-task report (kernel/hung_task.c): "INFO: task NAME:PID blocked for more than N seconds.", the
# name possibly holding colons ("nvc:[driver]"); then its call trace, a frame per line: "func+0x1e/0x40 [module]"
_HUNG = re.compile(r"\btask (\S.*?):(\d+) blocked for more than (\d+) seconds")
# a soft lockup (kernel/watchdog.c): "BUG: soft lockup - CPU#12 stuck for 22s! [nvidia-smi:4242]"
_LOCKUP = re.compile(r"soft lockup - CPU#(\d+) stuck for (\d+)s! \[(.+?):(\d+)\]")
# the device core's (drivers/base/dd.c) "nvidia: probe of BUS failed with error -1" (older kernels) or "nvidia BUS:
# probe with driver nvidia failed with error -1" (newer), and the driver's own count of them
_PROBE = re.compile(
    r"\b(?:nvidia|nouveau): probe of (?P<old>\S+) failed with error"
    r"|\b(?:nvidia|nouveau) (?P<new>\S+): probe with driver (?:nvidia|nouveau) failed with error"
    r"|The NVIDIA probe routine failed for"
)
_NV_FRAME = re.compile(r"\+0x[0-9a-f]+/0x[0-9a-f]+ \[(nvidia\w*)\]")
# the driver's tools and threads (nvidia-smi, nvc:[driver] ...) and NVIDIA's daemons that query it: DCGM's exporter
# and host engine, the fabric manager (a task's name is cut at 15 characters: "nv-fabricmanage")
_NV_TASK = re.compile(r"nvidia|nvc:|nv_queue|dcgm|nv-hostengine|nv-fabricmanage")
# the kernel's memory-copy helpers (arch/x86/lib): an oops there is its caller's, which only the call trace names
_COPY_HELPER = re.compile(
    r"RIP: \w{4}:((?:__)?(?:memcpy|memmove|memset|copy_user|copy_to_user|copy_from_user)\w*\+0x[0-9a-f]+/0x[0-9a-f]+)"
)
# the driver's closed core's symbols ("_nv011745rm") carry no "[nvidia]" when the module name is cut off
_NV_SYMBOL = re.compile(r"\b_nv\d{4,}rm\+0x|\+0x[0-9a-f]+/0x[0-9a-f]+ \[nvidia")
# the oops report's task line ("CPU: 5 PID: 9577 Comm: nvidia-smi Tainted: P O 5.19.17-Unraid #2") and a code
# address (its RIP: "RIP: 0010:exit_thread+0x12/0xc0"): with none shown, the task it ran for is all the report tells
_COMM = re.compile(r"\bComm: (\S+)")
_FRAME = re.compile(r"\+0x[0-9a-f]+/0x[0-9a-f]+\b")
HUNG_TRACE_LINES = 80  # a hung task's report and trace: the trace ends before (a kernel prints some 30 frames)
# "NVRM: BAR1 is 0M @ 0x0 (PCI:0000:08:00.0)": the region the firmware assigned; old drivers: "(PCI:0001:00.0)"
_BAR_INVALID = re.compile(r"NVRM: (BAR\d+) is (\d+[KMGT]?) @ (0x[0-9a-fA-F]+) \(PCI:([0-9a-fA-F:.]+)\)")
# a device's own memory BAR (0-5) the kernel found no room for: "BAR 1 [mem size 0x10000000 64bit pref]: can't assign;
# no space", older "BAR 1: no space for [mem size 0x10000000 64bit pref]" (not "VF BAR", a bridge's 7-15 or "[io")
_BAR_NO_SPACE = re.compile(
    r"(?<!VF )\bBAR ([0-5])(?: (\[mem [^\]]*\]): can't assign; no space|: no space for (\[mem [^\]]*\]))"
)
_UNSUPPORTED = re.compile(
    r"NVRM: The NVIDIA GPU ([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) \(PCI ID: (\w+:\w+)\)"
)
_UNSUPPORTED_SAYS = re.compile(r"not supported\s+by|requires use of\s+the\s+NVIDIA\s+open")
# The driver's own install problems, a row each: (pattern, what it says). Each is a cause of the GPU's failure to
# initialise after it (GA820 reads the RmInitAdapter failure as its consequence, not as hardware):
# - the GSP firmware file of this driver version missing: the kernel's firmware loader (drivers/base/firmware_loader:
#   "Direct firmware load for %s failed with error %d"; "loading %s failed with error %d"), the driver's own
#   "RmFetchGspRmImages: No firmware image found" and "failed to load GSP firmware";
# - NVRM's API mismatch (nv.c: user-space libraries of another version than the loaded module, GA507 too);
# - a module built for another kernel (kernel/module: "nvidia: version magic '...' should be '...'", "nvidia:
#   Unknown symbol X (err -2)"). ("module verification failed: signature and/or required key missing" only taints
#   the kernel: the module loads, so it is no cause.)
# the driver's own modules (not nvidia_peermem, nvidia_fs or nvidia-drm's siblings of other packages)
_DRIVER_MODULE = r"nvidia(?:[_-](?:uvm|modeset|drm))?"
# The GPUDirect RDMA peer-memory module (nvidia_peermem, shipped with the driver; the older nv_peer_mem of
# Mellanox/nv_peer_memory) failing to load: kernel/module "nvidia_peermem: Unknown symbol ib_register_peer_memory_client
# (err -22)" (after "disagrees about version of symbol ...": built against another ib_core, inbox vs MLNX_OFED) or
# "nv_peer_mem: Unknown symbol nvidia_p2p_get_pages" (against another NVIDIA driver), and modprobe's "could not insert
# 'nv_peer_mem': Unknown symbol in module": the module is not loaded, GPUDirect RDMA through it is off (GA808)
_PEERMEM_FAILED = re.compile(
    r"\b(nvidia_peermem|nv_peer_mem): (?:Unknown symbol (\S+)|version magic)"
    r"|could not insert '(nvidia_peermem|nv_peer_mem)': Unknown symbol"
)
INSTALL_SIGNS = (
    (
        re.compile(r"(?:Direct firmware load for |loading /lib/firmware/)nvidia/\S*?gsp\w*\.bin failed with error"),
        "the driver's GSP firmware file could not be loaded",
    ),
    (re.compile(r"No firmware image found|failed to load GSP firmware"), "the driver found no GSP firmware image"),
    (re.compile(r"API mismatch: the client"), "NVRM API mismatch: user-space driver and kernel module differ"),
    (
        re.compile(rf"\b{_DRIVER_MODULE}: version magic"),
        "the NVIDIA module was built for another kernel (version magic)",
    ),
    (
        re.compile(rf"\b{_DRIVER_MODULE}: Unknown symbol"),
        "the NVIDIA module was built for another kernel (unknown symbol)",
    ),
    # nouveau (drivers/gpu/drm/nouveau/nvkm/subdev/gsp) with no GSP firmware for a GPU that needs it (Ada and newer):
    # "nouveau 0000:01:00.0: gsp ctor failed: -2" (ENOENT: the firmware file is missing; -22 where GSP is disabled
    # by nouveau.config=NvGspRm=0), then "probe with driver nouveau failed": the GPU is not driven
    (
        re.compile(r"\bnouveau \S+: gsp ctor failed: -(?:2|22)\b"),
        "nouveau found no GSP firmware for the GPU (install linux-firmware's nvidia/<chip>/gsp files, or the NVIDIA "
        "driver)",
    ),
)
_HCA_TIMEOUT = ("No done completion", "leak of a command resource")
HCA_SIGNS = ("hca-fatal", "hca-cmd-timeout", "hca-load-failed", "hca-slot-power")
AER_SIGNS = ("aer-fatal", "aer-nonfatal", "aer-unrecovered", "aer-corrected")
LINK_SIGNS = ("link-down", "link-up")


def _bus(text: str) -> str:
    b = text.lower()
    if b.count(":") == 3:  # retyped "0000:00:1c:0": the function after a colon
        b = b[: b.rfind(":")] + "." + b[b.rfind(":") + 1 :]
    if re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{2}\.[0-7]", b):  # old NVRM's "PCI:0001:00.0": bus 01, device 00
        return f"0000:{b[2:]}"
    return with_domain(b) if b.count(":") == 2 else "0000:" + b  # a domain above 0xffff whole (probes/busid.py)


def install_sign(line: str) -> tuple[str, str | None, str] | None:
    """A row of INSTALL_SIGNS on the line: ("driver-install", the device's bus id if logged, what it says)."""
    for pattern, says in INSTALL_SIGNS:
        if (m := pattern.search(line)) is None:
            continue
        dev = _DEVICE.search(line, 0, m.start())
        nvrm = line.find("NVRM:", 0, m.start())
        at = dev.start() if dev else nvrm + len("NVRM:") if nvrm >= 0 else m.start()
        return "driver-install", _bus(dev.group(2)) if dev else None, f"{says}: {line[at:].strip()}"
    return None


def classify(line: str) -> tuple[str, str | None, str] | None:
    """(kind, bus id, message) of one line holding a sign, or None (an Xid line, or not a sign after all)."""
    if "Xid" not in line and (m := _PEERMEM_FAILED.search(line)):
        return "peermem-load-failed", None, line[m.start() :].strip()
    if modeset := _MODESET_STATE.search(line):  # the display engine's query failed: the GPU is lost or needs a reset
        kind, status = _MODESET_STATUS[modeset.group(1).lower()]
        at = line.find("nvidia-modeset")
        return kind, None, f"{line[max(at, 0) :].strip()} ({status}: the GPU no longer answers the driver)"
    return (install_sign(line) if "Xid" not in line else None) or sign_of(line)


def sign_of(line: str) -> tuple[str, str | None, str] | None:
    """classify's reading of a line that is no install problem."""
    if "Xid" in line:
        return None  # Xid lines (154's "GPU Reset Required" too) are GA801's
    nvrm = line.find("NVRM:")
    bare = line.find("NVRM ")  # older drivers' and some distributions' form: "NVRM kgspInitRm_IMPL: ..."
    if "RmInitAdapter failed" in line:
        kind = "gpu-init-failed"
    elif max(nvrm, bare) >= 0 and ("NV_ERR_GPU_IS_LOST" in line or "GPU lost from the bus" in line):
        kind, nvrm = "gpu-is-lost", nvrm if nvrm >= 0 else bare
    elif nvrm >= 0 and ("NV_ERR_RESET_REQUIRED" in line or re.search(r"[Rr]eset [Rr]equired", line)):
        kind = "gpu-reset-required"
    elif nvrm >= 0 and (
        re.search(r"[Hh]eartbeat timed out|rpcSendMessage failed|Timeout waiting for RPC", line)
        or _RPC_ROW.search(line)
    ):
        kind = "gsp-timeout"
    elif max(nvrm, bare) >= 0 and _GSP_BOOT.search(line):
        kind, nvrm = "gsp-boot-failed", nvrm if nvrm >= 0 else bare
    elif max(nvrm, bare) >= 0 and _NVLINK_DISCOVERY.search(line):
        kind, nvrm = "nvlink-discovery-failed", nvrm if nvrm >= 0 else bare
    elif probe := _PROBE.search(line):
        if bus := probe.group("old") or probe.group("new"):
            return "gpu-probe-failed", _bus(bus), line[probe.start() :].strip()
        kind, nvrm = "gpu-probe-failed", nvrm if nvrm >= 0 else bare
    elif nvrm >= 0 and "probe routine was not called for" in line:  # another driver took the GPUs first
        kind = "gpu-not-probed"
    elif bar := _BAR_INVALID.search(line):
        name, size, at, bus = bar.groups()
        what = f"{name} is {size} @ {at}: the PCI I/O region the firmware assigned to the GPU is invalid"
        return "gpu-bar-invalid", _bus(bus), what
    elif "mlx5" in line and ("health compromised" in line or "mlx5_enter_error_state" in line):
        kind = "hca-fatal"
    elif "mlx5" in line and any(w in line for w in _HCA_TIMEOUT):
        kind = "hca-cmd-timeout"
    elif "mlx5_load_one failed" in line:  # the adapter's driver could not bring it up: it never loads
        kind = "hca-load-failed"
    elif "mlx5" in line and "insufficient power on the PCIe slot" in line:
        kind = "hca-slot-power"
    elif "unknown chipset (ffffffff)" in line:  # nouveau read the chip id as all ones: the GPU answers no reads
        kind = "gpu-unreadable"
    elif "PCIe Bus Error: severity=" in line or "PCIe Bus Error: serverity=" in line:
        sev = _SEVERITY.search(line)
        if sev is None:
            return None
        word = sev.group(1)
        kind = "aer-fatal" if "(Fatal)" in word else "aer-nonfatal" if "Non-Fatal" in word else "aer-corrected"
    elif "AER: can't recover" in line and re.search(r"\bnvidia [0-9a-fA-F:.]+: AER", line):  # the GPU's own
        kind = "aer-unrecovered"
    elif "mlx5" in line and re.search(r": Link (?:down|up)\b", line):
        kind = "link-down" if ": Link down" in line else "link-up"
    elif ib := re.search(r"\b(ib\w*): ([Ll]ost|Gained) carrier", line):  # an IPoIB interface lost or regained
        # its link (the kernel's "Lost carrier", systemd-networkd's "lost carrier" / "Gained carrier": AzNHC, GCM)
        down = ib.group(2).lower() == "lost"
        return ("link-down" if down else "link-up"), None, f"{ib.group(1)}: {'Lost' if down else 'Gained'} carrier"
    else:
        return None
    if nvrm >= 0:
        m = _NVRM_GPU.search(line)
        bus = _bus(m.group(1)) if m else None
        message = line[nvrm + len("NVRM:") :].strip()
        if bus is None and (ix := _NVRM_INDEX.search(line)):
            message = f"{message} (the driver's {ix.group(1)}: its bus id is not on the line)"
        return kind, bus, message
    dev = _DEVICE.search(line)
    if dev is None:
        return kind, None, line.strip()
    return kind, _bus(dev.group(2)), f"{dev.group(1)} {line[dev.start(2) :].strip()}"


def _report(text: str, end: int, lines: int, stops: tuple[str, ...]) -> str:
    """The ``lines`` lines of ``text`` after ``end`` (a report's line end), cut at the first of ``stops`` or the
    kernel's "end trace" (the next report, or the end of this one)."""
    stop = end
    for _ in range(lines):
        if stop < 0:
            break
        stop = text.find("\n", stop + 1)
    trace = text[end : stop if stop >= 0 else len(text)] if end >= 0 else ""
    for word in (*stops, "end trace"):
        if (nxt := trace.find(word)) >= 0:
            trace = trace[:nxt]
    return trace


def oops_in_driver(line: str, text: str, end: int) -> str | None:
    """The message of a kernel oops (``line``: "BUG: unable to handle kernel NULL pointer dereference at ...")
    whose report (the lines below it, until the next report) has its faulting address or a call-trace frame in
    an NVIDIA module; None for an oops elsewhere (a user program's "traps: ... general protection fault" too)."""
    m = OOPS.search(line)
    if m is None:
        return None
    report = line[m.end() :] + _report(text, end, OOPS_LINES, ("BUG: ", "general protection fault"))
    frame = _NV_SYMBOL.search(report)
    if frame is None:
        comm = _COMM.search(report)
        # the report's own code address follows its task line within two lines (Hardware name, RIP)
        after = comm and "\n".join(report[comm.end() :].split("\n", 3)[:3])
        if comm is None or not _NV_TASK.match(comm.group(1)):
            return None
        said = line[m.start() :].strip(" *")[:120]
        helper = _COPY_HELPER.search(after or "")
        if helper is not None and "Call Trace:" not in report:  # a copy for its caller, the trace that names it cut
            where = f"in a kernel copy helper ({helper.group(1)}), its caller not shown"
            return f"kernel oops in NVIDIA task {comm.group(1)} {where}: {said}"
        if _FRAME.search(after or ""):
            return None
        return f"kernel oops in NVIDIA task {comm.group(1)} (its code address not shown): {said}"
    at, to = report.rfind("\n", 0, frame.start()) + 1, report.find("\n", frame.start())
    where = report[at : to if to >= 0 else len(report)].strip(" *")
    where = re.sub(r"^\S*\[\s*\d+\.\d+\]\s*", "", where)  # the frame's own line, its time taken off
    return f"kernel oops in the NVIDIA driver: {line[m.start() :].strip(' *')[:120]} ({where[:120]})"


def hung_in_driver(line: str, text: str, end: int) -> str | None:
    """The message of a hung-task report (``line``, ending at ``end`` in ``text``) whose task runs in an NVIDIA
    module (a frame of its call trace, in the lines below, until the next report) or is one of the driver's own;
    None for any other hung task (a disk or a file system's: not the GPU's)."""
    m = _HUNG.search(line)
    lock = None if m else _LOCKUP.search(line)
    if lock is not None:
        cpu, secs, name, pid = lock.groups()
    elif m is not None:
        name, pid, secs = m.groups()
    else:
        return None
    trace = _report(text, end, HUNG_TRACE_LINES, ("blocked for more than", "soft lockup - CPU#", "</TASK>"))
    frame = _NV_FRAME.search(trace)
    if frame is None and not _NV_TASK.match(name):
        return None
    where = f"in {frame.group(1)}" if frame else "(its call trace not shown)"
    if lock is not None:
        return f"soft lockup: task {name} (pid {pid}) stuck on CPU#{cpu} for {secs} s {where}"
    return f"task {name} (pid {pid}) blocked for more than {secs} seconds {where}"


def unsupported_gpu(line: str, text: str, end: int) -> tuple[str, str | None, str] | None:
    """A GPU the loaded driver does not drive: "NVRM: The NVIDIA GPU BUS (PCI ID: 10de:1db5)" whose next lines say
    "installed in this system is not supported by ..." (or "requires use of the NVIDIA open kernel modules"); the
    same first line also opens the driver's three-line "fallen off the bus" message, which is not this sign."""
    m = _UNSUPPORTED.search(line)
    if m is None:
        return None
    after = text[end : end + 400] if end >= 0 else ""
    said = re.sub(r"\s*\n[^\n]*?NVRM:\s*", " ", after)
    says = _UNSUPPORTED_SAYS.search(said)
    if says is None:
        return None
    if says.group(0).startswith("requires"):
        flavour = "the proprietary kernel module (it needs NVIDIA's open kernel modules)"
    elif said[says.end() :].lstrip().startswith("open"):
        flavour = "the open kernel module (it has no GSP: it needs the proprietary module)"
    else:
        flavour = "this driver release (see the release's supported GPU list)"
    return "gpu-unsupported", _bus(m.group(1)), f"GPU {m.group(1)} (PCI ID {m.group(2)}) is not supported by {flavour}"


def _find_lines(text: str, word: str, ends: dict[int, int], pos: int = 0, most: int = -1) -> int:
    """Record in ``ends`` (start: end) each line of ``text`` holding ``word`` from ``pos`` on, each line once; after
    ``most`` lines (-1: no limit) stop, returning where (-1: it reached the text's end)."""
    find, rfind = text.find, text.rfind
    pos = find(word, pos)
    while pos >= 0:
        if most == 0:
            return pos
        most -= 1
        start = rfind("\n", 0, pos) + 1
        end = find("\n", pos)
        ends.setdefault(start, end)
        if end < 0:
            break
        pos = find(word, end + 1)
    return -1


def sign_lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line of ``text`` holding a sign's keyword, in order (end -1: the text's last line,
    without a newline). A str.find pass per anchor; each line found is cut out once and tested for KEYWORDS."""
    ends: dict[int, int] = {}
    for char, words in RARE.items():
        stop = _find_lines(text, char, ends, most=RARE_LINES + len(text) // RARE_PER)
        for word in words if stop >= 0 else ():  # common in this log: its words from there on
            _find_lines(text, word, ends, max(stop - len(word), 0))
    for anchor in ANCHORS:
        _find_lines(text, anchor, ends)
    out = []
    for start in sorted(ends):
        end = ends[start]
        line = text[start : end if end >= 0 else len(text)]
        if any(word in line for word in KEYWORDS):
            out.append((start, end))
    return out


def read_sign(line: str, text: str, end: int) -> tuple[str, str | None, str] | None:
    """(kind, bus id, message) of the sign on ``line`` (ending at ``end`` in ``text``, -1: its last), or None."""
    if "blocked for more than" in line or "soft lockup - CPU#" in line:
        hung = hung_in_driver(line, text, end)
        return None if hung is None else ("driver-hung", None, hung)
    if OOPS.search(line):
        oops = oops_in_driver(line, text, end)
        return None if oops is None else ("driver-oops", None, oops)
    if (at := oops_at_driver(line, text, end)) is not None:
        return "driver-oops", None, at
    if "(PCI ID: " in line and "Xid" not in line:
        return unsupported_gpu(line, text, end)
    if "no space" in line:
        return unassigned_bar(line, text)
    if D3COLD in line:
        return d3cold_gpu(line, text)
    if PANIC in line:
        return mlx5_panic(line, text, end)
    return classify(line)


def unassigned_bar(line: str, text: str) -> tuple[str, str | None, str] | None:
    """A memory BAR the kernel could not assign, of a device ``text`` enumerates as an NVIDIA display controller
    ("pci 0000:01:00.0: [10de:2204] type 00 class 0x030000"): the driver cannot map that GPU."""
    m = _BAR_NO_SPACE.search(line)
    dev = _DEVICE.search(line, 0, m.start()) if m else None
    if m is None or dev is None:
        return None
    if not enumerated_nvidia_display(dev.group(2), text):
        return None  # not known to be an NVIDIA GPU (an NVIDIA audio function, another vendor's device)
    return "gpu-bar-unassigned", _bus(dev.group(2)), f"BAR {m.group(1)} {m.group(2) or m.group(3)}: no space"


def parse_signs(text: str, first_line: int, stamp: object) -> list[KernelEvent]:
    """Every sign of ``text`` (line numbers from ``first_line``); ``stamp(prefix, event)`` sets its time."""
    out: list[KernelEvent] = []
    counted_to, line_no = 0, first_line
    for start, end in sign_lines(text):
        line = text[start : end if end >= 0 else len(text)]
        line_no += text.count("\n", counted_to, start)
        counted_to = start
        got = read_sign(line, text, end)
        if got is None:
            continue
        kind, bus, message = got
        ev = KernelEvent(kind=kind, code=0, bus_id=bus, text=message[:300], line=line_no)
        stamp(line, ev)  # type: ignore[operator]
        out.append(ev)
    return out
