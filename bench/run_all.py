"""`make bench`: every benchmark of the project, one after the other (figures only)."""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for script in ("graph_speed.py", "observe_overhead.py", "realtime_load.py"):
    print(f"== {script}", flush=True)
    subprocess.run([sys.executable, str(HERE / script)], check=False)
