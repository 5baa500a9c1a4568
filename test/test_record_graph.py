"""Recording the running graph: `vasimov up --record DIR` (lockstep, with a command script) and `vasimov record DIR`
(standalone, joining a real-time graph), read back with an independent reader (rosbags' Reader + types parsed from
the installed .msg files, not the recorder's typestore)."""

from __future__ import annotations

import itertools
import json
import re
import signal
import socket
import subprocess
import threading
from pathlib import Path

import pytest
import yaml
from harness import VENV_BIN, Graph, graph_env, next_domain_id, wait_for
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosprobe import RosProbe
from vasimov_msgs.msg import PlantState

from vasimov.ros import qos, topics
from vasimov_bridge import sdk_wire
from vasimov_tools.bag import share_directory
from vasimov_tools.record import model_sha256

pytestmark = pytest.mark.graph

DT_NS = 5_000_000  # physics step
DURATION = 4.0


def _reader_store():
    store = get_typestore(Stores.ROS2_KILTED)
    typs = {}
    for f in sorted((share_directory("vasimov_msgs") / "msg").glob("*.msg")):
        typs.update(get_types_from_msg(f.read_text(), f"vasimov_msgs/msg/{f.stem}"))
    store.register(typs)
    return store


def _read(path: Path) -> tuple[dict, dict[str, str], dict[str, list[tuple[int, object]]]]:
    """(metadata, topic -> type, topic -> [(log time, message)]) in the reader's order."""
    meta = yaml.safe_load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    store = _reader_store()
    msgs: dict[str, list[tuple[int, object]]] = {}
    with Reader(path) as reader:
        types = {c.topic: c.msgtype for c in reader.connections}
        for c, t, raw in reader.messages():
            msgs.setdefault(c.topic, []).append((t, store.deserialize_cdr(raw, c.msgtype)))
    return meta, types, msgs


class _UdpSink:
    """Stands where an SDK client would listen (state port 8851) and keeps every datagram it receives."""

    def __init__(self, port: int = 8851) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.sock.bind(("127.0.0.1", port))
        self.sock.settimeout(0.2)
        self.data: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.data.append(self.sock.recv(65536))
            except TimeoutError:
                continue

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


def test_lockstep_run_with_record_writes_a_complete_bag(tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text("- {t: 0.1, cmd: stand}\n- {t: 3.5, cmd: velocity, vx: 0.2}\n")
    out = tmp_path / "run_bag"
    sink = _UdpSink()
    g = Graph("--lockstep", "--duration", str(DURATION), "--policy", "hold", "--seed", "5", "--script", str(script),
              "--record", str(out), "foxglove:=false", "binary_port:=0")
    try:
        rc = g.proc.wait(timeout=120)
    finally:
        g.stop()
        sink.close()
    log = g.output()
    assert rc == 0, log[-4000:]
    assert "lockstep: joining the tick" in log and "TIMED OUT" not in log
    summary = re.search(r"bag .*: (\d+) messages on (\d+) topics, (\d+) dropped", log)
    assert summary is not None, log[-4000:]
    assert summary.group(3) == "0", "the recorder dropped messages"
    assert "DDS reported lost" not in log

    meta, types, msgs = _read(out)
    assert meta["version"] == 9 and meta["storage_identifier"] == "mcap"
    assert meta["custom_data"]["vasimov.dropped"] == "{}"
    steps, ticks = round(DURATION / 0.005), round(DURATION / 0.02)

    expected_types = {
        topics.CLOCK: "rosgraph_msgs/msg/Clock", topics.JOINT_STATES: "sensor_msgs/msg/JointState",
        topics.IMU: "sensor_msgs/msg/Imu", topics.ODOM_TRUTH: "nav_msgs/msg/Odometry",
        topics.FEET_TRUTH: "vasimov_msgs/msg/FootContacts", topics.PLANT_STATE: "vasimov_msgs/msg/PlantState",
        topics.PLANT_TICK: "vasimov_msgs/msg/PlantState", topics.PLANT_SAMPLES: "vasimov_msgs/msg/PlantSamples",
        topics.FIRMWARE_STATE: "vasimov_msgs/msg/FirmwareState",
        topics.MOTOR_COMMAND: "vasimov_msgs/msg/MotorCommand", topics.POLICY_STEP: "vasimov_msgs/msg/PolicyStep",
        topics.SDK_DATAGRAMS: "vasimov_msgs/msg/SdkDatagram", topics.PROVENANCE: "vasimov_msgs/msg/Provenance",
    }
    for topic, typ in expected_types.items():
        assert types.get(topic) == typ, f"{topic}: {types.get(topic)}"

    # every physics step of the plant is in the bag, once, in order, logged at its simulated time
    states = msgs[topics.PLANT_STATE]
    assert [m.step for _, m in states] == list(range(steps + 1))
    assert [t for t, _ in states] == [m.step * DT_NS for _, m in states]
    for topic in (topics.CLOCK, topics.JOINT_STATES, topics.IMU, topics.ODOM_TRUTH, topics.FEET_TRUTH):
        assert len(msgs[topic]) == steps + 1, topic
    # the SDK bridge's input: every step once, in order, a control period per message
    sampled = [m.first_step + i for _, m in msgs[topics.PLANT_SAMPLES] for i in range(len(m.time))]
    assert sampled == list(range(steps + 1))
    assert [m.tick for _, m in msgs[topics.PLANT_TICK]] == list(range(ticks + 1))
    # the loop's answers: one per tick; the very last may be cut off when the plant ends the run
    for topic in (topics.FIRMWARE_STATE, topics.MOTOR_COMMAND, topics.POLICY_STEP):
        got = [m.tick for _, m in msgs[topic]]
        assert got == list(range(len(got))) and len(got) >= ticks, f"{topic}: {len(got)} of {ticks + 1}"
    for topic, items in msgs.items():
        times = [t for t, _ in items]
        assert times == sorted(times), f"{topic} timestamps out of order"
        assert times[-1] <= steps * DT_NS, f"{topic} logged after the run's end: {times[-1]}"
    modes = [m.mode_name for _, m in msgs[topics.FIRMWARE_STATE]]
    assert "STAND" in modes and modes[-1] == "MOVE", "the command script drove the robot"

    # the SDK's state stream as it went out on the wire: decodes as asimov RobotState, matches what a listener got
    out_dgrams = [m for _, m in msgs[topics.SDK_DATAGRAMS] if m.direction == 1]
    assert len(out_dgrams) > steps // 2
    frames = [sdk_wire.decode_state(bytes(m.data)) for m in out_dgrams]
    assert all(isinstance(f, sdk_wire.StateFrame) for f in frames), next(f for f in frames
                                                                          if not isinstance(f, sdk_wire.StateFrame))
    seqs = [f.sequence for f in frames]
    assert all(b > a for a, b in itertools.pairwise(seqs))
    # firmware clock: 200 Hz of simulated time, 5000 us per consecutive frame
    assert all(b.timestamp_us - a.timestamp_us == 5000 * (b.sequence - a.sequence)
               for a, b in itertools.pairwise(frames))
    # joint_current (approximate): the motor torque through the one assumed torque constant, in every frame
    assert all(f.joint_current is not None and len(f.joint_current) == 25 for f in frames)
    assert max(abs(c) for c in frames[-1].joint_current) > 0.1  # a standing, walking robot carries load
    received = set(sink.data)
    assert all(bytes(m.data) in received for m in out_dgrams)
    assert len(out_dgrams) >= len(sink.data) - 2

    # a second, unrelated reader (the mcap library's ROS 2 decoder, as Foxglove uses it) decodes every message
    # from nothing but the schemas embedded in the file: the message definitions in the bag are complete
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    (mcap_file,) = meta["relative_file_paths"]
    decoded: dict[str, int] = {}
    with open(out / mcap_file, "rb") as f:
        for _, channel, _, _ in make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages():
            decoded[channel.topic] = decoded.get(channel.topic, 0) + 1
    assert decoded == {topic: len(items) for topic, items in msgs.items()}

    # provenance: one latched message, what the run really was
    (_, prov), = msgs[topics.PROVENANCE]
    assert prov.model_sha256 == model_sha256()
    assert re.fullmatch(r"[0-9a-f]{64}", prov.config_sha256)
    assert prov.seed == 5 and prov.time_mode == "lockstep" and prov.policy_backend == "hold"
    assert prov.policy_sha256 == ""
    assert prov.git_commit == "unknown" or re.fullmatch(r"[0-9a-f]{40}", prov.git_commit)
    # the scene (vasimov.scenes): in the bag's provenance data, and its latched description as a topic
    assert json.loads(meta["custom_data"]["vasimov.provenance.scene"])["name"] == "flat"
    (_, scene), = msgs[topics.SCENE]
    assert json.loads(scene.data)["geoms"][0]["name"] == "floor"


def _recorder(out: Path, env: dict[str, str], *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(VENV_BIN / "vasimov"), "record", str(out), *extra], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_standalone_record_joins_a_realtime_graph_and_closes_on_sigterm(graph_factory, tmp_path):
    g: Graph = graph_factory("--policy", "hold", "--seed", "3", "foxglove:=false", "binary_port:=0")
    wait_for(lambda: "plant ready" in g.output() and "SDK bridge ready" in g.output(), 60, "graph start")
    out = tmp_path / "joined"
    rec = _recorder(out, g.env, "--exclude", "^/rosout$")
    probe = RosProbe(g.domain)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(rec.stdout), daemon=True)
    reader.start()
    try:
        wait_for(lambda: any("provenance:" in line for line in lines), 30, "the recorder to start")
        probe.subscribe(topics.PLANT_STATE, PlantState, qos.STATE_STREAM)
        wait_for(lambda: probe.count(topics.PLANT_STATE) >= 400, 30, "two seconds of plant state")
        rec.send_signal(signal.SIGTERM)
        assert rec.wait(timeout=20) == 0, "".join(lines)[-3000:]
    finally:
        probe.close()
        if rec.poll() is None:
            rec.kill()
            rec.wait()
    reader.join(timeout=5)
    text = "".join(lines)
    assert re.search(r", 0 dropped", text), text[-3000:]

    _, types, msgs = _read(out)
    assert "/rosout" not in types, "excluded topic recorded"
    assert types[topics.PLANT_STATE] == "vasimov_msgs/msg/PlantState"
    states = msgs[topics.PLANT_STATE]
    assert len(states) >= 300
    steps = [m.step for _, m in states]
    assert steps == list(range(steps[0], steps[0] + len(steps))), "a gap in the recorded plant state"
    for topic, items in msgs.items():
        times = [t for t, _ in items]
        assert times == sorted(times), f"{topic} timestamps out of order"
    (_, prov), = msgs[topics.PROVENANCE]
    # the launch arguments are not the recorder's to know: it asked the running plant and policy nodes
    assert prov.seed == 3 and prov.time_mode == "realtime" and prov.policy_backend == "hold"


def test_record_refuses_an_existing_directory(tmp_path):
    env = graph_env(next_domain_id())
    r = subprocess.run([str(VENV_BIN / "vasimov"), "record", str(tmp_path)], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "already exists" in r.stderr
    r = subprocess.run([str(VENV_BIN / "vasimov"), "up", "--lockstep", "--duration", "1", "--record", str(tmp_path)],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "already exists" in r.stderr
