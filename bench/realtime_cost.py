"""Real-time cost of the graph (issue 24's targets), as ratios to the single-process loop measured in the same run:
the whole graph's CPU seconds per simulated second in real time (default `vasimov up`), idle and with the real
`menlo` CLI walking the robot (stand, balance, walk at 0.3 m/s), against the single-process loop's; with the
achieved real-time factor (from outside, `/api/sim/truth`), the SDK state rate on the wall clock (frames counted by
the bridge over the window) and the plant's control-tick lateness and control period (its exit summary).

CPU is sampled from outside (every process of the launch, main and DDS threads alike) over the same wall window as
the simulated time; a shared machine disturbs the ratios least, so compare ratios from one run, never across runs.
Figures only; asserts nothing. (re-runs itself in a private network namespace when root: the SDK's ports are fixed)

Usage: .venv/bin/python bench/realtime_cost.py [--seconds 20] [--sim-seconds 20] [--no-walk] [--no-foxglove]
       [--against NAME:=VALUE ...] [--against-env VAR=VALUE ...] [--pairs N] [--profile DIR]

``--against`` adds a second variant of the graph (the default launch with those launch arguments, and/or with those
environment variables for every node: ``--against-env VASIMOV_EXECUTOR=single``); each run of the default is then
followed by one of the variant, ``--pairs`` times, alternating, so a change is judged before vs
after in one session (the machine's drift lands on both sides).
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test"))
from common import ROOT, VENV_BIN, CpuSampler, graph_env
from foxglove_client import FoxgloveWsClient
from graph_speed import single_process_rtf
from harness import http_json, http_json_when_ready, run_menlo, wait_for
from realtime_load import _in_private_netns

from vasimov.ros import topics

API = "http://127.0.0.1:3000"
TARGET_IDLE, TARGET_CLIENT = 4.0, 6.0  # issue 24: graph CPU per simulated second <= these x the single-process loop
GRAPH_BACKEND = "builtin"  # the policy runner's default backend (`vasimov up` without --policy)
FOXGLOVE_URL = "ws://127.0.0.1:8765"
# What the Foxglove app subscribes to when it opens config/foxglove_layout.json: the 3D view (URDF, links, the scene's
# ground), the head camera's JPEG and calibration, the first tab (Joints: measured and target angles).
LAYOUT_ON_OPEN = (topics.ROBOT_DESCRIPTION, topics.FOXGLOVE_TF, topics.FOXGLOVE_SCENE, topics.CAMERA_COLOR_COMPRESSED,
                  topics.CAMERA_COLOR_INFO, topics.JOINT_STATES, topics.MOTOR_COMMAND)


def one_run(seconds: float, walk: bool, domain: int, launch_args: tuple[str, ...] = (),
            env: dict[str, str] | None = None, foxglove: bool = False, profile: Path | None = None) -> dict:
    log = tempfile.NamedTemporaryFile(prefix="vasimov-rtcost-", suffix=".log", delete=False)  # noqa: SIM115
    proc = subprocess.Popen([str(VENV_BIN / "vasimov"), "up", *launch_args], env={**graph_env(domain), **(env or {})},
                            stdout=log,
                            stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    out = lambda: Path(log.name).read_text(errors="replace")  # noqa: E731
    result: dict = {"walk": walk}
    sampler = CpuSampler(proc.pid, period=0.2)
    walker: threading.Thread | None = None
    client: FoxgloveWsClient | None = None
    subs: dict[str, int] = {}
    try:
        wait_for(lambda: "SDK bridge ready" in out() and "plant ready" in out(), 90, "graph start")
        http_json_when_ready(f"{API}/api/sim/truth")
        with tempfile.TemporaryDirectory(prefix="menlo-home-") as home:
            if walk:
                run_menlo("robots", "add", "sim", "--mode", "udp", "--udp", "127.0.0.1", home=home)
                r = run_menlo("stand", "-y", home=home)
                if r.returncode != 0:
                    raise RuntimeError(f"menlo stand failed ({r.returncode}): {r.stdout[-500:]} {r.stderr[-500:]}")
                r = run_menlo("balance", "-y", home=home)
                if r.returncode != 0:
                    raise RuntimeError(f"menlo balance failed ({r.returncode}): {r.stdout[-500:]} {r.stderr[-500:]}")
                walker = threading.Thread(target=run_menlo, args=("walk", "-y", "--vx", "0.3", "--duration",
                                                                  str(seconds + 5)),
                                          kwargs={"home": home, "timeout": seconds + 60}, daemon=True)
                walker.start()
            if foxglove:
                client = FoxgloveWsClient(FOXGLOVE_URL)
                subs = {t: client.subscribe(t) for t in LAYOUT_ON_OPEN}
            time.sleep(2.0)  # a benchmark's settling pause (the walk starting), not a test wait
            c0, t0 = sampler.snapshot(), time.monotonic()
            s0 = http_json(f"{API}/api/sim/truth")["sim_time"]
            f0 = http_json(f"{API}/api/sim/counters")["state_frames_sent"]
            m0 = {t: len(client.received(i)) for t, i in subs.items()} if client else {}
            spies = _start_profiles(profile, sampler.pids, seconds) if profile is not None else []
            threads0 = {n: _thread_cpu(pid) for n, pid in sampler.pids.items()} if profile is not None else {}
            time.sleep(seconds)  # the measured wall-clock window
            if profile is not None:
                _write_thread_cpu(profile, threads0, sampler.pids)
            for spy in spies:
                spy.wait(timeout=30)
            c1, t1 = sampler.snapshot(), time.monotonic()
            s1 = http_json(f"{API}/api/sim/truth")["sim_time"]
            f1 = http_json(f"{API}/api/sim/counters")["state_frames_sent"]
            if client is not None:
                result["foxglove_hz"] = {t: round((len(client.received(i)) - m0[t]) / (t1 - t0), 1)
                                         for t, i in subs.items()}
            if walker is not None:
                walker.join(timeout=seconds + 60)
    finally:
        if client is not None:
            client.close()
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        sampler.stop()
    per_proc = {k: round(c1.get(k, 0.0) - c0.get(k, 0.0), 2) for k in c1}
    sim = s1 - s0
    result.update(sim_s=sim, wall_s=t1 - t0, rtf_outside=sim / (t1 - t0), sdk_hz=(f1 - f0) / (t1 - t0),
                  cpu_per_sim_s=sum(per_proc.values()) / sim if sim > 0 else float("nan"), cpu_seconds=per_proc)
    m = re.search(r"realtime stats: (\{.*\})", out())
    if m is not None:
        result["plant"] = json.loads(m.group(1))
    Path(log.name).unlink()
    return result


def _start_profiles(out: Path, pids: dict[str, int], seconds: float) -> list[subprocess.Popen]:
    """py-spy on every node process over the window (``--profile``): a collapsed-stack file per node, thread ids in
    the stacks (and ``<node>.threads.json``, each thread's CPU seconds over the window, from /proc). Sampling costs
    the sampled processes a little: compare such runs only with each other."""
    spy = VENV_BIN / "py-spy"
    out.mkdir(parents=True, exist_ok=True)
    return [subprocess.Popen([str(spy), "record", "--threads", "--rate", "100", "--duration", str(int(seconds)),
                              "--format", "raw", "--output", str(out / f"{name}.txt"), "--pid", str(pid)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for name, pid in pids.items() if name.endswith("_node")]


def _thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of each thread of ``pid`` so far, by "tid name" (from /proc: py-spy's idle detection is not to be
    trusted here, it counted threads blocked in a lock or recv as busy)."""
    import os

    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        fields = text[text.rindex(")") + 2:].split()
        out[f"{stat.parent.name} {name}"] = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return out


def _write_thread_cpu(out: Path, before: dict[str, dict[str, float]], pids: dict[str, int]) -> None:
    for name, pid in pids.items():
        now = _thread_cpu(pid)
        delta = {k: round(v - before.get(name, {}).get(k, 0.0), 2) for k, v in now.items()}
        (out / f"{name}.threads.json").write_text(json.dumps(dict(sorted(delta.items(), key=lambda kv: -kv[1])),
                                                             indent=1) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="measured wall window per run")
    ap.add_argument("--sim-seconds", type=float, default=20.0, help="the single-process loop's run")
    ap.add_argument("--no-walk", action="store_true", help="idle only")
    ap.add_argument("--no-paced", action="store_true",
                    help="skip the single-process loop paced in real time (2 x --sim-seconds of wall time)")
    ap.add_argument("--no-foxglove", action="store_true", help="no Foxglove client while the SDK walks the robot")
    ap.add_argument("--profile", type=Path, default=None, metavar="DIR",
                    help="py-spy every node over each window (DIR/<run>/<node>.txt, collapsed stacks; needs py-spy)")
    ap.add_argument("--against", nargs="+", default=[], metavar="NAME:=VALUE",
                    help="launch arguments of a second variant, run alternately with the default")
    ap.add_argument("--against-env", nargs="+", default=[], metavar="VAR=VALUE",
                    help="environment of a second variant (e.g. VASIMOV_EXECUTOR=single), run alternately")
    ap.add_argument("--pairs", type=int, default=1, help="default/variant pairs (with --against)")
    ns = ap.parse_args()
    if any(":=" not in a for a in ns.against):
        ap.error("--against takes launch arguments written NAME:=VALUE")
    if any("=" not in a or ":=" in a for a in ns.against_env):
        ap.error("--against-env takes environment variables written VAR=VALUE")
    against_env = dict(a.split("=", 1) for a in ns.against_env)
    variant = bool(ns.against or against_env)
    if ns.profile is not None and not (VENV_BIN / "py-spy").exists():
        ap.error(f"--profile needs py-spy in the venv (not a project dependency): {VENV_BIN / 'pip'} install py-spy")
    _in_private_netns()
    from vasimov_edge.policy.synthetic import make_mlp_policy

    with tempfile.TemporaryDirectory() as tmp:
        policy = make_mlp_policy(Path(tmp) / "mlp.onnx", seed=0)
        _, single_cpu = single_process_rtf(str(policy), ns.sim_seconds)
        print(f"single-process closed loop: {single_cpu:.3f} CPU s per simulated second", flush=True)
        paced: dict[str, float] = {}
        if not ns.no_paced:
            # the same loop held to the wall clock (the graph's pace), with the MLP and with the graph's own default
            # backend: what of the ratio above is pacing and backend rather than messages (docs/performance.md)
            for name, spec in (("MLP", str(policy)), (GRAPH_BACKEND, GRAPH_BACKEND)):
                paced[name] = single_process_rtf(spec, ns.sim_seconds, paced=True)[1]
            print(f"  the same loop paced in real time: {paced['MLP']:.3f} CPU s per simulated second with the MLP "
                  f"({paced['MLP'] / single_cpu:.1f}x flat out), {paced[GRAPH_BACKEND]:.3f} with the graph's backend "
                  f"({GRAPH_BACKEND})", flush=True)
    runs = [("idle (no client)", False, TARGET_IDLE)]
    if not ns.no_walk:
        runs.append(("menlo walking the robot" + ("" if ns.no_foxglove else ", Foxglove client on the layout"), True,
                     TARGET_CLIENT))
    variants: list[tuple[str, tuple[str, ...], dict[str, str]]] = [("default", (), {})]
    if variant:
        variants.append((" ".join([*ns.against, *ns.against_env]), tuple(ns.against), against_env))
    plan = [(f"{label}, {name}", walk, target, args, env)
            for _ in range(max(1, ns.pairs) if variant else 1)
            for label, walk, target in runs for name, args, env in variants]
    for i, (label, walk, target, args, env) in enumerate(plan):
        r = one_run(ns.seconds, walk, 120 + i % 50, args, env, foxglove=walk and not ns.no_foxglove,
                    profile=None if ns.profile is None else ns.profile / f"run{i}-{'walk' if walk else 'idle'}")
        p = r.get("plant", {})
        ratio = r["cpu_per_sim_s"] / single_cpu
        print(f"real time, {label}, {r['wall_s']:.0f} s: graph CPU {r['cpu_per_sim_s']:.3f} s per simulated second "
              f"= {ratio:.1f}x the single-process loop (target <= {target:g}x: {'met' if ratio <= target else 'MISSED'}"
              f"); real-time factor {r['rtf_outside']:.3f} (target >= 0.99); SDK state {r['sdk_hz']:.1f} Hz (target "
              f">= 195); plant's whole run: lateness p99 {p.get('p99_ms', float('nan')):.2f} ms (target <= 2), "
              f"control period p99 {p.get('period_p99_ms', float('nan')):.2f} ms", flush=True)
        if GRAPH_BACKEND in paced:
            print(f"  = {r['cpu_per_sim_s'] / paced[GRAPH_BACKEND]:.1f}x the single-process loop paced in real time "
                  f"with the graph's backend ({GRAPH_BACKEND}, standing): what the separate processes and their "
                  f"messages{', the walk and the clients' if walk else ''} add to the same work at the same pace "
                  "(no target of its own; the target is on the ratio above)", flush=True)
        if "foxglove_hz" in r:
            print("  Foxglove client, messages per wall second: " + ", ".join(f"{k} {v:g}" for k, v in
                                                                             r["foxglove_hz"].items()))
        print("  CPU s per process over the window: " + ", ".join(f"{k} {v:.2f}" for k, v in
                                                                sorted(r["cpu_seconds"].items(), key=lambda x: -x[1])))
        print(json.dumps({**r, "launch_args": list(args), "env": env, "single_cpu_per_sim_s": single_cpu,
                          "cpu_ratio": ratio, "paced_single_cpu_per_sim_s": paced}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
