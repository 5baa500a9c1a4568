"""Composed mode's plumbing (vasimov_tools.compose), without starting a graph: every launch node has a node class,
and each node gets exactly its own process's command line as its local arguments."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from vasimov_tools import compose, launch_file

LAUNCH = Path(__file__).resolve().parent.parent / "launch" / "bringup.launch.yaml"


def test_every_node_of_the_launch_file_and_the_recorder_can_be_composed():
    desc = launch_file.load(LAUNCH)
    compose.check(desc)
    for spec in desc.nodes:
        cls = compose.node_class(spec)
        assert "node_options" in cls.__init__.__code__.co_varnames, f"{cls.__name__} takes no Node keywords"
    assert "recorder_node" in compose.NODE_CLASSES


def test_a_node_gets_its_own_command_line_as_local_arguments_with_observer_niceness_off():
    spec = next(s for s in launch_file.load(LAUNCH, {"namespace": "robot1", "seed": "7"}).nodes if s.name == "plant")
    opts = compose.node_options(spec)
    assert opts["use_global_arguments"] is False  # the process's own arguments apply to no node
    args = opts["cli_args"]
    assert args[:3] == ["--ros-args", "-r", "__node:=plant"]
    assert "__ns:=/robot1" in args and "seed:=7" in args and "cpu_nice:=0" in args
    assert "/clock:=clock" in args  # the launch file's remaps too


def test_an_executable_without_a_node_class_a_graph_without_plant_or_an_unknown_executor_is_refused(monkeypatch):
    desc = launch_file.load(LAUNCH)
    odd = dataclasses.replace(desc.nodes[0], executable="talker")
    with pytest.raises(compose.ComposeError, match="talker"):
        compose.check(dataclasses.replace(desc, nodes=(*desc.nodes, odd)))
    with pytest.raises(compose.ComposeError, match="plant"):
        compose.check(dataclasses.replace(desc, nodes=tuple(n for n in desc.nodes if n.name != "plant")))
    monkeypatch.setenv("VASIMOV_EXECUTOR", "fast")
    with pytest.raises(compose.ComposeError, match="VASIMOV_EXECUTOR"):
        compose.executor_choice()


class _FakeNode:
    def __init__(self, name: str) -> None:
        self.name = name

    def get_name(self) -> str:
        return self.name

    def callback(self) -> None:
        _Helper(self).work()


class _Helper:
    def __init__(self, node: _FakeNode) -> None:
        self.node = node

    def work(self) -> None:
        raise RuntimeError("boom")


def test_a_callback_error_names_the_node_whose_code_raised():
    class Executor:
        def spin_once(self, timeout_sec=None) -> None:
            edge.callback()

    plant, edge = _FakeNode("plant"), _FakeNode("edge")
    with pytest.raises(compose.NodeFailure) as info:
        compose._Attributing(Executor(), [plant, edge]).spin_once(0.1)
    assert info.value.node == "edge" and isinstance(info.value.error, RuntimeError)
    assert "node 'edge' failed: RuntimeError: boom" in str(info.value)
