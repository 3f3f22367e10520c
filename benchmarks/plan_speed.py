"""How long `gpuadvisor plan` takes for the built-in builds (it must feel instant).

Runs the real command in a fresh process (start-up included), median of N runs, for each of the four
workloads the README shows, and the in-process time per build. Wall time and CPU time (user + system of the
process: what the command costs, less sensitive than wall time to other processes sharing the CPUs) are both
shown. The processes run with compiled bytecode, as an installed package has it (pip compiles at install): an
untimed first run fills a bytecode cache in a temporary folder, even where PYTHONDONTWRITEBYTECODE is set (it
would have every run compile the package's modules from source again). Usage: python benchmarks/plan_speed.py [N]
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

CASES = [
    ("8B full fine-tune, 1e9 tokens", ["--model", "llama-3-8b", "--task", "full", "--tokens", "1e9"]),
    ("70B QLoRA, 2e8 tokens", ["--model", "llama-3-70b", "--task", "qlora", "--tokens", "2e8"]),
    ("70B training, 2e10 tokens", ["--model", "llama-3-70b", "--tokens", "2e10"]),
    (
        "70B serving, 8k x 32",
        ["--model", "llama-3-70b", "--task", "inference", "--context", "8192", "--concurrency", "32"],
    ),
]


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    print(f"gpuadvisor plan, built-in builds, median of {n} fresh processes (start-up included)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="gpuadvisor-bench-pyc-")
    for label, args in CASES:
        times, cpus = [], []
        command = [sys.executable, "-m", "gpuadvisor", "plan", *args]
        subprocess.run(command, check=True, capture_output=True, env=env)  # untimed: fills the bytecode cache
        for _ in range(n):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True, env=env)
            times.append(time.perf_counter() - t)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        print(
            f"  {label:32s} {statistics.median(times):6.2f} s  (min {min(times):.2f}, max {max(times):.2f}); "
            f"CPU {statistics.median(cpus):.2f} s (least {min(cpus):.2f})"
        )
    from gpuadvisor.catalog.platforms import load_prices
    from gpuadvisor.plan import Need, builtin_builds, run_plan

    builds = builtin_builds()
    t, c = time.perf_counter(), time.process_time()
    run_plan(builds, Need(task="qlora", tokens=2e8), {"model": "llama-3-70b"}, prices=load_prices())
    dt, dc = time.perf_counter() - t, time.process_time() - c
    print(
        f"  in process: {len(builds)} builds in {dt:.2f} s ({dt / len(builds) * 1000:.0f} ms per build; CPU {dc:.2f} s)"
    )
    stages()


def stages() -> None:
    """Where the CPU of one plan goes (70B training on the built-in builds, in process, after start-up): the
    simulation of each build's rig, the advisor (its smallest-rig search once per workload), the rules, the rest."""
    import copy

    import gpuadvisor.advisor.advice as advice
    import gpuadvisor.advisor.search as search
    import gpuadvisor.collect as collect
    import gpuadvisor.rules as rules
    from gpuadvisor.catalog.platforms import load_prices
    from gpuadvisor.plan import Need, builtin_builds, run_plan

    spent: dict[str, float] = {}

    def timed(mod: object, name: str, label: str) -> None:
        f = getattr(mod, name)

        def wrapper(*a: object, **k: object) -> object:
            t = time.process_time()
            try:
                return f(*a, **k)
            finally:
                spent[label] = spent.get(label, 0.0) + time.process_time() - t

        setattr(mod, name, wrapper)

    timed(collect, "simulate_description", "simulating the rigs (sysfs tree in memory)")
    timed(advice, "advise", "the advisor")
    timed(search, "_search", "  of which its smallest-rig search")
    timed(search, "_search_smallest", "  of which its smallest-rig search")  # plan's: the two rigs a reason names
    timed(rules, "evaluate", "the rules")
    timed(copy, "deepcopy", "copying simulated rigs")
    search._FOUND.clear()
    search._TRIED.clear()
    c = time.process_time()
    run_plan(builtin_builds(), Need(task="train", tokens=2e10), {"model": "llama-3-70b"}, prices=load_prices())
    total = time.process_time() - c
    print(f"  where one 70B training plan's {total:.2f} s CPU goes (in process):")
    order = ["simulating the rigs (sysfs tree in memory)", "the advisor", "  of which its smallest-rig search"]
    order += ["the rules", "copying simulated rigs"]
    for label in order:
        print(f"    {label:44s} {spent.get(label, 0.0):5.2f} s")
    counted = sum(v for k, v in spent.items() if not k.startswith(" ") and "copying" not in k)
    print(f"    {'the plan itself (costs, copies, ranking)':44s} {total - counted:5.2f} s")


if __name__ == "__main__":
    main()
