"""The Slurm and Kubernetes examples, run as far as one machine allows: the scripts' logic with stub
`gpuadvisor check` and `srun` commands, and the real `gpuadvisor fleet` reading what they wrote."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import fleet_synth as synth
import pytest

ROOT = Path(__file__).resolve().parent.parent
STUB = """#!{python}
import json, os, sys
args = sys.argv[1:]
if args[:1] == ["fleet"]:
    os.execv({python!r}, [{python!r}, "-m", "gpuadvisor", *args])
node = os.environ["GPUADVISOR_HOSTNAME"]
mode = os.environ.get("STUB_" + node.replace("-", "_"), "ok")
if mode == "crash":
    print("Traceback (most recent call last):\\nModuleNotFoundError: No module named 'click'", file=sys.stderr)
    sys.exit(1)
if mode == "oom":  # the out-of-memory killer
    import signal
    os.kill(os.getpid(), signal.SIGKILL)
if mode == "hang":
    import time
    time.sleep(60)
if mode == "diskfull":
    print("gpuadvisor: error: cannot write the scan: No space left on device", file=sys.stderr)
    sys.exit(2)
if mode == "nogpu":
    print("gpuadvisor: error: no GPU to check on " + node + ": no NVIDIA driver loaded", file=sys.stderr)
    sys.exit(2)
if "--format" in args:  # npd-check.sh: check --format json
    print(json.dumps({{"summary": "GA104 ecc-uncorrected: GPU 3", "verdict": "failing", "exit_code": 1}}))
    sys.exit(1)
path = args[args.index("--json") + 1]
scan = json.load(open(os.environ["STUB_SCAN"]))
scan["host"]["hostname"] = node
json.dump(scan, open(path, "w"))
sys.exit(1 if mode == "fails" else 0)
"""


@pytest.fixture()
def stubs(tmp_path):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    g = bin_ / "gpuadvisor"
    g.write_text(STUB.format(python=sys.executable))
    g.chmod(0o755)
    srun = bin_ / "srun"  # runs the step once per "node" of FAKE_NODES, as srun --ntasks-per-node=1 would
    srun.write_text(
        '#!/bin/sh\nwhile [ "${1#--}" != "$1" ]; do shift; done\n'
        'for n in $FAKE_NODES; do SLURMD_NODENAME=$n "$@"; done\nexit 0\n'
    )
    srun.chmod(0o755)
    scan = tmp_path / "base.json"
    scan.write_text(json.dumps(synth.node_scan("x", __import__("random").Random(0))))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "GPUADVISOR"))}
    env.update(PATH=f"{bin_}{os.pathsep}{env['PATH']}", STUB_SCAN=str(scan), PYTHON=sys.executable)
    return env


def test_node_check_writes_the_scan_or_a_failure_record(stubs, tmp_path):
    d = tmp_path / "scans"
    sh = str(ROOT / "examples/slurm/node-check.sh")
    ok = subprocess.run(["sh", sh, str(d)], env={**stubs, "SLURMD_NODENAME": "gpu-a"}, capture_output=True, text=True)
    bad = subprocess.run(
        ["sh", sh, str(d)], env={**stubs, "NODE_NAME": "gpu-b", "STUB_gpu_b": "nogpu"}, capture_output=True, text=True
    )
    assert (ok.returncode, bad.returncode) == (0, 2)
    assert sorted(p.name for p in d.iterdir()) == ["gpu-a.json", "gpu-b.json"]  # no partial file left
    assert json.loads((d / "gpu-a.json").read_text())["host"]["hostname"] == "gpu-a"
    rec = json.loads((d / "gpu-b.json").read_text())
    assert (rec["kind"], rec["hostname"], rec["exit_code"]) == ("gpuadvisor-node-error", "gpu-b", 2)
    assert rec["error"] == "gpuadvisor: error: no GPU to check on gpu-b: no NVIDIA driver loaded"
    p = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "fleet", str(d), "--format", "json"], capture_output=True, text=True
    )
    doc = json.loads(p.stdout)
    status = {n["name"]: n["status"] for n in doc["nodes"]}
    assert status == {"gpu-a": "ok", "gpu-b": "failed"} and p.returncode == 1


def test_sbatch_script_checks_every_node_and_names_the_missing_one(stubs, tmp_path):
    env = {**stubs, "FAKE_NODES": "n1 n2 n4", "SLURM_JOB_NODELIST": "n[1-4]", "SLURM_JOB_ID": "77", "STUB_n2": "fails"}
    p = subprocess.run(
        ["bash", str(ROOT / "examples/slurm/fleet-check.sbatch")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 1, p.stderr
    scans = tmp_path / "scans" / "77"
    assert sorted(q.name for q in scans.iterdir()) == ["n1.json", "n2.json", "n4.json"]
    doc = json.loads((tmp_path / "scans" / "77.json").read_text())
    assert {n["name"]: n["status"] for n in doc["nodes"]} == {"n1": "ok", "n2": "ok", "n3": "missing", "n4": "ok"}
    assert (tmp_path / "scans" / "77.html").read_text().startswith("<!DOCTYPE html>")


def test_npd_plugin_prints_one_line_and_keeps_the_exit_code(stubs):
    sh = str(ROOT / "examples/k8s/npd-check.sh")
    p = subprocess.run(["sh", sh], env={**stubs, "GPUADVISOR_HOSTNAME": "g1"}, capture_output=True, text=True)
    assert (p.returncode, p.stdout) == (1, "GA104 ecc-uncorrected: GPU 3\n")
    p = subprocess.run(
        ["sh", sh], env={**stubs, "GPUADVISOR_HOSTNAME": "g2", "STUB_g2": "nogpu"}, capture_output=True, text=True
    )
    assert (p.returncode, p.stdout) == (2, "gpuadvisor check could not run (exit 2); not a node problem\n")
    cfg = json.loads((ROOT / "examples/k8s/npd-gpuadvisor.json").read_text())
    assert cfg["plugin"] == "custom" and cfg["pluginConfig"]["max_output_length"] == 80
    assert cfg["rules"][0]["path"].endswith("examples/k8s/npd-check.sh")


def test_npd_plugin_never_reports_a_crash_of_the_tool_as_a_node_problem(stubs):
    sh = str(ROOT / "examples/k8s/npd-check.sh")
    p = subprocess.run(
        ["sh", sh],
        env={**stubs, "GPUADVISOR_HOSTNAME": "g3", "STUB_g3": "crash"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (p.returncode, p.stdout) == (2, "gpuadvisor check could not run (exit 1); not a node problem\n")


def test_node_check_reports_a_wedged_check_as_failed_within_its_timeout(stubs, tmp_path):
    d = tmp_path / "scans"
    sh = str(ROOT / "examples/slurm/node-check.sh")
    p = subprocess.run(  # a hang past the 50 s here fails the test; the kill at 2 s is shown by 124 and the record
        ["sh", sh, str(d)],
        env={**stubs, "SLURMD_NODENAME": "gpu-w", "STUB_gpu_w": "hang", "GPUADVISOR_TIMEOUT": "2"},
        capture_output=True,
        text=True,
        timeout=50,
    )
    assert p.returncode == 124
    rec = json.loads((d / "gpu-w.json").read_text())
    assert rec["kind"] == "gpuadvisor-node-error" and rec["error"] == "gpuadvisor check timed out after 2 s (killed)"


def test_node_check_tells_a_sigkill_from_a_time_out(stubs, tmp_path):
    d = tmp_path / "scans"
    sh = str(ROOT / "examples/slurm/node-check.sh")
    p = subprocess.run(
        ["sh", sh, str(d)],
        env={**stubs, "SLURMD_NODENAME": "gpu-k", "STUB_gpu_k": "oom", "GPUADVISOR_TIMEOUT": "600"},
        capture_output=True,
        text=True,
        timeout=50,
    )
    assert p.returncode == 137
    rec = json.loads((d / "gpu-k.json").read_text())
    assert rec["kind"] == "gpuadvisor-node-error" and rec["exit_code"] == 137
    assert rec["error"].startswith("gpuadvisor check was killed (SIGKILL) after ")
    assert rec["error"].endswith(" s, before the 600 s limit: out of memory? (dmesg)")


def test_node_check_keeps_the_previous_scan_when_the_disk_is_full(stubs, tmp_path):
    d = tmp_path / "scans"
    d.mkdir()
    good = d / "gpu-f.json"
    good.write_text('{"kind": "gpuadvisor-scan", "previous": true}')
    full = tmp_path / "python-on-a-full-disk"  # opens its output (0 bytes), then the write fails: ENOSPC
    full.write_text('#!/bin/sh\n: > "$5"\necho "OSError: [Errno 28] No space left on device" >&2\nexit 1\n')
    full.chmod(0o755)
    sh = str(ROOT / "examples/slurm/node-check.sh")
    p = subprocess.run(
        ["sh", sh, str(d)],
        env={**stubs, "SLURMD_NODENAME": "gpu-f", "STUB_gpu_f": "diskfull", "PYTHON": str(full)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2
    assert good.read_text() == '{"kind": "gpuadvisor-scan", "previous": true}'
    assert sorted(q.name for q in d.iterdir()) == ["gpu-f.json"]
    assert "cannot write the failure record" in p.stderr


# -- the manifests and scripts pass a schema validator and shellcheck ------------------------------------

RULES = ROOT / "examples/k8s/prometheus-rules.yaml"  # Prometheus alerting rules, not a Kubernetes object
K8S = sorted(p for p in (ROOT / "examples/k8s").glob("*.yaml") if p != RULES)
SCRIPTS = sorted(
    [
        *(ROOT / "examples/slurm").glob("*.sh"),
        *(ROOT / "examples/slurm").glob("*.sbatch"),
        *(ROOT / "examples/k8s").glob("*.sh"),
        *(ROOT / "examples/ci").glob("*.sh"),
    ]
)


def _check_model(obj, type_name: str, where: str) -> None:
    """Every key of ``obj`` is a field of the Kubernetes API type ``type_name`` (the kubernetes client's models,
    generated from the API's OpenAPI schema), recursively, with lists and maps of the declared types."""
    from kubernetes.client import models

    if type_name.startswith("list["):
        assert isinstance(obj, list), f"{where}: expected a list"
        for i, x in enumerate(obj):
            _check_model(x, type_name[5:-1], f"{where}[{i}]")
        return
    if type_name.startswith("dict("):
        assert isinstance(obj, dict), f"{where}: expected a map"
        inner = type_name[5:-1].split(", ", 1)[1]
        for k, v in obj.items():
            _check_model(v, inner, f"{where}.{k}")
        return
    klass = getattr(models, type_name, None)
    if klass is None:  # a primitive: str, int, bool, object, datetime
        prim = {"str": str, "int": int, "bool": bool}.get(type_name)
        assert prim is None or isinstance(obj, prim), f"{where}: {obj!r} is not {type_name}"
        return
    assert isinstance(obj, dict), f"{where}: expected an object ({type_name})"
    fields = {v: k for k, v in klass.attribute_map.items()}
    for k, v in obj.items():
        assert k in fields, f"{where}: {k!r} is not a field of {type_name}"
        _check_model(v, klass.openapi_types[fields[k]], f"{where}.{k}")


def _documents():
    yaml = pytest.importorskip("yaml")
    for path in K8S:
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                yield path.name, doc


@pytest.mark.parametrize("name", [p.name for p in K8S])
def test_kubernetes_manifests_validate_against_the_api_models(name):
    pytest.importorskip("kubernetes", reason="the test extra kubernetes (its models) validates the manifests")
    from kubernetes.client import ApiClient

    api = ApiClient()
    for fname, doc in _documents():
        if fname != name:
            continue
        kind = f"V1{doc['kind']}"
        _check_model(doc, kind, f"{fname}:{doc['kind']}")
        api._ApiClient__deserialize(doc, kind)  # required fields (containers, selector, ...) present


def _pods() -> dict[str, dict]:
    """Each workload's pod spec and document, by the workload's name."""
    out = {}
    for _, doc in _documents():
        spec = doc.get("spec", {})
        tmpl = spec.get("jobTemplate", {}).get("spec", spec).get("template", {}).get("spec")
        if tmpl:
            out[doc["metadata"]["name"]] = {"pod": tmpl, "doc": doc}
    return out


def _env(container: dict) -> dict[str, str | None]:
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def _mounts(pod: dict) -> dict[str, tuple[dict, dict]]:
    """mountPath -> (the volume mount, its volume) of the pod's first container."""
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    return {m["mountPath"]: (m, volumes[m["name"]]) for m in pod["containers"][0].get("volumeMounts", [])}


def test_passive_daemonset_holds_no_gpu_and_the_benchmark_job_finishes():
    pods = _pods()
    ds = pods["gpuadvisor-node-check"]["pod"]
    for c in ds["containers"]:
        res = c.get("resources", {})
        assert not any("nvidia.com/gpu" in (res.get(k) or {}) for k in ("limits", "requests"))
        env = _env(c)
        assert env["GPUADVISOR_BENCH"] == "0" and env["NVIDIA_VISIBLE_DEVICES"] == "all"
    assert ds["runtimeClassName"] == "nvidia"
    job = pods["gpuadvisor-node-bench"]
    spec = job["doc"]["spec"]["jobTemplate"]["spec"]
    (c,) = job["pod"]["containers"]
    assert int(c["resources"]["limits"]["nvidia.com/gpu"]) == int(job["pod"]["nodeSelector"]["nvidia.com/gpu.count"])
    assert job["pod"]["restartPolicy"] == "Never" and "sleep" not in " ".join(c["command"])
    assert int(_env(c)["GPUADVISOR_TIMEOUT"] or 0) < spec["activeDeadlineSeconds"]


def test_the_passive_check_sees_the_node_not_its_container():
    """/dev/shm and /dev/kmsg are the host's (the container's own /dev/shm is 64 MiB; /dev/kmsg is not there),
    read-only; privileged is what lets the check open /dev/kmsg and get the GPUs from a hardened toolkit, and
    the manifest says so; nothing else of the host is shared."""
    ds = _pods()["gpuadvisor-node-check"]
    pod, (c,) = ds["pod"], ds["pod"]["containers"]
    mounts = _mounts(pod)
    for path, kind in (("/dev/shm", "Directory"), ("/dev/kmsg", "CharDevice"), ("/sys", "Directory")):
        mount, volume = mounts[path]
        assert volume["hostPath"] == {"path": path, "type": kind} and mount["readOnly"] is True, path
    assert c["securityContext"] == {"privileged": True}
    assert not any(pod.get(k) for k in ("hostPID", "hostIPC", "hostNetwork"))
    text = (ROOT / "examples/k8s/node-check-daemonset.yaml").read_text()
    for why in ("accept-nvidia-visible-devices-envvar-when-unprivileged", "CAP_SYSLOG", "RLIMIT_MEMLOCK", "GA812"):
        assert why in text, why


def test_the_benchmark_gets_its_gpus_from_the_device_plugin_and_writes_one_directory_per_round():
    job = _pods()["gpuadvisor-node-bench"]
    pod, (c,) = job["pod"], job["pod"]["containers"]
    env = {e["name"]: e for e in c["env"]}
    assert not any(name.startswith("NVIDIA_") for name in env)  # a hardened toolkit ignores or refuses it
    assert "privileged" not in str(c.get("securityContext", {}))
    assert c["command"][-1] == "/scans/bench/$(ROUND)"
    assert env["ROUND"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.labels['batch.kubernetes.io/job-name']"
    mount, volume = _mounts(pod)["/dev/shm"]
    assert volume["emptyDir"]["medium"] == "Memory"
    assert job["doc"]["kind"] == "CronJob" and job["doc"]["spec"]["concurrencyPolicy"] == "Forbid"


def test_cronjob_passes_the_node_list_and_a_policy_that_fails_stale_scans():
    cron = _pods()["gpuadvisor-fleet-report"]
    (c,) = cron["pod"]["containers"]
    assert c["command"] == ["sh", "/opt/gpuadvisor/examples/k8s/fleet-report.sh"]
    env = _env(c)
    assert env["NODES_FILE"] == "/config/nodes.txt" and env["POLICY_FILE"] == "/config/policy.toml"
    assert env["PUSHGATEWAY"], "the metrics must reach something that alerts"
    assert any(v.get("configMap", {}).get("name") == "gpuadvisor-nodes" for v in cron["pod"]["volumes"])
    tomllib = pytest.importorskip("tomllib")
    (cm,) = [doc for _, doc in _documents() if doc["kind"] == "ConfigMap"]
    assert tomllib.loads(cm["data"]["policy.toml"])["fleet"]["fail"] == ["stale"]
    script = (ROOT / "examples/k8s/fleet-report.sh").read_text()
    assert '--expect-file "$NODES_FILE"' in script and "test $? -le 1" not in script


def test_sbatch_requests_the_gpus_and_bounds_each_step():
    text = (ROOT / "examples/slurm/fleet-check.sbatch").read_text()
    assert "#SBATCH --gpus-per-node=8" in text
    step = next(ln for ln in text.splitlines() if ln.startswith("srun "))
    assert "--gpus-per-node=" in step
    step_min = int(step.split("--time=")[1].split()[0])
    job_h, job_m, job_s = map(int, text.split("#SBATCH --time=")[1].split()[0].split(":"))
    node_s = int(text.split("GPUADVISOR_TIMEOUT:-")[1].split("}")[0])
    assert node_s < step_min * 60 < job_h * 3600 + job_m * 60 + job_s


def test_sbatch_reports_a_wedged_node_as_failed_and_judges_the_rest(stubs, tmp_path):
    env = {
        **stubs,
        "FAKE_NODES": "n1 n2 n3",
        "SLURM_JOB_NODELIST": "n[1-3]",
        "SLURM_JOB_ID": "78",
        "STUB_n2": "hang",
        "GPUADVISOR_TIMEOUT": "2",
    }
    p = subprocess.run(
        ["bash", str(ROOT / "examples/slurm/fleet-check.sbatch")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 1, p.stderr
    doc = json.loads((tmp_path / "scans" / "78.json").read_text())
    nodes = {n["name"]: n for n in doc["nodes"]}
    assert {k: v["status"] for k, v in nodes.items()} == {"n1": "ok", "n2": "failed", "n3": "ok"}
    assert "timed out after 2 s" in nodes["n2"]["error"]


def test_scripts_pass_shellcheck():
    if shutil.which("shellcheck") is None:
        if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
            pytest.fail("shellcheck is required under CI (make setup installs the Debian package shellcheck)")
        pytest.skip("shellcheck not installed (make setup installs it; apt-get install shellcheck)")
    p = subprocess.run(["shellcheck", *map(str, SCRIPTS)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout


def test_the_validator_rejects_a_misspelt_field_and_a_missing_container():
    pytest.importorskip("kubernetes")
    from kubernetes.client import ApiClient

    with pytest.raises(AssertionError, match="'resource' is not a field of V1Container"):
        _check_model({"name": "x", "resource": {}}, "V1Container", "c")
    with pytest.raises(ValueError):
        ApiClient()._ApiClient__deserialize({"spec": {"template": {"spec": {}}}}, "V1Job")
