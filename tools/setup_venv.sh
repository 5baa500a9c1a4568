#!/usr/bin/env bash
# Create or update .venv: Python 3.12, the ROS 2 wheels and the rest from PyPI, this project (editable) and the
# interfaces in msg/ built with CMake into the venv. Idempotent: each stage is skipped when its inputs are unchanged.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=$ROOT/.venv
STAMP=$VENV/.vasimov_stamps
PY=/root/.pyenv/versions/3.12.1/bin/python3.12
if [ ! -x "$PY" ]; then
  PY=$(command -v python3.12 || true)
fi
if [ -z "$PY" ] || [ ! -x "$PY" ]; then
  echo "setup: Python 3.12 not found (looked at /root/.pyenv/versions/3.12.1/bin/python3.12 and python3.12 on PATH);" >&2
  echo "setup: menlo-sdk needs Python >= 3.12. Install it (e.g. pyenv install 3.12) and run make setup again." >&2
  exit 1
fi
for tool in cmake g++ make; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "setup: $tool missing; installing build tools with apt-get" >&2
    apt-get update -qq && apt-get install -y -qq cmake g++ make >/dev/null
    break
  fi
done
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV with $PY"
  "$PY" -m venv "$VENV"
fi
mkdir -p "$STAMP"
hash_of() { cat "$@" | sha256sum | cut -c1-16; }

req_hash=$(hash_of "$ROOT/requirements.txt" "$ROOT/requirements-ros.txt")
if [ "$(cat "$STAMP/requirements" 2>/dev/null)" != "$req_hash" ]; then
  echo "setup: installing requirements"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-warn-script-location -r "$ROOT/requirements.txt"
  bash "$ROOT/tools/fix_ros_cmake_paths.sh" "$VENV"
  rm -f "$STAMP/msgs"
  echo "$req_hash" > "$STAMP/requirements"
fi

msg_hash=$(hash_of "$ROOT"/msg/package.xml "$ROOT"/msg/CMakeLists.txt "$ROOT"/msg/msg/*.msg)
if [ "$(cat "$STAMP/msgs" 2>/dev/null)" != "$msg_hash" ]; then
  echo "setup: building msg/ (vasimov_msgs) into the venv"
  BUILD=$ROOT/build/vasimov_msgs
  rm -rf "$BUILD"; mkdir -p "$ROOT/build"
  AMENT_PREFIX_PATH=$VENV cmake -S "$ROOT/msg" -B "$BUILD" -DCMAKE_INSTALL_PREFIX="$VENV" \
    -DCMAKE_PREFIX_PATH="$VENV" -DPython3_EXECUTABLE="$VENV/bin/python" -DBUILD_TESTING=OFF >"$BUILD.log" 2>&1 \
    || { tail -40 "$BUILD.log"; exit 1; }
  cmake --build "$BUILD" -j2 >>"$BUILD.log" 2>&1 || { tail -40 "$BUILD.log"; exit 1; }
  cmake --install "$BUILD" >>"$BUILD.log" 2>&1 || { tail -40 "$BUILD.log"; exit 1; }
  echo "$msg_hash" > "$STAMP/msgs"
fi

proj_hash=$(hash_of "$ROOT/setup.py" "$ROOT/setup.cfg")
if [ "$(cat "$STAMP/project" 2>/dev/null)" != "$proj_hash" ] || [ ! -x "$VENV/bin/vasimov" ]; then
  echo "setup: installing the project (editable)"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e "$ROOT"
  echo "$proj_hash" > "$STAMP/project"
fi
echo "setup: .venv ready"
