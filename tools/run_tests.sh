#!/usr/bin/env bash
# The README's test command runs this (make test). Isolation: the whole session runs in a private network
# namespace (only loopback) when we are root, so the SDK's fixed ports (8850/8851/3000) and DDS traffic can never
# meet another run on this machine; each graph under test also gets its own ROS_DOMAIN_ID.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
if [ ! -x .venv/bin/python ]; then
  echo "run_tests: no .venv in $ROOT (the tests run with .venv/bin/python). Run \`make setup\` first, or \`make test\`," >&2
  echo "run_tests: which sets it up and then runs this script." >&2
  exit 1
fi
if [ -z "${VASIMOV_IN_NETNS:-}" ]; then
  # needs the package registry, so before the network namespace; a no-op without ../shared/thirdparty
  bash tools/ros_tools_venv.sh || echo "run_tests: could not build the ROS 2 tools venv; test_ros_native will fail" >&2
fi
if [ "$(id -u)" = 0 ] && [ -z "${VASIMOV_IN_NETNS:-}" ] && unshare -n true 2>/dev/null; then
  exec unshare -n -- env VASIMOV_IN_NETNS=1 bash -c 'ip link set lo up && exec bash "$0" "$@"' "$0" "$@"
fi
# the loopback profile below decides discovery; rmw's LOCALHOST would add a UDP transport on 0.0.0.0 (README "Security")
export ROS_AUTOMATIC_DISCOVERY_RANGE=SYSTEM_DEFAULT
export FASTDDS_DEFAULT_PROFILES_FILE=$ROOT/config/fastdds_localhost.xml
export ROS_LOG_DIR=$ROOT/.ros_log
export ROS_PYTHON_CHECK_FIELDS=1
export PYTHONUNBUFFERED=1
mkdir -p "$ROS_LOG_DIR"
status=0
if [ "$#" = 0 ]; then set -- test; fi
.venv/bin/python -m pytest -ra "$@" || status=$?
# Fast DDS leaves segments only for processes killed hard (tests do that on purpose); remove those of dead ones.
.venv/bin/python .venv/tools/fastdds/fastdds.py shm clean >/dev/null 2>&1 || true
# ...and the port segments such a kill orphans, which that tool cannot see (vasimov/ros/shm.py)
.venv/bin/python -c "from vasimov.ros.shm import remove_orphan_ports; remove_orphan_ports()" >/dev/null 2>&1 || true
if [ "$status" = 5 ]; then
  echo "run_tests: pytest collected no tests" >&2
fi
exit "$status"
