"""``vasimov replay BAG [--out DIR]``: the motor commands of a recording, open loop into the plant, and how far the
replayed robot ends up from the logged one.

Why: a controller can only be judged in simulation if the simulation does what the robot does for the same motor
commands. Replaying the commands of a log without any feedback isolates the plant (physics, motor model, sensors)
from everything upstream: a bag recorded from the twin itself replays exactly (the residuals are numerical noise, a
test checks below 1e-6 rad), so whatever a robot's log leaves is the twin's plant error on that motion.

What it reads (a rosbag2 directory, see docs/recording.md, *Replay*, for the format a robot log must be converted
to): ``/vasimov/plant/state`` (PlantState, every physics step: joint position/velocity/effort, IMU; ``step`` and
``command_tick`` say which command drove each step), ``/vasimov/motor_command`` (MotorCommand per control tick),
``/vasimov/provenance`` and the bag's custom data (seed, scene, model hash), and ``/vasimov/sim/control`` (pushes).

How: a :class:`~vasimov_plant.physics.PlantCore` of the provenance's seed and scene boots as the plant node does
(gantry engaged, damping until the first command) with the logged step-0 joint positions and velocities; before each
logged step the command of its ``command_tick`` is latched (``-1``: the plant's watchdog damping), with the plant
node's gantry rule, then one physics step; the sensors are compared with the logged ones. Only the first epoch (up to
a virtual restart) is replayed. Pushes are applied at the physics step of their log time (their exact step is not
logged; in lockstep they land at a control-period boundary, so they may be up to 3 steps off). A physics fault ends
the replay there.

Residuals per joint (max |.| and RMS over the steps): position (rad), velocity (rad/s), torque (N m); the IMU's
orientation (angle, rad), angular velocity and linear acceleration (norm of the difference). Outputs: a text summary,
``DIR/replay.json`` and ``DIR/replay.html`` (the bench report's style and plot code, :mod:`vasimov_tools.bench_report`).
Exit status 0 when the replay ran, 2 when the bag cannot be replayed (the message says why).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vasimov.control_rate import CONTROL_DECIMATION, DAMP_KD
from vasimov.joints import NUM_JOINTS, SIM_NAMES
from vasimov.ros import topics
from vasimov.scenes import SceneError, custom_friction, parse_scene
from vasimov_tools import bench_report as br

REPLAY_FORMAT = 1
TOPICS = (topics.PLANT_STATE, topics.MOTOR_COMMAND, topics.PROVENANCE, topics.SIM_CONTROL)
PUSH_ACTION = 1  # SimControl.ACTION_PUSH
QUANTITIES = (("position", "rad"), ("velocity", "rad/s"), ("torque", "N m"))
IMU_QUANTITIES = (("orientation", "rad"), ("angular_velocity", "rad/s"), ("linear_acceleration", "m/s^2"))


class ReplayError(ValueError):
    """A bag that cannot be replayed; the message says what is missing."""


@dataclass
class Log:
    """What the replay needs from a bag, first epoch only, in step order."""

    states: list[Any]  # PlantState messages, steps 0..N consecutive
    commands: dict[int, Any]  # tick -> MotorCommand
    seed: int = 0
    scene_text: str = ""
    scene_mu: float | None = None  # a custom friction (not a catalog name)
    model_sha256: str = ""
    pushes: list[tuple[int, str, tuple[float, float, float], float]] = field(default_factory=list)  # step, body...
    notes: list[str] = field(default_factory=list)


# -- reading ----------------------------------------------------------------------------------------------------------
def read_bag(path: Path | str) -> Log:
    """Read the topics the replay needs (types: the installed vasimov_msgs, `bag.make_typestore`)."""
    from rosbags.rosbag2 import Reader

    from vasimov_tools.bag import make_typestore

    path = Path(path)
    if not (path / "metadata.yaml").is_file():
        raise ReplayError(f"{path}: not a rosbag2 directory (no metadata.yaml)")
    store = make_typestore()
    raw: dict[str, list[tuple[int, Any]]] = {t: [] for t in TOPICS}
    try:
        with Reader(path) as reader:
            conns = [c for c in reader.connections if c.topic in raw]
            for c, t, data in reader.messages(connections=conns):
                raw[c.topic].append((t, store.deserialize_cdr(data, c.msgtype)))
    except Exception as exc:  # rosbags' ReaderError and deserialisation errors: a broken or foreign bag
        raise ReplayError(f"{path}: cannot read the bag ({type(exc).__name__}: {exc})") from exc
    custom = _custom_data(path)
    for topic in (topics.PLANT_STATE, topics.MOTOR_COMMAND):
        if not raw[topic]:
            raise ReplayError(f"{path}: no {topic} messages; the replay needs the logged plant state and motor "
                              f"commands (see docs/recording.md, Replay)")
    states = sorted((m for _, m in raw[topics.PLANT_STATE] if m.epoch == 0), key=lambda m: m.step)
    log = Log(states=[], commands={int(m.tick): m for _, m in raw[topics.MOTOR_COMMAND] if m.epoch == 0})
    if any(m.epoch != 0 for _, m in raw[topics.PLANT_STATE]):
        log.notes.append("the log has a virtual restart: only the first epoch is replayed")
    if not states or states[0].step != 0:
        raise ReplayError(f"{path}: {topics.PLANT_STATE} does not start at step 0 (the boot state)")
    for s in states:  # consecutive steps only: a gap would replay commands against the wrong instant
        if s.step != len(log.states):
            log.notes.append(f"{topics.PLANT_STATE} has a gap after step {len(log.states) - 1}: replayed up to it")
            break
        log.states.append(s)
    if raw[topics.PROVENANCE]:
        p = raw[topics.PROVENANCE][-1][1]
        log.seed, log.model_sha256 = int(p.seed), str(p.model_sha256)
    else:
        log.notes.append("no provenance in the bag: seed 0, flat scene")
    scene = custom.get("vasimov.provenance.scene")
    if scene:
        desc = json.loads(scene)
        log.scene_text = str(desc.get("name", ""))
        fr = desc.get("friction")
        if fr is not None:
            log.scene_mu = float(fr["mu"])
            log.scene_text = str(desc.get("base", ""))
            log.notes.append(f"floor friction {fr['mu']} ({fr['name']})")
    dt_ns = 5_000_000
    for t, m in raw[topics.SIM_CONTROL]:
        if m.action == PUSH_ACTION:
            log.pushes.append((round(t / dt_ns), str(m.body), tuple(float(f) for f in m.force), float(m.duration)))
    if log.pushes:
        log.notes.append(f"{len(log.pushes)} push(es) applied at their log time (the exact step is not logged)")
    return log


def _custom_data(path: Path) -> dict[str, str]:
    import yaml

    meta = yaml.safe_load((path / "metadata.yaml").read_text(encoding="utf-8"))
    return dict(meta.get("rosbag2_bagfile_information", {}).get("custom_data") or {})


# -- replaying (pure: no rosbags, no rclpy) ---------------------------------------------------------------------------
def _angle(q1: np.ndarray, q2: np.ndarray) -> float:
    """Rotation angle between two unit quaternions (w x y z), sign-independent."""
    d = abs(float(np.dot(q1, q2))) / max(float(np.linalg.norm(q1) * np.linalg.norm(q2)), 1e-300)
    return 2.0 * math.acos(min(1.0, d))


def replay(log: Log) -> dict[str, Any]:
    """Run the log's commands through a fresh plant; the residual time series and summaries (JSON-able)."""
    from vasimov_plant.physics import PhysicsError, PlantCore

    try:
        scene = parse_scene(log.scene_text, seed=log.seed)
        if log.scene_mu is not None:
            scene = type(scene)(scene.base, custom_friction(log.scene_mu), scene.seed)
    except SceneError as exc:
        raise ReplayError(f"the bag's scene cannot be built: {exc}") from exc
    core = PlantCore(seed=log.seed, scene=scene)
    if log.model_sha256:
        from vasimov.model.mjcf import build_mjcf

        here = hashlib.sha256(build_mjcf(scene=scene).encode("utf-8")).hexdigest()  # as the recorder hashes it
        if here != log.model_sha256:
            log.notes.append(f"model differs from the logged run's (sha256 {here[:12]} here, "
                             f"{log.model_sha256[:12]} logged): residuals include the model change")
    s0 = log.states[0]
    core.reset(joint_pos=np.asarray(s0.position, dtype=float))
    v0 = np.asarray(s0.velocity, dtype=float)
    if np.any(v0 != 0.0):
        import mujoco

        core.data.qvel[core.index.dof_adr] = v0
        mujoco.mj_forward(core.model, core.data)
    zeros = np.zeros(NUM_JOINTS)
    damping = (zeros, zeros, zeros, np.full(NUM_JOINTS, DAMP_KD), zeros)
    core.set_command(*damping)  # the plant node at boot, and whenever no fresh command drives a step
    applied: int | None = -1
    pushes = sorted(log.pushes)
    res = {k: [] for k in ("t", *(q for q, _ in QUANTITIES), *(q for q, _ in IMU_QUANTITIES))}
    replayed: list[tuple[float, np.ndarray, np.ndarray]] = []  # (t, replayed q, logged q) for the plots
    end_reason = "end of the log"

    def compare(logged: Any) -> None:
        s = core.sensors()
        res["t"].append(core.time)
        res["position"].append(np.asarray(s.q) - np.asarray(logged.position))
        res["velocity"].append(np.asarray(s.qd) - np.asarray(logged.velocity))
        res["torque"].append(np.asarray(s.tau) - np.asarray(logged.effort))
        res["orientation"].append(_angle(np.asarray(s.imu_quat), np.asarray(logged.imu_orientation, dtype=float)))
        res["angular_velocity"].append(float(np.linalg.norm(s.gyro - np.asarray(logged.imu_angular_velocity))))
        res["linear_acceleration"].append(
            float(np.linalg.norm(s.accel - np.asarray(logged.imu_linear_acceleration))))
        replayed.append((core.time, np.array(s.q), np.asarray(logged.position, dtype=float)))

    compare(s0)
    for logged in log.states[1:]:
        tick = int(logged.command_tick)
        if tick != applied:
            if tick < 0:
                core.set_command(*damping)
            else:
                cmd = log.commands.get(tick)
                if cmd is None:
                    end_reason = f"no motor command for tick {tick} in the log (step {logged.step})"
                    break
                core.set_command(cmd.position, cmd.velocity, cmd.kp, cmd.kd, cmd.torque_ff)
                if core.gantry_engaged or not cmd.gantry_engaged:  # the plant node's rule: a hook once off stays off
                    core.set_gantry(bool(cmd.gantry_engaged), bool(cmd.gantry_lowering))
            applied = tick
        while pushes and pushes[0][0] <= core.step_count:
            _, body, force, duration = pushes.pop(0)
            core.apply_push(body, force, duration)
        try:
            core.step()
        except PhysicsError as exc:
            end_reason = f"physics fault at step {core.step_count}: {exc}"
            break
        compare(logged)
    return summarise(log, res, replayed, end_reason)


def summarise(log: Log, res: dict[str, list[Any]], replayed: list[Any], end_reason: str) -> dict[str, Any]:
    n = len(res["t"])
    doc: dict[str, Any] = {"format": REPLAY_FORMAT, "steps": n - 1, "logged_steps": len(log.states) - 1,
                           "sim_seconds": res["t"][-1] if n else 0.0, "seed": log.seed,
                           "scene": log.scene_text or "flat", "friction": log.scene_mu,
                           "model_sha256_logged": log.model_sha256, "end": end_reason, "notes": log.notes,
                           "joints": {}, "imu": {}}
    for q, unit in QUANTITIES:
        arr = np.abs(np.array(res[q]))  # steps x joints
        for j, name in enumerate(SIM_NAMES):
            entry = doc["joints"].setdefault(name, {})
            entry[q] = {"max": float(arr[:, j].max()), "rms": float(np.sqrt(np.mean(arr[:, j] ** 2))), "unit": unit}
        doc[f"max_{q}"] = float(arr.max())
    for q, unit in IMU_QUANTITIES:
        arr = np.abs(np.array(res[q]))
        doc["imu"][q] = {"max": float(arr.max()), "rms": float(np.sqrt(np.mean(arr ** 2))), "unit": unit}
    every = max(1, CONTROL_DECIMATION)  # the series in the JSON/plots: once per control period
    doc["series"] = {"t": [round(float(t), 6) for t in res["t"][::every]],
                     **{q: [float(np.abs(v).max()) for v in res[q][::every]] for q, _ in QUANTITIES},
                     **{q: [float(v) for v in res[q][::every]] for q, _ in IMU_QUANTITIES}}
    worst = int(np.argmax(np.abs(np.array(res["position"])).max(axis=0)))
    doc["worst_joint"] = SIM_NAMES[worst]
    doc["worst_joint_series"] = {"t": doc["series"]["t"],
                                 "replayed": [float(q[worst]) for _, q, _ in replayed[::every]],
                                 "logged": [float(p[worst]) for _, _, p in replayed[::every]]}
    return doc


# -- output -----------------------------------------------------------------------------------------------------------
def format_summary(doc: dict[str, Any]) -> str:
    lines = [f"replayed {doc['steps']} of {doc['logged_steps']} steps ({doc['sim_seconds']:.3f} s, seed "
             f"{doc['seed']}, scene {doc['scene']}): {doc['end']}"]
    lines += [f"  note: {n}" for n in doc["notes"]]
    w = max(len(n) for n in SIM_NAMES)
    lines.append(f"{'joint':<{w}} " + " ".join(f"{q[:3] + ' max':>10} {q[:3] + ' rms':>10}" for q, _ in QUANTITIES))
    for name, e in doc["joints"].items():
        lines.append(f"{name:<{w}} " + " ".join(f"{e[q]['max']:10.3g} {e[q]['rms']:10.3g}" for q, _ in QUANTITIES))
    for q, e in doc["imu"].items():
        lines.append(f"imu {q}: max {e['max']:.3g} rms {e['rms']:.3g} {e['unit']}")
    lines.append("max residual: " + ", ".join(f"{q} {doc[f'max_{q}']:.3g} {u}" for q, u in QUANTITIES))
    return "\n".join(lines)


def _series_svg(ts: Sequence[float], lines: Sequence[tuple[Sequence[float], str]], ylabel: str, title: str) -> str:
    ax = br.Axes(ts, [0.0, *(v for ys, _ in lines for v in ys)])
    body = ax.frame("t (s)", ylabel) + "".join(ax.line(ts, ys, colour) for ys, colour in lines)
    return br.svg(body, title)


def render(doc: dict[str, Any], bag: str) -> str:
    s = doc["series"]
    out = [br.page_head("vasimov replay"),
           f'<p class="meta">bag {br.esc(bag)} &middot; seed {doc["seed"]} &middot; scene {br.esc(doc["scene"])} '
           f'&middot; model sha256 (logged) {br.esc(doc["model_sha256_logged"][:16])}</p>',
           f"<p>replayed {doc['steps']} of {doc['logged_steps']} steps ({doc['sim_seconds']:.3f} s): "
           f"{br.esc(doc['end'])}</p>", *(f'<p class="meta">{br.esc(n)}</p>' for n in doc["notes"]),
           "<table><tr><th>joint</th>" + "".join(f"<th>{q} max ({u})</th><th>{q} RMS</th>" for q, u in QUANTITIES)
           + "</tr>"]
    for name, e in doc["joints"].items():
        out.append(f"<tr><td>{br.esc(name)}</td>" + "".join(f"<td>{e[q]['max']:.3g}</td><td>{e[q]['rms']:.3g}</td>"
                                                            for q, _ in QUANTITIES) + "</tr>")
    for q, e in doc["imu"].items():
        out.append(f'<tr><td>IMU {q.replace("_", " ")} ({e["unit"]})</td><td>{e["max"]:.3g}</td>'
                   f'<td>{e["rms"]:.3g}</td><td colspan="4"></td></tr>')
    out.append("</table><section><h2>residuals over time</h2>")
    for q, unit in QUANTITIES:
        out.append(_series_svg(s["t"], [(s[q], "#0969da")], f"max |{q}| ({unit})",
                               f"largest joint {q} residual per control period"))
    for q, unit in IMU_QUANTITIES:
        out.append(_series_svg(s["t"], [(s[q], "#0969da")], f"IMU {q.replace('_', ' ')} ({unit})",
                               f"IMU {q} residual"))
    w = doc["worst_joint_series"]
    out.append(_series_svg(w["t"], [(w["logged"], "#57606a"), (w["replayed"], "#e16f24")],
                           f"{doc['worst_joint']} (rad)", f"{doc['worst_joint']}: logged (grey), replayed (orange)"))
    out.append("</section></body></html>\n")
    return "\n".join(out)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="vasimov replay", description=__doc__.splitlines()[0].strip("`"))
    ap.add_argument("bag", metavar="BAG", help="rosbag2 directory (`vasimov up --record`, `vasimov record`)")
    ap.add_argument("--out", default=None, help="folder for replay.json and replay.html (default: BAG_replay)")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        doc = replay(read_bag(args.bag))
    except ReplayError as exc:
        print(f"vasimov replay: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else Path(str(Path(args.bag)).rstrip("/") + "_replay")
    out.mkdir(parents=True, exist_ok=True)
    (out / "replay.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    (out / "replay.html").write_text(render(doc, str(args.bag)), encoding="utf-8")
    print(format_summary(doc))
    print(f"report: {out / 'replay.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
