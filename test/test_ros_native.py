"""The twin as a ROS 2 user meets it: colcon build, `ros2 launch`, the `ros2` tools, Ctrl-C, namespaced twins.

Driven by the REAL upstream tools (launch, launch_ros, ros2launch, ros2cli, colcon) that no registry here carries:
../shared/thirdparty/make_ros2_tools_venv.sh builds them into a test-only venv (cached in .ros_tools_venv, built once
per checkout). That venv plays the ROS 2 install (`source /opt/ros/kilted/setup.bash` is its bin/ on PATH and its
prefix in AMENT_PREFIX_PATH); the product never needs it. Without ../shared (a fresh clone) the tests skip.

The workspace is a clean copy of the repository (the files git knows), built and run with the commands of the
"On a ROS 2 install" block of docs/ros2.md, read from that page itself.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import ROOT, graph_env, http_json_when_ready, next_domain_id, pid_alive, wait_for

from vasimov_tools import launch_file
from vasimov_tools.procs import mapped_shm_segments, segments_in_use

pytestmark = pytest.mark.graph

THIRDPARTY = ROOT.parent / "shared" / "thirdparty"
TOOLS_VENV = ROOT / ".ros_tools_venv"
NODES = ("plant", "edge", "policy", "sdk_bridge", "foxglove_bridge", "binary_stream", "camera")
ROS_SETUP = "source /opt/ros/kilted/setup.bash"
# Variables of the project's own venv that must not leak into the "ROS install": the PyPI wheels' bootstrapper
# re-execs each interpreter once with its own library path, and skips that when it sees its guard variable.
_VENV_VARS = ("_ROS_WHEELS_BOOTSTRAP_COMPLETE", "LD_LIBRARY_PATH", "VIRTUAL_ENV", "PYTHONPATH", "AMENT_PREFIX_PATH",
              "CMAKE_PREFIX_PATH", "COLCON_PREFIX_PATH")


def readme_commands() -> list[str]:
    """The commands of the ROS block in docs/ros2.md, comments stripped, in order."""
    text = (ROOT / "docs" / "ros2.md").read_text()
    section = text.split("## On a ROS 2 install", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#", 1)[0].strip()]


def test_readme_block_is_the_ros_user_path() -> None:
    """Pure check, runs without the tools: the block the graph tests execute is the one users read."""
    cmds = readme_commands()
    assert cmds[0] == ROS_SETUP
    assert "python3 -m pip install -r requirements-ros.txt" in cmds
    assert "colcon build --base-paths . msg" in cmds
    assert "source install/setup.bash" in cmds
    assert cmds[-1] == "ros2 launch vasimov bringup.launch.yaml"


def test_package_manifest_and_setup_cfg_are_ament_python() -> None:
    import configparser
    import xml.etree.ElementTree as ET

    root = ET.parse(ROOT / "package.xml").getroot()  # catkin_pkg refuses a malformed manifest: colcon then builds a
    assert root.findtext("name") == "vasimov"       # plain Python package, without the ament index hooks
    assert root.find("export/build_type").text == "ament_python"
    deps = {e.text for e in root.findall("exec_depend")}
    assert {"rclpy", "vasimov_msgs", "launch_ros", "rcl_interfaces"} <= deps
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert cfg["develop"]["script_dir"] == "$base/lib/vasimov"
    assert cfg["install"]["install_scripts"] == "$base/lib/vasimov"
    # the pip path (make setup) keeps its console scripts beside the venv's interpreter, where `vasimov up` looks
    assert (Path(sys.executable).parent / "plant_node").is_file()


# -- the real tools ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def tools_venv() -> Path:
    script = THIRDPARTY / "make_ros2_tools_venv.sh"
    if not script.is_file():
        pytest.skip(f"{script} absent: the real ROS 2 tools (ros2 launch, ros2cli, colcon) are only in CI's "
                    "../shared/thirdparty")
    t0 = time.monotonic()
    # idempotent: returns at once when the venv is already there
    subprocess.run(["bash", str(script), str(TOOLS_VENV)], check=True, env=_clean_env(os.environ),
                   stdout=subprocess.DEVNULL)
    if not (TOOLS_VENV / "lib" / "python3.12" / "site-packages" / "colcon_bash").is_dir():
        # a ROS install's colcon (colcon-common-extensions) writes install/setup.bash; the tools script has only sh
        subprocess.run([str(TOOLS_VENV / "bin" / "python"), "-m", "pip", "install", "-q",
                        "--disable-pip-version-check", "colcon-bash"], check=True, env=_clean_env(os.environ))
    print(f"ros tools venv ready in {time.monotonic() - t0:.1f} s")
    return TOOLS_VENV


def _clean_env(base: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in base.items() if k not in _VENV_VARS}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(Path(sys.executable).parent)))
    return env


def ros_env(venv: Path, domain: int) -> dict[str, str]:
    """What `source /opt/ros/kilted/setup.bash` gives, with the tools venv as the install; isolated graph."""
    env = _clean_env(graph_env(domain))
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    env["AMENT_PREFIX_PATH"] = str(venv)
    return env


class Workspace:
    def __init__(self, path: Path, venv: Path, setup_lines: list[str]) -> None:
        self.path, self.venv, self.setup_lines = path, venv, setup_lines

    def shell(self, command: str, domain: int, **kw: object) -> subprocess.CompletedProcess[str]:
        """Run after `source install/setup.bash`, as in a user's terminal."""
        return subprocess.run(["bash", "-c", f"source install/setup.bash && {command}"], cwd=self.path,
                              env=ros_env(self.venv, domain), capture_output=True, text=True, **kw)

    def launch(self, *args: str, domain: int | None = None) -> Launched:
        return Launched(self, " ".join(["ros2 launch vasimov bringup.launch.yaml", *map(shlex.quote, args)]),
                        domain if domain is not None else next_domain_id())


@pytest.fixture(scope="module")
def workspace(tools_venv: Path, tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """A clean copy (the files git tracks, plus new ones it does not ignore) built as the README says."""
    ws = tmp_path_factory.mktemp("ros_ws") / "vasimov"
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           check=True, capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, ws / rel)
    cmds = readme_commands()
    build = [c for c in cmds if c not in (ROS_SETUP, "cd vasimov") and not c.startswith(("source ", "ros2 "))]
    env = ros_env(tools_venv, next_domain_id())
    for cmd in build:
        t0 = time.monotonic()
        out = subprocess.run(["bash", "-c", cmd], cwd=ws, env=env, capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, f"{cmd} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
        print(f"{cmd}: {time.monotonic() - t0:.1f} s")
    assert (ws / "install" / "vasimov" / "lib" / "vasimov" / "plant_node").is_file()
    assert (ws / "install" / "vasimov" / "share" / "vasimov" / "launch" / "bringup.launch.yaml").is_file()
    return Workspace(ws, tools_venv, cmds)


def _cmdline(pid: int) -> str:
    try:
        return f"{pid} " + Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:120]
    except OSError:
        return f"{pid} (gone)"


class Launched:
    """`ros2 launch ...` in its own session: its process group is the terminal's, so Ctrl-C is killpg(SIGINT)."""

    def __init__(self, ws: Workspace, command: str, domain: int) -> None:
        self.ws, self.domain = ws, domain
        self.segments: set[str] = set()
        self.mappers: dict[str, list[str]] = {}  # segment -> the graph processes that mapped it (for a failure's text)
        self.log_path = ws.path.parent / f"launch-{domain}-{time.monotonic_ns()}.log"
        self.log = self.log_path.open("wb")
        self.proc = subprocess.Popen(["bash", "-c", f"source install/setup.bash && exec {command}"], cwd=ws.path,
                                     env=ros_env(ws.venv, domain), stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def node_pids(self) -> dict[str, int]:
        return {m.group(1): int(m.group(2))
                for m in re.finditer(r"\[INFO\] \[(\w+?)-\d+\]: process started with pid \[(\d+)\]", self.output())}

    def wait_ready(self, timeout: float = 90.0) -> None:
        ready = ("edge ready", "binary stream ready", "SDK bridge ready", "policy runner ready", "foxglove server on")

        def up() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"ros2 launch exited early ({self.proc.returncode}):\n{self.output()[-4000:]}")
            text = self.output()
            return all(r in text for r in ready)

        wait_for(up, timeout, f"the launched graph (domain {self.domain}) to report ready")

    def interrupt(self, sig: int = signal.SIGINT) -> None:
        for pid in [self.proc.pid, *self.node_pids().values()]:
            for seg in mapped_shm_segments([pid]):
                self.segments.add(seg)
                self.mappers.setdefault(seg, []).append(_cmdline(pid))
        os.killpg(self.proc.pid, sig)

    def wait(self, timeout: float = 40.0) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"ros2 launch did not end within {timeout} s:\n{self.output()[-4000:]}") from None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        for pid in self.node_pids().values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait()

    def assert_clean_end(self, expect_nodes: tuple[str, ...]) -> None:
        text = self.output()
        assert "Traceback" not in text, text[-6000:]
        assert "process has died" not in text, text[-6000:]
        assert "KeyboardInterrupt" not in text, text[-6000:]
        pids = self.node_pids()
        for exe in expect_nodes:
            assert exe in pids, f"{exe} never started:\n{text[-3000:]}"
            assert re.search(rf"\[INFO\] \[{exe}-\d+\]: process has finished cleanly", text), \
                f"{exe} did not finish cleanly:\n{text[-6000:]}"
        wait_for(lambda: not [p for p in pids.values() if pid_alive(p)], 10.0, "every node process to be gone")
        assert self.segments, "no Fast DDS segment seen mapped by the graph's processes"
        # a segment some live process still maps is that process's own (the graph mapped it to read its data: a
        # ros2 CLI participant's, say); what no live process maps and still exists was left behind
        left = sorted(s for s in self.segments if (Path("/dev/shm") / s).exists())
        if left:
            left = sorted(set(left) - segments_in_use())
        assert not left, (f"Fast DDS segments of the ended graph left in /dev/shm: {left}; mapped at Ctrl-C by "
                          f"{ {seg: self.mappers.get(seg) for seg in left} }")


@contextlib.contextmanager
def launched(ws: Workspace, *args: str) -> Iterator[Launched]:
    g = ws.launch(*args)
    try:
        yield g
    finally:
        if g.proc.poll() is None:
            g.kill()
        ws.shell("ros2 daemon stop", g.domain, timeout=60)


def _ros2(ws: Workspace, domain: int, command: str, timeout: float = 60.0) -> str:
    """``ros2 COMMAND`` in the workspace; must succeed. Each call is a fresh DDS participant: the param verbs get
    ``--timeout 15`` (their own wait for the node, default 1 s), which a fresh participant on a loaded machine can
    exceed (clean-clone CI 2026-12-02: ``param set`` answered "Node not found" for a node just listed)."""
    out = ws.shell(f"ros2 {command}", domain, timeout=timeout)
    assert out.returncode == 0, f"ros2 {command} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}"
    return out.stdout


def wait_nodes(ws: Workspace, domain: int, expected: set[str], timeout: float = 60.0) -> set[str]:
    """`ros2 node list` until it shows every expected node (a fresh CLI participant discovers a dozen nodes in a few
    hundred ms on an idle machine, seconds on a loaded one); fails with the last listing."""
    seen: set[str] = set()

    def listed() -> bool:
        nonlocal seen
        seen = set(_ros2(ws, domain, "node list --no-daemon --spin-time 2").split())
        return expected <= seen

    try:
        wait_for(listed, timeout, "ros2 node list to show every node")
    except AssertionError as exc:
        raise AssertionError(f"{exc}: missing {sorted(expected - seen)}, listed {sorted(seen)}") from None
    return seen


# -- the tests --------------------------------------------------------------------------------------------------------
def test_show_args_lists_every_launch_argument(workspace: Workspace) -> None:
    out = _ros2(workspace, next_domain_id(), "launch vasimov bringup.launch.yaml --show-args")
    desc = launch_file.load(ROOT / "launch" / "bringup.launch.yaml")
    for name, text in desc.arg_descriptions.items():
        assert f"'{name}':" in out, name
        assert text.split(":")[0][:40] in out, name


def test_launched_graph_serves_the_ros2_tools_and_ends_cleanly(workspace: Workspace) -> None:
    """README's launch line; node list, echo, hz, param get/set/refusal; a node SIGTERMed on its own (as launch's
    escalation does) finishes cleanly; then Ctrl-C and a second Ctrl-C during shutdown: every node exits 0."""
    with launched(workspace) as g:
        g.wait_ready()
        d = g.domain
        assert wait_nodes(workspace, d, {f"/{n}" for n in NODES}) == {f"/{n}" for n in NODES}

        echo = _ros2(workspace, d, "topic echo --once --no-daemon /joint_states sensor_msgs/msg/JointState")
        assert "name:" in echo and "position:" in echo, echo

        hz = workspace.shell("timeout -s INT 8 ros2 topic hz /clock --window 200", d, timeout=60).stdout
        rates = [float(r) for r in re.findall(r"average rate: ([\d.]+)", hz)]
        assert rates, hz
        assert 100.0 <= max(rates) <= 260.0, f"/clock at {rates} Hz (200 Hz expected, loosely)"

        assert "Integer value is: 4" in _ros2(workspace, d,
                                              "param get --no-daemon --timeout 15 /plant control_decimation")
        refused = workspace.shell("ros2 param set --no-daemon --timeout 15 /plant control_decimation 2", d,
                                  timeout=60)
        assert "read-only" in refused.stdout + refused.stderr, refused
        assert "Set parameter successful" in _ros2(workspace, d, "param set --no-daemon --timeout 15 "
                                                                 "/foxglove_bridge tf_rate_hz 20.0")
        assert "Double value is: 20.0" in _ros2(workspace, d, "param get --no-daemon --timeout 15 "
                                                             "/foxglove_bridge tf_rate_hz")

        os.kill(g.node_pids()["binary_stream_node"], signal.SIGTERM)  # what launch's escalation sends
        wait_for(lambda: re.search(r"binary_stream_node-\d+\]: process has finished cleanly", g.output()), 20.0,
                 "binary_stream_node to finish cleanly on SIGTERM")

        g.interrupt()  # Ctrl-C: SIGINT to the process group, then launch's own SIGINT to each node
        time.sleep(0.3)
        g.interrupt()  # a second Ctrl-C while the nodes shut down
        assert g.wait() == 0, g.output()[-4000:]
        g.assert_clean_end(tuple(f"{n}_node" for n in ("plant", "edge", "policy", "sdk_bridge", "foxglove_bridge",
                                                       "binary_stream")))


def test_two_namespaced_twins_side_by_side(workspace: Workspace) -> None:
    """The default twin and `namespace:=robot1` with its own ports, in one ROS domain: each answers its own HTTP
    port and sends SDK state to its own port; node names and topics do not collide; Ctrl-C ends both cleanly."""
    domain = next_domain_id()
    second = ("namespace:=robot1", "sdk_command_port:=9850", "sdk_state_port:=9851", "sdk_http_port:=4000",
              "foxglove_port:=9765", "binary_port:=9766")
    state_socks = []
    for port in (8851, 9851):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", port))
        s.settimeout(10.0)
        state_socks.append(s)
    a, b = workspace.launch(domain=domain), workspace.launch(*second, domain=domain)
    try:
        a.wait_ready()
        b.wait_ready()
        for port in (3000, 4000):
            truth = http_json_when_ready(f"http://127.0.0.1:{port}/api/sim/truth", timeout=30.0)
            assert truth["sim_time"] >= 0.0 and len(truth["base_pos"]) == 3
            # each twin accepts a push (its bridge looks for its plant on its own, namespaced sim-control topic)
            push = http_json_when_ready(f"http://127.0.0.1:{port}/api/sim/push",
                                        {"body": "pelvis_link", "force": [5, 0, 0], "duration": 0.1}, timeout=30.0)
            assert push["pushing"]
        for s in state_socks:
            data, _ = s.recvfrom(65536)  # RobotState datagrams from that twin's SDK bridge
            assert data
        both = {f"/{n}" for n in NODES} | {f"/robot1/{n}" for n in NODES}
        assert wait_nodes(workspace, domain, both) == both  # twelve distinct names, no duplicate /plant
        want = {p + t for p in ("", "/robot1") for t in ("/joint_states", "/clock", "/vasimov/plant/tick")}
        wait_for(lambda: want <= set(_ros2(workspace, domain, "topic list --no-daemon --spin-time 2").split()), 60.0,
                 f"ros2 topic list to show {sorted(want)}")
        a.interrupt()
        b.interrupt()
        assert a.wait() == 0 and b.wait() == 0
        for g in (a, b):
            g.assert_clean_end(("plant_node", "edge_node", "sdk_bridge_node"))
    finally:
        for s in state_socks:
            s.close()
        for g in (a, b):
            if g.proc.poll() is None:
                g.kill()
        workspace.shell("ros2 daemon stop", domain, timeout=60)


def test_ros2_run_starts_a_single_node(workspace: Workspace) -> None:
    domain = next_domain_id()
    cfg = "install/vasimov/share/vasimov/config/plant.yaml"
    proc = subprocess.Popen(["bash", "-c", f"source install/setup.bash && exec ros2 run vasimov plant_node "
                             f"--ros-args --params-file {cfg} -p seed:=3"], cwd=workspace.path,
                            env=ros_env(workspace.venv, domain), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, text=True)
    try:
        assert wait_nodes(workspace, domain, {"/plant"}) == {"/plant"}
        assert "Integer value is: 3" in _ros2(workspace, domain, "param get --no-daemon --timeout 15 /plant seed")
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0, out
        assert "Traceback" not in out, out
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
