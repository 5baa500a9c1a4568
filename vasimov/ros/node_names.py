"""The graph's node names (the launch file's `name:`), in one place: for a publisher that must know *who* has matched
its topic, not only how many (the SDK bridge's sim requests, which the plant and the edge each act on)."""

PLANT = "plant"
EDGE = "edge"
