"""The firmware's alert vocabulary: alert ids, their catalog severities and names, and the ``error_flags`` layout.

One place because two sides speak it: the firmware twin raises alerts and latches faults, and the SDK bridge reports
an alert of its own (FIRMWARE_STALL, for an edge that stopped answering) with the same flag layout the SDK decodes.

Ids follow the fact sheet's ``firmware_behaviour.alert_ids`` (the SDK's ``ALERT_NAMES``, asimov-protocol's
``AlertId``); severities come from asimov-protocol's generated alert catalog, the table the firmware and the SDK
share. ``error_flags``: bit 0 says a fault is latched; a latched critical alert n sets bit 1 + n.
"""

from __future__ import annotations

from asimov_protocol import AlertSeverity
from asimov_protocol._alert_catalog import ALERT_CATALOG_DATA

from vasimov.joints import facts

ALERT_MOTOR_COMM_LOSS = 0
ALERT_MOTOR_OVERTEMP = 2
ALERT_IMU_FAULT = 3  # "The IMU stopped reporting correctly": the twin's sensors after a physics divergence
ALERT_FIRMWARE_STALL = 4  # "A firmware thread stopped responding": reported by the SDK bridge for a stalled edge
ALERT_FALL_DETECTED = 7
ALERT_JOINT_OUT_OF_RANGE = 11
ALERT_BMS_PROTECTION = 13
ALERT_MOTOR_TEMP_HIGH = 17
ALERT_BMS_LOW_SOC = 27

SEVERITY_CRITICAL = int(AlertSeverity.CRITICAL)
SEVERITY_WARNING = int(AlertSeverity.WARNING)

# Severity per alert id from asimov-protocol's generated alert catalog (the package has no public accessor for it;
# its own error_flags decoder reads the same data).
_CATALOG_SEVERITY: dict[int, int] = {int(e["alert_id"]): int(e["severity_value"]) for e in ALERT_CATALOG_DATA}

FAULT_LATCHED_FLAG = 1  # error_flags bit 0
ERROR_FLAGS_FIRST_ALERT_BIT = 1  # critical alert n sets bit 1 + n


def alert_name(alert_id: int) -> str:
    """The firmware's name for an alert id, ``ALERT_<id>`` when unknown (as the SDK prints it)."""
    names = facts()["firmware_behaviour"]["alert_ids"]
    return str(names.get(alert_id, f"ALERT_{alert_id}"))


def alert_severity(alert_id: int) -> int:
    """The catalog's severity of an alert id (0 CRITICAL, 1 WARNING, 2 INFO); WARNING for an id the catalog lacks
    (DECISION: never CRITICAL, which would make the SDK call the robot faulted over an id it cannot name)."""
    return _CATALOG_SEVERITY.get(alert_id, SEVERITY_WARNING)


def latched_flags(alert_id: int) -> int:
    """The ``error_flags`` bits a fault latched by critical alert ``alert_id`` sets: bit 0 and bit 1 + id."""
    return FAULT_LATCHED_FLAG | (1 << (ERROR_FLAGS_FIRST_ALERT_BIT + alert_id))
