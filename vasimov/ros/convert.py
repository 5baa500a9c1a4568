"""Small, allocation-light conversions between simulator values and ROS messages."""

from __future__ import annotations

from builtin_interfaces.msg import Time

_NS = 1_000_000_000


def to_stamp(seconds: float, out: Time | None = None) -> Time:
    """Seconds -> builtin_interfaces/Time, rounded to the nanosecond so lockstep runs stamp identically."""
    ns = round(seconds * _NS)
    t = out if out is not None else Time()
    t.sec, t.nanosec = divmod(ns, _NS)
    return t


def from_stamp(stamp: Time) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def quat_wxyz_to_ros(q, out) -> None:
    """MuJoCo quaternions are (w, x, y, z); geometry_msgs/Quaternion has named fields, ROS order x, y, z, w."""
    out.w, out.x, out.y, out.z = float(q[0]), float(q[1]), float(q[2]), float(q[3])
