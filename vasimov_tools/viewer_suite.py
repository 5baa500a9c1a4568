"""The ``viewer`` suite: Menlo's humanoid-policy-viewer bench (``benchmarks_in_viewer`` in the fact sheet) as
scenario files, so a run of it compares directly with the published numbers.

The 39 files in ``vasimov_tools/suites/viewer/`` are generated from the fact sheet by this module and checked
against it by the tests (``python -m vasimov_tools.viewer_suite`` rewrites them); the sheet is the one source. Each
keeps the viewer's command profile, pushes (force x direction, world frame -- the files' frame is not stated),
durations and failure criterion (root below 0.35 m or torso tilt above 78.5 deg) and has no other pass criterion.
The viewer's commands reach 0.6-1.0 m/s, beyond the SDK envelope; the firmware and the built-in gait clip them. The
friction files' foot friction becomes a floor friction override (``friction:``, which governs the foot contacts);
the terrain files run in the scenes that model the viewer's courses (``vasimov.scenes.VIEWER_COURSES``:
``viewer_stairs_5cm`` ... ``viewer_rough``), so all 39 run and none is skipped.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vasimov import joints
from vasimov.scenes import VIEWER_COURSES
from vasimov_tools.scenarios import SUITES_DIR, generator_main, write_suite

VIEWER_DIR = SUITES_DIR / "viewer"
GROUPS = ("locomotion", "distance", "friction", "push_standing", "push_walking", "push_sustained", "terrain")
PUSH_TIMES = {"push_standing": (2.0, 8.0), "push_walking": (2.0, 8.0), "push_sustained": (2.0, 10.0, 18.0, 26.0)}
PUSH_SECONDS = {"push_standing": 0.15, "push_walking": 0.15, "push_sustained": 0.6}
GROUP_DURATION = {"push_standing": 12.0, "push_walking": 12.0, "push_sustained": 36.0, "terrain": 22.0}
HEADER = "# generated from the fact sheet (benchmarks_in_viewer) by vasimov_tools.viewer_suite; do not edit"
TERRAIN_COMMANDS = [[0, 0, 0, 0], [0.3, 0.4, 0, 0], [20.5, 0, 0, 0]]  # vx 0.4 from t = 0.3 to 20.5


def _num(x: Any) -> str:
    return repr(float(x))


def _stem(entry: dict[str, Any]) -> str:
    return str(entry["file"]).split("/")[-1].removesuffix(".json")


def scenario_name(entry: dict[str, Any]) -> str:
    return "viewer_" + str(entry["file"]).removesuffix(".json").replace("/", "_")


def _commands(entry: dict[str, Any], by_stem: dict[str, dict[str, Any]], group: str) -> list[list[float]]:
    if group == "push_walking":
        return [[0, 0.6, 0, 0]]
    if group in ("push_standing", "push_sustained"):
        return [[0, 0, 0, 0]]
    if group == "terrain":
        return TERRAIN_COMMANDS
    if group == "friction":  # "same command profile as circle.json"
        return by_stem["circle"]["commands"]
    if "commands" in entry:
        return entry["commands"]
    ref = by_stem[entry["same_timing_as"]]  # same timing, own straight-line speed
    return [[t, entry["side_vx"] if vx == ref["side_vx"] else vx, vy, wz] for t, vx, vy, wz in ref["commands"]]


def _pushes(entry: dict[str, Any], group: str) -> list[tuple[float, str, list[float], float]]:
    """(t, body, force vector, duration) of the file's pushes."""
    if group in PUSH_TIMES:
        d = [*entry["dir"], 0.0][:3]
        return [(t, entry["body"], [float(f) * float(x) for x in d], PUSH_SECONDS[group])
                for t, f in zip(PUSH_TIMES[group], entry["forces"], strict=True)]
    out = []
    for p in entry.get("pushes", []):
        d = [*p["dir"], 0.0][:3]
        out.append((float(p["t"]), p.get("body", "pelvis_link"), [float(p["force"]) * float(x) for x in d],
                    float(p["duration"])))
    return out


def documents() -> list[tuple[str, str]]:
    """(file name, YAML text) of every viewer scenario, in the sheet's order."""
    bench = joints.facts()["benchmarks_in_viewer"]
    fail = bench["failure_criterion"]
    by_stem: dict[str, dict[str, Any]] = {}
    out: list[tuple[str, str]] = []
    for group in GROUPS:
        for entry in bench["scenarios"][group]:
            by_stem[_stem(entry)] = entry
            name = scenario_name(entry)
            duration = float(entry.get("duration", GROUP_DURATION.get(group, 12.0)))
            notes = [f"Menlo viewer bench {entry['file']} ({group})."]
            for key in ("course", "note"):
                if key in entry:
                    notes.append(f"{key}: {entry[key]}.")
            lines = [HEADER,
                     "format: 1", f"name: {name}", f"description: {json.dumps(' '.join(notes))}",
                     f"duration: {_num(duration)}"]
            if group == "terrain":
                lines.append(f"scene: {VIEWER_COURSES[entry['scene']]}")
            if "foot_friction" in entry:
                lines.append(f"friction: {_num(entry['foot_friction'])}")
            lines.append("commands:")
            for t, vx, vy, wz in _commands(entry, by_stem, group):
                lines.append(f"  - {{t: {_num(t)}, velocity: [{_num(vx)}, {_num(vy)}, {_num(wz)}]}}")
            pushes = _pushes(entry, group)
            if pushes:
                lines.append("pushes:")
                for t, body, force, secs in pushes:
                    lines.append(f"  - {{t: {_num(t)}, body: {body}, force: [{', '.join(_num(f) for f in force)}], "
                                 f"duration: {_num(secs)}}}")
            lines += ["fall:", f"  min_pelvis_height: {_num(fail['root_height_below_m'])}",
                      f"  max_tilt_deg: {_num(fail['torso_tilt_above_deg'])}"]
            out.append((f"{len(out) + 1:02d}_{name.removeprefix('viewer_')}.yaml", "\n".join(lines) + "\n"))
    return out


def write(folder: Path = VIEWER_DIR) -> list[Path]:
    """(Re)write the suite's files; stale ``*.yaml`` files in ``folder`` are removed."""
    return write_suite(folder, documents())


def main(argv: Sequence[str] | None = None) -> int:
    return generator_main("viewer_suite", __doc__, VIEWER_DIR, write, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
