"""Built-in model-based locomotion backend: balance and walking with no learned weights.

``BuiltinController()`` is the default backend when no checkpoint is present; see :mod:`.controller` for the method.
"""

from vasimov_edge.policy.builtin.config import ControllerConfig
from vasimov_edge.policy.builtin.controller import BuiltinController

__all__ = ["BuiltinController", "ControllerConfig"]
