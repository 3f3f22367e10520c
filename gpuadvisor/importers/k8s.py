"""Kubernetes outputs pasted in GPU-operator and device-plugin reports: ``kubectl describe node`` (or ``kubectl get
node -o yaml``) and ``kubectl get pods`` tables.

A node's labels include those NVIDIA's GPU Feature Discovery sets (GPU Feature Discovery README, "Generated
Labels"): ``nvidia.com/gpu.count``, ``nvidia.com/gpu.product`` (the name NVML gives, its spaces made ``-``),
``nvidia.com/gpu.memory`` (MiB), ``nvidia.com/cuda.driver-version.full`` or the older ``cuda.driver.major/minor/rev``
(the driver's version, despite the name: 535, 104, 05). With the single MIG strategy the count, product
(``...-MIG-1g.10gb``) and memory are the MIG devices': no GPU is read from them then.

The node's ``Capacity:`` and ``Allocatable:`` blocks give the ``nvidia.com/gpu`` resource the device plugin
registered with the kubelet (Kubernetes docs, "Schedule GPUs"; Allocatable counts the GPUs the plugin reports
healthy): a node whose labels count GPUs but whose capacity or allocatable is 0, or lists no ``nvidia.com/gpu``,
or whose allocatable is below its capacity, has GPUs the scheduler cannot give to a pod. That is read as a
checker's warning with its evidence line (the plugin's state is about its deployment as often as about the GPUs),
as is a node whose ``Ready`` condition is not ``True`` or that is ``Unschedulable: true``.

Where no label counts the GPUs, the capacity's ``nvidia.com/gpu`` is their count (Capacity counts every device the
plugin registered, Allocatable the healthy ones: k8s-device-plugin's maintainers): that many GPUs, each fact of each
unknown (the resource is a count, not the GPUs; a time-sliced GPU counts once per replica, a MIG-partitioned one
under the single strategy once per MIG device). The kubelet's resource list pasted without its header
(``  nvidia.com/gpu:  2`` among ``  pods:  110``...) gives the count too. Merged with outputs that list the GPUs,
the count adds none (a note where the two differ).

GKE's GPU device plugin (container-engine-accelerators, pkg/gpu/nvidia/health_check) sets a node condition
``XidCriticalError`` when NVML reports an Xid it monitors: status ``True``, its reason a JSON map of the Xids seen
(``{"31":true}``), its message the node's boot id. Each Xid in a ``True`` condition (its row in ``kubectl describe
node``'s Conditions, or that row alone; its ``reason:`` over ``status: "True"`` and ``type: XidCriticalError`` in -o
yaml) is read as the kernel event it relays, judged by the Xid catalog as a kernel log's line is (which GPU: the
condition does not say).

A ``kubectl get pods`` row of a GPU operator component (driver, container toolkit, device plugin, DCGM, feature
discovery, validators, MIG manager, the operator) whose STATUS is a crash loop or an error is the same kind of
warning: which component, its status and restarts (kubectl's pod phases and container states, Kubernetes docs
"Pod Lifecycle"). It is a warning, not a failure: a crashing driver container is a build against the kernel, a
registry or a runtime setting as often as a GPU.
"""

from __future__ import annotations

import dataclasses
import re

from gpuadvisor.facts import Gpu, HealthCheck, KernelEvent, Rig
from gpuadvisor.importers.beyond import kernel_rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.merger import Merger
from gpuadvisor.importers.part import Part
from gpuadvisor.importers.section import Section, clean_lines, last_line_shown, outside, outside_log

TOOL = "Kubernetes"
WHAT_NODE = "kubectl describe node (GPU Feature Discovery labels, nvidia.com/gpu capacity)"
WHAT_PODS = "kubectl get pods (GPU operator components)"
NO_BUS = "GPU Feature Discovery's labels give a count and a product, not each GPU's bus id"
MIB = 1048576
HEADLESS = "Capacity or Allocatable (its header not shown)"
# each fact of a GPU counted by the device plugin's resource: unknown, for this reason
PLUGIN_COUNT = ("the device plugin's nvidia.com/gpu {block} gives a count, not the GPUs (a time-sliced GPU counts once "
                "per replica, a MIG-partitioned one once per MIG device with the single strategy)")  # fmt: skip

_NAME = re.compile(r"^Name:\s+(\S+)\s*$")
_ROLES = re.compile(r"^Roles:\s")
# a label as describe prints it (``nvidia.com/gpu.count=8``, the first after ``Labels:``) or as -o yaml does
_LABEL_LINE = r"^\s*(?:Labels:\s+)?"
_LABEL = re.compile(rf"{_LABEL_LINE}(nvidia\.com/[\w.\-]+)\s*(?:=|:\s)\s*['\"]?([^'\"\s]*)['\"]?\s*$")
_GFD = re.compile(rf"{_LABEL_LINE}nvidia\.com/(?:gpu\.(?:count|product|memory)|cuda\.driver\.major)\s*[=:]")
_BLOCK = re.compile(r"^(\s*)(Capacity|Allocatable|capacity|allocatable):\s*$")
_RESOURCE = re.compile(r"^\s*nvidia\.com/gpu:\s*['\"]?(\d+)['\"]?\s*$")
_ENTRY = re.compile(r"^(\s+)[\w./\-]+:")
_PODS = re.compile(r"^\s+pods:\s")  # a node's resources list how many pods it takes; a pod's limits never do
_KUBELET = re.compile(r"^\s+(?:cpu|ephemeral-storage|hugepages-\w+|memory|pods|nvidia\.com/gpu):\s")  # its resources
_READY = re.compile(r"^\s*Ready\s+(True|False|Unknown)\s+.*?(\S+)\s{2,}(\S.*?)\s*$")
_UNSCHEDULABLE = re.compile(r"^Unschedulable:\s+true\s*$")
_TAINTS = re.compile(r"^Taints:\s+(\S.*?)\s*$")
# GKE's device plugin's node condition: "XidCriticalError  True  <heartbeat>  <transition>  {"31":true}  <boot id>",
# its Xids a JSON map of true
_XID = r'"\d{1,5}"\s*:\s*true\s*'
_XIDS = rf"(\{{\s*{_XID}(?:,\s*{_XID})*\}})"
_XID_CONDITION = re.compile(rf"^\s*XidCriticalError\s+True\s+.*?{_XIDS}")
_XID_KEY = re.compile(r'"(\d{1,5})"')
# the same condition in kubectl get node -o yaml (its keys sorted: reason, then status and type below it)
_XID_REASON = re.compile(rf"^\s*reason:\s*'{_XIDS}'\s*$")
_YAML_STATUS = re.compile(r"""^\s*status:\s*["']?True["']?\s*$""")
_YAML_XID_TYPE = re.compile(r"^\s*type:\s*XidCriticalError\s*$")


def _xid_condition(lines: list[str], i: int) -> str | None:
    """The Xid map (``{"31":true}``) of a True XidCriticalError condition at line ``i``: its describe row, or its
    -o yaml ``reason:`` over ``status: "True"`` and ``type: XidCriticalError``."""
    if m := _XID_CONDITION.match(lines[i]):
        return m.group(1)
    if (m := _XID_REASON.match(lines[i])) is None:
        return None
    below = lines[i + 1 : i + 3]
    return m.group(1) if any(map(_YAML_STATUS.match, below)) and any(map(_YAML_XID_TYPE.match, below)) else None


_HEADER = re.compile(r"^\s*(NAMESPACE\s+)?NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\b")
_ROW = re.compile(r"^\s*(?:(\S+)\s+)?(?:pod/)?(\S+)\s+(\d+/\d+)\s+(\S+)\s+(\d+)(\s+\([^)]*\))?\s+\S+")
# a GPU operator component, by its pod's name (gpu-operator's and the device plugin's DaemonSets)
_COMPONENT = re.compile(
    r"^(nvidia-driver-daemonset|nvidia-container-toolkit-daemonset|nvidia-device-plugin(?:-daemonset)?|"
    r"nvidia-dcgm(?:-exporter)?|gpu-feature-discovery|nvidia-operator-validator|nvidia-cuda-validator|"
    r"nvidia-mig-manager|gpu-operator(?:-\d+)?-node-feature-discovery-(?:master|worker|gc)|gpu-operator|"
    r"nvidia-vgpu-manager-daemonset|nvidia-gpu-feature-discovery)-"
)
_BAD = re.compile(r"(?:CrashLoopBackOff|Error|BackOff|OOMKilled|ErrImagePull|Evicted|Unknown)")


def _headless_resource(lines: list[str], i: int) -> bool:
    """Line ``i`` is ``  nvidia.com/gpu:  N`` in a run of the kubelet's resources at its indent that holds
    ``  pods:  110`` (a node's Capacity or Allocatable, its header not shown; a pod's limits hold no ``pods``)."""
    if not (_RESOURCE.match(lines[i]) and lines[i][:1] in (" ", "\t")):
        return False
    indent = len(lines[i]) - len(lines[i].lstrip())
    run = []
    for step in (-1, 1):
        k = i + step
        while 0 <= k < len(lines) and _ENTRY.match(lines[k]) and len(lines[k]) - len(lines[k].lstrip()) == indent:
            run.append(lines[k])
            k += step
    return any(_PODS.match(x) for x in run)


@outside("k8s-node")
def starts_node(lines: list[str], i: int, current: Section | None) -> bool:
    """``Name:  NODE`` over ``Roles:`` (kubectl describe node), ``Capacity:`` or ``Allocatable:`` over the kubelet's
    resources (``  cpu:  128``; ``capacity:`` in -o yaml), or a GPU Feature Discovery label line
    (``nvidia.com/gpu.count=8``, ``nvidia.com/gpu.product: ...`` in -o yaml) where no node's output is being read,
    or the kubelet's resources shown without their header (``  nvidia.com/gpu:  2`` among ``  pods:  110``)."""
    s = lines[i]
    if _xid_condition(lines, i):
        return outside_log(current)  # GKE's XidCriticalError condition, its row alone (grepped) or in Conditions
    if b := _BLOCK.match(s):
        below = next((x for x in lines[i + 1 : i + 3] if x.strip()), "")
        return bool(_KUBELET.match(below)) and len(below) - len(below.lstrip()) > len(b.group(1))
    if _NAME.match(s):
        return bool(_ROLES.match(next((x for x in lines[i + 1 : i + 3] if x.strip()), "")))
    return bool(_GFD.match(s)) or _headless_resource(lines, i)


def starts_pods(lines: list[str], i: int, current: Section | None) -> bool:
    """``NAME  READY  STATUS  RESTARTS  AGE`` (``NAMESPACE`` first with -A)."""
    return bool(_HEADER.match(lines[i])) and (current is None or current.kind != "k8s-pods")


def _node_check(rig: Rig, node: str, detail: str, where: str) -> None:
    rig.node.health_checks = [*(rig.node.health_checks or []), HealthCheck(TOOL, f"node {node}", "warn", detail,
                                                                             [], None, where)]  # fmt: skip


def _labels_and_blocks(lines: list[str], text: str, source: str, first_line: int) -> dict[str, object]:
    """The node's name, its nvidia.com labels (with their line), its nvidia.com/gpu per block, the blocks shown
    whole (a line follows their last entry: a paste cut inside one does not say it lacks nvidia.com/gpu), its Ready
    condition and whether it is unschedulable; a line cut short is not read."""
    last = last_line_shown(lines)
    got: dict[str, object] = {"labels": {}, "resource": {}, "blocks": set()}
    labels: dict[str, tuple[str, int]] = got["labels"]  # type: ignore[assignment]
    resource: dict[str, tuple[int, int]] = got["resource"]  # type: ignore[assignment]
    blocks: set[str] = got["blocks"]  # type: ignore[assignment]
    block: tuple[str, int] | None = None
    for k, line in enumerate(lines):
        lineno = first_line + k
        if k == last and not text.endswith("\n"):
            break  # a cut last line is not shown
        if m := _BLOCK.match(line):
            if block is not None:
                blocks.add(block[0])
            block = (m.group(2).capitalize(), len(m.group(1)))
            got["opened"] = True
            continue
        if block is not None:
            e = _ENTRY.match(line)
            if e is None or len(e.group(1)) <= block[1]:
                blocks.add(block[0])  # shown whole: a line after its last entry
                block = None
            elif r := _RESOURCE.match(line):
                resource[block[0]] = (int(r.group(1)), lineno)
                continue
        if block is None and _headless_resource(lines, k):
            resource.setdefault(HEADLESS, (int(line.split(":")[1].strip(" '\"\t")), lineno))
            got["opened"] = True
        elif m := _NAME.match(line):
            got.setdefault("name", m.group(1))
        elif (m := _LABEL.match(line)) and block is None and "." in m.group(1).split("/", 1)[1]:
            labels.setdefault(m.group(1), (m.group(2), lineno))
        elif m := _READY.match(line):
            got["ready"] = (m.group(1), m.group(2), m.group(3), lineno)
        elif seen := _xid_condition(lines, k):
            xids: list[KernelEvent] = got.setdefault("xids", [])  # type: ignore[assignment]
            said = line.strip()[:200]
            xids.extend(KernelEvent(kind="xid", code=int(c), text=said, line=lineno)
                        for c in _XID_KEY.findall(seen) if int(c))  # fmt: skip
        elif _UNSCHEDULABLE.match(line):
            got["unschedulable"] = lineno
        elif (m := _TAINTS.match(line)) and m.group(1) != "<none>":
            got["taints"] = m.group(1)
    return got


def _gpus_from_labels(rig: Rig, labels: dict[str, tuple[str, int]], source: str) -> None:
    count, product, memory = (labels.get(f"nvidia.com/gpu.{k}") for k in ("count", "product", "memory"))
    _driver_from_labels(rig, labels, source)
    if count is None or not count[0].isdigit():
        return
    if product is not None and "-MIG-" in product[0]:  # the single MIG strategy: count, product, memory of MIG devices
        rig.problems.append(f"{source}: line {count[1]}: nvidia.com/gpu.count={count[0]} counts MIG devices "
                            f"({product[0]}), not GPUs: the GPUs are not read from these labels")  # fmt: skip
        return
    for i in range(int(count[0])):
        g = Gpu(index=i, name=product[0] if product else None)
        if memory and memory[0].isdigit():
            g.memory_total_bytes = int(memory[0]) * MIB
        g.unavailable["bus_id"] = NO_BUS
        if product is None:
            g.unavailable["name"] = "no nvidia.com/gpu.product label shown"
        rig.gpus.append(g)
        rig.origins[f"gpus[{i}]"] = f"{source}:{count[1]}"


def _gpus_from_resource(rig: Rig, resource: dict[str, tuple[int, int]], source: str) -> None:
    """No label counts the GPUs: Capacity's nvidia.com/gpu (every device the plugin registered; else Allocatable's,
    else a resource list's shown without its header) is their count, each fact of each GPU unknown with the reason."""
    block = next((b for b in ("Capacity", "Allocatable", HEADLESS) if b in resource), None)
    if block is None:
        return
    count, lineno = resource[block]
    reason = PLUGIN_COUNT.format(block=block)
    for i in range(count):
        g = Gpu(index=i)
        for part in (g, g.pcie):
            part.unavailable.update({f.name: reason for f in dataclasses.fields(part) if f.name != "unavailable"
                                     and getattr(part, f.name) in (None, [])})  # fmt: skip
        rig.gpus.append(g)
        rig.origins[f"gpus[{i}]"] = f"{source}:{lineno}"


def counted_by_plugin(g: Gpu) -> bool:
    """A GPU read from the device plugin's count alone (no fact of it known)."""
    return g.unavailable.get("name", "").startswith(PLUGIN_COUNT.split("{", 1)[0])


def merge_node(merger: Merger, part: Part) -> None:
    """A node's output into the Rig; GPUs the device plugin's count alone gives add none to GPUs other outputs list
    (a note where the two counts differ)."""
    counted = [g for g in part.rig.gpus if counted_by_plugin(g)]
    if counted and merger.gpus:
        if len(counted) != len(merger.gpus):
            part.rig.problems.append(
                f"{part.at('gpus[0]')}: the device plugin's nvidia.com/gpu counts {len(counted)}, the other outputs "
                f"list {len(merger.gpus)} GPU(s) (time-slicing replicas, MIG devices, or GPUs the plugin did not "
                "register)"
            )
        part.rig.gpus = [g for g in part.rig.gpus if not counted_by_plugin(g)]
    merger.add(part)


def _resource_checks(rig: Rig, name: str, labels: dict[str, tuple[str, int]], resource: dict[str, tuple[int, int]],
                     blocks: set[str], source: str) -> None:  # fmt: skip
    """A warning where the labels count GPUs that Capacity or Allocatable does not give (0, or no nvidia.com/gpu),
    or where Allocatable gives fewer than Capacity (the plugin's unhealthy GPUs: Allocatable counts the healthy)."""
    count = labels.get("nvidia.com/gpu.count")
    counted = int(count[0]) if count and count[0].isdigit() else 0
    for block in ("Capacity", "Allocatable"):
        given = resource.get(block)
        if given is not None and given[0] == 0 and counted > 0 and count is not None:
            detail = (f"labels count {counted} GPU(s) (nvidia.com/gpu.count, line {count[1]}) but {block} gives "
                      "nvidia.com/gpu: 0: the device plugin offers no usable GPU to the scheduler")  # fmt: skip
            _node_check(rig, name, detail, f"{source}:{given[1]}")
        elif given is None and block in blocks:
            rig.problems.append(f"{source}: node {name}: {block} lists no nvidia.com/gpu (no device plugin registered "
                                "a GPU resource)")  # fmt: skip
            if counted > 0 and count is not None:
                _node_check(rig, name, f"labels count {counted} GPU(s) but {block} lists no nvidia.com/gpu",
                            f"{source}:{count[1]}")  # fmt: skip
    cap, alloc = resource.get("Capacity"), resource.get("Allocatable")
    if cap is not None and alloc is not None and alloc[0] < cap[0]:
        detail = (f"Capacity nvidia.com/gpu: {cap[0]} (line {cap[1]}) but Allocatable nvidia.com/gpu: {alloc[0]}: "
                  f"the device plugin reports {cap[0] - alloc[0]} GPU(s) unhealthy")  # fmt: skip
        _node_check(rig, name, detail, f"{source}:{alloc[1]}")


def _driver_from_labels(rig: Rig, labels: dict[str, tuple[str, int]], source: str) -> None:
    """``nvidia.com/cuda.driver-version.full`` (GFD 0.15 on), else ``cuda.driver.major``/``minor``/``rev`` (older,
    deprecated since): the driver's version."""
    full = labels.get("nvidia.com/cuda.driver-version.full")
    parts = [labels.get(f"nvidia.com/cuda.driver.{k}") for k in ("major", "minor", "rev")]
    if full is not None and re.fullmatch(r"\d+\.\d+(?:\.\d+)?", full[0]):
        rig.software.driver_version, at = full[0], full[1]
    elif parts[0] and parts[1] and all(p[0].isdigit() for p in parts if p):
        rig.software.driver_version, at = ".".join(p[0] for p in parts if p), parts[0][1]
    else:
        return
    rig.origins["software.driver_version"] = f"{source}:{at}"


def parse_node(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The GPUs GPU Feature Discovery's labels count, the driver's version they give, and a warning where the
    node's nvidia.com/gpu capacity or allocatable does not give them, or the node is not Ready or schedulable."""
    rig = Rig()
    got = _labels_and_blocks(clean_lines(text), text, source, first_line)
    labels: dict[str, tuple[str, int]] = got["labels"]  # type: ignore[assignment]
    resource: dict[str, tuple[int, int]] = got["resource"]  # type: ignore[assignment]
    blocks: set[str] = got["blocks"]  # type: ignore[assignment]
    name = str(got.get("name", "(its name not shown)"))
    xids: list[KernelEvent] = got.get("xids", [])  # type: ignore[assignment]
    if not labels and "opened" not in got and "name" not in got and not xids:
        raise ImportParseError(source, first_line, f"{WHAT_NODE}: no node name, nvidia.com label or Capacity shown")
    if xids:  # the Xids GKE's device plugin saw, as the kernel events they are (GA801 judges them by the catalog)
        rig.kernel = kernel_rig(xids, len(text.splitlines()), source, first_line, None).kernel
        rig.origins["kernel.events"] = f"{source}:{xids[0].line}"
    _gpus_from_labels(rig, labels, source)
    if "nvidia.com/gpu.count" not in labels:
        _gpus_from_resource(rig, resource, source)
    _resource_checks(rig, name, labels, resource, blocks, source)
    ready: tuple[str, str, str, int] | None = got.get("ready")  # type: ignore[assignment]
    if ready is not None and ready[0] != "True":
        _node_check(rig, name, f"Ready={ready[0]} {ready[1]}: {ready[2]}", f"{source}:{ready[3]}")
    if "unschedulable" in got:
        taints = f" (Taints: {got['taints']})" if "taints" in got else ""
        _node_check(rig, name, f"Unschedulable: true{taints}", f"{source}:{got['unschedulable']}")
    return rig


def parse_pods(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Each GPU operator or device plugin pod whose STATUS is a crash loop or an error, as a warning."""
    rig = Rig()
    lines = clean_lines(text)
    last = last_line_shown(lines)
    namespaced = False
    checks: list[HealthCheck] = []
    for k, line in enumerate(lines):
        if k == last and not text.endswith("\n"):
            break  # a cut last line is not shown
        if h := _HEADER.match(line):
            namespaced = h.group(1) is not None
            continue
        m = _ROW.match(line)
        if m is None or (m.group(1) is not None) != namespaced:
            continue
        pod, status, restarts = m.group(2), m.group(4), m.group(5)
        component = _COMPONENT.match(pod)
        if component is None or not _BAD.search(status):
            continue
        last_restart = f" {m.group(6).strip()}" if m.group(6) else ""
        detail = f"{component.group(1)} pod STATUS {status}, READY {m.group(3)}, RESTARTS {restarts}{last_restart}"
        checks.append(HealthCheck(TOOL, f"pod {pod}", "warn", detail, [], None, f"{source}:{first_line + k}"))
    rig.node.health_checks = checks
    return rig
