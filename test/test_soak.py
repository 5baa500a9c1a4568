"""`make soak` in miniature: bench/soak.py for 60 s of random walking with an SDK client, a Foxglove client and a
recorder; the report must hold every figure it promises, measured (the pass/fail criteria are the bench's)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from harness import ROOT

pytestmark = pytest.mark.graph


def test_a_one_minute_soak_reports_every_figure(tmp_path):
    out = tmp_path / "soak.json"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "soak.py"), "--duration", "60", "--command-period", "5",
                        "--seed", "3", "--out", str(tmp_path / "run"), "--json", str(out)],
                       capture_output=True, text=True, timeout=420, cwd=ROOT)
    assert out.is_file(), r.stdout[-3000:] + r.stderr[-3000:]
    report = json.loads(out.read_text())
    print(r.stdout)
    assert report["graph_alive_at_end"] and report["exit_code"] == 0, r.stdout
    assert report["sdk"]["velocity_commands_sent"] >= 10 and report["sdk"]["error_count"] == 0
    assert report["sdk_state_hz"] > 20  # 200 x RTF on a shared machine
    assert report["foxglove_joint_states_received"] > 100
    rec = report["recorder"]
    assert rec["messages"] > 1000 and "dropped_total" in rec
    rt = report["plant_realtime"]
    assert rt["ticks"] > 0 and 0 < rt["rtf"] <= 1.05 and "stale_commands" in rt
    assert {"plant", "edge", "policy", "sdk_bridge", "foxglove_bridge", "binary_stream", "recorder"} <= set(
        report["memory"])
    assert all(m["start_mb"] > 10 for m in report["memory"].values())
    assert report["graph_status"]["observer_exits"] == 0
    assert "falls" in report  # measured and printed; whether a 60 s random walk falls is the bench's verdict
