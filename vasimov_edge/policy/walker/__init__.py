"""Walker v2: LIPM/DCM walking with step position and timing adaptation on placo/Pinocchio (spec ``builtin-v2``).

Selectable beside the default ``builtin`` walker; see :mod:`.controller` and docs/walker.md.
"""

from vasimov_edge.policy.walker.config import WalkerConfig
from vasimov_edge.policy.walker.controller import WalkerV2

__all__ = ["WalkerConfig", "WalkerV2"]
