#!/usr/bin/env bash
# Create or update .venv: Python 3.12, the ROS 2 wheels and the rest from PyPI, this project (editable) and the
# interfaces in msg/ built with CMake into the venv. Idempotent: each stage is skipped when its inputs are unchanged.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=$ROOT/.venv
STAMP=$VENV/.vasimov_stamps
# menlo-sdk needs Python >= 3.12 and the ROS 2 Kilted wheels are built for CPython 3.12 only: exactly 3.12.
# VASIMOV_PYTHON names the interpreter; otherwise pyenv's 3.12.1, then python3.12 on PATH.
is_py312() { [ -n "$1" ] && [ -x "$1" ] && "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; }
if [ -n "${VASIMOV_PYTHON:-}" ]; then
  CANDIDATES=("$VASIMOV_PYTHON")
else
  CANDIDATES=("/root/.pyenv/versions/3.12.1/bin/python3.12" "$(command -v python3.12 || true)")
fi
PY=""
for c in "${CANDIDATES[@]}"; do
  if is_py312 "$c"; then PY=$c; break; fi
done
if [ -z "$PY" ]; then
  looked=$(printf '%s, ' "${CANDIDATES[@]}"); looked=${looked%, }
  echo "setup: no Python 3.12 found (looked at: ${looked:-python3.12 on PATH, none there})." >&2
  echo "setup: the twin needs exactly 3.12 (menlo-sdk needs >= 3.12; the ROS 2 Kilted wheels exist for 3.12 only)." >&2
  echo "setup: install it (pyenv install 3.12, or your distribution's python3.12 package) so python3.12 is on PATH," >&2
  echo "setup: or name one: VASIMOV_PYTHON=/path/to/python3.12 make setup" >&2
  exit 1
fi
if [ -e "$VENV/bin/python" ] && ! is_py312 "$VENV/bin/python"; then
  echo "setup: $VENV exists but its python is not a working Python 3.12 ($("$VENV/bin/python" --version 2>&1 || echo 'it does not run'))." >&2
  echo "setup: it was made by another interpreter (or that interpreter was removed). Remove it and set up again:" >&2
  echo "setup:   rm -rf .venv && make setup" >&2
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

msg_hash=$(hash_of "$ROOT"/msg/package.xml "$ROOT"/msg/CMakeLists.txt "$ROOT"/msg/msg/*.msg "$ROOT"/msg/srv/*.srv)
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
# The vendor's source distribution of the pinned menlo-sdk: its live rig test and examples run against the twin
# (test/test_vendor_sdk.py). Fetched once into .venv/share, checked by the sha256 of the file pip gives; never committed.
SDK_VERSION=0.1.0
SDK_SDIST_SHA256=c787b49a6931d0aab8984c2481c0ad898db439f82cacf8cb8a484fa3ea2d0fc1
SDK_DIR=$VENV/share/menlo-sdk-$SDK_VERSION
if ! grep -qx "menlo-sdk==$SDK_VERSION" "$ROOT/requirements.txt"; then
  echo "setup: requirements.txt no longer pins menlo-sdk==$SDK_VERSION; update SDK_VERSION and SDK_SDIST_SHA256 here" >&2
  exit 1
fi
if [ "$(cat "$SDK_DIR/.sdist_sha256" 2>/dev/null)" != "$SDK_SDIST_SHA256" ]; then
  echo "setup: fetching the menlo-sdk $SDK_VERSION source distribution (vendor tests and examples)"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  "$VENV/bin/python" -m pip download -q --disable-pip-version-check --no-binary :all: --no-deps \
    "menlo-sdk==$SDK_VERSION" -d "$tmp/dl" || { echo "setup: could not download the menlo-sdk sdist" >&2; exit 1; }
  sdist=$tmp/dl/menlo_sdk-$SDK_VERSION.tar.gz
  got=$(sha256sum "$sdist" | cut -d' ' -f1)
  if [ "$got" != "$SDK_SDIST_SHA256" ]; then
    echo "setup: menlo-sdk sdist sha256 $got, expected $SDK_SDIST_SHA256; not using it" >&2
    exit 1
  fi
  mkdir -p "$tmp/x" && tar -xzf "$sdist" -C "$tmp/x"
  rm -rf "$SDK_DIR" && mkdir -p "$VENV/share" && mv "$tmp/x/menlo_sdk-$SDK_VERSION" "$SDK_DIR"
  echo "$SDK_SDIST_SHA256" > "$SDK_DIR/.sdist_sha256"
fi
# Foxglove's JavaScript client and CDR decoder for test/test_foxglove_js_client.py, pinned by test/js/package-lock.json
if command -v npm >/dev/null 2>&1; then
  js_hash=$(hash_of "$ROOT/test/js/package-lock.json")
  if [ "$(cat "$STAMP/js" 2>/dev/null)" != "$js_hash" ] || [ ! -d "$ROOT/test/js/node_modules" ]; then
    echo "setup: installing test/js (npm ci)"
    if (cd "$ROOT/test/js" && npm ci --no-audit --no-fund --loglevel=error >/dev/null); then
      echo "$js_hash" > "$STAMP/js"
    else
      echo "setup: npm ci in test/js failed; test_foxglove_js_client will fail until it succeeds" >&2
    fi
  fi
else
  echo "setup: npm not found; test_foxglove_js_client will be skipped (install Node.js to run it)"
fi
echo "setup: .venv ready"
