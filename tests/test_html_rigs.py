"""Hand-built rigs for the HTML report tests (builders only; no tests here).

They cover shapes the presets may not: PCIe switches under root ports, NICs, NVSwitch, NVLink bridges, a
downgraded hop, a scan with measurements, findings and advice, and hostile strings. Every value is set
here, so the tests can assert exactly what the report must show.
"""

from __future__ import annotations

from gpuadvisor.facts import (
    Finding,
    Gpu,
    Host,
    Measurement,
    NumaNode,
    NvLink,
    Pcie,
    PcieHop,
    Rig,
    Software,
    Source,
    SweepRow,
    Topology,
)

XSS = "<script>alert(1)</script>"


def _hop(
    bdf: str,
    port_type: str,
    gen: int,
    width: int,
    max_gen: int | None = None,
    max_width: int | None = None,
    name: str | None = None,
) -> PcieHop:
    return PcieHop(
        bdf=bdf,
        port_type=port_type,
        name=name,
        current_gen=gen,
        current_width=width,
        max_gen=max_gen if max_gen is not None else gen,
        max_width=max_width if max_width is not None else width,
    )


def build_rig(
    n: int,
    *,
    sockets: int = 2,
    gpus_per_switch: int = 2,
    gpu_name: str = "NVIDIA H100 80GB HBM3",
    gen: int = 5,
    nvswitch_links: int = 0,
    nvlink_version: int = 4,
    nv_pairs: dict[tuple[int, int], int] | None = None,
    downgrade: dict[int, tuple[int, int]] | None = None,
    switch_uplink_downgrade: tuple[int, int] | None = None,
    nics_per_switch: int = 0,
    hostname: str = "node-a01",
    kind: str = "live",
) -> Rig:
    """n GPUs spread over `sockets` NUMA nodes; `gpus_per_switch` > 0 puts them behind PCIe switches.

    downgrade: GPU index -> (current gen, current width) of its own link (max stays gen/x16).
    switch_uplink_downgrade: (gen, width) of the first switch's uplink to its root port (max gen/x16).
    """
    downgrade = downgrade or {}
    per_socket = max(1, (n + sockets - 1) // sockets)
    gpus: list[Gpu] = []
    nics: list[str] = []
    nic_place: list[tuple[int, str]] = []  # (socket, switch upstream bdf or "")
    for i in range(n):
        sock = min(i // per_socket, sockets - 1)
        bus = 0x18 + 0x10 * i
        bdf = f"0000:{bus:02x}:00.0"
        cg, cw = downgrade.get(i, (gen, 16))
        gpu_hop = _hop(bdf, "endpoint", cg, cw, gen, 16, name=gpu_name)
        if gpus_per_switch:
            sw = i // gpus_per_switch
            rp = _hop(f"0000:{0x10 + sw * 0x20:02x}:01.0", "root-port", gen, 16)
            up_gen, up_w = switch_uplink_downgrade if (switch_uplink_downgrade and sw == 0) else (gen, 16)
            up = _hop(
                f"0000:{0x11 + sw * 0x20:02x}:00.0",
                "upstream-port",
                up_gen,
                up_w,
                gen,
                16,
                name="Broadcom PEX89144 PCIe Gen5 switch",
            )
            down = _hop(f"0000:{0x12 + sw * 0x20:02x}:{i % gpus_per_switch:02x}.0", "downstream-port", cg, cw, gen, 16)
            path = [gpu_hop, down, up, rp]
            if i % gpus_per_switch == 0:
                for k in range(nics_per_switch):
                    nics.append(f"mlx5_{len(nics)}")
                    nic_place.append((sock, up.bdf))
                    del k
        else:
            rp = _hop(f"0000:{bus - 1:02x}:01.0", "root-port", cg, cw, gen, 16)
            path = [gpu_hop, rp]
        links = [
            NvLink(
                link=k,
                active=True,
                version=nvlink_version,
                remote_device_type="switch",
                remote_bus_id=f"0000:{0xA0 + k % 4:02x}:00.0",
            )
            for k in range(nvswitch_links)
        ]
        gpus.append(
            Gpu(
                index=i,
                name=gpu_name,
                uuid=f"GPU-{i:08d}-0000-0000-0000-000000000000",
                bus_id=bdf,
                architecture="Hopper",
                compute_capability="9.0",
                memory_total_bytes=85520809984,
                memory_used_bytes=0,
                power_limit_w=700.0,
                power_default_limit_w=700.0,
                temperature_c=34.0 + i,
                sm_clock_max_mhz=1980,
                ecc_enabled=True,
                ecc_errors_uncorrected_volatile=0,
                persistence_mode=True,
                mig_mode=False,
                clocks_event_reasons=[],
                numa_node=sock,
                cpu_affinity="0-55" if sock == 0 else "56-111",
                pcie=Pcie(
                    current_gen=cg,
                    max_gen=gen,
                    gpu_max_gen=gen,
                    current_width=cw,
                    max_width=16,
                    replay_counter=0,
                    path=path,
                ),
                nvlinks=links,
            )
        )
    # topo -m style matrix
    matrix = []
    for i in range(n):
        row = []
        for j in range(n):
            if i == j:
                row.append("X")
            elif nvswitch_links:
                row.append(f"NV{nvswitch_links}")
            elif nv_pairs and (min(i, j), max(i, j)) in nv_pairs:
                row.append(f"NV{nv_pairs[(min(i, j), max(i, j))]}")
            elif gpus[i].numa_node != gpus[j].numa_node:
                row.append("SYS")
            elif gpus_per_switch and i // gpus_per_switch == j // gpus_per_switch:
                row.append("PIX")
            else:
                row.append("NODE")
        matrix.append(row)
    if nv_pairs:
        for (a, b), k in nv_pairs.items():
            for side, other in ((a, b), (b, a)):
                base = len(gpus[side].nvlinks)
                gpus[side].nvlinks += [
                    NvLink(
                        link=base + x,
                        active=True,
                        version=nvlink_version,
                        remote_device_type="gpu",
                        remote_gpu_index=other,
                        remote_bus_id=gpus[other].bus_id,
                    )
                    for x in range(k)
                ]
    nic_matrix = []
    for i in range(n):
        row = []
        for sock, up in nic_place:
            g_up = gpus[i].pcie.path[2].bdf if gpus_per_switch else ""
            if g_up == up:
                row.append("PIX")
            elif gpus[i].numa_node == sock:
                row.append("NODE")
            else:
                row.append("SYS")
        nic_matrix.append(row)
    host = Host(
        hostname=hostname,
        os="Ubuntu 22.04.4 LTS",
        kernel="5.15.0-105-generic",
        arch="x86_64",
        cpu_model="Intel(R) Xeon(R) Platinum 8480+",
        sockets=sockets,
        cores_physical=56 * sockets,
        cores_logical=112 * sockets,
        memory_total_bytes=2 * 1024**4,
        memory_available_bytes=1900 * 1024**3,
        numa_nodes=[NumaNode(id=s, cpus=f"{s * 56}-{s * 56 + 55}", memory_total_bytes=1024**4) for s in range(sockets)],
    )
    sw = Software(
        driver_version="550.54.15",
        cuda_driver_version="12.4",
        nvml_version="12.550.54.15",
        python_version="3.11.9",
        torch_version="2.13.0",
        torch_cuda_version=None,
        nccl_version=None,
        gpuadvisor_version="0.1.0",
        env={"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(n))},
    )
    sw.missing("torch_cuda_version", "torch is a CPU build")
    sw.missing("nccl_version", "torch is a CPU build")
    p2p = [["X" if i == j else "OK" for j in range(n)] for i in range(n)]
    rig = Rig(
        source=Source(kind=kind, created_at="2026-11-22T17:00:00Z", tool_version="0.1.0"),
        host=host,
        software=sw,
        gpus=gpus,
        topology=Topology(
            matrix=matrix,
            pcie_matrix=matrix,
            p2p_read=p2p,
            p2p_write=p2p,
            nics=nics,
            nic_matrix=nic_matrix if nics else [],
        ),
    )
    return rig


def dgx_like() -> Rig:
    """8 GPUs, 2 sockets, 2 GPUs per PCIe switch, a NIC per switch, NVSwitch with 18 links per GPU."""
    return build_rig(8, nvswitch_links=18, nics_per_switch=1)


def pcie_4090(downgraded_gpu: int = 2) -> Rig:
    """4 consumer GPUs on root ports of one socket, no NVLink, no P2P, one card at x8 of x16."""
    rig = build_rig(
        4, sockets=1, gpus_per_switch=0, gpu_name="NVIDIA GeForce RTX 4090", gen=4, downgrade={downgraded_gpu: (4, 8)}
    )
    ns = [["X" if i == j else "NS" for j in range(4)] for i in range(4)]
    rig.topology.p2p_read = ns
    rig.topology.p2p_write = ns
    return rig


def measured_rig() -> Rig:
    """The DGX-like rig with a busbw sweep, a P2P matrix, copies per GPU, findings and advice."""
    rig = dgx_like()
    rig.gpus[3].pcie.path[0].current_width = 8
    rig.gpus[3].pcie.path[1].current_width = 8
    rig.gpus[3].pcie.current_width = 8
    sizes = [1 << k for k in range(10, 31, 2)]
    for kind, peak in (("all_reduce", 370.0), ("all_gather", 355.0), ("reduce_scatter", 350.0), ("broadcast", 310.0)):
        rows = [
            SweepRow(
                size_bytes=s,
                count=s // 4,
                time_us=10 + s / (peak * 1e3),
                algbw_gbps=0.0,
                busbw_gbps=round(peak * s / (s + 8e6), 3),
            )
            for s in sizes
        ]
        rig.measurements.append(
            Measurement(
                kind=kind,
                backend="nccl",
                method="cuda events, median of 20",
                world_size=8,
                gpus=list(range(8)),
                warmup_iters=5,
                iters=20,
                rows=rows,
                value_gbps=rows[-1].busbw_gbps,
                expected_gbps=450.0,
                expected_source="NVLink 4 × 18 links = 450 GB/s per direction",
                ratio=rows[-1].busbw_gbps / 450.0,
            )
        )
    for i in range(8):
        for j in range(8):
            if i != j:
                v = 390.0 + i + j / 10
                rig.measurements.append(
                    Measurement(
                        kind="p2p_unidir",
                        backend="cuda",
                        method="cudaMemcpyPeerAsync",
                        gpus=[i, j],
                        p2p_enabled=True,
                        value_gbps=v,
                        expected_gbps=450.0,
                        ratio=v / 450.0,
                    )
                )
    for i in range(8):
        for kind in ("h2d", "d2h"):
            v = (26.5 if kind == "h2d" else 26.6) if i == 3 else 53.1 + i / 10
            exp = 53.55 if i != 3 else 26.78
            rig.measurements.append(
                Measurement(
                    kind=kind,
                    backend="cuda",
                    method="cudaMemcpyAsync 256 MiB",
                    gpus=[i],
                    memory="pinned",
                    concurrent=False,
                    value_gbps=v,
                    expected_gbps=exp,
                    expected_source="PCIe Gen5 x16 × 0.85",
                    ratio=v / exp,
                )
            )
    rig.gpus[5].power_limit_w = 600.0
    rig.findings = [
        Finding(
            code="GA102",
            name="pcie-gen-below-max",
            area="pcie",
            severity="info",
            message="GPU 6 link at Gen4 where Gen5 is possible (idle power saving?)",
            gpus=[6],
        ),
        Finding(
            code="GA101",
            name="pcie-link-downgraded",
            area="pcie",
            severity="fail",
            message="GPU 3 0000:48:00.0 runs at x8 where its slot and card support x16",
            gpus=[3],
            subject="GPU 3 0000:48:00.0",
            observed={"current_width": 8},
            expected={"max_width": 16},
            expected_source="PCIe max_link_width of the card and slot",
            fix="Reseat the card or move it to an x16 slot.",
        ),
        Finding(
            code="GA312",
            name="power-limit-below-default",
            area="gpu",
            severity="warn",
            message="GPU 5 power limit 600 W is below its default 700 W",
            gpus=[5],
            observed=600.0,
            expected=700.0,
            expected_source="NVML default power limit",
            fix="nvidia-smi -i 5 -pl 700",
        ),
    ]
    rig.advice = {
        "workload": {"model": "llama-3-8b", "params": 8.03e9, "precision": "bf16"},
        "candidates": [
            {"name": "DDP", "memory_per_gpu_gib": 130.1, "fits": False, "comm_s": 0.21, "tokens_per_s": None},
            {"name": "ZeRO-2", "memory_per_gpu_gib": 41.3, "fits": True, "comm_s": 0.21, "tokens_per_s": 41200.0},
            {"name": "ZeRO-3", "memory_per_gpu_gib": 24.0, "fits": True, "comm_s": 0.32, "tokens_per_s": 38800.0},
        ],
        "pick": {
            "name": "ZeRO-2",
            "reason": "DDP does not fit; ZeRO-2 fits with margin at the same traffic.",
            "launch": "torchrun --nproc_per_node 8 train.py --fsdp SHARD_GRAD_OP",
        },
        "mfu_assumed": 0.4,
    }
    return rig


def measured_4090() -> Rig:
    """The 4x4090-pcie preset with a synthetic (made-up, not gloo-run) 4-rank NCCL sweep, every ordered pair's
    P2P-off copy (one direction, both, latency) and pinned host<->device copies per GPU, GPU 2 at half speed
    (its x8 link). Expected figures from the link physics (gpuadvisor.physics.expected)."""
    from gpuadvisor.collect import simulate
    from gpuadvisor.physics.expected import expected_bandwidth

    rig = simulate("4x4090-pcie")
    gpus = [g.index for g in rig.gpus]

    def add(m: Measurement) -> None:
        e = expected_bandwidth(
            rig, m.kind, m.gpus, backend=m.backend, world_size=m.world_size, memory=m.memory, p2p_enabled=m.p2p_enabled
        )
        m.expected_gbps, m.expected_source = e.gbps, e.source
        if e.gbps and m.value_gbps is not None:
            m.ratio = round(m.value_gbps / e.gbps, 4)
        rig.measurements.append(m)

    sizes = [1 << k for k in range(12, 29, 2)]  # 4 KiB .. 256 MiB
    factors = {"all_reduce": 1.5, "all_gather": 0.75, "reduce_scatter": 0.75, "broadcast": 1.0}
    for kind, peak in (("all_reduce", 9.8), ("all_gather", 10.4), ("reduce_scatter", 10.1), ("broadcast", 9.0)):
        rows = []
        for s in sizes:
            busbw = round(peak * s / (s + 2e6), 3)
            alg = busbw / factors[kind]
            rows.append(
                SweepRow(
                    size_bytes=s,
                    count=s // 4,
                    time_us=round(s / (alg * 1e3), 2),
                    algbw_gbps=round(alg, 3),
                    busbw_gbps=busbw,
                    correct=True,
                    errors=0,
                )
            )
        add(
            Measurement(
                kind=kind,
                backend="nccl",
                method="synthetic test data",
                world_size=4,
                gpus=gpus,
                warmup_iters=5,
                iters=20,
                rows=rows,
                value_gbps=rows[-1].busbw_gbps,
            )
        )
    for i in gpus:
        for j in gpus:
            if i == j:
                continue
            slow = 2 in (i, j)
            add(
                Measurement(
                    kind="p2p_unidir",
                    backend="cuda",
                    method="synthetic test data",
                    gpus=[i, j],
                    p2p_enabled=False,
                    value_gbps=(11.9 if slow else 21.6) + i / 10,
                )
            )
            add(
                Measurement(
                    kind="p2p_bidir",
                    backend="cuda",
                    method="synthetic test data",
                    gpus=[i, j],
                    p2p_enabled=False,
                    value_gbps=(19.0 if slow else 34.5) + j / 10,
                )
            )
            add(
                Measurement(
                    kind="p2p_latency",
                    backend="cuda",
                    method="synthetic test data",
                    gpus=[i, j],
                    p2p_enabled=False,
                    latency_us=14.0 + (i + j) / 10,
                )
            )
    for i in gpus:
        for kind in ("h2d", "d2h"):
            v = (12.9 if kind == "h2d" else 13.1) if i == 2 else (25.4 if kind == "h2d" else 26.2) + i / 10
            add(
                Measurement(
                    kind=kind,
                    backend="cuda",
                    method="synthetic test data",
                    gpus=[i],
                    memory="pinned",
                    concurrent=False,
                    value_gbps=v,
                )
            )
    rig.provenance["measurements"] = "measured"
    return rig
