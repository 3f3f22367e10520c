"""`gpuadvisor import` on hostile shapes of text: its cost must grow with the text, not with its square.

Two families, each read at two sizes in this process (the importer's own work, no start-up):
- one long line made of a repeated unit (a JSON nest ``[[[[``, a run of spaces or tabs, ``a:``, ``host:1:2 ...``):
  20,000 and 80,000 characters, alone and followed by a short line;
- many lines of one kind (blank, table rules, ``Port 1:``, device lines, nccl-tests rows): 2,000 and 8,000 lines;
- as many lines each naming another GPU (``nvidia-smi -L``, llama.cpp's device list): until 2026-11-29 matching
  each GPU to those read before scanned them all (8,000 GPUs: 27 s, 14 times 2,000's); now a lookup.

A unit whose time grows more than 6 times for 4 times the text (and takes over 0.2 s) is flagged, and the script
exits 1. What it found on 2026-11-29 (2-core box): a 200,000-character line of ``[`` took 65 s to be refused (an
NCCL-line pattern, ``\\S+:\\d+:\\d+``, tried at every character) and 80,000 spaces took 23 s (the fabric manager's
``^\\W*\\s*``); both now read in 0.2 s, and every unit below grows linearly.

    .venv/bin/python benchmarks/import_scaling.py
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpuadvisor.errors import InputError  # noqa: E402
from gpuadvisor.importers import import_texts  # noqa: E402

LINE_UNITS = [
    "a: ", "Torch ", "VRAM 1", "gpu.name: ", "a is ", "x. ",
    "[", "{", "(", "a", "a:", "1:", ":", "1", "1.", "-", "|", "=", "%", "/", " ", "\t", "x ", "a b", "1 ", "+-",
    "0x", "[0] ", "[a]", "# ", "GPU ", "MiB ", "W ", "NVRM: ", "Xid ", "a=1 ", '"a":', "ab:12:34", "0:1:2 ",
    "00:00.0 ", "10.0.0.1:", "host:1:2 [0] NCCL INFO ", "ERROR [1:2] ", "a-abcde b ", "[/a.cpp:1] ",
    "xid 1 ", "GPU-00000000-0000-0000-0000-000000000000 ", "<pci ", '\\"', "ERROR_GPU_IS_LOST ",
    "status=12(", '"status" : ', "NET/IB : Got completion ",
]  # fmt: skip
MANY_LINES = [
    "", " ", "a", "|", "+---+", "```", "> a", "# ", "[0] ", "$ nvidia-smi", "GPU 0: x", "Fabric", "Port 1:",
    "CA 'mlx5_0'", "hca_id: mlx5_0", "NVRM: x", "Attached GPUs : 8", "GPU0\tX\tNV1",
    "==============NVSMI LOG==============", "x:1:2 [0] NCCL INFO a",
    "01:00.0 VGA compatible controller: NVIDIA Corporation x", "\tLnkSta: Speed 8GT/s, Width x16",
    "   8   2   float   sum  -1  1  1  0  1  1  0", "2024-04-02 12:54:06.828 ERROR [1:2] [[NvSwitch]] a [/a.cpp:1] [f]",
    "pod-c78b4 ctr a", "machine [0] misc/ibvwrap.cu:269 WARN a", "what(): system not yet initialized",
    "GPU 0's MIG configuration is incompatible with the diagnostic", "x 0000:05:00.0: AER: a",
    "Filesystem Size Used Avail Use% Mounted on", "/dev/sda2 30G 20G 10G 66% /", "NVME Identify Controller:",
    "  /dev/nvme0n1  : NVM Express - 0x144d - A  B - 0", "/dev/nvme0n1p1 A 1.1 1 1.00 GB / 2.00 GB 512 B + 0 B",
    "        GPU instan", "Host/Device Bandwidth Matrix (GB/s), memory=Pinned", "   D2H     56.83  57.12",
    "XID 79(GPU has fallen off the bus) detected on PCI:0000:ae:00", '\\"xid\\":119,\\"device_uuid\\":\\"',
    "XidCriticalError: Xid=69 on Device=GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8, the device will go unhealthy.",
    '<pci busid="0000:06:00.0" link_speed="8 GT/s" link_width="16">', '<nvlink target="0000:07:00.0" count="1"/>',
    "  - CUDA Runtime 10.1", "4: ibp5s0: <BROADCAST,MULTICAST> mtu 4092 qdisc noop state DOWN mode DEFAULT",
    '{"event": "Test warn", "gpu": "GPU-1", "test": "software", "error_code": 29, "detail": "a"}',
    "Capacity:", "                    nvidia.com/gpu.count=8", "NAME  READY  STATUS  RESTARTS  AGE",
    "Failed to initialize NVML: Unknown Error",
    # a program's code with no failure word, the X driver's init failure, modprobe's missing module
    "CUDA: Device: 0 Thread exited with code: 46", "modprobe: FATAL: Module nvidia not found.",
    "(EE) NVIDIA(GPU-0): Failed to initialize the NVIDIA GPU at PCI:82:0:0.",
    "- GPU: NVIDIA A100", "CUDA version: 12.1", "**Driver:** 535.104.05", '"torch": "2.3.0+cu121",', "  - NVIDIA L4",
    # a generic report's sentences and log lines (a banner's clauses, dotted keys, a runtime's device line)
    "   \\\\   /|    NVIDIA GeForce RTX 4090. Num GPUs = 1. Max memory: 23.621 GB. Platform: Linux.",
    "O^O/ \\_/ \\    Torch: 2.5.1+cu124. CUDA: 8.9. CUDA Toolkit: 12.4. Triton: 3.1.0", "gpu.name:   NVIDIA A100",
    "12:00:00-000000 INFO     Torch detected GPU: NVIDIA GeForce RTX 4060 VRAM 8188 Arch (8, 9) Cores 24",
    "[2024-01-01 00:00:00,000]::[Tool]::INFO --> Using torch device: NVIDIA GeForce RTX 4090",
    "INFO a b c d e f g h device gpu memory torch cuda driver python is not a = b: c d e f g h",
    " ".join(["a b c d: e"] * 150),  # a long line of keys and values under the longest line read
    "CQE ERROR wr_id=3 status=12(transport retry counter exceeded) opcode=1 byte_len=0 vendor_err=0xa qp_num=0x2c10",
    '"status" : "Skip"', '"gpu_id" : "0",', " NVMe               : Unsupported", "Critical Warning:  0x00",
    "g0010: Test CUDA failure common.cu:941 'invalid device ordinal'",
    " .. g0010 pid 888386: Test failure common.cu:891",
    # a comment block's matrix row, mst status's header and row, a --query-gpu CSV through column -t, Paddle's lines
    "# GPU0\t X \tSYS\tSYS\t48-63\t3", "DEVICE_TYPE  MST  PCI  RDMA  NET  NUMA",
    "ConnectX6(rev:0)  /dev/mst/mt4123_pciconf0  3b:00.0  mlx5_2  net-ens24np0  0",
    "index   name               power.draw [W]", "0       GeForce GTX 1080   131.17 W",
    "W1023 device_context.cc:404] device: 0, GPU Compute Capability: 6.1, Driver API Version: 10.1, Runtime API "
    "Version: 10.1", "W1023 parallel_executor.cc:601] Cannot enable P2P access from 0 to 4", "| GPU ID: 1 |",
    # an application's own log no other row reads (its level mark and clock, a recurring tag, comment-marked lines)
    "\tm  20:51:15|ethminer  Speed 409.21 Mh/s    gpu/0 31.57  gpu/1 31.19", "GPU #7: Tesla M2090, 217.14 khash/s",
    "# NVML : 0 : Fan 33%     Temp 63C        Mem Used 1488MB Free 509MB Total 1998MB",
    # runs of one output each in its own fence (nvlink -s -i N), a review diff's added rows, a device in brackets
    "```\nGPU 2: GeForce RTX 2080 Ti (UUID: GPU-6c41afdf-d8aa-ed9b-24a2-fa90c471fda0)\n\t Link 0: 25.781 GB/s\n```",
    "+     4194304       1048576     float     sum      -1   1701.3    2.47    4.62    N/A",
    "CUDA:0 (NVIDIA GeForce GTX 1650 SUPER, 4096MiB)", "  WRITE: io=984576KB, aggrb=16406KB/s, maxt=60011msec",
]  # fmt: skip
# lines that each name another GPU ({0}: its number): matching them to the GPUs read before must not cost their square
MANY_GPUS = [
    "GPU {0}: NVIDIA A100-SXM4-80GB (UUID: GPU-{0:08x}-1111-2222-3333-444455556666)",
    "  Device {0}: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes",
    "- GPU {0}: NVIDIA A10 | 23028 MiB | driver 535.104.05",  # a generic report's GPU lines (64 GPUs at most)
    "INFO Torch detected GPU: NVIDIA GeForce RTX {0} VRAM 8188 Arch (8, 9) Cores 24",  # a log's device lines
    "Cannot enable P2P access from {0} to 1",  # Paddle's peer lines (two-digit GPU numbers read)
    "index  name\n{0}  NVIDIA A100",  # CSV through column -t, one table per GPU
]


def cpu_to_read(*texts: str) -> float:
    t = time.process_time()
    for text in texts:
        with contextlib.suppress(InputError):
            import_texts([("paste.txt", text)])
    return time.process_time() - t


def main() -> int:
    bad = 0
    rows: list[tuple[str, float, float]] = []
    for u in LINE_UNITS:
        small, big = ((u * (n // len(u) + 1))[:n] for n in (20_000, 80_000))
        rows.append((f"line of {u!r}", cpu_to_read(small, small + "\n" + u), cpu_to_read(big, big + "\n" + u)))
    for u in MANY_LINES:
        rows.append((f"lines of {u[:28]!r}", *(cpu_to_read("\n".join([u] * n) + "\n") for n in (2000, 8000))))
    for u in MANY_GPUS:
        texts = ("\n".join(u.format(i) for i in range(n)) + "\n" for n in (2000, 8000))
        rows.append((f"GPUs in {u[:30]!r}", *(cpu_to_read(t) for t in texts)))
    print(f"{'text (x4 from the first size to the second)':48} {'CPU s':>7} {'CPU s':>7}  ratio")
    for name, a, b in rows:
        square = b > 6 * a and b > 0.2
        bad += square
        flag = "  <-- grows faster than the text" if square else ""
        print(f"{name:48} {a:7.3f} {b:7.3f}  {b / max(a, 1e-9):5.1f}{flag}")
    print(f"{bad} of {len(rows)} shapes grow faster than the text")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
