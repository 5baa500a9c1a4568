"""renice_all_threads lowers every thread of the process, not only the caller (os.nice's limit on Linux)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_every_thread_including_ones_started_before_is_reniced() -> None:
    code = textwrap.dedent("""
        import os, threading
        from pathlib import Path
        from vasimov.cpu_priority import renice_all_threads
        started, stop = threading.Event(), threading.Event()
        def worker():
            started.set()
            stop.wait(10)
        t = threading.Thread(target=worker)
        t.start()
        started.wait(5)
        before = {int(p.name): os.getpriority(os.PRIO_PROCESS, int(p.name)) for p in Path("/proc/self/task").iterdir()}
        changed = renice_all_threads(3)
        after = {tid: os.getpriority(os.PRIO_PROCESS, tid) for tid in before}
        later = []
        t2 = threading.Thread(target=lambda: later.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))
        t2.start(); t2.join()
        stop.set(); t.join()
        lowered = all(after[k] == min(19, before[k] + 3) for k in before)
        print(len(before), changed, lowered, later[0] - min(before.values()))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True).stdout
    threads, changed, all_lowered, later_delta = out.split()
    assert int(threads) >= 2 and int(changed) == int(threads)
    assert all_lowered == "True"
    assert int(later_delta) == 3  # a thread started afterwards inherits the new niceness


def test_zero_changes_nothing() -> None:
    from vasimov.cpu_priority import renice_all_threads

    assert renice_all_threads(0) == 0
