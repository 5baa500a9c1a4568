"""Graph parameters through Foxglove: names, conversions, and the checks a set request must pass."""

from __future__ import annotations

import pytest
from foxglove import ParameterType as FoxType
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, ParameterType, ParameterValue

from vasimov_bridge import foxglove_params as fp

T = ParameterType


def desc(ros_type: int, read_only: bool = False, lo=None, hi=None) -> ParameterDescriptor:
    d = ParameterDescriptor(type=ros_type, read_only=read_only)
    if lo is not None and ros_type == T.PARAMETER_INTEGER:
        d.integer_range = [IntegerRange(from_value=lo, to_value=hi, step=0)]
    if lo is not None and ros_type == T.PARAMETER_DOUBLE:
        d.floating_point_range = [FloatingPointRange(from_value=lo, to_value=hi, step=0.0)]
    return d


@pytest.mark.parametrize("qname,expected", [
    ("/plant.seed", ("/plant", "seed")),
    ("/ns/edge.qos_overrides./clock.depth", ("/ns/edge", "qos_overrides./clock.depth")),
])
def test_names_split_at_the_first_dot(qname, expected):
    assert fp.split_qualified(qname) == expected
    assert fp.qualified(*expected) == qname


@pytest.mark.parametrize("qname", ["seed", "plant.seed", "/plant", "/plant."])
def test_names_without_a_node_are_refused(qname):
    with pytest.raises(ValueError, match="not a graph parameter name"):
        fp.split_qualified(qname)


@pytest.mark.parametrize("value,ros_type,expected", [
    (True, T.PARAMETER_BOOL, True),
    (3, T.PARAMETER_INTEGER, 3),
    (3.0, T.PARAMETER_INTEGER, 3),  # JSON does not keep 3 and 3.0 apart
    (2, T.PARAMETER_DOUBLE, 2.0),
    (0.25, T.PARAMETER_DOUBLE, 0.25),
    ("x", T.PARAMETER_STRING, "x"),
    ([1, 2.0], T.PARAMETER_INTEGER_ARRAY, [1, 2]),
    ([1, 2.5], T.PARAMETER_DOUBLE_ARRAY, [1.0, 2.5]),
    ([True], T.PARAMETER_BOOL_ARRAY, [True]),
    (["a"], T.PARAMETER_STRING_ARRAY, ["a"]),
    (b"ab", T.PARAMETER_BYTE_ARRAY, b"ab"),
])
def test_values_coerce_to_the_declared_type(value, ros_type, expected):
    got = fp.coerce(value, ros_type)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("value,ros_type", [
    (1, T.PARAMETER_BOOL), (True, T.PARAMETER_INTEGER), (2.5, T.PARAMETER_INTEGER), ("3", T.PARAMETER_INTEGER),
    (float("nan"), T.PARAMETER_DOUBLE), (float("inf"), T.PARAMETER_DOUBLE), (True, T.PARAMETER_DOUBLE),
    ("1.0", T.PARAMETER_DOUBLE), (1, T.PARAMETER_STRING), ([1.5], T.PARAMETER_INTEGER_ARRAY),
    (["a", 1], T.PARAMETER_STRING_ARRAY), (None, T.PARAMETER_DOUBLE), ({"a": 1}, T.PARAMETER_STRING),
])
def test_wrong_types_are_refused_naming_the_expected_type(value, ros_type):
    with pytest.raises(ValueError, match=f"not a valid {fp.TYPE_NAMES[ros_type]}"):
        fp.coerce(value, ros_type)


def entry(ros_type=T.PARAMETER_DOUBLE, value=50.0, **kw) -> fp.Entry:
    return fp.Entry("/foxglove_bridge", "tf_rate_hz", value, desc(ros_type, **kw))


@pytest.mark.parametrize("e,value,ok,message", [
    (entry(lo=1.0, hi=1000.0), 25.0, 25.0, None),
    (entry(lo=1.0, hi=1000.0), 25, 25.0, None),
    (entry(lo=1.0, hi=1000.0), 5000.0, None, "5000 is outside [1, 1000]"),
    (entry(T.PARAMETER_INTEGER, 3, lo=0, hi=10), 11, None, "11 is outside [0, 10]"),
    (entry(read_only=True), 25.0, None, "read-only (it needs a restart of /foxglove_bridge)"),
    (entry(), "fast", None, "'fast' is not a valid double"),
    (entry(T.PARAMETER_NOT_SET, None), 1.0, None, "no declared type"),
    (None, 1.0, None, "no such parameter"),
])
def test_set_requests_are_checked_before_any_node_is_asked(e, value, ok, message):
    got, problem = fp.validate_set(e, "/foxglove_bridge.tf_rate_hz", value)
    assert got == ok
    if message is None:
        assert problem is None
    else:
        assert message in problem and "/foxglove_bridge.tf_rate_hz" in problem


def test_ros_values_convert_both_ways_and_doubles_keep_their_type_on_the_wire():
    for ros_type, value in [(T.PARAMETER_DOUBLE, 1.0), (T.PARAMETER_INTEGER, 4), (T.PARAMETER_STRING, "s"),
                            (T.PARAMETER_BOOL, False), (T.PARAMETER_DOUBLE_ARRAY, [1.0, 2.0]),
                            (T.PARAMETER_STRING_ARRAY, ["a", "b"])]:
        assert fp.from_ros(fp.to_ros(value, ros_type)) == value
    assert fp.from_ros(ParameterValue()) is None
    p = fp.to_foxglove("/a.b", 1.0, T.PARAMETER_DOUBLE)
    assert p.type == FoxType.Float64 and p.get_value() == 1.0
    assert fp.to_foxglove("/a.b", [], T.PARAMETER_DOUBLE_ARRAY).type == FoxType.Float64Array
    assert fp.to_foxglove("/a.b", 7, T.PARAMETER_INTEGER).get_value() == 7
    assert fp.to_foxglove("/a.b", None, T.PARAMETER_NOT_SET).get_value() is None


def test_cache_reports_changes_and_forgets_nodes():
    cache = fp.ParameterCache()
    a = fp.Entry("/plant", "seed", 0, desc(T.PARAMETER_INTEGER, read_only=True))
    b = fp.Entry("/plant", "duration", 0.0, desc(T.PARAMETER_DOUBLE))
    assert {e.qname for e in cache.replace_node("/plant", [a, b])} == {"/plant.seed", "/plant.duration"}
    assert cache.replace_node("/plant", [a, b]) == []  # nothing changed
    assert cache.update_value("/plant", "duration", 2.0).value == 2.0
    assert cache.update_value("/plant", "nope", 1) is None
    assert [e.qname for e in cache.select([])] == ["/plant.duration", "/plant.seed"]
    assert [e.qname for e in cache.select(["/plant.seed", "/x.y"])] == ["/plant.seed"]
    assert cache.replace_node("/plant", [a]) == [] and cache.get("/plant.duration") is None
    cache.drop_node("/plant")
    assert cache.nodes() == set()


@pytest.mark.parametrize("name", ["use_sim_time", "start_type_description_service",
                                  "qos_overrides./clock.subscription.depth"])
def test_rclpy_builtins_are_read_only_from_foxglove(name):
    """rclpy declares these writable on every node; a Foxglove client could switch a node's clock (issue 10)."""
    e = fp.Entry("/sdk_bridge", name, True, desc(T.PARAMETER_BOOL))
    got, problem = fp.validate_set(e, e.qname, False)
    assert got is None and "rclpy built-in" in problem


def test_requests_naming_too_many_parameters_are_refused_whole():
    assert fp.request_too_large(fp.MAX_NAMES_PER_REQUEST) is None
    problem = fp.request_too_large(5000)
    assert problem is not None and "5000" in problem and str(fp.MAX_NAMES_PER_REQUEST) in problem
