"""Scenario files: the one format (YAML) a bench scenario is written in, its validator, and the shipped suites.

A scenario file describes one run from boot to the end: a seed, the boot state, the policy, a timed command profile,
pushes, the duration and the pass criteria. The format is documented field by field in ``docs/scenarios.md``; this
module is its only reader, so the rules live here and nowhere else. Loading is pure (it reads the file, nothing
else) and turns a file into the :class:`vasimov_tools.walk_bench.Scenario` the lockstep runner executes.

Two kinds of rejection:

* :class:`ScenarioError`: the file is wrong (a typo, a missing field, a value out of range). The message names the
  file, the field and the reason.
* :class:`UnsupportedScenarioError` (a subclass): the file is well formed but asks for something the twin cannot run yet
  -- injected faults or link impairment, whose fields are reserved. A suite that holds such files still loads; the
  runner reports them as skipped with the reason.

Suites are folders of ``*.yaml`` files (sorted by file name) shipped in ``vasimov_tools/suites/``: ``standard`` (the
walking issue's required scenarios), ``goals`` (beyond the requirement) and ``viewer`` (Menlo's viewer bench,
generated from the fact sheet by :mod:`vasimov_tools.viewer_suite`).
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from vasimov import joints
from vasimov.sim_control import PushError, parse_push

FORMAT_VERSION = 1
SUITES_DIR = Path(__file__).resolve().parent / "suites"
BOOT_STATES = ("balance", "stand", "limp", "lying_back", "lying_front")
MODES = ("stand", "balance", "damp")
DEFAULT_PUSH_DURATION = 0.15  # s, the viewer bench's rapid push
NAME_RE = re.compile(r"^[A-Za-z0-9_.+-]+$")

_TOP_KEYS = {
    "format", "name", "description", "seed", "boot", "settle", "policy", "policy_options", "duration", "commands",
    "pushes", "fall", "pass", "scene", "friction", "faults", "link", "recovery",
}
#: pass-criteria keys -> walk_bench.Criteria fields (lengths in m, angles in rad, speeds in m/s)
_PASS_KEYS = {
    "min_along", "max_abs_lateral", "min_lateral", "max_abs_heading", "min_heading", "max_drift",
    "max_tracking_error", "max_compute_p99_ms", "max_step_half_time", "max_stop_time",
    "upright_at_end", "max_recovery_s", "min_falls",
}
_FALL_KEYS = {"min_pelvis_height", "max_tilt_deg"}


class ScenarioError(ValueError):
    """A scenario file that breaks a rule: the message names the file, the field and the reason."""

    def __init__(self, source: str, field: str, reason: str) -> None:
        self.source, self.field, self.reason = source, field, reason
        super().__init__(f"{source}: {field}: {reason}")


class UnsupportedScenarioError(ScenarioError):
    """A well-formed scenario that needs a feature the twin does not have yet (reserved fields)."""


@dataclass(frozen=True)
class Entry:
    """One loaded suite member: the scenario, or ``skipped`` (the reason) when it cannot run yet."""

    name: str
    source: str
    scenario: Any | None  # walk_bench.Scenario; Any keeps this module's import light for type checkers
    skipped: str | None = None
    policy: str | None = None  # the file's own policy spec (None: the runner's)


# -- field readers ----------------------------------------------------------------------------------------------------
def _number(src: str, field: str, value: Any, *, lo: float | None = None, hi: float | None = None,
            lo_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ScenarioError(src, field, f"must be a finite number, got {value!r}")
    v = float(value)
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise ScenarioError(src, field, f"must be {'>' if lo_open else '>='} {lo:g}, got {v:g}")
    if hi is not None and v > hi:
        raise ScenarioError(src, field, f"must be <= {hi:g}, got {v:g}")
    return v


def _vector(src: str, field: str, value: Any, n: int) -> tuple[float, ...]:
    if not isinstance(value, list) or len(value) != n:
        raise ScenarioError(src, field, f"must be a list of {n} numbers, got {value!r}")
    return tuple(_number(src, f"{field}[{i}]", v) for i, v in enumerate(value))


def _mapping(src: str, field: str, value: Any, allowed: Iterable[str]) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ScenarioError(src, field, f"must be a mapping, got {type(value).__name__}")
    unknown = sorted(set(map(str, value)) - set(allowed))
    if unknown:
        raise ScenarioError(src, field, f"unknown key(s) {unknown}; valid: {', '.join(sorted(allowed))}")
    return value


def _body_names() -> set[str]:
    return {b["name"] for b in joints.facts()["kinematic_tree"]["bodies"]}


def _commands(src: str, raw: Any, duration: float) -> tuple[tuple, tuple]:
    """The timed profile -> (velocity entries (t, vx, vy, wz), mode entries (t, 'stand'|'damp'))."""
    if raw is None:
        return ((0.0, 0.0, 0.0, 0.0),), ()
    if not isinstance(raw, list) or not raw:
        raise ScenarioError(src, "commands", "must be a non-empty list of {t, velocity: [vx, vy, wz]} or {t, mode}")
    velocity: list[tuple[float, float, float, float]] = []
    modes: list[tuple[float, str]] = []
    last_t = -math.inf
    for i, e in enumerate(raw):
        f = f"commands[{i}]"
        e = _mapping(src, f, e, {"t", "velocity", "mode"})
        if "t" not in e:
            raise ScenarioError(src, f"{f}.t", "missing (seconds after the scenario's clock starts)")
        t = _number(src, f"{f}.t", e["t"], lo=0.0, hi=duration)
        if i == 0 and t != 0.0:
            raise ScenarioError(src, f"{f}.t", "the first entry must be at t = 0 (the profile covers the whole run)")
        if t <= last_t:
            raise ScenarioError(src, f"{f}.t", f"times must increase, {t:g} follows {last_t:g}")
        last_t = t
        if ("velocity" in e) == ("mode" in e):
            raise ScenarioError(src, f, "needs exactly one of velocity: [vx, vy, wz] or mode: stand|balance|damp")
        if "velocity" in e:
            vx, vy, wz = _vector(src, f"{f}.velocity", e["velocity"], 3)
            velocity.append((t, vx, vy, wz))
        elif e["mode"] == "balance":  # the SDK's balance is a zero velocity
            velocity.append((t, 0.0, 0.0, 0.0))
        elif e["mode"] in MODES:
            modes.append((t, str(e["mode"])))
        else:
            raise ScenarioError(src, f"{f}.mode", f"must be one of {', '.join(MODES)}, got {e['mode']!r}")
    if not velocity:
        velocity.append((0.0, 0.0, 0.0, 0.0))  # never sent: a profile of modes only
    return tuple(velocity), tuple(modes)


def _pushes(src: str, raw: Any, duration: float) -> tuple:
    from vasimov_tools.walk_bench import Push

    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ScenarioError(src, "pushes", "must be a list of {t, force: [fx, fy, fz], duration, body}")
    bodies = _body_names()
    out = []
    for i, e in enumerate(raw):
        f = f"pushes[{i}]"
        e = _mapping(src, f, e, {"t", "force", "duration", "body"})
        for key in ("t", "force"):
            if key not in e:
                raise ScenarioError(src, f"{f}.{key}", "missing")
        t = _number(src, f"{f}.t", e["t"], lo=0.0, hi=duration)
        body = e.get("body", "pelvis_link")
        if body not in bodies:
            raise ScenarioError(src, f"{f}.body", f"unknown body {body!r}; valid: {', '.join(sorted(bodies))}")
        try:  # the simulator's own push bounds (one rule for the HTTP API, ROS and scenarios)
            req = parse_push({"body": body, "force": e["force"], "duration": e.get("duration", DEFAULT_PUSH_DURATION)})
        except PushError as exc:
            raise ScenarioError(src, f, str(exc)) from None
        out.append(Push(t, req.force, req.duration, req.body))
    return tuple(out)


def _policy_options(src: str, raw: Any, field: str = "policy_options", config: type | None = None
                    ) -> tuple[tuple[str, object], ...]:
    """Overrides of a walker's config dataclass (the built-in controller's ``ControllerConfig`` unless ``config``
    names another, e.g. walker v2's ``WalkerConfig``): a number where the default is a number, true/false where it
    is a flag, so a typo fails here rather than in the controller mid-run."""
    if raw is None:
        return ()
    if config is None:
        from vasimov_edge.policy.builtin import ControllerConfig

        config = ControllerConfig
    defaults = {f.name: f.default for f in fields(config)}
    out = []
    for k, v in _mapping(src, field, raw, defaults).items():
        d = defaults[str(k)]
        if isinstance(d, bool) and not isinstance(v, bool):
            raise ScenarioError(src, f"{field}.{k}", f"must be true or false, got {v!r}")
        if isinstance(d, int | float) and not isinstance(d, bool) and not _finite_number(v):
            raise ScenarioError(src, f"{field}.{k}", f"must be a finite number, got {v!r}")
        if isinstance(d, tuple):  # a setting of several numbers (command_rate): a list of as many
            if not isinstance(v, list | tuple) or len(v) != len(d) or not all(map(_finite_number, v)):
                raise ScenarioError(src, f"{field}.{k}", f"must be a list of {len(d)} finite numbers, got {v!r}")
            v = tuple(float(x) for x in v)
        out.append((str(k), v))
    return tuple(out)


def _finite_number(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, int | float) and math.isfinite(v)


def _split_options(text: str) -> list[str]:
    """``KEY=VALUE,KEY=[A,B]`` -> its items: commas inside brackets belong to a list value."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return items


def parse_policy(spec: str) -> tuple[str, tuple[tuple[str, object], ...]]:
    """A runner's policy spec -> (the backend spec, overrides of that walker's config).

    ``builtin:KEY=VALUE[,KEY=VALUE...]`` is the built-in controller with ``policy_options`` given on the command line
    (``builtin:leg_kp=60,push_recovery=false``: values are YAML scalars, or lists for the tuple-valued settings,
    ``builtin:command_rate=[0.3,0.3,1.0]``), so a variant of it can be named wherever a
    spec is, e.g. twice in ``vasimov bench compare --policy``; the same rules as a file's ``policy_options`` apply.
    ``builtin-v2:KEY=VALUE[,...]`` is walker v2 with ``WalkerConfig`` fields overridden the same way
    (``builtin-v2:swing_orientation_weight=1.0``); a scenario file's ``policy_options`` tune ``builtin`` only.
    Every other spec (``builtin``, ``hold``, an ONNX file, ``hf://...``) is returned as it is, without options.
    """
    from vasimov_edge.policy.registry import BUILTIN, WALKER_V2  # the specs' names, defined once

    s = spec.strip()
    base, _, _ = s.partition(":")
    if s == base or base not in (BUILTIN, WALKER_V2):
        return s, ()
    prefix = f"{base}:"
    config: type | None = None  # builtin: _policy_options' default, ControllerConfig
    if base == WALKER_V2:
        from vasimov_edge.policy.walker.config import WalkerConfig

        config = WalkerConfig
    src = f"policy {spec!r}"
    raw: dict[str, Any] = {}
    for item in _split_options(s[len(prefix):]):
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise ScenarioError(src, "options", f"{item!r} is not KEY=VALUE ({prefix}KEY=VALUE[,KEY=VALUE...])")
        try:
            raw[key.strip()] = yaml.safe_load(value.strip())
        except yaml.YAMLError:
            raise ScenarioError(src, f"options.{key.strip()}", f"{value!r} is not a value") from None
    return base, _policy_options(src, raw, "options", config)


def _scene(src: str, doc: Mapping[str, Any], seed: int) -> tuple[str, float | None]:
    """``scene`` (vasimov.scenes syntax, e.g. ``slope_10_up+ice``) and ``friction`` (a coefficient overriding the
    scene's floor). A viewer bench course name (``terrain/rough.xml``) reads as the scene that models it."""
    from vasimov.scenes import VIEWER_COURSES, SceneError, custom_friction, parse_scene

    scene = doc.get("scene", "flat")
    if not isinstance(scene, str):
        raise ScenarioError(src, "scene", f"must be a scene name, got {scene!r}")
    if scene.startswith("terrain/"):  # a viewer bench file's own name for its course: the scene that models it
        course = VIEWER_COURSES.get(scene if scene.endswith(".xml") else scene + ".xml")
        if course is None:
            raise ScenarioError(src, "scene", f"{scene!r} is not one of Menlo's viewer terrain courses "
                                              f"({', '.join(VIEWER_COURSES)})")
        scene = course
    try:
        parse_scene(scene, seed=seed)
    except SceneError as exc:
        raise ScenarioError(src, "scene", str(exc)) from None
    friction = doc.get("friction")
    if friction is not None:
        try:
            custom_friction(friction)
        except SceneError as exc:
            raise ScenarioError(src, "friction", str(exc)) from None
    return scene, (None if friction is None else float(friction))


def _reserved(src: str, doc: Mapping[str, Any]) -> None:
    """Fields other work fills in; until then only their neutral values run (UnsupportedScenarioError otherwise)."""
    unsupported = UnsupportedScenarioError
    faults = doc.get("faults")
    if faults not in (None, []):
        if not isinstance(faults, list):
            raise ScenarioError(src, "faults", "must be a list")
        raise unsupported(src, "faults", "injected faults are not available in scenarios yet (reserved for the fault "
                                         "injection work); leave the list empty")
    link = doc.get("link")
    if link not in (None, {}):
        if not isinstance(link, dict):
            raise ScenarioError(src, "link", "must be a mapping")
        raise unsupported(src, "link", "link impairment is not available in scenarios yet (reserved for the link "
                                       "impairment work); omit the field")


# -- loading ----------------------------------------------------------------------------------------------------------
def parse(doc: Any, source: str, default_name: str) -> tuple[Any, str | None]:
    """A parsed YAML document -> (walk_bench.Scenario, the file's policy spec or None). Raises ScenarioError."""
    from vasimov_tools.walk_bench import SETTLE_TIME, Criteria, Scenario

    src = source
    doc = _mapping(src, "(top level)", doc, _TOP_KEYS)
    if doc.get("format") != FORMAT_VERSION:
        raise ScenarioError(src, "format", f"must be {FORMAT_VERSION} (this reader's format), "
                                           f"got {doc.get('format')!r}")
    name = doc.get("name", default_name)
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ScenarioError(src, "name", f"must be letters, digits and _.+- only, got {name!r}")
    description = doc.get("description", "")
    if not isinstance(description, str):
        raise ScenarioError(src, "description", "must be text")
    seed = doc.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ScenarioError(src, "seed", f"must be an integer >= 0, got {seed!r}")
    boot = doc.get("boot", "balance")
    if boot not in BOOT_STATES:
        raise ScenarioError(src, "boot", f"must be one of {', '.join(BOOT_STATES)}, got {boot!r}")
    recovery = doc.get("recovery", False)
    if not isinstance(recovery, bool):
        raise ScenarioError(src, "recovery", f"must be true or false, got {recovery!r}")
    settle = _number(src, "settle", doc.get("settle", SETTLE_TIME), lo=0.0, hi=60.0)
    policy = doc.get("policy")
    if policy is not None and (not isinstance(policy, str) or not policy.strip()):
        raise ScenarioError(src, "policy", "must be a policy spec (builtin, hold, FILE.onnx, hf://REPO@REV) or null")
    if "duration" not in doc:
        raise ScenarioError(src, "duration", "missing (seconds of scenario after boot)")
    duration = _number(src, "duration", doc["duration"], lo=0.0, lo_open=True, hi=3600.0)
    scene, friction = _scene(src, doc, seed)
    _reserved(src, doc)
    commands, modes = _commands(src, doc.get("commands"), duration)
    pushes = _pushes(src, doc.get("pushes"), duration)

    fall = _mapping(src, "fall", doc.get("fall") or {}, _FALL_KEYS)
    fall_kw: dict[str, float] = {}
    if "min_pelvis_height" in fall:
        fall_kw["min_pelvis_height"] = _number(src, "fall.min_pelvis_height", fall["min_pelvis_height"], lo=0.0,
                                               hi=2.0)
    if "max_tilt_deg" in fall:
        tilt = _number(src, "fall.max_tilt_deg", fall["max_tilt_deg"], lo=0.0, hi=180.0, lo_open=True)
        fall_kw["max_gravity_z"] = -math.cos(math.radians(tilt))

    crit = _mapping(src, "pass", doc.get("pass") or {}, _PASS_KEYS)
    ckw: dict[str, Any] = {"max_compute_p99": None}  # only checked when the file asks
    for key, value in crit.items():
        if value is None:
            continue
        field = f"pass.{key}"
        if key == "upright_at_end":
            if not isinstance(value, bool):
                raise ScenarioError(src, field, f"must be true or false, got {value!r}")
            ckw[key] = value
        elif key == "min_falls":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ScenarioError(src, field, f"must be an integer >= 0, got {value!r}")
            ckw[key] = value
        elif key == "max_compute_p99_ms":
            ckw["max_compute_p99"] = _number(src, field, value, lo=0.0, lo_open=True) / 1e3
        elif key == "min_lateral":  # signed like the strafe command: at least this far in that direction
            v = _number(src, field, value)
            if v == 0.0:
                raise ScenarioError(src, field, "must be non-zero (its sign is the required direction)")
            ckw["min_abs_lateral"], ckw["lateral_sign"] = abs(v), math.copysign(1.0, v)
        elif key in ("min_along", "min_heading"):
            ckw[key] = _number(src, field, value)
        else:
            ckw[key] = _number(src, field, value, lo=0.0)
    scenario = Scenario(
        name, duration, commands, pushes, Criteria(**ckw), _policy_options(src, doc.get("policy_options")),
        note=description.strip(), seed=seed, boot=boot, settle_time=settle, modes=modes, scene=scene,
        friction=friction, recovery=recovery, **fall_kw,
    )
    return scenario, (policy.strip() if policy else None)


def load_file(path: str | Path) -> tuple[Any, str | None]:
    """One scenario file -> (Scenario, the file's policy spec or None); ScenarioError naming the file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(str(p), "(file)", f"cannot be read: {exc.strerror or exc}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(str(p), "(file)", f"is not valid YAML: {exc}") from None
    return parse(doc, str(p), p.stem)


def write_suite(folder: Path, docs: list[tuple[str, str]]) -> list[Path]:
    """Write a generated suite's ``(file name, text)`` documents into ``folder``; stale files of the same generator
    there (``*.yaml`` whose first line is the documents' own header line) are removed, so the folder holds what the
    generator makes now (``viewer_suite``, ``sequence_suite``). Any other file is left alone: the folder may be one
    of the user's, holding scenarios of their own."""
    folder.mkdir(parents=True, exist_ok=True)
    names = {n for n, _ in docs}
    headers = {text.split("\n", 1)[0] for _, text in docs if text.startswith("# generated ")}
    for old in folder.glob("*.yaml"):
        if old.name in names:
            continue
        try:
            with old.open(encoding="utf-8") as f:
                first = f.readline().rstrip("\n")
        except (OSError, UnicodeDecodeError):
            continue
        if first in headers:
            old.unlink()
    paths = []
    for name, text in docs:
        path = folder / name
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def generator_main(module: str, doc: str | None, folder: Path, write: Callable[[Path], list[Path]],
                   argv: Sequence[str] | None) -> int:
    """The command line of a suite generator (``python -m vasimov_tools.<module> [FOLDER]``): write the suite into
    FOLDER (default: the shipped one) with ``write``; ``--help`` prints usage and writes nothing."""
    ap = argparse.ArgumentParser(prog=f"python -m vasimov_tools.{module}",
                                 description=(doc or "").splitlines()[0] + " Writes the suite's files.")
    ap.add_argument("folder", nargs="?", default=str(folder),
                    help="where to write them (default: the shipped suite, %(default)s); files of this generator "
                         "no longer made are removed there, other files are left alone")
    paths = write(Path(ap.parse_args(argv).folder))
    print(f"wrote {len(paths)} scenario files to {paths[0].parent}")
    return 0


def suite_names() -> list[str]:
    """The suites shipped with the package."""
    return sorted(d.name for d in SUITES_DIR.iterdir() if d.is_dir() and any(d.glob("*.yaml")))


def resolve(items: Iterable[str]) -> list[Path]:
    """Suite names, folders and files -> scenario files in order (duplicates dropped); ScenarioError if none."""
    out: list[Path] = []
    for item in items:
        p = Path(item)
        if p.is_file():
            files = [p]
        elif p.is_dir():
            files = sorted(p.glob("*.yaml"))
        elif (SUITES_DIR / item).is_dir():
            files = sorted((SUITES_DIR / item).glob("*.yaml"))
        else:
            raise ScenarioError(item, "(suite)", f"is neither a scenario file, a folder nor a shipped suite "
                                                 f"({', '.join(suite_names())})")
        if not files:
            raise ScenarioError(item, "(suite)", "holds no *.yaml scenario files")
        out.extend(f for f in files if f.resolve() not in {o.resolve() for o in out})
    return out


def load_entries(items: Iterable[str]) -> list[Entry]:
    """Load every scenario of the given suites/folders/files: invalid files raise, unsupported ones are skipped."""
    entries: list[Entry] = []
    seen: dict[str, str] = {}
    for path in resolve(items):
        try:
            scenario, policy = load_file(path)
            entry = Entry(scenario.name, str(path), scenario, policy=policy)
        except UnsupportedScenarioError as exc:
            name = _declared_name(path)
            entry = Entry(name, str(path), None, skipped=f"{exc.field}: {exc.reason}")
        if entry.name in seen:
            raise ScenarioError(str(path), "name", f"{entry.name!r} is also the name of {seen[entry.name]}")
        seen[entry.name] = str(path)
        entries.append(entry)
    return entries


def _declared_name(path: Path) -> str:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    name = doc.get("name") if isinstance(doc, dict) else None
    return name if isinstance(name, str) and NAME_RE.match(name) else path.stem


def load_suite(name: str) -> dict[str, Any]:
    """A shipped suite's runnable scenarios by name (skipped ones left out)."""
    return {e.name: e.scenario for e in load_entries([str(SUITES_DIR / name)]) if e.scenario is not None}
