"""QoS profiles, chosen on purpose and named.

The lockstep loop (plant tick -> policy -> edge -> motor command) must never lose a message, or the loop stalls:
those topics are RELIABLE. Telemetry is RELIABLE too (KEEP_LAST, so a slow reader never blocks the writer), because
a best-effort writer cannot match the reliable readers that `ros2 bag` and most tools create. Depths are the
writers' resend buffers: a reliable reader that falls behind (a recorder on a loaded machine, which runs at the
lowest CPU priority) loses whatever the writer's history has already overwritten, so the streams keep ~10 s of
simulated time, over a second of wall time at lockstep speed (measured: depths 20-50 lost 249 of 900k samples in a
600 s lockstep recording on two busy cores; 200-500 lost none at normal priority, but a few samples in one of three
runs once the recorder ran at nice 19). Memory: depth x message size per writer, ~1.5 MB for plant state. Latched
facts are transient-local depth 1.
"""

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

LOOP = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=500, reliability=ReliabilityPolicy.RELIABLE,
                  durability=DurabilityPolicy.VOLATILE)
STATE_STREAM = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=2000, reliability=ReliabilityPolicy.RELIABLE,
                          durability=DurabilityPolicy.VOLATILE)
TELEMETRY = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=2000, reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.VOLATILE)
COMMANDS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)
LATCHED = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
# The reader of a latched topic that several writers publish once each (the lockstep ready announcements): an unkeyed
# reader's KEEP_LAST depth counts samples, not writers, so depth 1 would keep only the last of announcements that
# arrive together (a plant that starts after its participants receives all of them at once).
LATCHED_FROM_MANY = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=64, reliability=ReliabilityPolicy.RELIABLE,
                               durability=DurabilityPolicy.TRANSIENT_LOCAL)
# The simulator's event lines (/vasimov/sim/events): never lost, and the latest kept for a reader that joins late
# (a recorder discovering the topic, a bridge that restarted), so a recording explains the run from its start.
EVENTS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.RELIABLE,
                    durability=DurabilityPolicy.TRANSIENT_LOCAL)
CLOCK = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=2000, reliability=ReliabilityPolicy.RELIABLE,
                   durability=DurabilityPolicy.VOLATILE)
# Real time only, readers of the closed loop's inputs (plant ticks, policy answers) in the edge: a control tick is
# worth answering only while it is current, so after a stall (SIGSTOP, a long GC pause) the reader keeps the newest
# few and the node decides those, instead of replaying seconds of backlog. Lockstep readers keep LOOP (every tick
# is answered there, and only one is ever outstanding).
LOOP_NEWEST = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=3, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)
