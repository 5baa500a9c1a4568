"""What a Foxglove client may publish: the allow-list, both encodings, and every way a message can be wrong."""

from __future__ import annotations

import json
import struct

import pytest
from geometry_msgs.msg import Twist
from rclpy.serialization import serialize_message
from std_msgs.msg import String

from vasimov.commands import CommandSource, DampCommand, Rejection, StandCommand, VelocityCommand
from vasimov.ros import topics
from vasimov_bridge.foxglove_teleop import TeleopLimits, check_advertisement, decode

LIMITS = TeleopLimits(max_linear=1.0, max_angular=2.0)


def twist_cdr(lx=0.0, ly=0.0, lz=0.0, ax=0.0, ay=0.0, az=0.0) -> bytes:
    return b"\x00\x01\x00\x00" + struct.pack("<6d", lx, ly, lz, ax, ay, az)


def twist_json(**kw) -> bytes:
    return json.dumps({"linear": {"x": kw.get("lx", 0.0), "y": kw.get("ly", 0.0), "z": kw.get("lz", 0.0)},
                       "angular": {"x": 0.0, "y": 0.0, "z": kw.get("az", 0.0)}}).encode()


@pytest.mark.parametrize("topic,encoding,schema,reason", [
    (topics.CMD_VEL, "cdr", "geometry_msgs/msg/Twist", None),
    (topics.CMD_VEL, "cdr", "geometry_msgs/Twist", None),  # ROS 1 spelling from older app versions
    (topics.CMD_VEL, "json", "", None),
    (topics.TELEOP_MODE, "json", "std_msgs/msg/String", None),
    (topics.TELEOP_MODE, "cdr", "std_msgs/String", None),
    (topics.MOTOR_COMMAND, "cdr", "vasimov_msgs/msg/MotorCommand", "NOT_ALLOWED"),
    (topics.ROBOT_COMMAND, "json", "vasimov_msgs/msg/RobotCommand", "NOT_ALLOWED"),
    ("/anything", "json", "", "NOT_ALLOWED"),
    (topics.CMD_VEL, "protobuf", "geometry_msgs/msg/Twist", "UNSUPPORTED_ENCODING"),
    (topics.CMD_VEL, "cdr", "geometry_msgs/msg/TwistStamped", "WRONG_SCHEMA"),
    (topics.CMD_VEL, "cdr", "", "WRONG_SCHEMA"),  # CDR bytes mean nothing without the type
    (topics.TELEOP_MODE, "json", "geometry_msgs/msg/Twist", "WRONG_SCHEMA"),
])
def test_advertisements(topic, encoding, schema, reason):
    r = check_advertisement(topic, encoding, schema)
    assert (r.reason if r else None) == reason
    if r and reason == "NOT_ALLOWED":
        assert topics.CMD_VEL in r.detail and topics.TELEOP_MODE in r.detail  # says what would be allowed


@pytest.mark.parametrize("encoding,data,expected", [
    ("cdr", twist_cdr(lx=0.3, ly=-0.1, az=0.5), VelocityCommand(0.3, -0.1, 0.5, source=CommandSource.FOXGLOVE)),
    ("cdr", serialize_message(Twist()), VelocityCommand(0.0, 0.0, 0.0, source=CommandSource.FOXGLOVE)),
    ("json", twist_json(lx=-1.0, az=2.0), VelocityCommand(-1.0, 0.0, 2.0, source=CommandSource.FOXGLOVE)),
    ("json", b'{"linear": {"x": 0.2}}', VelocityCommand(0.2, 0.0, 0.0, source=CommandSource.FOXGLOVE)),
    ("cdr", twist_cdr(lx=float("nan")), "NON_FINITE"),
    ("cdr", twist_cdr(az=float("inf")), "NON_FINITE"),
    ("json", b'{"linear": {"x": NaN}}', "NON_FINITE"),
    ("cdr", twist_cdr(lx=1.01), "OUT_OF_ENVELOPE"),
    ("cdr", twist_cdr(ly=-5.0), "OUT_OF_ENVELOPE"),
    ("json", twist_json(az=-2.5), "OUT_OF_ENVELOPE"),
    ("cdr", twist_cdr(lz=0.1), "UNSUPPORTED_AXIS"),
    ("cdr", twist_cdr(ax=0.1), "UNSUPPORTED_AXIS"),
    ("cdr", b"", "PARSE"),
    ("cdr", b"\x00\x01\x00\x00\x01\x02", "PARSE"),
    ("json", b"not json", "PARSE"),
    ("json", b"[1, 2]", "PARSE"),
    ("json", b'{"linear": {"x": "fast"}}', "PARSE"),
    ("json", b'{"linear": {"x": true}}', "PARSE"),
    ("json", b'{"linear": {"w": 1}}', "PARSE"),
    ("json", b'{"linear_x": 0.2}', "PARSE"),
    ("json", b"\xff\xfe", "PARSE"),
    ("cdr", twist_cdr() + bytes(5000), "TOO_LARGE"),
])
def test_cmd_vel(encoding, data, expected):
    got = decode(topics.CMD_VEL, encoding, data, LIMITS)
    if isinstance(expected, str):
        assert isinstance(got, Rejection) and got.reason == expected, got
        assert got.detail
    else:
        assert got == expected


@pytest.mark.parametrize("encoding,data,expected", [
    ("json", b'{"data": "stand"}', StandCommand(source=CommandSource.FOXGLOVE)),
    ("json", b'{"data": " DAMP "}', DampCommand(source=CommandSource.FOXGLOVE)),
    ("cdr", serialize_message(String(data="balance")), VelocityCommand(0.0, 0.0, 0.0, source=CommandSource.FOXGLOVE)),
    ("cdr", serialize_message(String(data="stand")), StandCommand(source=CommandSource.FOXGLOVE)),
    ("json", b'{"data": "fly"}', "UNKNOWN_MODE"),
    ("json", b'{"data": 3}', "PARSE"),
    ("json", b'{"mode": "stand"}', "PARSE"),
    ("json", b'"stand"', "PARSE"),
    ("cdr", b"\x00\x01\x00\x00\xff\xff\xff\x7fabc", "PARSE"),  # a string claiming 2 GiB
])
def test_mode(encoding, data, expected):
    got = decode(topics.TELEOP_MODE, encoding, data, LIMITS)
    if isinstance(expected, str):
        assert isinstance(got, Rejection) and got.reason == expected, got
    else:
        assert got == expected


def test_a_topic_off_the_list_is_refused_even_if_its_bytes_decode():
    got = decode(topics.MOTOR_COMMAND, "cdr", twist_cdr(), LIMITS)
    assert isinstance(got, Rejection) and got.reason == "NOT_ALLOWED"


@pytest.mark.parametrize("kw", [{"max_linear": -1.0, "max_angular": 1.0}, {"max_linear": float("nan"),
                                                                            "max_angular": 1.0}])
def test_limits_must_be_finite_and_non_negative(kw):
    with pytest.raises(ValueError, match="finite number >= 0"):
        TeleopLimits(**kw)


@pytest.mark.parametrize("data", [
    b"[" * 2000 + b"]" * 2000,  # 4,000 bytes: json.loads raised RecursionError in the bridge (issue 10)
    b'{"linear": ' * 300 + b"{}" + b"}" * 300,
    b'{"linear": {"x": [[[[[[1]]]]]]}}',
])
@pytest.mark.parametrize("topic", [topics.CMD_VEL, topics.TELEOP_MODE])
def test_deeply_nested_json_is_refused_before_parsing(topic, data):
    assert len(data) <= 4096
    out = decode(topic, "json", data, LIMITS)
    assert isinstance(out, Rejection) and out.reason == "PARSE" and "nested" in out.detail


def test_brackets_inside_strings_do_not_count_as_nesting():
    from vasimov_bridge.foxglove_teleop import json_depth

    assert json_depth('{"data": "[[[[[[[[{{{{{\\"]]]"}') == 1
    out = decode(topics.TELEOP_MODE, "json", json.dumps({"data": "[[[[[[[[stand"}).encode(), LIMITS)
    assert isinstance(out, Rejection) and out.reason == "UNKNOWN_MODE"
