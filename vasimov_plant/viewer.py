"""MuJoCo's passive viewer on the plant (parameter `viewer`): a convenience that never takes the plant down."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any


class Viewer:
    """Opens the viewer if there is a display; `sync()` after each control period shows the new state."""

    def __init__(self, model: Any, data: Any, log_error: Callable[[str], None]) -> None:
        self.handle = None
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            log_error("viewer requested but there is no display (DISPLAY/WAYLAND_DISPLAY unset); continuing without it")
            return
        try:
            import mujoco.viewer

            self.handle = mujoco.viewer.launch_passive(model, data)
        except Exception as exc:  # the viewer is a convenience: never take the plant down with it
            log_error(f"could not open the MuJoCo viewer: {exc}; continuing without it")

    def sync(self) -> None:
        if self.handle is not None and self.handle.is_running():
            self.handle.sync()
