#!/usr/bin/env bash
# The ROS wheels' exported CMake targets name the wheel builder's Python/numpy include paths
# (/opt/python/cpXY-cpXY/...). Rewrite them to this venv's paths so msg/ packages build. Idempotent.
set -euo pipefail
VENV=${1:?usage: fix_ros_cmake_paths.sh VENV}
PY=$VENV/bin/python
PYINC=$($PY -c "import sysconfig; print(sysconfig.get_paths()['include'])")
NPINC=$($PY -c "import numpy; print(numpy.get_include())")
TAG=$($PY -c "import sys; v=f'{sys.version_info[0]}{sys.version_info[1]}'; print(f'cp{v}-cp{v}')")
PYVER=$($PY -c "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')")
files=$(grep -rl "/opt/python/$TAG" "$VENV/share" --include='*.cmake' || true)
for f in $files; do
  sed -i -e "s#/opt/python/$TAG/lib/python$PYVER/site-packages/numpy/_core/include#$NPINC#g" \
         -e "s#/opt/python/$TAG/include/python$PYVER#$PYINC#g" "$f"
done
echo "fix_ros_cmake_paths: patched $(echo $files | wc -w) cmake files"
