"""`vasimov`: the command line of the twin for pip-only users (no ros2 CLI, no ros2 launch here).

    vasimov up [--lockstep --duration S] [--seed N] [--policy SPEC] [--script FILE] [--viewer] [ARG:=VALUE ...]
    vasimov model export DIR
    vasimov bench walk [--scenario NAME ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vasimov import launch_file


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
    if ns.script is not None:
        script = Path(ns.script).resolve()
        if not script.is_file():
            print(f"vasimov up: command script {script} not found", file=sys.stderr)
            return 2
        overrides["command_script"] = str(script)
    if ns.viewer:
        overrides["viewer"] = "true"
    try:
        desc = launch_file.load(ns.launch, overrides)
    except launch_file.LaunchFileError as exc:
        print(f"vasimov up: {exc}", file=sys.stderr)
        return 2
    from vasimov.supervisor import Supervisor

    primary = "plant" if float(desc.args.get("duration", "0") or 0) > 0 else None
    return Supervisor(desc, primary=primary).run()


def cmd_model_export(ns: argparse.Namespace) -> int:
    from vasimov.model.urdf import export_model

    for path in export_model(Path(ns.dir)):
        print(path)
    return 0


def cmd_bench_walk(ns: argparse.Namespace) -> int:
    from vasimov import walk_bench

    return walk_bench.main(ns.rest)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vasimov", description="Virtual Asimov 1 (VASIMOV)")
    sub = parser.add_subparsers(dest="command", required=True)

    up = sub.add_parser("up", help="run the node graph (reads launch/bringup.launch.yaml)")
    up.add_argument("--lockstep", action="store_true", help="closed loop in lockstep, as fast as possible")
    up.add_argument("--duration", type=float, help="simulated seconds to run, then exit 0")
    up.add_argument("--seed", type=int)
    up.add_argument("--policy", help="builtin | hold | PATH.onnx | hf://REPO@REVISION")
    up.add_argument("--script", help="YAML command script fed to the firmware at its ticks")
    up.add_argument("--viewer", action="store_true", help="open MuJoCo's passive viewer on the plant")
    up.add_argument("--launch", default=str(_default_launch()), help="launch file (ROS 2 YAML format)")
    up.add_argument("launch_args", nargs="*", metavar="NAME:=VALUE", help="launch arguments")
    up.set_defaults(func=cmd_up)

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
    return parser


def main(argv: list[str] | None = None) -> int:
    ns = build_parser().parse_args(argv)
    return int(ns.func(ns))


if __name__ == "__main__":
    sys.exit(main())
