"""ros2msg schema assembly for Foxglove channels: the MCAP convention, every graph type, and bad input."""

from __future__ import annotations

import struct

import pytest
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from vasimov_bridge import foxglove_schemas as fs

SEP = "=" * 80

FAKE = {
    ("a", "Top"): "# comment line\nuint8 KIND_X=1\nstring NAME=\"x=y\"\nb/Mid mid\nLeaf[] leaves\nb/Mid[3] more\n"
                  "string<=5 short\nfloat64 value 1.5\n",
    ("b", "Mid"): "builtin_interfaces/Time stamp\na/Leaf leaf\n",
    ("a", "Leaf"): "int32 x\n",
    ("builtin_interfaces", "Time"): "int32 sec\nuint32 nanosec\n",
}


def fake_loader(pkg: str, name: str) -> str:
    return FAKE[(pkg, name)]


def test_joint_state_schema_carries_header_and_time_in_the_mcap_convention():
    text = fs.ros2msg_schema("sensor_msgs/msg/JointState", fs.MsgFileLoader())
    sections = text.split(SEP + "\n")
    assert "std_msgs/Header header" in sections[0] and "float64[] position" in sections[0]
    assert [s.splitlines()[0] for s in sections[1:]] == ["MSG: std_msgs/Header", "MSG: builtin_interfaces/Time"]
    assert "builtin_interfaces/Time stamp" in sections[1] and "string frame_id" in sections[1]
    assert "int32 sec" in sections[2] and "uint32 nanosec" in sections[2]
    assert fs.schema_name("sensor_msgs/JointState") == "sensor_msgs/msg/JointState"


def test_dependencies_are_depth_first_once_each_and_resolve_bare_names_in_the_package():
    text = fs.ros2msg_schema("a/msg/Top", fake_loader)
    headers = [line for line in text.splitlines() if line.startswith("MSG: ")]
    assert headers == ["MSG: b/Mid", "MSG: builtin_interfaces/Time", "MSG: a/Leaf"]
    assert text.startswith(FAKE[("a", "Top")].rstrip())  # the root text verbatim, comments and constants kept
    assert fs.field_dependencies(FAKE[("a", "Top")], "a") == ["b/Mid", "a/Leaf"]


@pytest.mark.parametrize("name", ["JointState", "sensor_msgs/srv/Foo", "a/b/c/d", "pkg/msg/", "9pkg/msg/T",
                                  "pkg/msg/T-1", ""])
def test_malformed_type_names_are_refused(name):
    with pytest.raises(fs.SchemaError, match="not a message type name"):
        fs.split_type(name)


def test_a_missing_definition_says_where_it_looked(tmp_path):
    loader = fs.MsgFileLoader([tmp_path])
    with pytest.raises(fs.SchemaError, match=f"no Nope.msg for std_msgs/msg/Nope .*{tmp_path}"):
        fs.ros2msg_schema("std_msgs/msg/Nope", loader)
    with pytest.raises(fs.SchemaError, match="no definition for b/msg/Mid"):
        fs.ros2msg_schema("a/msg/Top", lambda p, n: FAKE[(p, n)] if p == "a" else {}[(p, n)])


GRAPH_TYPES = [
    "rosgraph_msgs/msg/Clock", "sensor_msgs/msg/JointState", "sensor_msgs/msg/Imu", "nav_msgs/msg/Odometry",
    "std_msgs/msg/String", "geometry_msgs/msg/Twist", "rcl_interfaces/msg/Log", "rcl_interfaces/msg/ParameterEvent",
    "vasimov_msgs/msg/FirmwareState", "vasimov_msgs/msg/PolicyStep", "vasimov_msgs/msg/MotorCommand",
    "vasimov_msgs/msg/PlantState", "vasimov_msgs/msg/RobotCommand", "vasimov_msgs/msg/FootContacts",
    "vasimov_msgs/msg/SdkDatagram", "vasimov_msgs/msg/SimControl", "vasimov_msgs/msg/PlantFault",
]


@pytest.mark.parametrize("type_name", GRAPH_TYPES)
def test_every_graph_type_assembles_into_a_schema_an_independent_parser_accepts(type_name):
    text = fs.ros2msg_schema(type_name, fs.MsgFileLoader())
    types = get_types_from_msg(text, type_name)
    assert type_name in types
    store = get_typestore(Stores.EMPTY)
    store.register(types)  # every dependency is present, or registration fails on an unknown type


def test_cdr_written_from_the_schema_is_what_the_ros_type_support_reads():
    """rosbags serialises a JointState using only the types parsed from our schema text; rclpy's type support
    (the publisher's) must read back the same values: a missing or misordered field would shift every byte."""
    import numpy as np
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import JointState

    store = get_typestore(Stores.EMPTY)
    name = "sensor_msgs/msg/JointState"
    store.register(get_types_from_msg(fs.ros2msg_schema(name, fs.MsgFileLoader()), name))
    t = store.types
    msg = t[name](header=t["std_msgs/msg/Header"](stamp=t["builtin_interfaces/msg/Time"](sec=7, nanosec=11),
                                                   frame_id="pelvis_link"),
                  name=["a", "bb"], position=np.array([0.5, -1.25]), velocity=np.array([2.0, 3.0]),
                  effort=np.array([], dtype=np.float64))
    back = deserialize_message(bytes(store.serialize_cdr(msg, name)), JointState)
    assert (back.header.stamp.sec, back.header.stamp.nanosec, back.header.frame_id) == (7, 11, "pelvis_link")
    assert list(back.name) == ["a", "bb"] and list(back.position) == [0.5, -1.25]
    assert list(back.velocity) == [2.0, 3.0] and list(back.effort) == []


@pytest.mark.parametrize("type_name,expected", [
    ("sensor_msgs/msg/JointState", True),  # header.stamp
    ("rosgraph_msgs/msg/Clock", True),
    ("vasimov_msgs/msg/FirmwareState", True),  # constants before the stamp are not fields
    ("nav_msgs/msg/Odometry", True),
    ("std_msgs/msg/String", False),
    ("geometry_msgs/msg/Twist", False),
    ("a/msg/Top", True),  # constants skipped; the first field b/Mid starts with a Time
    ("b/msg/Mid", True),
    ("a/msg/Leaf", False),
])
def test_leading_stamp_detection(type_name, expected):
    loader = fake_loader if type_name[:2] in ("a/", "b/") else fs.MsgFileLoader()
    assert fs.leads_with_stamp(type_name, loader) is expected


@pytest.mark.parametrize("data,expected", [
    (b"\x00\x01\x00\x00" + struct.pack("<iI", 12, 345), 12_000_000_345),
    (b"\x00\x00\x00\x00" + struct.pack(">iI", 3, 7), 3_000_000_007),
    (b"\x00\x01\x00\x00" + struct.pack("<iI", 0, 0), None),  # unset stamp
    (b"\x00\x01\x00\x00" + struct.pack("<iI", 1, 2_000_000_000), None),  # nanoseconds out of range
    (b"\x00\x01\x00\x00" + struct.pack("<iI", -5, 0), None),
    (b"\x00\x01\x00", None),
    (b"\x07\x01\x00\x00" + struct.pack("<iI", 1, 0), None),  # not a CDR encapsulation we know
])
def test_cdr_leading_stamp(data, expected):
    assert fs.cdr_leading_stamp_ns(data) == expected
