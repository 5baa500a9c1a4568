"""The native teardown backstop (vasimov.ros.native_exit): it ends a process whose main thread holds the GIL in a
blocking C call -- where the Python exit guard cannot run -- with the given code, after removing the segment files
it was given and printing the Python stacks."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

CHILD = r"""
import ctypes, sys, threading
from vasimov.ros import native_exit
names = sys.argv[2:]
for n in names:
    for f in (n, "sem." + n + "_mutex", n + "_el"):
        open("/dev/shm/" + f, "w").close()
threading.Timer(0.1, lambda: print("python guard ran", flush=True)).start()  # needs the GIL: never gets it
print("armed" if native_exit.arm(float(sys.argv[1]), 7, names) else "not armed", flush=True)
ctypes.PyDLL(None).sleep(30)  # a C call made with the GIL held: every Python thread now waits
print("woke", flush=True)
"""


def test_a_gil_held_hang_ends_with_the_code_its_segments_removed_and_stacks_printed() -> None:
    name = f"vasimov_native_exit_test_{uuid.uuid4().hex[:12]}"
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", CHILD, "0.6", name], capture_output=True, text=True, timeout=25)
    took = time.monotonic() - t0
    assert "armed" in r.stdout.splitlines(), r.stdout + r.stderr
    assert r.returncode == 7, (r.returncode, r.stdout, r.stderr)
    assert took < 15.0, took  # not the 30 s C call
    assert "python guard ran" not in r.stdout and "woke" not in r.stdout  # the GIL really was held throughout
    assert "Timeout" in r.stderr and "File" in r.stderr, r.stderr  # faulthandler's stacks say where it hung
    left = [f for f in (name, f"sem.{name}_mutex", f"{name}_el") if (Path("/dev/shm") / f).exists()]
    assert not left, left


def test_a_delay_too_short_to_print_the_stacks_first_is_refused() -> None:
    from vasimov.ros import native_exit

    assert native_exit.arm(0.05, 0) is False


CRASHING_NODE = r"""
import ctypes
from vasimov.ros.spin import ros_session
def crash_here():
    ctypes.string_at(0)  # a native crash, as a segfault inside rclpy or Fast DDS would be
with ros_session([]):
    crash_here()
"""


def test_a_node_process_that_crashes_natively_prints_where() -> None:
    """A node that dies of SIGSEGV leaves its Python stack in the graph's output, not just "code -11"."""
    r = subprocess.run([sys.executable, "-c", CRASHING_NODE], capture_output=True, text=True, timeout=60)
    assert r.returncode == -11, (r.returncode, r.stderr)
    assert "Segmentation fault" in r.stderr and "crash_here" in r.stderr, r.stderr
