"""Worker side of the collective sweep: one process per rank, torch.distributed, NCCL or gloo.

Every rank runs the same code; rank 0 writes the events. Per size: allocate, warm up, time ``iters``
operations (``timing``: total / iters, nccl-tests' definition), agree on the slowest rank, then the correctness check as
nccl-tests ``-c``:
fresh inputs with a known pattern, the output overwritten with a value no correct result holds (nccl-tests
zeroes its receive buffers in ``InitData``), one operation, every element compared with the exact expected
value (small integers in float32, so sums are exact), the wrong elements summed over ranks. A wrong result
marks the row and fails the measurement. Each rank's contribution and each destination chunk carries its own
values, so an operation that does nothing, or delivers a chunk to the wrong rank, is caught.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import time
from typing import Any

from gpuadvisor.bench import faults as faults_mod
from gpuadvisor.bench.events import EventWriter
from gpuadvisor.bench.formulas import algbw_gbps, busbw_factor, doubling_sizes, shape
from gpuadvisor.bench.launcher import STORE_ENV, set_status
from gpuadvisor.bench.timing import CpuTimer, CudaTimer
from gpuadvisor.nodename import node_name

PERIOD = 64  # the check pattern repeats every PERIOD elements
BYTES_PER_S = 3.0  # peak memory of one size step per rank, in multiples of S (buffers + check temporaries)
_OP_TEXT = {
    "all_reduce": "float32, sum, in place",
    "all_gather": "float32, all_gather_into_tensor, out of place",
    "reduce_scatter": "float32, sum, reduce_scatter_tensor, out of place",
    "broadcast": "float32, root 0, in place",
}
POISON = -3.0  # written over every output before the check: no correct result holds a negative value


def pattern(torch: Any, count: int, *, device: Any, start: int = 0, offset: float = 0.0, scale: float = 1.0) -> Any:
    """Element i is ``offset + scale × ((start + i) mod PERIOD)``: exact small integers in float32."""
    base = (torch.arange(PERIOD, dtype=torch.float32, device=device) + start) % PERIOD
    base = base * scale + offset
    reps = -(-count // PERIOD)
    return base.repeat(reps)[:count]


class _Case:
    """Buffers, operation and check of one collective at one size."""

    def __init__(self, torch: Any, dist: Any, kind: str, n: int, rank: int, count: int, per_rank: int, device: Any):
        self.torch, self.dist, self.kind, self.n, self.rank = torch, dist, kind, n, rank
        self.count, self.per_rank, self.device = count, per_rank, device
        empty = lambda k: torch.empty(k, dtype=torch.float32, device=device)  # noqa: E731
        if kind == "all_reduce":
            self.out = empty(count)
            self.inp = self.out
        elif kind == "all_gather":
            self.inp, self.out = empty(per_rank), empty(count)
        elif kind == "reduce_scatter":
            self.inp, self.out = empty(count), empty(per_rank)
        elif kind == "broadcast":
            self.out = empty(count)
            self.inp = self.out
        else:
            raise ValueError(kind)

    def op(self) -> None:
        d = self.dist
        if self.kind == "all_reduce":
            d.all_reduce(self.out)
        elif self.kind == "all_gather":
            d.all_gather_into_tensor(self.out, self.inp)
        elif self.kind == "reduce_scatter":
            d.reduce_scatter_tensor(self.out, self.inp)
        else:
            d.broadcast(self.out, src=0)

    def _fill_inputs(self) -> None:
        t, r = self.torch, self.rank
        if self.kind == "all_reduce":
            self.inp.copy_(pattern(t, self.count, device=self.device, offset=r + 1))
        elif self.kind == "all_gather":
            self.inp.copy_(pattern(t, self.per_rank, device=self.device, offset=128 * (r + 1)))
        elif self.kind == "reduce_scatter":
            # chunk c (the part rank c receives) starts the pattern at c: a chunk delivered to the wrong rank differs
            chunks = self.inp.view(self.n, self.per_rank)
            for c in range(self.n):
                chunks[c].copy_(pattern(t, self.per_rank, device=self.device, start=c, offset=r + 1))
        elif r == 0:
            self.out.copy_(pattern(t, self.count, device=self.device, offset=7))
        else:
            self.out.fill_(-1.0)

    def fill_for_timing(self) -> None:
        if self.kind == "all_reduce":
            self.out.zero_()  # in place, repeated: zeros stay finite where a pattern would grow n-fold per call
        else:
            self._fill_inputs()

    def check(self, corrupt: bool) -> int:
        """Run once on fresh inputs; the number of wrong elements on this rank."""
        t, n, r, dev = self.torch, self.n, self.rank, self.device
        if self.out is not self.inp:  # in place (all_reduce, broadcast): the inputs overwrite the output
            self.out.fill_(POISON)
        self._fill_inputs()
        self.op()
        if corrupt:
            self.out.view(-1)[0] += 1.0
        tri = n * (n + 1) / 2
        if self.kind == "all_reduce":
            return int((self.out != pattern(t, self.count, device=dev, offset=tri, scale=n)).sum().item())
        if self.kind == "all_gather":
            chunks = self.out.view(n, self.per_rank)
            return sum(
                int((chunks[j] != pattern(t, self.per_rank, device=dev, offset=128 * (j + 1))).sum().item())
                for j in range(n)
            )
        if self.kind == "reduce_scatter":
            want = pattern(t, self.per_rank, device=dev, start=r, offset=tri, scale=n)
            return int((self.out != want).sum().item())
        return int((self.out != pattern(t, self.count, device=dev, offset=7)).sum().item())


def _pci_bus_id(torch: Any, ordinal: int) -> str | None:
    p = torch.cuda.get_device_properties(ordinal)
    try:
        return f"{p.pci_domain_id:04x}:{p.pci_bus_id:02x}:{p.pci_device_id:02x}.0"
    except AttributeError:  # torch without the PCI fields
        return None


def _exchange(torch: Any, dist: Any, me: dict[str, Any], world: int, device: Any) -> list[dict[str, Any]]:
    """Every rank's small JSON record, through one all_gather of fixed-size byte tensors (no numpy, no pickle)."""
    import json

    width = 1024
    raw = json.dumps(me).encode()[:width]
    mine = torch.zeros(width, dtype=torch.uint8)
    mine[: len(raw)] = torch.tensor(list(raw), dtype=torch.uint8)
    out = torch.empty(world * width, dtype=torch.uint8, device=device)
    dist.all_gather_into_tensor(out, mine.to(device))
    records = []
    for r in range(world):
        chunk = bytes(out[r * width : (r + 1) * width].cpu().tolist()).rstrip(b"\0")
        records.append(json.loads(chunk.decode()))
    return records


def _listen_socket(host: str, port: int) -> socket.socket | None:
    """A listening socket on MASTER_ADDR's own address for rank 0's TCPStore (torch's server otherwise listens
    on every interface); None when that address is not on this machine (a VIP, NAT): torch's default then."""
    last: OSError | None = None
    for family, type_, proto, _, addr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        s = socket.socket(family, type_, proto)
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(addr)
            s.listen(512)
            return s
        except OSError as e:
            s.close()
            if e.errno == errno.EADDRINUSE:
                raise OSError(
                    e.errno,
                    f"MASTER_PORT {port} on {addr[0]}: address already in use (EADDRINUSE): "
                    "another process holds it; pick another MASTER_PORT",
                ) from None
            last = e
    if last is not None and last.errno not in (errno.EADDRNOTAVAIL,):
        raise last
    return None


def make_store(dist: Any, rank: int, world: int, timeout: Any) -> Any:
    """Where the ranks meet. Local run: a FileStore in the run's private directory (nothing listens). Joined
    job: torchrun's agent store when it runs one (None: init_process_group's env:// finds it), else a TCPStore
    on MASTER_ADDR:MASTER_PORT whose server (rank 0) listens on MASTER_ADDR's address only."""
    path = os.environ.get(STORE_ENV)
    if path:
        return dist.FileStore(path, world)
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true":
        return None
    host, port = os.environ["MASTER_ADDR"], int(os.environ.get("MASTER_PORT", "29500"))
    if rank == 0:
        sock = _listen_socket(host, port)
        if sock is not None:
            st = dist.TCPStore(host, port, world, True, timeout=timeout, master_listen_fd=sock.detach())
            return dist.PrefixStore("default_pg", st)
    return dist.PrefixStore("default_pg", dist.TCPStore(host, port, world, rank == 0, timeout=timeout))


def _inject_faults(faults: list[faults_mod.Fault], rank: int, kind: str) -> None:
    """The faults the tests inject on reaching ``kind`` (gpuadvisor.bench.faults): hang, die, raise, be killed."""
    if faults_mod.active(faults, "hang", rank, kind):
        while True:
            time.sleep(3600)
    if faults_mod.active(faults, "die", rank, kind):
        os._exit(3)
    if faults_mod.active(faults, "raise", rank, kind):
        raise RuntimeError(f"injected fault: rank {rank} raised on reaching {kind}")
    if faults_mod.active(faults, "kill", rank, kind):
        os.kill(os.getpid(), signal.SIGKILL)


def run(cfg: dict[str, Any]) -> int:
    import warnings

    warnings.filterwarnings("ignore", message=".*NumPy.*")
    import torch
    import torch.distributed as dist

    set_status("starting: importing torch done, joining the process group")
    faults = faults_mod.parse()
    backend = cfg["backend"]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    events = EventWriter(cfg["events"] if rank == 0 else None)
    from datetime import timedelta

    pg_timeout = timedelta(seconds=max(30.0, float(cfg["pg_timeout_s"])))
    store = make_store(dist, rank, world, pg_timeout)
    if backend == "nccl":
        ordinal = int(os.environ.get("LOCAL_RANK", rank % max(1, torch.cuda.device_count())))
        torch.cuda.set_device(ordinal)
        device = torch.device("cuda", ordinal)
        dist.init_process_group("nccl", rank=rank, world_size=world, timeout=pg_timeout, device_id=device, store=store)
        timer: CpuTimer | CudaTimer = CudaTimer(dist, torch)
        me = {
            "host": node_name(),
            "ordinal": ordinal,
            "bus_id": _pci_bus_id(torch, ordinal),
            "name": torch.cuda.get_device_name(ordinal),
        }
        free = torch.cuda.mem_get_info(ordinal)[0]
        mem_cap = int(free * 0.8 / BYTES_PER_S)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=pg_timeout, store=store)
        timer = CpuTimer(dist)
        me = {"host": node_name(), "ordinal": None, "bus_id": None, "name": None}
        import psutil

        local = int(os.environ.get("LOCAL_WORLD_SIZE", cfg.get("local_procs") or world))
        mem_cap = int(psutil.virtual_memory().available * 0.6 / (BYTES_PER_S * max(1, local)))

    def agree(value: float, op: Any) -> float:
        t = torch.tensor([float(value)], dtype=torch.float64, device=device)
        dist.all_reduce(t, op=op)
        return float(t.item())

    set_status("joined the process group")
    ranks = _exchange(torch, dist, me, world, device)
    mem_cap = int(agree(mem_cap, dist.ReduceOp.MIN))
    events.emit("ranks", ranks=ranks)

    sizes = doubling_sizes(cfg["min_bytes"], cfg["max_bytes"])
    kinds: list[str] = cfg["kinds"]
    soft_deadline = float(cfg["soft_deadline"])
    warmup, iters = int(cfg["warmup_iters"]), int(cfg["iters"])
    for k_i, kind in enumerate(kinds):
        _inject_faults(faults, rank, kind)
        set_status(f"in {kind}, before its first size")
        kind_deadline = time.time() + max(0.0, soft_deadline - time.time()) / (len(kinds) - k_i)
        events.emit(
            "begin",
            key=kind,
            kind=kind,
            backend=backend,
            world_size=world,
            ranks=ranks,
            method=f"torch.distributed {kind} ({_OP_TEXT[kind]}), {timer.method}",
            warmup_iters=warmup,
            iters=iters,
        )
        notes: list[str] = []
        status, error, wrong_total = "ok", None, 0
        prev_wall: float | None = None
        for s_i, target in enumerate(sizes):
            shp = shape(kind, world, target)
            if shp.size_bytes > mem_cap:
                notes.append(f"sizes above {mem_cap} B skipped: free memory bounds a size step to ~{BYTES_PER_S:g}× S")
                break
            go = 1.0
            if rank == 0 and prev_wall is not None and time.time() + 2.2 * prev_wall > kind_deadline:
                go = 0.0
            if agree(go, dist.ReduceOp.MIN) < 1:
                notes.append(f"sweep stopped before {shp.size_bytes} B: time budget")
                status = "partial"
                break
            set_status(f"in {kind} at {shp.size_bytes} B")
            t0 = time.time()
            oom = ""
            try:
                case = _Case(torch, dist, kind, world, rank, shp.count, shp.per_rank_count, device)
                ok = 1.0
            except (RuntimeError, MemoryError) as e:  # torch.OutOfMemoryError is a RuntimeError
                case, ok, oom = None, 0.0, str(e).splitlines()[0][:200]
            if agree(ok, dist.ReduceOp.MIN) < 1:
                notes.append(f"allocation failed at {shp.size_bytes} B" + (f" ({oom})" if oom else ""))
                break
            assert case is not None
            case.fill_for_timing()
            for _ in range(warmup):
                case.op()
            per_op = timer.run(case.op, iters)  # total of the timed loop / iters, this rank
            t_max = agree(per_op, dist.ReduceOp.MAX)
            bad = case.check(corrupt=faults_mod.active(faults, "corrupt", rank, kind))
            wrong = int(agree(bad, dist.ReduceOp.SUM))
            del case
            algbw = algbw_gbps(shp.size_bytes, t_max)
            row = {
                "size_bytes": shp.size_bytes,
                "count": shp.count,
                "dtype": "float32",
                "time_us": t_max * 1e6,
                "algbw_gbps": algbw,
                "busbw_gbps": algbw * busbw_factor(kind, world),
                "correct": wrong == 0,
                "errors": wrong,
            }
            events.emit("row", key=kind, row=row, index=s_i, planned=len(sizes))
            if wrong:
                wrong_total += wrong
                status = "failed"
            prev_wall = time.time() - t0
        if wrong_total:
            error = f"correctness check: {wrong_total} wrong elements (summed over sizes and ranks)"
        events.emit("end", key=kind, status=status, error=error, notes=notes)
        set_status(f"finished {kind}")
    if cfg.get("pairs"):
        from gpuadvisor.bench import pairs

        set_status("in node pairs")
        pairs.run(
            torch,
            dist,
            rank=rank,
            ranks=ranks,
            events=events,
            device=device,
            backend=backend,
            size_bytes=min(int(cfg["max_bytes"]), mem_cap),
            warmup=warmup,
            iters=iters,
            cuda=backend == "nccl",
        )
    dist.barrier()
    dist.destroy_process_group()
    events.close()
    return 0
