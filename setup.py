"""VASIMOV: a ROS 2 node graph that is a virtual Menlo Research Asimov 1 for the unmodified menlo-sdk.

Both installs read this file: pip (`make setup`: console scripts in the venv's bin/) and colcon as an ament_python
package (setup.cfg: console scripts in lib/vasimov, where `ros2 run`/`ros2 launch` look; data_files under share/).
"""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "vasimov"

#: the packages, bottom layer first (docs/architecture.md; test_layers.py enforces the order)
LAYERS = ("vasimov", "vasimov_plant", "vasimov_edge", "vasimov_bridge", "vasimov_tools")


setup(
    name=PACKAGE,
    version="0.1.0",
    description="Virtual Asimov 1: MuJoCo plant, firmware twin, policy runner and SDK/Foxglove bridges as ROS 2 nodes",
    license="Apache-2.0",
    python_requires=">=3.12",
    packages=find_packages(include=[f"{name}{suffix}" for suffix in ("", ".*") for name in LAYERS]),
    package_data={"vasimov.data": ["*.yaml"], "vasimov_tools": ["suites/*/*.yaml"]},  # scenario suites
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/vasimov"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", ["launch/bringup.launch.yaml"]),
        (f"share/{PACKAGE}/config", sorted(glob("config/*.yaml") + glob("config/*.xml") + glob("config/*.json"))),
    ],
    install_requires=["numpy", "pyyaml", "mujoco", "onnxruntime", "protobuf", "asimov-protocol", "psutil", "rosbags",
                      "websockets"],
    # `vasimov bench run --ray`: optional (a ~80 MB wheel, ~200 MB installed); `pip install vasimov[ray]`.
    # requirements.txt pins it for the test environment (make setup).
    extras_require={"ray": ["ray>=2.40"]},
    entry_points={
        "console_scripts": [
            "vasimov = vasimov_tools.cli:main",
            "plant_node = vasimov_plant.node:main",
            "edge_node = vasimov_edge.node:main",
            "policy_node = vasimov_edge.policy_node:main",
            "sdk_bridge_node = vasimov_bridge.sdk_node:main",
            "foxglove_bridge_node = vasimov_bridge.foxglove_node:main",
            "recorder_node = vasimov_tools.record:main",
            "binary_stream_node = vasimov_bridge.binary_node:main",
            "camera_node = vasimov_bridge.camera_node:main",
        ],
    },
)
