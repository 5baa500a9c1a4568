"""`vasimov bench run`: parallel lockstep scenario runs, their JSON results, the report and the CLI's answers."""

from __future__ import annotations

import io
import json
import os
import re
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import psutil
import pytest

from vasimov_tools import bench_ray, bench_report, bench_run, cli
from vasimov_tools import scenarios as sc
from vasimov_tools import walk_bench as wb

TINY = {
    "a_walk.yaml": """\
        format: 1
        name: tiny_walk
        duration: 1.6
        commands:
          - {t: 0, velocity: [0.2, 0, 0]}
          - {t: 0.8, velocity: [0, 0.1, 0.3]}
        pushes:
          - {t: 0.4, force: [40, 0, 0]}
        """,
    "b_damp.yaml": """\
        format: 1
        name: tiny_damp
        seed: 3
        duration: 1.2
        commands:
          - {t: 0, mode: balance}
          - {t: 0.3, mode: damp}
        """,
    "c_link.yaml": """\
        format: 1
        name: tiny_link
        duration: 1.0
        link: {loss: 0.1}
        """,
}


@pytest.fixture(scope="module")
def tiny_suite(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("tiny")
    for name, text in TINY.items():
        (d / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return d


def _run(args: list[str], capsys) -> tuple[int, str, str]:
    code = bench_run.main(args)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _load(out: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(out.glob("*.json"))}


@pytest.fixture(scope="module")
def one_and_two_workers(tiny_suite, tmp_path_factory):
    outs = {}
    for n in (1, 2):
        out = tmp_path_factory.mktemp(f"w{n}")
        code = bench_run.main([str(tiny_suite), "--out", str(out), "--workers", str(n)])
        outs[n] = (code, out)
    return outs


def assert_same_results(o1: Path, o2: Path) -> None:
    """Two result folders hold the same results: every field but ``timing`` (compute and wall-clock time are
    measurements, not results) equal, for the same scenarios."""
    r1, r2 = _load(o1), _load(o2)
    assert set(r1) == set(r2) == {"tiny_walk", "tiny_damp", "tiny_link"}
    for name in r1:
        a, b = dict(r1[name]), dict(r2[name])
        a.pop("timing", None), b.pop("timing", None)
        assert a == b, name


def test_one_worker_and_two_workers_give_identical_results(one_and_two_workers):
    (c1, o1), (c2, o2) = one_and_two_workers[1], one_and_two_workers[2]
    assert c1 == c2
    assert_same_results(o1, o2)
    r1 = _load(o1)
    walk = r1["tiny_walk"]
    assert walk["status"] == "passed" and walk["outcome"]["along"] > 0.05 and len(walk["trace"]) == 16


def test_a_worker_computes_what_the_in_process_runner_computes(one_and_two_workers, tiny_suite):
    """Spawned workers run the same closed loop as `run_scenario` in this process, to the bit."""
    doc = _load(one_and_two_workers[2][1])["tiny_damp"]
    s, _ = sc.load_file(tiny_suite / "b_damp.yaml")
    trace: list[dict[str, float]] = []
    r = wb.run_scenario(s, trace=trace)
    assert (doc["outcome"]["along"], doc["outcome"]["fell_at"], doc["outcome"]["min_pelvis_height"]) == (
        r.along, r.fell_at, r.min_pelvis_height)
    assert doc["trace"] == trace


def test_results_record_their_provenance(one_and_two_workers):
    docs = _load(one_and_two_workers[2][1])
    for d in docs.values():
        assert re.fullmatch(r"[0-9a-f]{64}", d["model_sha256"])
        assert d["code_version"]
        assert d["format"] == bench_run.RESULT_FORMAT
    assert docs["tiny_damp"]["seed"] == 3 and docs["tiny_damp"]["policy"] == "builtin"
    assert docs["tiny_damp"]["modes"] == [[0.3, "damp"]]
    assert docs["tiny_damp"]["fall"] == {"min_pelvis_height": 0.45, "max_tilt_deg": pytest.approx(36.87, abs=0.01)}
    link = docs["tiny_link"]
    assert link["status"] == "skipped" and "link impairment" in link["reason"]


def test_report_is_one_self_contained_page_with_table_and_plots(one_and_two_workers):
    text = (one_and_two_workers[1][1] / "report.html").read_text()
    assert "tiny_walk" in text and "tiny_link" in text and "skipped" in text
    # nothing is fetched at view time: no scripts, stylesheets, images or fonts from anywhere
    assert not re.search(r"<script|<link|<img|@import|url\(", text)
    assert set(re.findall(r"https?://[^\"' ]+", text)) == {"http://www.w3.org/2000/svg"}
    svgs = re.findall(r"<svg .*?</svg>", text, flags=re.S)
    assert len(svgs) == 2 * 5  # two scenarios ran: trajectory, vx, vy, yaw rate and tilt each
    for s in svgs:
        root = ET.fromstring(s)  # well-formed
        assert root.find("{http://www.w3.org/2000/svg}polyline") is not None


def test_cli_reaches_the_runner_and_rejects_bad_input(tiny_suite, tmp_path, capsys, monkeypatch):
    bad = tmp_path / "bad.yaml"
    bad.write_text("format: 1\nduration: 1\npushes: [{t: 0.5, force: [1, 2]}]\n")
    code = cli.main(["bench", "run", str(bad), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and f"{bad}: pushes[0]: force must be a list of 3 numbers" in err
    code, _, err = _run(["no_such_suite", "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "neither a scenario file" in err
    code, _, err = _run([str(tiny_suite), "--workers", "0"], capsys)
    assert code == 2 and "--workers" in err
    code, _, err = _run([str(tiny_suite), "--policy", "no_such_policy", "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "no_such_policy" in err


# -- Ray: the same results from a private local instance, and nothing of it left afterwards ---------------------------
needs_ray = pytest.mark.skipif(not bench_ray.ray_available(),
                               reason="ray is not installed (make setup installs it from requirements.txt; "
                                      "users: pip install vasimov[ray])")


def _ray_leftovers(prefix: str) -> list[str]:
    """Processes of this test's Ray instances (their command lines name the instance's folder, ``prefix``...), Ray
    processes among this process's descendants, the folders, and Ray's shared-memory files."""
    left = []
    for p in psutil.process_iter(["pid", "name", "cmdline"]):
        if prefix in " ".join(p.info["cmdline"] or ()):
            left.append(f"{p.info['pid']} {p.info['name']}")
    for p in psutil.Process().children(recursive=True):
        try:
            name, cmd = p.name(), " ".join(p.cmdline())
        except psutil.Error:
            continue
        if name in ("gcs_server", "raylet") or name.startswith("ray::") or "/site-packages/ray/" in cmd:
            left.append(f"{p.pid} {name}")
    left += [str(d) for d in Path(bench_ray.tempfile.gettempdir()).glob(prefix + "*")]
    left += [f"/dev/shm/{n}" for n in os.listdir("/dev/shm") if "plasma" in n or "ray" in n.lower()]
    return left


@pytest.fixture
def ray_prefix(monkeypatch) -> str:
    prefix = f"vasimov-ray-test{os.getpid()}-"  # this test's instances only, whatever else runs on the machine
    monkeypatch.setattr(bench_ray, "TEMP_PREFIX", prefix)
    return prefix


@needs_ray
def test_ray_local_gives_the_results_of_local_workers_and_leaves_nothing(one_and_two_workers, tiny_suite, tmp_path,
                                                                        capsys, ray_prefix):
    shm_before = set(os.listdir("/dev/shm"))
    out = tmp_path / "ray"
    code, _, err = _run([str(tiny_suite), "--out", str(out), "--workers", "2", "--ray", "local"], capsys)
    assert code == one_and_two_workers[1][0]
    assert_same_results(one_and_two_workers[1][1], out)
    assert re.search(r"^\[3/3\] \S+: \w+", err, flags=re.M)  # the same progress lines, the same report
    assert "tiny_walk" in (out / "report.html").read_text()
    assert not _ray_leftovers(ray_prefix)
    assert not {n for n in set(os.listdir("/dev/shm")) - shm_before if not n.startswith(("fastdds", "sem."))}


@needs_ray
def test_ray_is_shut_down_on_interrupt(tiny_suite, tmp_path, monkeypatch, ray_prefix):
    """Ctrl-C (or any failure) while the tasks run: the exception reaches the caller and Ray's processes end."""
    finished = bench_run.Progress.finished

    def interrupted(self, doc):  # at the first result Ray computed (the skipped scenario is reported before)
        if doc["status"] == "skipped":
            return finished(self, doc)
        raise KeyboardInterrupt

    monkeypatch.setattr(bench_run.Progress, "finished", interrupted)
    monkeypatch.setattr(bench_ray, "END_GRACE_S", 2.0)
    with pytest.raises(KeyboardInterrupt):
        bench_run.main([str(tiny_suite), "--out", str(tmp_path), "--workers", "1", "--ray", "local", "--no-report"])
    assert not _ray_leftovers(ray_prefix)
    assert not {k for k in os.environ if k.startswith("RAY_AUTH")}  # the run's environment is restored


def test_ray_without_ray_says_how_to_get_it(tiny_suite, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(bench_run, "ray_available", lambda: False)
    code, _, err = _run([str(tiny_suite), "--ray", "local", "--out", str(tmp_path)], capsys)
    assert code == 2 and "pip install ray" in err and "not a dependency" in err
    assert not list(tmp_path.glob("*.json"))


def test_progress_prints_plain_lines_off_a_terminal():
    buf = io.StringIO()
    p = bench_run.Progress(3, buf, tty=False, total_sim=30.0)
    p.finished({"scenario": "y", "status": "skipped", "reason": "scene: later"})
    p.started("x")
    p.finished({"scenario": "x", "status": "failed", "duration": 10.0, "outcome": {"fell_at": 1.5}})
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("[1/3] y: skipped (scene: later)") and lines[0].endswith("eta ?")
    assert lines[1].startswith("[2/3] x: failed fell at 1.50 s")
    assert re.search(r"eta \d+m\d\ds$", lines[1])  # 20 s of simulation left at the rate so far
    assert (p.passed, p.fell, p.done) == (0, 1, 2)


def test_table_counts_every_status():
    docs = [
        {"scenario": "ok", "status": "passed", "outcome": {"fell_at": None, "along": 1.0, "lateral": 0.0,
                                                           "heading": 0.0, "tracking_error": 0.05, "failures": []}},
        {"scenario": "down", "status": "failed", "outcome": {"fell_at": 2.0, "along": 0.1, "lateral": 0.0,
                                                             "heading": 0.0, "tracking_error": 0.3,
                                                             "failures": ["fell at 2.00s"]}},
        {"scenario": "later", "status": "skipped", "reason": "scene: not yet"},
    ]
    text = bench_run.format_table(docs)
    assert "3 scenarios: 1 passed, 1 failed (1 fell), 0 errors, 1 skipped" in text
    assert "scene: not yet" in text and "fell at 2.00s" in text
    page = bench_report.render(docs)
    assert page.count("<tr>") == 4
