"""The capability card (vasimov_tools.bench_card): each section computed from synthetic results with known answers,
then the command end to end on a real walk through the bench (one short scenario, no push search)."""

from __future__ import annotations

import json
import math

import pytest

from vasimov_tools import bench_card as bc

SUITES_DIR = "/x/vasimov_tools/suites"


def trace(segments, dt=0.1, truth=None, sampled=None, until=None):
    """Samples every ``dt`` of constant-command ``segments`` [(start, end, (vx, vy, wz))]. The body moves at
    ``truth(t, cmd)`` (heading frame; default: the command), which the positions and heading integrate; the sampled
    velocity fields read ``sampled(t, cmd)`` (default: the truth)."""
    out = []
    end = segments[-1][1] if until is None else until
    x = y = h = 0.0
    k = 0
    while k * dt < end - 1e-9:
        t = round(k * dt, 6)
        cmd = next((c for s, e, c in segments if s - 1e-9 <= t < e - 1e-9), (0.0, 0.0, 0.0))
        v = cmd if truth is None else truth(t, cmd)
        seen = v if sampled is None else sampled(t, cmd)
        out.append({"t": t, "x": x, "y": y, "heading": h, "cmd_vx": cmd[0], "cmd_vy": cmd[1], "cmd_wz": cmd[2],
                    "vx": seen[0], "vy": seen[1], "wz": seen[2], "tilt_deg": 0.0, "z": 0.61})
        x += (math.cos(h) * v[0] - math.sin(h) * v[1]) * dt
        y += (math.sin(h) * v[0] + math.cos(h) * v[1]) * dt
        h += v[2] * dt
        k += 1
    return out


def doc(name, suite="standard", duration=10.0, fell_at=None, status=None, pushes=(), tr=None, **outcome):
    return {"format": 1, "scenario": name, "source": f"{SUITES_DIR}/{suite}/{name}.yaml", "policy": "builtin",
            "code_version": "abc123", "duration": duration, "pushes": list(pushes),
            "status": status or ("failed" if fell_at is not None else "passed"),
            "outcome": {"fell_at": fell_at, **outcome}, "trace": tr if tr is not None else []}


def test_suite_of_reads_the_shipped_suite_from_the_source_path():
    assert bc.suite_of({"source": "/a/vasimov_tools/suites/envelope/01_sdk_vx_+0.4.yaml"}) == "envelope"
    assert bc.suite_of({"source": "docs/examples/first_push.yaml"}) == "files"
    assert bc.suite_of({}) == "files"


def test_a_single_hold_is_found_and_anything_else_is_not():
    fwd = (0.3, 0.0, 0.0)
    assert bc.single_hold(trace([(0.0, 8.0, fwd), (8.0, 10.0, (0.0, 0.0, 0.0))])) == (0.0, 8.0, fwd)
    assert bc.single_hold(trace([(0.0, 1.0, (0.0, 0.0, 0.0)), (1.0, 10.0, fwd)])) == (1.0, pytest.approx(10.0), fwd)
    assert bc.single_hold(trace([(0.0, 5.0, fwd), (5.0, 10.0, (0.0, 0.2, 0.0))])) is None  # two commands
    assert bc.single_hold(trace([(0.0, 3.0, fwd), (3.0, 4.0, (0.0, 0.0, 0.0)), (4.0, 9.0, fwd)])) is None
    assert bc.single_hold(trace([(0.0, 5.0, (0.0, 0.0, 0.0))])) is None
    assert bc.single_hold([]) is None


def test_walked_velocity_comes_from_positions_not_from_the_sampled_velocities():
    # the body ramps up for 2 s, then walks 0.25 m/s while turning 0.1 rad/s; the sampled velocity fields read 0.1
    # too high, as samples locked to the gait's phase do: the card reports what the positions and heading say
    def truth(t, cmd):
        return (min(t, 2.0) / 2.0 * 0.25, 0.0, 0.1 if t >= 2.0 else 0.0)

    def sampled(t, cmd):
        v = truth(t, cmd)
        return (v[0] + 0.1, v[1], v[2] + 0.1)

    tr = trace([(0.0, 8.0, (0.3, 0.0, 0.0)), (8.0, 10.0, (0.0, 0.0, 0.0))], truth=truth, sampled=sampled)
    (row,) = bc.hold_rows([doc("fwd", tr=tr, step_half_time=1.2, stop_time=0.4, command_limited_share=0.5)])
    assert row["walked"] == pytest.approx((0.25, 0.0, 0.1), abs=2e-3)
    assert row["window"] == (pytest.approx(bc.SETTLE), 8.0)
    assert (row["half_time"], row["stop_time"], row["limited"]) == (1.2, 0.4, 0.5)
    assert bc.walked_velocity(tr, 2.0, 2.5) is None  # fewer than 10 samples: no figure


def test_holds_skip_pushes_short_holds_and_long_runs_and_end_at_a_fall():
    hold = trace([(0.0, 8.0, (0.2, 0.0, 0.0))], until=5.0)  # the trace stops at the fall, at 5 s
    short = trace([(0.0, 2.0, (0.2, 0.0, 0.0)), (2.0, 10.0, (0.0, 0.0, 0.0))])
    rows = bc.hold_rows([doc("fell", duration=8.0, fell_at=5.0, tr=hold), doc("short", tr=short),
                         doc("pushed", tr=hold, pushes=[{"t": 2.0, "force": [80, 0, 0], "body": "pelvis_link"}]),
                         doc("error", status="error", tr=hold),
                         doc("sequence", suite="sequences", duration=120.0, fell_at=5.0, tr=hold)])
    (row,) = rows
    assert row["scenario"] == "fell" and row["fell_at"] == 5.0
    assert row["window"] == (pytest.approx(2.0), 5.0)  # up to the fall; the hold itself ran to the end
    assert row["walked"] == pytest.approx((0.2, 0.0, 0.0))


def test_suite_rows_count_and_survived_seconds_stop_at_the_fall():
    docs = [doc("a"), doc("b", fell_at=4.0), doc("c", suite="goals", duration=6.0, fell_at=2.5),
            {"format": 1, "scenario": "d", "source": f"{SUITES_DIR}/viewer/d.yaml", "status": "skipped"},
            doc("e", suite="viewer", duration=5.0, status="error")]
    rows = {r["suite"]: r for r in bc.suite_rows(docs)}
    assert list(rows) == ["standard", "goals", "viewer"]  # the shipped order
    assert {k: rows["standard"][k] for k in ("ran", "passed", "fell", "survived_s", "asked_s")} == \
        {"ran": 2, "passed": 1, "fell": 1, "survived_s": 14.0, "asked_s": 20.0}
    assert (rows["goals"]["survived_s"], rows["goals"]["asked_s"]) == (2.5, 6.0)
    assert (rows["viewer"]["ran"], rows["viewer"]["skipped"], rows["viewer"]["errors"]) == (0, 1, 1)


def test_push_rows_say_how_many_pushes_were_stood_through_and_while_doing_what():
    pushes = [{"t": 8.0, "force": [0, 575, 0], "body": "pelvis_link"}, {"t": 2.0, "force": [0, 450, 0], "body": None}]
    walking = trace([(0.0, 12.0, (0.6, 0.0, 0.0))])
    rows = bc.push_rows([doc("viewer_push", suite="viewer", duration=12.0, fell_at=8.6, pushes=pushes,
                             pushes_survived=1, tr=walking)])
    (row,) = rows
    assert row["pushes"] == [(450.0, "pelvis_link", 2.0), (575.0, "pelvis_link", 8.0)]
    assert (row["survived"], row["fell_at"], row["moving"]) == (1, 8.6, True)


def test_long_runs_list_their_falls():
    docs = [doc(f"s{i}", suite="sequences", duration=120.0, fell_at=f) for i, f in enumerate([None, 30.0, 90.0])]
    (row,) = bc.long_rows([*docs, doc("short", duration=10.0, fell_at=3.0)])
    assert (row["suite"], row["ran"], row["fell"], row["fall_times"]) == ("sequences", 3, 2, [30.0, 90.0])


def test_the_card_renders_every_section_from_the_numbers():
    tr = trace([(0.0, 8.0, (0.4, 0.0, 0.0)), (8.0, 10.0, (0.0, 0.0, 0.0))], truth=lambda t, c: (0.28, 0.0, 0.0))
    docs = [doc("envelope_sdk_vx_+0.4", suite="envelope", tr=tr, step_half_time=1.58, stop_time=0.56,
                command_limited_share=0.8),
            doc("goal_push_front_150N", suite="goals", duration=7.0, fell_at=2.82, pushes_survived=0,
                pushes=[{"t": 2.0, "force": [150, 0, 0], "body": "pelvis_link"}], tr=trace([(0.0, 7.0, (0, 0, 0))]))]
    limits = [{"direction": d, "walking": 0.0, "phases": 4, "lo": 0.0, "hi": 600.0, "survived": s, "fell": f}
              for d, s, f in [("front", 88.0, 94.0), ("back", 600.0, None), ("left", None, 0.0)]]
    docs[0]["timing"] = {"cpu_p50_ms": 0.5, "cpu_p99_ms": 1.1}
    docs[1]["timing"] = {"cpu_p50_ms": 0.7, "cpu_p99_ms": 2.9}
    card = bc.render(docs, limits)
    assert card.startswith("# What `builtin` can do")
    assert "median of the scenarios' p50 0.60 ms, largest p99 2.90 ms" in card
    assert "| envelope | 1 | 1 | 0 | 10.0 / 10.0 |" in card and "| goals | 1 | 0 | 1 | 2.8 / 7.0 |" in card
    assert "| envelope_sdk_vx_+0.4 | +0.40 / +0.00 / +0.00 | +0.28 / +0.00 / +0.00 | 1.58 | 0.56 | 80 % | - |" in card
    assert "| standing, 4 phases | 88 | >= 600 | < 0 | - |" in card
    assert "| goal_push_front_150N | standing | 150 at pelvis_link 2 | 0 of 1 | 2.82 |" in card


def test_the_card_refuses_a_folder_without_results(tmp_path, capsys):
    assert bc.main(["--from", str(tmp_path)]) == 2
    assert "no bench results" in capsys.readouterr().err


def test_the_command_walks_the_robot_through_the_bench_and_renders_it_again_from_its_folder(tmp_path, capsys):
    """A real run: 0.2 m/s forward for 6 s, then stop; the built-in walker walks 0.2 m/s within a few cm/s (the
    standard suite's forward_0.2 walks 0.21). The card of the folder is the card the run printed."""
    scenario = tmp_path / "walk_then_stop.yaml"
    scenario.write_text("format: 1\nname: walk_then_stop\nduration: 8.0\ncommands:\n"
                        "  - {t: 0.0, velocity: [0.2, 0.0, 0.0]}\n  - {t: 6.0, velocity: [0.0, 0.0, 0.0]}\n")
    out = tmp_path / "card"
    assert bc.main(["--suites", str(scenario), "--no-push-limit", "--workers", "1", "--out", str(out)]) == 0
    card = (out / "card.md").read_text()
    assert card.strip() in capsys.readouterr().out
    (result,) = [json.loads(p.read_text()) for p in (out / "results").glob("*.json")]
    (row,) = bc.hold_rows([result])
    assert row["window"] == (pytest.approx(bc.SETTLE), pytest.approx(6.0))
    assert row["walked"][0] == pytest.approx(0.2, abs=0.04) and abs(row["walked"][1]) < 0.03
    assert row["fell_at"] is None and row["stop_time"] is not None
    assert f"| walk_then_stop | +0.20 / +0.00 / +0.00 | {bc._vec(row['walked'])} |" in card
    assert bc.main(["--from", str(out)]) == 0
    assert capsys.readouterr().out.strip() == card.strip()


def _folder(path, policy, fell_at, push_survived):
    path.mkdir()
    tr = trace([(0.0, 8.0, (0.2, 0.0, 0.0)), (8.0, 10.0, (0.0, 0.0, 0.0))])
    for d in (doc("forward_0.2", tr=tr, fell_at=fell_at),
              doc("sequence_axis_01", suite="sequences", duration=120.0, fell_at=fell_at and 60.0)):
        d["policy"] = policy
        (path / f"{d['scenario']}.json").write_text(json.dumps(d))
    (path / "push_limit_standing.json").write_text(json.dumps(
        [{"direction": "front", "walking": 0.0, "phases": 4, "lo": 0.0, "hi": 600.0, "survived": push_survived,
          "fell": push_survived + 6.0}]))
    return path


def test_two_folders_render_side_by_side_a_column_each(tmp_path, capsys):
    a = _folder(tmp_path / "a", "builtin", None, 84.0)
    b = _folder(tmp_path / "b", "builtin-v2", 5.0, 56.0)
    assert bc.main(["--from", str(a), "--from", str(b)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# `builtin` vs `builtin-v2`")
    assert "| standard | 1 / 0 of 1 | 0 / 1 of 1 | 10 of 10 | 5 of 10 |" in out
    assert "| all | 2 / 0 of 2 | 0 / 2 of 2 | 130 of 130 | 65 of 130 |" in out
    walked = "+0.20 / +0.00 / +0.00"
    assert f"| forward_0.2 | {walked} | {walked} | - | - | {walked} | - | 5.00 |" in out
    assert "| standing, 4 phases | `builtin` | 84 | - | - | - |" in out
    assert "| standing, 4 phases | `builtin-v2` | 56 | - | - | - |" in out
    assert "| sequences (120 s) | 0 of 1 | 1 of 1, median 60.0 |" in out
    assert bc.main(["--from", str(a), "--from", str(tmp_path / "missing")]) == 2
    capsys.readouterr()
    card = tmp_path / "card"  # a card's own layout: results in results/, the push-limit reports beside them
    (card / "results").mkdir(parents=True)
    for f in a.glob("*.json"):
        (card / ("." if f.name.startswith("push_limit") else "results") / f.name).write_text(f.read_text())
    (card / "push_limit_standing.json").write_text("[{not json")
    assert bc.main(["--from", str(card)]) == 2
    assert "push_limit_standing.json: unreadable push-limit report" in capsys.readouterr().err
