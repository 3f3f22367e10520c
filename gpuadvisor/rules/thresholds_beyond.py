"""Thresholds of the beyond-the-GPU rules (GA8xx): kernel events, the RDMA network, node limits."""

from __future__ import annotations

from gpuadvisor.rules.thresholds import Threshold

NCCL_TROUBLESHOOTING = (
    "NCCL User Guide, Troubleshooting (docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html)"
)

BEYOND = [
    Threshold(
        "xid_recent_hours",
        24,
        "hours",
        "an Xid logged less than this long before the scan is recent (its severity stands); an older one, still in "
        "the log since boot, is reported one step lower (fail -> warn), as the GPU may have been reset since",
        "NVIDIA's Xid catalog asks for a GPU reset or node reboot after hardware Xids; a day is a working window "
        "in which that reset may not have happened yet. A judgement, not a published limit",
        minimum=0,
    ),
    Threshold(
        "xid_repeat_count",
        3,
        "events",
        "the same Xid on the same GPU this many times since boot is reported as repeated; a repeated warning "
        "becomes a failure",
        "NVIDIA's Xid catalog: 'If this error is seen repeatedly ... contact your hardware vendor' (Xid 74) and "
        "'reset the GPU when convenient' (Xid 94): repetition is what turns an event into a fault",
        minimum=1,
        integer=True,
    ),
    Threshold(
        "rdma_flap_window_hours",
        6,
        "hours",
        "an RDMA link that went down less than this long before the scan fails the node; an older one in the log "
        "since boot warns",
        "Azure HPC node health checks (azurehpc-health-checks, check_ib_link_flapping): no IB link flap within "
        "6 hours by default; Meta's GCM link-flaps check treats an InfiniBand flap as critical",
        minimum=0,
    ),
    Threshold(
        "rdma_symbol_error_max",
        10,
        "errors",
        "symbol_error, link_error_recovery or port_rcv_errors of an RDMA port above this count warns",
        "infiniband-diags ibqueryerrors(8), FILES / ERROR THRESHOLD: the example thresholds SymbolErrorCounter=10 "
        "and LinkErrorRecoveryCounter=10",
        minimum=0,
        integer=True,
    ),
    Threshold(
        "rdma_link_downed_max",
        10,
        "events",
        "link_downed of an RDMA port above this count warns (the link went down and retrained that many times)",
        "Nebius soperator's InfiniBand health checks (github.com/nebius/soperator/issues/481): 'increase of > 10 "
        "is strong ib flap indicator' for /sys/class/infiniband/*/ports/1/counters/link_downed",
        minimum=0,
        integer=True,
    ),
    Threshold(
        "shm_min_gib",
        1,
        "GiB",
        "/dev/shm smaller than this is too small for NCCL's shared-memory transport between GPUs of one node",
        f"{NCCL_TROUBLESHOOTING}, 'Docker': the default 64 MB /dev/shm of a container is too small for NCCL; "
        "the guide recommends --shm-size=1g",
        minimum=0,
    ),
    Threshold(
        "gpu_memory_held_gib",
        1,
        "GiB",
        "GPU memory held by processes at scan time above which a node that should be idle is reported",
        "a CUDA context alone takes a few hundred MiB; 1 GiB held means a process that allocated memory (a job "
        "still running or a stuck one). A judgement, not a published limit",
        minimum=0,
    ),
]
