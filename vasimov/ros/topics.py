"""Every topic name of the graph, in one place. Nodes and tests import these; nothing repeats the strings."""

CLOCK = "/clock"
JOINT_STATES = "/joint_states"
IMU = "/imu"
ODOM_TRUTH = "/vasimov/ground_truth/odom"
FEET_TRUTH = "/vasimov/ground_truth/feet"
# ideal joint encoders and IMU beside the noisy /joint_states and /imu: published only while realism is on
JOINT_STATES_TRUTH = "/vasimov/ground_truth/joint_states"
IMU_TRUTH = "/vasimov/ground_truth/imu"
PLANT_STATE = "/vasimov/plant/state"  # every physics step (200 Hz)
PLANT_SAMPLES = "/vasimov/plant/samples"  # one control period's per-step samples in one message (the SDK bridge's)
PLANT_TICK = "/vasimov/plant/tick"  # control ticks only (50 Hz); the lockstep loop runs on it
LOCKSTEP_READY = "/vasimov/lockstep/ready"  # std_msgs/String, latched: a participant announces ready (lockstep_gate)
LOCKSTEP_CAMERA = "/vasimov/lockstep/camera"  # std_msgs/UInt64MultiArray [epoch, step], latched: camera_lockstep
PLANT_FAULT = "/vasimov/plant/fault"
MOTOR_COMMAND = "/vasimov/motor_command"
FIRMWARE_STATE = "/vasimov/firmware/state"
ROBOT_COMMAND = "/vasimov/command"  # validated commands from outside sources -> the firmware arbiter
POLICY_STEP = "/vasimov/policy/step"
SIM_CONTROL = "/vasimov/sim/control"
SIM_EVENTS = "/vasimov/sim/events"  # std_msgs/String JSON lines: every push, force, restart (boot) and rejection
SIM_PUSH_SERVICE = "/vasimov/sim/push"  # vasimov_msgs/srv/Push, served by the plant
SIM_RESTART_SERVICE = "/vasimov/sim/restart"  # vasimov_msgs/srv/Restart, served by the plant
SIM_LINK = "/vasimov/sim/link"  # std_msgs/String JSON, latched: the SDK link's impairment settings on every change
SDK_DATAGRAMS = "/vasimov/sdk/datagrams"
# std_msgs/String JSON, real time only, once per report period: real-time conformance (control period and lateness
# p50/p99/max, real-time factor) from the plant, and the SDK state stream's rate from the SDK bridge
REALTIME = "/vasimov/realtime"
SDK_RATE = "/vasimov/sdk/rate"
CMD_VEL = "/cmd_vel"  # geometry_msgs/Twist teleop (Foxglove), handed to the arbiter as source FOXGLOVE
PROVENANCE = "/vasimov/provenance"
ROBOT_DESCRIPTION = "/robot_description"
SCENE = "/vasimov/scene"  # std_msgs/String JSON, latched: the scene's name, parameters, seed and ground geoms

# Foxglove bridge (vasimov_bridge.foxglove_node)
TELEOP_MODE = "/vasimov/teleop/mode"  # std_msgs/String from a Foxglove client: stand | damp | balance
FOXGLOVE_TF = "/tf"  # Foxglove-only channel (foxglove.FrameTransforms): every link from the simulated state
FOXGLOVE_SCENE = "/vasimov/scene/entities"  # Foxglove-only channel (foxglove.SceneUpdate): the scene's ground
FOXGLOVE_STATS = "/vasimov/foxglove/stats"  # Foxglove-only JSON channel: the bridge's counters and bound port

# Head camera (vasimov_bridge.camera_node; docs/cameras.md): ROS camera conventions, rendered only while watched
CAMERA_COLOR = "/camera/head/color/image_raw"  # sensor_msgs/Image rgb8
CAMERA_COLOR_INFO = "/camera/head/color/camera_info"
CAMERA_COLOR_COMPRESSED = "/camera/head/color/image_raw/compressed"  # sensor_msgs/CompressedImage jpeg
CAMERA_DEPTH = "/camera/head/depth/image_raw"  # sensor_msgs/Image 32FC1, metres along the optical axis, NaN: no hit
CAMERA_DEPTH_INFO = "/camera/head/depth/camera_info"
CAMERA_STATS = "/vasimov/camera/stats"  # std_msgs/String JSON: the camera node's counters, once a wall second
