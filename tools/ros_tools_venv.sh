#!/usr/bin/env bash
# Test-only: the real ROS 2 tools (ros2 launch, ros2cli, colcon) in .ros_tools_venv, for test/test_ros_native.py.
# Built from ../shared/thirdparty when it is there (CI and developers have it; a user's fresh clone does not, and those
# tests then skip). Run by tools/run_tests.sh BEFORE the suite enters its private network namespace, because building
# needs the package registry; idempotent (a stamp per input), so later runs cost about a second.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MAKER=$ROOT/../shared/thirdparty/make_ros2_tools_venv.sh
V=$ROOT/.ros_tools_venv
[ -f "$MAKER" ] || exit 0
bash "$MAKER" "$V" >/dev/null
hash=$(cat "$ROOT/requirements-ros.txt" | sha256sum | cut -c1-16)
if [ "$(cat "$V/.vasimov_ros_reqs" 2>/dev/null)" != "$hash" ]; then
  echo "ros tools venv: installing colcon-bash and requirements-ros.txt (the README's pip step, done ahead)"
  # colcon-bash: a ROS install's colcon writes install/setup.bash; the tools script brings only the sh hooks
  "$V/bin/python" -m pip install -q --disable-pip-version-check colcon-bash -r "$ROOT/requirements-ros.txt"
  echo "$hash" > "$V/.vasimov_ros_reqs"
fi
