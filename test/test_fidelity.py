"""FIDELITY.md stays true: every RobotState field the bridge fills and every command variant is classified."""

import re
from pathlib import Path

from vasimov_bridge import sdk_wire

FIDELITY = (Path(__file__).resolve().parent.parent / "FIDELITY.md").read_text()
CLASSES = ("exact", "approximate", "placeholder", "unsupported", "simulator-only")


def _rows(section: str) -> dict[str, str]:
    body = FIDELITY.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in body.splitlines()[3:]:  # skip the blank line, the header row and the rule
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and not set(cells[0]) <= set("-"):
            rows[cells[0]] = cells[1]
    return rows


def test_every_filled_state_field_is_classified():
    rows = _rows("Wire: RobotState")
    names = {n for key in rows for n in re.findall(r"`([a-z_]+)`", key)}
    missing = [f for f in sdk_wire.FILLED_STATE_FIELDS if f not in names]
    assert missing == [], f"RobotState fields filled by the bridge but missing from FIDELITY.md: {missing}"
    for key, cls in rows.items():
        assert any(c in cls for c in CLASSES), f"{key}: unknown class {cls!r}"


def test_every_command_variant_is_classified():
    rows = _rows("Wire: RobotCommand")
    text = " ".join(rows)
    for variant in ("DAMP", "STAND", "velocity", "trajectory", "eol", "protocol_version"):
        assert variant in text, variant
    for key, cls in rows.items():
        assert any(c in cls for c in CLASSES), f"{key}: unknown class {cls!r}"
