"""`vasimov`: the command line of the twin for pip-only users (no ros2 CLI, no ros2 launch here).

    vasimov up [--lockstep --duration S] [--seed N] [--scene NAME[+FRICTION]] [--policy SPEC] [--script FILE]
               [--viewer] [--recovery] [--record DIR] [--compose] [ARG:=VALUE ...]
    vasimov scenes [--json]
    vasimov record DIR [--exclude REGEX] [--compression zstd|none] [--camera-raw]
    vasimov topics [--window S]
    vasimov echo TOPIC [--once] [--count N] [--json]
    vasimov model export DIR
    vasimov snapshot [--scene NAME] [--view third|head] [--width W --height H] OUT.png | --gallery DIR
    vasimov bench walk [NAME ...] [--set standard|viewer|all] [--policy SPEC] [--graph [--realtime]]
    vasimov bench run SUITE|FILE... [--out DIR] [--workers N] [--policy SPEC] [--ray ADDRESS]
    vasimov bench compare A B [--out DIR] [--tol-NAME X ...]
    vasimov bench compare --policy A --policy B SUITE|FILE... [--out DIR] [--workers N] [--ray ADDRESS]
    vasimov bench push-limit [--policy SPEC] [--direction front|back|left|right|all ...] [--walking VX] [--out FILE]
    vasimov bench card [--policy SPEC] [--out DIR] [--workers N] [--suites SUITE|FILE ...] [--no-push-limit]
                       [--from DIR]
    vasimov replay BAG [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vasimov_tools import launch_file


def _default_launch() -> Path:
    return launch_file.share_directory("vasimov") / "launch" / "bringup.launch.yaml"


def cmd_up(ns: argparse.Namespace) -> int:
    overrides: dict[str, str] = {}
    for item in ns.launch_args:
        if ":=" not in item:
            print(f"vasimov up: launch arguments look like name:=value, got {item!r}", file=sys.stderr)
            return 2
        k, v = item.split(":=", 1)
        overrides[k] = v
    if ns.lockstep:
        overrides["lockstep"] = "true"
    if ns.duration is not None:
        if ns.duration < 0:
            print("vasimov up: --duration must be >= 0", file=sys.stderr)
            return 2
        overrides["duration"] = repr(float(ns.duration))
    if ns.lockstep and not ns.duration:
        print("vasimov up: --lockstep needs --duration SECONDS (a lockstep run is a bounded batch run)",
              file=sys.stderr)
        return 2
    if ns.seed is not None:
        overrides["seed"] = str(ns.seed)
    if ns.policy is not None:
        overrides["policy"] = ns.policy
    if ns.scene is not None:
        overrides["scene"] = ns.scene
    if ns.realism is not None:
        overrides["realism"] = ns.realism
    if ns.script is not None:
        script = Path(ns.script).resolve()
        if not script.is_file():
            print(f"vasimov up: command script {script} not found", file=sys.stderr)
            return 2
        overrides["command_script"] = str(script)
    if ns.viewer:
        overrides["viewer"] = "true"
    if ns.recovery:
        overrides["recovery"] = "true"
    try:
        desc = launch_file.load(ns.launch, overrides)
        if ns.record is not None:
            desc = with_recorder(desc, Path(ns.launch), overrides, Path(ns.record))
        _check_scene(desc.args)
        _check_realism(desc.args)
        _check_policy(desc.args)
    except launch_file.LaunchFileError as exc:
        print(f"vasimov up: {exc}", file=sys.stderr)
        return 2
    conflict = _check_ports(desc.args)
    if conflict is not None:
        print(conflict, file=sys.stderr)
        return 2
    if ns.compose:
        from vasimov_tools import compose

        try:
            compose.check(desc)
        except compose.ComposeError as exc:
            print(f"vasimov up --compose: {exc}", file=sys.stderr)
            return 2
        try:
            return compose.run(desc)
        except ValueError as exc:  # e.g. VASIMOV_DDS set to something else than loopback/network
            print(f"vasimov up: {exc}", file=sys.stderr)
            return 2
    from vasimov.ros import node_names
    from vasimov_tools.supervisor import Supervisor

    primary = node_names.PLANT if float(desc.args.get("duration", "0") or 0) > 0 else None
    try:
        supervisor = Supervisor(desc, primary=primary)
    except ValueError as exc:  # e.g. VASIMOV_DDS set to something else than loopback/network
        print(f"vasimov up: {exc}", file=sys.stderr)
        return 2
    return supervisor.run()


def _check_scene(args: dict[str, str]) -> None:
    """An unknown scene is a configuration error before any node starts (the plant refuses it too)."""
    from vasimov.scenes import SceneError, parse_scene

    if "scene" in args:
        try:
            parse_scene(args["scene"])
        except SceneError as exc:
            raise launch_file.LaunchFileError(f"{exc} (vasimov scenes lists them)") from exc


def _check_policy(args: dict[str, str]) -> None:
    """A policy spec that names nothing is a configuration error before any node starts (the policy node refuses it
    too, but only after the rest of the graph has started)."""
    from vasimov_edge.policy.registry import BackendSpecError, check_spec

    if "policy" in args:
        try:
            check_spec(args["policy"])
        except BackendSpecError as exc:
            raise launch_file.LaunchFileError(str(exc)) from exc


def _check_ports(args: dict[str, str]) -> str | None:
    """A port the graph would listen on that is taken (most often by a running twin): one message before any node
    starts, naming the port and what to do (vasimov_tools.preflight)."""
    from vasimov_tools import preflight

    try:
        return preflight.check_ports(args)
    except ValueError:  # a port argument that is not a number: the node that reads it says so
        return None


def _check_realism(args: dict[str, str]) -> None:
    """A malformed realism setting is a configuration error before any node starts (the plant refuses it too)."""
    from vasimov.realism import RealismError, format_profiles, parse_realism

    if "realism" in args:
        try:
            parse_realism(args["realism"])
        except RealismError as exc:
            raise launch_file.LaunchFileError(f"{exc}\nrealism profiles:\n{format_profiles()}") from exc


def cmd_scenes(ns: argparse.Namespace) -> int:
    import json

    from vasimov.scenes import BASES, FRICTIONS, format_catalog, parse_scene

    if ns.json:
        print(json.dumps({"scenes": [parse_scene(n).describe() | {"description": b.description, "seeded": b.seeded}
                                     for n, b in BASES.items()],
                          "frictions": [{"name": f.name, "mu": f.mu, "description": f.description}
                                        for f in FRICTIONS.values()]}))
    else:
        print(format_catalog())
    return 0


# -- recording and graph introspection (vasimov_tools.record, vasimov_tools.introspect) ------------------------------
RECORDER_NODE = "recorder"
# s the recorder gets to close its bag after the stop (the other nodes: the supervisor's 10 s). It runs at niceness
# 19, and on a machine whose two cores were busy with other work it took longer than 10 s; it was killed, and the
# bag had no footer and no metadata.yaml (unreadable), while `vasimov up` exited 0.
RECORDER_STOP_GRACE_S = 60.0


def with_recorder(desc: launch_file.LaunchDescription, launch: Path, overrides: dict[str, str],
                  out: Path) -> launch_file.LaunchDescription:
    """`up --record DIR`: the launch description plus a recorder node, declared a lockstep participant (appended to
    `lockstep_participants`), so a lockstep run waits for it and the bag starts at step 0. In lockstep with the camera
    on, `camera_lockstep` too (unless given): the camera renders every frame before the plant steps on, so the bag's
    images are the same for the same seed. The recorder learns the launch arguments it needs for provenance (seed,
    policy, time mode, launch file) as parameters."""
    import dataclasses

    import yaml

    from vasimov.lockstep_gate import GateError, parse_participants

    out = out.expanduser().resolve()
    if out.exists():
        raise launch_file.LaunchFileError(f"--record {out}: already exists; a recording never overwrites")
    if "lockstep_participants" not in desc.args:
        raise launch_file.LaunchFileError(f"--record: {launch} has no lockstep_participants argument to extend")
    try:
        declared = parse_participants(desc.args["lockstep_participants"])
    except GateError as exc:
        raise launch_file.LaunchFileError(f"--record: {exc}") from exc
    joined = dict(overrides, lockstep_participants=",".join([*declared, RECORDER_NODE]))
    lockstep = bool(yaml.safe_load(desc.args.get("lockstep", "false") or "false"))
    camera = bool(yaml.safe_load(desc.args.get("camera", "false") or "false"))
    if lockstep and camera and "camera_lockstep" in desc.args and "camera_lockstep" not in overrides:
        joined["camera_lockstep"] = "true"  # the bag's frames: every one, at its simulated time, the same for a seed
    desc = launch_file.load(launch, joined)
    config = launch_file.share_directory("vasimov") / "config" / "recorder.yaml"
    # the recorder joins the graph where its nodes are: their namespace and the launch file's set_remap rules (a
    # namespaced lockstep run otherwise waited for a recorder that looked for the absolute tick topic)
    first = desc.nodes[0] if desc.nodes else None
    spec = launch_file.NodeSpec(
        name=RECORDER_NODE, package="vasimov", executable="recorder_node",
        namespace=first.namespace if first else "", remaps=first.remaps if first else (),
        param_files=(config,) if config.is_file() else (),
        params={"output": str(out), "lockstep": lockstep,
                "expected_nodes": ",".join(n.name for n in desc.nodes),
                "seed": int(desc.args.get("seed", "-1") or -1), "policy": desc.args.get("policy", ""),
                "scene": desc.args.get("scene", ""), "realism": desc.args.get("realism", ""),
                "time_mode": "lockstep" if lockstep else "realtime", "launch_file": str(launch.resolve())},
        stop_grace_s=RECORDER_STOP_GRACE_S, kill_loses_data=True)
    return dataclasses.replace(desc, nodes=(*desc.nodes, spec))


def _ros_env() -> None:
    """The graph's discovery settings (loopback profile, the discovery range it needs) for commands that join it
    in-process; graph_environment keeps whatever the user set except a discovery range that would defeat the
    loopback profile."""
    import os

    from vasimov_tools.supervisor import graph_environment

    os.environ.update(graph_environment())


def _param(name: str, value: object) -> list[str]:
    """`-p name:=value` with strings YAML-quoted, so a regex such as `[ab]` stays a string."""
    import yaml

    if isinstance(value, str):
        text = yaml.safe_dump(value, default_style="'").strip()
    elif isinstance(value, bool):
        text = "true" if value else "false"
    else:
        text = str(value)
    return ["-p", f"{name}:={text}"]


def cmd_record(ns: argparse.Namespace) -> int:
    out = Path(ns.dir).expanduser().resolve()
    if out.exists():
        print(f"vasimov record: {out} already exists; a recording never overwrites", file=sys.stderr)
        return 2
    _ros_env()
    from vasimov_tools import record

    args = ["vasimov-record", "--ros-args", "-r", f"__node:={RECORDER_NODE}", *_param("output", str(out)),
            *_param("compression", ns.compression), *_param("exclude", ns.exclude or ""),
            *_param("camera_raw", bool(ns.camera_raw))]
    config = launch_file.share_directory("vasimov") / "config" / "recorder.yaml"
    if config.is_file():
        args[2:2] = ["--params-file", str(config)]
    return record.main(args)


def cmd_topics(ns: argparse.Namespace) -> int:
    if ns.window <= 0:
        print("vasimov topics: --window must be > 0", file=sys.stderr)
        return 2
    _ros_env()
    from vasimov.stop_signals import stop_on_signals
    from vasimov_tools import introspect

    with stop_on_signals() as stop:
        rates = introspect.measure_topics(ns.window, stop=stop)
    print(introspect.format_table(rates, ns.window))
    return 0


def cmd_echo(ns: argparse.Namespace) -> int:
    count = 1 if ns.once else ns.count
    if count < 0:
        print("vasimov echo: --count must be >= 0", file=sys.stderr)
        return 2
    _ros_env()
    from vasimov.stop_signals import stop_on_signals
    from vasimov_tools import introspect

    with stop_on_signals() as stop:
        try:
            return introspect.echo(ns.topic, count=count, as_json=ns.json, wait_s=ns.wait, stop=stop)
        except introspect.IntrospectError as exc:
            print(f"vasimov echo: {exc}", file=sys.stderr)
            return 1


def cmd_model_export(ns: argparse.Namespace) -> int:
    from vasimov.model.urdf import export_model

    for path in export_model(Path(ns.dir)):
        print(path)
    return 0


def cmd_bench_walk(ns: argparse.Namespace) -> int:
    from vasimov_tools import walk_bench

    return walk_bench.main(ns.rest)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vasimov", description="Virtual Asimov 1 (VASIMOV)")
    sub = parser.add_subparsers(dest="command", required=True)

    up = sub.add_parser("up", help="run the node graph (reads launch/bringup.launch.yaml)")
    up.add_argument("--lockstep", action="store_true", help="closed loop in lockstep, as fast as possible")
    up.add_argument("--duration", type=float, help="simulated seconds to run, then exit 0")
    up.add_argument("--seed", type=int)
    up.add_argument("--scene", metavar="NAME[+FRICTION]", help="world around the robot (vasimov scenes lists them)")
    up.add_argument("--realism", metavar="PROFILE[,KEY=VALUE...]",
                    help="sensor and actuator realism: none (default), typical, training; seeded by --seed")
    up.add_argument("--policy", help="builtin | builtin-v2 | hold | PATH.onnx | hf://REPO@REVISION")
    up.add_argument("--script", help="YAML command script fed to the firmware at its ticks")
    up.add_argument("--viewer", action="store_true", help="open MuJoCo's passive viewer on the plant")
    up.add_argument("--recovery", action="store_true",
                    help="twin-only: falls do not latch; the robot gets up and resumes (docs/recovery.md)")
    up.add_argument("--launch", default=str(_default_launch()), help="launch file (ROS 2 YAML format)")
    up.add_argument("--record", metavar="DIR", help="also record every topic into a rosbag2 directory (MCAP)")
    up.add_argument("--compose", action="store_true",
                    help="every node in one process: faster, no isolation (docs/reliability-security.md)")
    up.add_argument("launch_args", nargs="*", metavar="NAME:=VALUE", help="launch arguments")
    up.set_defaults(func=cmd_up)

    scn = sub.add_parser("scenes", help="list the scenes and friction overrides with their parameters")
    scn.add_argument("--json", action="store_true", help="one JSON object")
    scn.set_defaults(func=cmd_scenes)

    rec = sub.add_parser("record", help="record every topic of the running graph into a rosbag2 directory (MCAP)")
    rec.add_argument("dir", help="bag directory to create (must not exist)")
    rec.add_argument("--exclude", help="regular expression of topics not to record")
    rec.add_argument("--camera-raw", action="store_true",
                     help="also record the camera's raw color and depth images (default: JPEG color + camera infos)")
    rec.add_argument("--compression", choices=("zstd", "none"), default="zstd", help="MCAP chunk compression")
    rec.set_defaults(func=cmd_record)

    top = sub.add_parser("topics", help="list the graph's topics with types and measured rates")
    top.add_argument("--window", type=float, default=2.0, help="seconds to measure rates over (default 2)")
    top.set_defaults(func=cmd_topics)

    ech = sub.add_parser("echo", help="print messages of a topic (YAML-like, or JSON lines)")
    ech.add_argument("topic")
    ech.add_argument("--once", action="store_true", help="print one message and exit")
    ech.add_argument("--count", type=int, default=0, help="exit after N messages (0 = until Ctrl-C)")
    ech.add_argument("--json", action="store_true", help="one JSON object per line")
    ech.add_argument("--wait", type=float, default=10.0, help="seconds to wait for a publisher (default 10)")
    ech.set_defaults(func=cmd_echo)

    model = sub.add_parser("model", help="robot model tools")
    msub = model.add_subparsers(dest="model_command", required=True)
    export = msub.add_parser("export", help="write the MJCF and URDF of Asimov 1 to DIR")
    export.add_argument("dir")
    export.set_defaults(func=cmd_model_export)

    bench = sub.add_parser("bench", help="benchmarks")
    bsub = bench.add_subparsers(dest="bench_command", required=True)
    walk = bsub.add_parser("walk", help="walking scenarios in lockstep (prints a table and JSON lines)")
    walk.add_argument("rest", nargs=argparse.REMAINDER)
    walk.set_defaults(func=cmd_bench_walk)
    run = bsub.add_parser("run", help="scenario files/suites in parallel lockstep processes (JSON + report.html)")
    run.add_argument("rest", nargs=argparse.REMAINDER)
    comp = bsub.add_parser("compare", help="two bench run result folders (or a suite run with two --policy): "
                                           "per-scenario verdicts, exit 1 on regression")
    comp.add_argument("rest", nargs=argparse.REMAINDER)
    plim = bsub.add_parser("push-limit", help="largest survived 0.15 s pelvis push per direction (bisection)")
    plim.add_argument("rest", nargs=argparse.REMAINDER)
    card = bsub.add_parser("card", help="what a policy can do, on one page: suites, speeds, push limits, long runs "
                                        "(card.md)")
    card.add_argument("rest", nargs=argparse.REMAINDER)
    snap = sub.add_parser("snapshot", help="a still of the robot in a scene from the twin's renderer (PNG)")
    from vasimov_tools import snapshot

    snapshot.add_arguments(snap)
    snap.set_defaults(func=snapshot.run)
    rep = sub.add_parser("replay", help="a bag's motor commands open-loop into the plant: residuals against the log")
    rep.add_argument("rest", nargs=argparse.REMAINDER)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:2] == ["bench", "walk"]:
        # the walking bench has its own parser; argparse's REMAINDER refuses a first argument that looks like an
        # option (`vasimov bench walk --set viewer`), so hand the rest over before parsing
        from vasimov_tools import walk_bench

        return walk_bench.main(args[2:])
    if args[:2] == ["bench", "run"]:  # likewise: the scenario runner has its own parser
        from vasimov_tools import bench_run

        return bench_run.main(args[2:])
    if args[:2] == ["bench", "compare"]:
        from vasimov_tools import bench_compare

        return bench_compare.main(args[2:])
    if args[:2] == ["bench", "push-limit"]:
        from vasimov_tools import push_limit

        return push_limit.main(args[2:])
    if args[:2] == ["bench", "card"]:
        from vasimov_tools import bench_card

        return bench_card.main(args[2:])
    if args[:1] == ["replay"]:
        from vasimov_tools import replay

        return replay.main(args[1:])
    ns = build_parser().parse_args(args)
    return int(ns.func(ns))


if __name__ == "__main__":
    sys.exit(main())
