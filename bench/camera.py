"""Head camera benchmark: in a real-time graph (`vasimov up --policy hold`), three phases of equal wall time:

1. **idle**: nobody subscribes to a camera topic: the camera process's CPU (target: ~0, it reads nothing);
2. **streaming**: a subscriber takes color + depth (raw) and the JPEG: frames received per wall and per simulated
   second (target >= 10 Hz at 320x240), the camera's CPU per frame (process CPU / frames) and its render time;
3. both phases: the plant's real-time factor (simulated seconds from /clock per wall second) and the /joint_states
   rate, so "the graph keeps real time while the camera streams" is a number.

Prints one JSON line per phase and a summary line; asserts nothing (a benchmark, not a test).

Usage: .venv/bin/python bench/camera.py [--seconds 20] [--rate 15] [--width 320 --height 240]
       .venv/bin/python bench/camera.py --render-settings   # one process: MuJoCo's default looks vs the camera's
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, VENV_BIN, CpuSampler, graph_env

sys.path.insert(0, str(ROOT / "test"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="wall seconds per phase")
    ap.add_argument("--rate", type=float, default=15.0, help="camera_rate (frames per simulated second)")
    ap.add_argument("--width", type=int, default=320)
    ap.add_argument("--height", type=int, default=240)
    ap.add_argument("--domain", type=int, default=107)
    ap.add_argument("--render-settings", action="store_true",
                    help="only time one render at MuJoCo's default looks (shadows, reflections, 4x MSAA) and at the "
                         "camera's (none of them), no graph")
    ns = ap.parse_args(argv)
    if ns.render_settings:
        return render_settings(ns.width, ns.height)

    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rosgraph_msgs.msg import Clock
    from rosprobe import RosProbe
    from sensor_msgs.msg import CompressedImage, Image, JointState
    from std_msgs.msg import String

    from vasimov.ros import qos, topics
    from vasimov.ros.convert import from_stamp

    args = [str(VENV_BIN / "vasimov"), "up", "--policy", "hold", "foxglove:=false", "binary_stream:=false",
            f"camera_rate:={ns.rate}", f"camera_width:={ns.width}", f"camera_height:={ns.height}"]
    proc = subprocess.Popen(args, env=graph_env(ns.domain), cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT)
    sampler = CpuSampler(proc.pid)
    probe = RosProbe(ns.domain, name="camera_bench")
    results = []
    seen: Counter[str] = Counter()

    def count(topic: str, msg_type: type, profile: QoSProfile):
        return probe.node.create_subscription(msg_type, topic, lambda _m, t=topic: seen.update((t,)), profile)

    try:
        probe.subscribe(topics.CLOCK, Clock, qos.CLOCK, keep=2)
        count(topics.JOINT_STATES, JointState, qos.TELEMETRY)
        probe.subscribe(topics.CAMERA_STATS, String, qos.LATCHED, keep=2)
        deadline = time.monotonic() + 120
        while (probe.count(topics.CLOCK) == 0 or probe.count(topics.CAMERA_STATS) == 0) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(3.0)  # past start-up

        def phase(name: str, watch: bool) -> dict:
            subs = []
            if watch:
                img = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)
                subs = [count(topics.CAMERA_COLOR, Image, img), count(topics.CAMERA_DEPTH, Image, img),
                        count(topics.CAMERA_COLOR_COMPRESSED, CompressedImage, img)]
                time.sleep(3.0)  # the camera notices, builds its GL context and model
            color_before, js_before = seen[topics.CAMERA_COLOR], seen[topics.JOINT_STATES]
            stats0 = json.loads(probe.last(topics.CAMERA_STATS).data)
            cpu0 = sampler.snapshot()
            sim0, wall0 = from_stamp(probe.last(topics.CLOCK).clock), time.monotonic()
            time.sleep(ns.seconds)
            sim1, wall1 = from_stamp(probe.last(topics.CLOCK).clock), time.monotonic()
            cpu1 = sampler.snapshot()
            stats1 = json.loads(probe.last(topics.CAMERA_STATS).data)
            frames = seen[topics.CAMERA_COLOR] - color_before
            wall, sim = wall1 - wall0, sim1 - sim0
            cam_cpu = cpu1.get("camera_node", 0.0) - cpu0.get("camera_node", 0.0)
            renders = stats1["renders"] - stats0["renders"]
            out = {"phase": name, "wall_s": round(wall, 2), "sim_s": round(sim, 2), "rtf": round(sim / wall, 3),
                   "joint_states_hz_wall": round((seen[topics.JOINT_STATES] - js_before) / wall, 1),
                   "color_frames": frames, "color_hz_wall": round(frames / wall, 2),
                   "color_hz_sim": round(frames / sim, 2) if sim > 0 else None,
                   "renders": renders, "dropped": stats1["dropped"] - stats0["dropped"],
                   "camera_cpu_s": round(cam_cpu, 2), "camera_cpu_pct": round(100 * cam_cpu / wall, 1),
                   "camera_cpu_ms_per_frame": round(1e3 * cam_cpu / renders, 1) if renders else None,
                   "render_ms_mean": stats1["render_ms_mean"], "render_cpu_ms_mean": stats1["render_cpu_ms_mean"],
                   "gl_backend": stats1["gl_backend"],
                   "graph_cpu_pct": {k: round(100 * (cpu1[k] - cpu0.get(k, 0.0)) / wall, 1) for k in sorted(cpu1)}}
            for s in subs:
                probe.node.destroy_subscription(s)
            print(json.dumps(out), flush=True)
            return out

        results.append(phase("idle", False))
        results.append(phase("streaming", True))
    finally:
        probe.close()
        proc.send_signal(2)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        sampler.stop()
    idle, stream = results
    print(f"camera {ns.width}x{ns.height} at {ns.rate:g} Hz: {stream['color_hz_wall']} color+depth frames/s (wall), "
          f"{stream['color_hz_sim']} per sim s; camera CPU {stream['camera_cpu_ms_per_frame']} ms/frame "
          f"({stream['camera_cpu_pct']} % of a core); render {stream['render_ms_mean']} ms; idle camera CPU "
          f"{idle['camera_cpu_pct']} %; RTF {idle['rtf']} idle -> {stream['rtf']} streaming; /joint_states "
          f"{idle['joint_states_hz_wall']} -> {stream['joint_states_hz_wall']} Hz")
    return 0


def render_settings(width: int, height: int, frames: int = 15) -> int:
    """Wall and CPU time per head-camera frame of the robot on the flat floor, both settings, after a warm-up."""
    from vasimov.camera import HEAD_CAMERA
    from vasimov.model.mjcf import DEFAULT_GANTRY_HEIGHT, load_model
    from vasimov.model.render import Renderer

    for fast in (False, True):
        model = load_model()
        r = Renderer.for_camera(model, HEAD_CAMERA.with_(width=width, height=height), fast=fast)
        try:
            r.data.qpos[:] = model.qpos0
            r.data.qpos[2] = DEFAULT_GANTRY_HEIGHT
            r.forward()
            r.render()
            t, c = time.perf_counter(), time.process_time()
            for _ in range(frames):
                r.render()
            wall, cpu = (time.perf_counter() - t) / frames, (time.process_time() - c) / frames
        finally:
            r.close()
        print(json.dumps({"settings": "camera (no shadows/reflections/MSAA)" if fast else
                          "MuJoCo defaults (shadows, reflections, 4x MSAA)", "width": width, "height": height,
                          "wall_ms": round(wall * 1e3, 1), "cpu_ms": round(cpu * 1e3, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
