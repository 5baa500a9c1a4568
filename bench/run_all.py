"""`make bench`: every benchmark of the project, one after the other (figures only). Issue 24's ratios: graph_speed
(lockstep, separate and composed, vs the single-process loop) and realtime_cost (real-time graph CPU per simulated
second idle and with the menlo CLI walking the robot vs the loop; real-time factor, SDK Hz, lateness p99)."""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for script in ("graph_speed.py", "realtime_cost.py", "controller_compute.py", "observe_overhead.py",
               "realtime_load.py"):
    print(f"== {script}", flush=True)
    subprocess.run([sys.executable, str(HERE / script)], check=False)
