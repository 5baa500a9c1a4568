"""The bag-writing core (vasimov_tools.bag) and the recorder's provenance helpers, without a ROS graph.

Bags written here are read back with rosbags' own Reader and a typestore built independently from the installed
.msg files, as any user of the bag would.
"""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import pytest
import yaml
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from vasimov_tools import bag
from vasimov_tools.record import (
    ProvenanceInfo,
    config_files,
    config_sha256,
    git_state,
    model_sha256,
    policy_sha256,
)

ROOT = Path(__file__).resolve().parent.parent


def _reader_store():
    """An independent typestore: rosbags' Kilted types + vasimov_msgs parsed straight from the installed .msg."""
    store = get_typestore(Stores.ROS2_KILTED)
    share = bag.share_directory("vasimov_msgs")
    assert share is not None
    typs = {}
    for f in sorted((share / "msg").glob("*.msg")):
        typs.update(get_types_from_msg(f.read_text(), f"vasimov_msgs/msg/{f.stem}"))
    store.register(typs)
    return store


@pytest.fixture(scope="module")
def store():
    return bag.make_typestore()


def _plant_state(store, step: int, stamp_ns: int | None = None) -> bytes:
    T = store.types["builtin_interfaces/msg/Time"]
    PS = store.types["vasimov_msgs/msg/PlantState"]
    import numpy as np

    ns = step * 5_000_000 if stamp_ns is None else stamp_ns
    z25 = np.zeros(25)
    m = PS(stamp=T(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000), step=step, tick=step // 4,
           control_tick=step % 4 == 0, command_tick=step // 4, epoch=0, boot_state=0,
           position=z25 + step, velocity=z25, effort=z25,
           imu_orientation=np.array([1.0, 0, 0, 0]), imu_angular_velocity=np.zeros(3),
           imu_linear_acceleration=np.zeros(3), gantry_engaged=True)
    return bytes(store.serialize_cdr(m, "vasimov_msgs/msg/PlantState"))


def _clock(store, ns: int) -> bytes:
    T = store.types["builtin_interfaces/msg/Time"]
    C = store.types["rosgraph_msgs/msg/Clock"]
    return bytes(store.serialize_cdr(C(clock=T(sec=ns // 10**9, nanosec=ns % 10**9)), "rosgraph_msgs/msg/Clock"))


def _twist(store) -> bytes:
    V = store.types["geometry_msgs/msg/Vector3"]
    Tw = store.types["geometry_msgs/msg/Twist"]
    return bytes(store.serialize_cdr(Tw(linear=V(x=0.3, y=0.0, z=0.0), angular=V(x=0.0, y=0.0, z=0.1)),
                                     "geometry_msgs/msg/Twist"))


def test_typestore_carries_every_vasimov_message_definition(store):
    share = bag.share_directory("vasimov_msgs")
    names = {f.stem for f in (share / "msg").glob("*.msg")}
    assert {"PlantState", "Provenance", "SdkDatagram", "FirmwareState", "Alert"} <= names
    for n in names:
        assert f"vasimov_msgs/msg/{n}" in store.fielddefs
    msgdef, _ = store.generate_msgdef("vasimov_msgs/msg/PlantState", ros_version=2)
    assert "float64[25] position" in msgdef


@pytest.mark.parametrize("msgtype, stamped", [
    ("vasimov_msgs/msg/PlantState", True), ("vasimov_msgs/msg/SdkDatagram", True), ("sensor_msgs/msg/JointState", True),
    ("nav_msgs/msg/Odometry", True), ("rosgraph_msgs/msg/Clock", True), ("geometry_msgs/msg/Twist", False),
    ("std_msgs/msg/String", False), ("vasimov_msgs/msg/Alert", False),
])
def test_leading_stamp_detection(store, msgtype, stamped):
    assert bag.leading_stamp(store, msgtype) is stamped


def test_cdr_stamp_reads_both_endiannesses_and_refuses_junk():
    le = b"\x00\x01\x00\x00" + struct.pack("<iI", 12, 345)
    be = b"\x00\x00\x00\x00" + struct.pack(">iI", 12, 345)
    assert bag.cdr_stamp_ns(le) == bag.cdr_stamp_ns(be) == 12_000_000_345
    assert bag.cdr_stamp_ns(le[:11]) is None
    assert bag.cdr_stamp_ns(b"\x00\x07\x00\x00" + le[4:]) is None  # unknown encapsulation
    assert bag.cdr_stamp_ns(b"\x00\x01\x00\x00" + struct.pack("<iI", -1, 0)) is None
    assert bag.cdr_stamp_ns(b"\x00\x01\x00\x00" + struct.pack("<iI", 1, 1_000_000_000)) is None


def test_unknown_type_is_refused_with_the_file_it_looked_for(store, tmp_path):
    with pytest.raises(bag.BagError, match=r"no_such_pkg/msg/Thing\.msg"):
        bag.ensure_type(store, "no_such_pkg/msg/Thing")
    with pytest.raises(bag.BagError, match="pkg/msg/Name"):
        bag.ensure_type(store, "no_such_pkg/srv/Thing")


def test_a_package_from_another_prefix_is_registered_with_its_dependencies(store, tmp_path, monkeypatch):
    msg = tmp_path / "share" / "demo_msgs" / "msg"
    msg.mkdir(parents=True)
    (msg / "Inner.msg").write_text("float64 value\n")
    (msg / "Outer.msg").write_text("builtin_interfaces/Time stamp\nInner[] items\nvasimov_msgs/Alert alert\n")
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path))
    bag.ensure_type(store, "demo_msgs/msg/Outer")
    assert "demo_msgs/msg/Inner" in store.fielddefs and bag.leading_stamp(store, "demo_msgs/msg/Outer")


def test_round_trip_counts_types_timestamps_and_metadata(store, tmp_path):
    out = tmp_path / "bag"
    rec = bag.BagRecorder(out, store, queue_size=1000, custom_data={"vasimov.test": "present"})
    h_clock = rec.add_topic("/clock", "rosgraph_msgs/msg/Clock", [bag.qos_from_endpoint(True, False)])
    h_state = rec.add_topic("/vasimov/plant/state", "vasimov_msgs/msg/PlantState")
    h_twist = rec.add_topic("/cmd_vel", "geometry_msgs/msg/Twist")
    assert rec.add_topic("/clock", "rosgraph_msgs/msg/Clock") is h_clock
    with pytest.raises(bag.BagError, match="already recorded"):
        rec.add_topic("/clock", "std_msgs/msg/String")
    assert rec.offer(h_twist, _twist(store))  # before any sim time: logged at 0, counted
    for step in range(200):
        ns = step * 5_000_000
        rec.set_clock(ns)
        assert rec.offer(h_clock, _clock(store, ns))
        assert rec.offer(h_state, _plant_state(store, step))
        if step == 100:
            assert rec.offer(h_twist, _twist(store))  # no stamp: logged at the latest /clock
    summary = rec.close()
    assert rec.close() is summary  # idempotent
    assert summary.dropped == 0 and summary.writer_error is None
    by_topic = {t.topic: t for t in summary.topics}
    assert by_topic["/cmd_vel"].unstamped == 1

    meta = yaml.safe_load((out / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["version"] == 9 and meta["storage_identifier"] == "mcap"
    assert meta["custom_data"]["vasimov.test"] == "present"
    assert meta["message_count"] == 402

    reader_store = _reader_store()
    with Reader(out) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
        assert counts == {"/clock": 200, "/vasimov/plant/state": 200, "/cmd_vel": 2}
        conn = next(c for c in reader.connections if c.topic == "/vasimov/plant/state")
        assert conn.msgtype == "vasimov_msgs/msg/PlantState"
        assert "float64[25] position" in conn.msgdef.data
        states, twist_times = [], []
        for c, t, raw in reader.messages():
            if c.topic == "/vasimov/plant/state":
                m = reader_store.deserialize_cdr(raw, c.msgtype)
                states.append((t, m.step))
            elif c.topic == "/cmd_vel":
                twist_times.append(t)
    assert [s for _, s in states] == list(range(200))
    assert [t for t, _ in states] == [s * 5_000_000 for s in range(200)]
    assert twist_times == [0, 100 * 5_000_000]


def test_node_clock_stamps_are_logged_at_sim_time(store, tmp_path):
    """/rosout's stamps are a node's wall clock: logging them as-is would stretch a 1 s bag over 56 years."""
    rec = bag.BagRecorder(tmp_path / "b", store, queue_size=100)
    h_state = rec.add_topic("/s", "vasimov_msgs/msg/PlantState")
    h_log = rec.add_topic("/rosout", "rcl_interfaces/msg/Log")
    assert not h_log.stamped
    rec.set_clock(2_000_000_000)
    wall = 1_796_000_000 * 10**9
    assert rec.timestamp(h_state, _plant_state(store, 1, stamp_ns=wall)) == 2_000_000_000
    assert h_state.stats.restamped == 1
    assert rec.timestamp(h_state, _plant_state(store, 1, stamp_ns=2_005_000_000)) == 2_005_000_000
    rec.close()


def test_zero_stamp_is_the_first_step_only_near_the_start(store, tmp_path):
    """The recorder takes messages in batches, so step 0's state can be taken after a later /clock: its zero stamp
    is sim time 0. Long after the start a zero stamp means 'unset' and the latest /clock stands in."""
    rec = bag.BagRecorder(tmp_path / "b", store, queue_size=100)
    h_state = rec.add_topic("/s", "vasimov_msgs/msg/PlantState")
    assert rec.timestamp(h_state, _plant_state(store, 0, stamp_ns=0)) == 0
    rec.set_clock(20_000_000)
    assert rec.timestamp(h_state, _plant_state(store, 0, stamp_ns=0)) == 0
    rec.set_clock(bag.ZERO_STAMP_WINDOW_NS + 5_000_000)
    assert rec.timestamp(h_state, _plant_state(store, 0, stamp_ns=0)) == bag.ZERO_STAMP_WINDOW_NS + 5_000_000
    rec.close()


def test_full_queue_drops_and_counts_instead_of_growing(store, tmp_path):
    rec = bag.BagRecorder(tmp_path / "b", store, queue_size=100)
    h = rec.add_topic("/vasimov/plant/state", "vasimov_msgs/msg/PlantState")
    raw = _plant_state(store, 1)
    with rec._lock:  # the writer thread stalls (a slow disk): the queue fills
        accepted = sum(rec.offer(h, raw) for _ in range(1000))
    summary = rec.close()
    assert accepted <= 100 + 1  # the writer may have taken one item before it blocked on the lock
    assert summary.dropped == 1000 - accepted
    assert summary.written == accepted
    assert summary.queue_high_water <= 100
    assert "dropped" in summary.report()


def test_existing_directory_is_never_overwritten(store, tmp_path):
    (tmp_path / "b").mkdir()
    with pytest.raises(bag.BagError, match="exists"):
        bag.BagRecorder(tmp_path / "b", store)


def test_bad_settings_are_refused(store, tmp_path):
    with pytest.raises(ValueError, match="compression"):
        bag.BagRecorder(tmp_path / "b", store, compression="lz4")
    with pytest.raises(ValueError, match="queue_size"):
        bag.BagRecorder(tmp_path / "c", store, queue_size=0)


# -- provenance helpers ---------------------------------------------------------------------------------------------
def test_model_hash_is_the_hash_of_build_mjcf():
    from vasimov.model.mjcf import build_mjcf

    assert model_sha256() == hashlib.sha256(build_mjcf().encode()).hexdigest()


def test_config_hash_changes_with_content_and_names_but_not_location(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        (d / "config").mkdir(parents=True)
        (d / "config" / "plant.yaml").write_text("plant: 1\n")
        (d / "x.launch.yaml").write_text("launch: []\n")
    ha = config_sha256(config_files(a / "config", a / "x.launch.yaml"))
    assert ha == config_sha256(config_files(b / "config", b / "x.launch.yaml"))
    (b / "config" / "plant.yaml").write_text("plant: 2\n")
    assert config_sha256(config_files(b / "config", b / "x.launch.yaml")) != ha
    (b / "config" / "plant.yaml").write_text("plant: 1\n")
    (b / "config" / "edge.yaml").write_text("")
    assert config_sha256(config_files(b / "config", b / "x.launch.yaml")) != ha
    with pytest.raises(OSError):
        config_sha256([tmp_path / "missing.yaml"])


def test_policy_hash_for_each_kind_of_spec(tmp_path):
    from vasimov_edge.policy.checkpoint import OFFICIAL_SHA256, OFFICIAL_SPEC

    onnx = tmp_path / "p.onnx"
    onnx.write_bytes(b"not really onnx")
    assert policy_sha256(str(onnx)) == hashlib.sha256(b"not really onnx").hexdigest()
    assert policy_sha256("builtin") == policy_sha256("hold") == ""
    assert policy_sha256(str(tmp_path / "missing.onnx")) == ""
    assert policy_sha256(OFFICIAL_SPEC) == OFFICIAL_SHA256
    assert policy_sha256("hf://someone/else@abc") == ""


def test_git_state_of_this_checkout_and_of_a_non_repository(tmp_path):
    head, _ = git_state(ROOT)
    assert head == "unknown" or len(head) == 40
    assert git_state(tmp_path) == ("unknown", None)


def test_provenance_serializes_identically_for_bag_and_ros(store):
    from rclpy.serialization import deserialize_message
    from vasimov_msgs.msg import Provenance

    info = ProvenanceInfo("m" * 64, "c" * 64, "hold", "", "abc", 7, "lockstep", "0.1.0")
    raw = info.to_cdr(store, 1_500_000_000)
    assert bag.cdr_stamp_ns(raw) == 1_500_000_000
    ros = deserialize_message(raw, Provenance)
    assert ros == info.to_msg(1_500_000_000)
    assert ros.seed == 7 and ros.time_mode == "lockstep"


def test_recorder_config_file_matches_declared_parameters():
    from vasimov_tools import record

    declared = {p.name: p for p in record.PARAMS}
    cfg = yaml.safe_load((ROOT / "config" / "recorder.yaml").read_text())["/**/recorder"]["ros__parameters"]
    for key, value in cfg.items():
        assert key in declared, f"recorder: {key} in config but not declared"
        assert type(value) is type(declared[key].default)
        assert declared[key].validate(value) is None
    assert all(p.description for p in declared.values())
