"""This node's name as the scan and the benchmark ranks record it.

``GPUADVISOR_HOSTNAME`` overrides the system host name: for tests that run several "nodes" on one machine
(two torchrun invocations on 127.0.0.1), and for clusters where the name operators use (the Slurm node name,
the Kubernetes node name) differs from the kernel's host name.
"""

from __future__ import annotations

import os
import socket

ENV = "GPUADVISOR_HOSTNAME"


def node_name() -> str:
    return os.environ.get(ENV, "").strip() or socket.gethostname()
