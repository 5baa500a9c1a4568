"""The error messages a newcomer meets (docs/troubleshooting.md): each says what happened and what to do.

Each case runs the program a user runs (tools/setup_venv.sh, tools/run_tests.sh, `vasimov up`, `menlo`) into the
condition and checks the message and the exit code; the pure rules behind the port check are tested alone first.
Ports: the session runs in a private network namespace (tools/run_tests.sh), so 3000/8765/8766/8850 are free here
unless a test takes them; a test that finds one taken by something else skips, saying so.
"""

from __future__ import annotations

import errno
import http.server
import json
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import docs_blocks as db
import pytest
from harness import ROOT, VENV_BIN, graph_env, next_domain_id

from vasimov_tools import preflight

TROUBLESHOOTING = ROOT / "docs" / "troubleshooting.md"


def quoted(heading_start: str) -> list[str]:
    """The messages docs/troubleshooting.md quotes under a heading (```text blocks)."""
    return db.quoted_outputs(TROUBLESHOOTING, heading_start)

FAKE_OLD_PYTHON = "#!/bin/sh\n[ \"$1\" = --version ] && echo 'Python 3.11.2' && exit 0\nexit 1\n"


def run(cmd: list[str], cwd: Path = ROOT, env: dict[str, str] | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env or graph_env(next_domain_id()), text=True, capture_output=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


# -- setup and the venv ----------------------------------------------------------------------------------------------

def _copy_tool(tmp: Path, name: str) -> Path:
    (tmp / "tools").mkdir(exist_ok=True)
    return Path(shutil.copy(ROOT / "tools" / name, tmp / "tools" / name))


def _fake(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("python", ["missing", "old"])
def test_setup_without_python_312_says_how_to_get_one(tmp_path: Path, python: str) -> None:
    named = tmp_path / "nowhere" / "python3.12" if python == "missing" else _fake(tmp_path / "py311", FAKE_OLD_PYTHON)
    script = _copy_tool(tmp_path, "setup_venv.sh")
    r = run(["bash", str(script)], cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "VASIMOV_PYTHON": str(named)})
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"no Python 3.12 found (looked at: {named})" in r.stderr, r.stderr
    assert "pyenv install 3.12" in r.stderr and "VASIMOV_PYTHON=/path/to/python3.12 make setup" in r.stderr
    assert not (tmp_path / ".venv").exists()  # nothing was made


def test_setup_refuses_a_venv_of_another_python(tmp_path: Path) -> None:
    _fake(tmp_path / ".venv" / "bin" / "python", FAKE_OLD_PYTHON)
    script = _copy_tool(tmp_path, "setup_venv.sh")
    env = {"PATH": "/usr/bin:/bin", "VASIMOV_PYTHON": str(VENV_BIN / "python")}  # a real 3.12
    r = run(["bash", str(script)], cwd=tmp_path, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "is not a working Python 3.12 (Python 3.11.2)" in r.stderr, r.stderr
    assert "rm -rf .venv && make setup" in r.stderr
    assert sorted(p.name for p in (tmp_path / ".venv").iterdir()) == ["bin"]  # left as it was


def test_the_test_runner_without_a_venv_says_make_setup(tmp_path: Path) -> None:
    script = _copy_tool(tmp_path, "run_tests.sh")
    r = run(["bash", str(script)], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"no .venv in {tmp_path}" in r.stderr and "Run `make setup` first" in r.stderr, r.stderr


# -- ports: the pure rules -------------------------------------------------------------------------------------------

def test_the_planned_ports_follow_the_launch_arguments() -> None:
    default = {"sdk_bind_host": "127.0.0.1", "sdk_command_port": "8850", "sdk_http_port": "3000", "foxglove": "true",
               "foxglove_host": "127.0.0.1", "foxglove_port": "8765", "binary_stream": "true", "binary_port": "8766"}
    assert [(p.proto, p.port, p.arg) for p in preflight.planned_ports(default)] == [
        ("udp", 8850, "sdk_command_port"), ("tcp", 3000, "sdk_http_port"), ("tcp", 8765, "foxglove_port"),
        ("tcp", 8766, "binary_port")]
    moved = dict(default, foxglove="false", binary_port="0", sdk_http_port="4000")
    assert [p.port for p in preflight.planned_ports(moved)] == [8850, 4000]


def test_the_message_names_the_port_the_holder_and_the_way_out() -> None:
    http_port = preflight.Port("tcp", "127.0.0.1", 3000, "the robot's HTTP API", "sdk_http_port")
    udp = preflight.Port("udp", "127.0.0.1", 8850, "the SDK command socket", "sdk_command_port")
    other = preflight.conflict_message([http_port], None)
    assert "3000/tcp (the robot's HTTP API) is already in use" in other
    assert "ss -tlnp 'sport = :3000'" in other and "vasimov up sdk_http_port:=PORT" in other
    twin = preflight.conflict_message([udp, http_port], "asimov_1")
    assert "are already in use" in twin and "A twin is already running" in twin and "Ctrl-C" in twin
    assert preflight.SECOND_TWIN_ARGS in twin


# -- ports: `vasimov up` ---------------------------------------------------------------------------------------------

@contextmanager
def holding(proto: str, port: int) -> Iterator[socket.socket]:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM)
    if proto == "tcp":  # a connection an earlier test left in TIME_WAIT does not hold the port
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port))
    except OSError as exc:
        s.close()
        if exc.errno == errno.EADDRINUSE:
            pytest.skip(f"{port}/{proto} is already taken on this machine (run through tools/run_tests.sh)")
        raise
    if proto == "tcp":
        s.listen()
    try:
        yield s
    finally:
        s.close()


@pytest.mark.parametrize(("proto", "port", "arg"), [("udp", 8850, "sdk_command_port"), ("tcp", 3000, "sdk_http_port"),
                                                    ("tcp", 8765, "foxglove_port"), ("tcp", 8766, "binary_port")])
def test_vasimov_up_with_a_port_taken_says_which_and_starts_nothing(proto: str, port: int, arg: str) -> None:
    with holding(proto, port):
        r = run([str(VENV_BIN / "vasimov"), "up"])
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"cannot start: {port}/{proto}" in r.stderr and "is already in use" in r.stderr, r.stderr
    assert "Another program holds it" in r.stderr and f"vasimov up {arg}:=PORT" in r.stderr, r.stderr
    assert "plant ready" not in r.stdout + r.stderr  # no node started
    if port == 3000:  # the case troubleshooting quotes
        assert r.stderr.strip() == quoted("`vasimov up: cannot start:")[1].strip()


class _VersionHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"robot_model": "asimov_1", "robot_os_version": "0.2.0"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_vasimov_up_beside_a_twin_says_one_is_running() -> None:
    """What answers the SDK's version check on :3000 is a twin (or a robot): the message says to use or stop it.
    (test_docs.py does the same beside a real graph.)"""
    with holding("tcp", 3000) as probe:
        probe.close()
        server = http.server.HTTPServer(("127.0.0.1", 3000), _VersionHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        r = run([str(VENV_BIN / "vasimov"), "up"])
    finally:
        server.shutdown()
        server.server_close()
    assert r.returncode == 2, r.stdout + r.stderr
    assert "3000/tcp" in r.stderr and "A twin is already running on this machine" in r.stderr, r.stderr
    assert "'asimov_1'" in r.stderr and "Ctrl-C in its terminal" in r.stderr
    assert f"vasimov up {preflight.SECOND_TWIN_ARGS}" in r.stderr


# -- names -----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "expected"), [
    (["--scene", "nope"], "vasimov up: unknown scene 'nope'; valid: flat, "),
    (["--scene", "stairs_10cm+mud"], "vasimov up: unknown"),
    (["--policy", "nope"], "vasimov up: unknown policy spec 'nope'; valid: 'builtin'"),
    (["--policy", "/nonexistent/policy.onnx"], "vasimov up: policy file '/nonexistent/policy.onnx' not found"),
])
def test_an_unknown_scene_or_policy_stops_vasimov_up_before_any_node(args: list[str], expected: str) -> None:
    r = run([str(VENV_BIN / "vasimov"), "up", *args])
    assert r.returncode == 2, r.stdout + r.stderr
    assert expected in r.stderr, r.stderr
    assert "plant ready" not in r.stdout + r.stderr
    if args == ["--scene", "nope"]:  # the case troubleshooting quotes
        assert r.stderr.strip() == quoted("`vasimov up: unknown scene")[0].strip()


# -- the SDK pointed where no twin answers ---------------------------------------------------------------------------

def test_the_cli_pointed_where_no_twin_answers_says_it_could_not_read_the_version(tmp_path: Path) -> None:
    """The twin cannot see a client that never reaches it: the message is the SDK's own, as troubleshooting quotes."""
    with holding("tcp", 3000):
        pass  # free (or skipped): nothing answers the version check
    env = dict(graph_env(next_domain_id()), HOME=str(tmp_path), NO_COLOR="1", TERM="dumb")
    r = run([str(VENV_BIN / "menlo"), "robots", "add", "sim", "--mode", "udp", "--udp", "127.0.0.1"], env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    out = " ".join((r.stdout + r.stderr).split())  # the CLI wraps long lines
    assert "could not read robot version at http://127.0.0.1:3000/api/version" in out, out
    assert "Connection refused" in out and "was not saved" in out
