"""ROS-facing helpers shared by the nodes (topic names, QoS profiles, parameter declaration, message conversion)."""
