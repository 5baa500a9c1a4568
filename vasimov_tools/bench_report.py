"""``DIR/report.html`` of a ``vasimov bench run``: one self-contained page (inline CSS and SVG, no script, nothing
fetched at view time) with the pass/fail table and, per scenario, the trajectory seen from above and the commanded
against the measured body-frame velocity (vx, vy, yaw rate; raw and its 1 s mean), with pushes and mode changes
marked on the time axis, and the torso tilt against the fall limit.

Pure: it turns the JSON result documents of :mod:`vasimov_tools.bench_run` into text. The plots take further runs
of the same scenario as ``overlay`` (``(doc, colour)``): ``vasimov bench compare`` draws run B over run A with the
same code (:mod:`vasimov_tools.bench_compare`), and ``vasimov replay`` builds its page from the same pieces.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

Overlay = Sequence[tuple[dict[str, Any], str]]  # further runs of the same scenario and their colours
W, H, PAD = 360, 220, 34
STATUS_COLOUR = {"passed": "#1a7f37", "failed": "#cf222e", "error": "#9a6700", "skipped": "#6e7781"}
FALL_COLOUR, UP_COLOUR = "#cf222e", "#1a7f37"  # time-line markers: a fall, upright again (``events``)
CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1f2328}
table{border-collapse:collapse}td,th{padding:3px 8px;border-bottom:1px solid #d0d7de;text-align:right}
td:first-child,th:first-child,td.l{text-align:left}.s{font-weight:600}
section{margin:28px 0;border-top:2px solid #d0d7de;padding-top:8px}svg{margin-right:12px;background:#f6f8fa}
.meta{color:#57606a;font-size:12px}
"""


def _esc(x: object) -> str:
    return html.escape(str(x), quote=True)


esc = _esc


def page_head(title: str) -> str:
    """The page's opening up to its heading: one style for every report."""
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_esc(title)}</title>"
            f"<style>{CSS}</style></head><body><h1>{_esc(title)}</h1>")


def _ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    return [k * step for k in range(math.ceil(lo / step), math.floor(hi / step) + 1)]


class _Axes:
    """A linear data-to-pixel map for one plot; ``equal`` keeps metres square (the top view)."""

    def __init__(self, xs: Sequence[float], ys: Sequence[float], equal: bool = False) -> None:
        x0, x1 = min(xs), max(xs)
        y0, y1 = min(ys), max(ys)
        if x1 - x0 < 1e-9:
            x0, x1 = x0 - 0.5, x1 + 0.5
        if y1 - y0 < 1e-9:
            y0, y1 = y0 - 0.5, y1 + 0.5
        if equal:
            span = max(x1 - x0, y1 - y0)
            cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
            x0, x1, y0, y1 = cx - span / 2, cx + span / 2, cy - span / 2, cy + span / 2
        self.x0, self.x1, self.y0, self.y1 = x0, x1, y0, y1

    def px(self, x: float) -> float:
        return PAD + (x - self.x0) / (self.x1 - self.x0) * (W - 1.5 * PAD)

    def py(self, y: float) -> float:
        return H - PAD + (y - self.y0) / (self.y1 - self.y0) * -(H - 1.5 * PAD)

    def frame(self, xlabel: str, ylabel: str) -> str:
        parts = [f'<rect x="{PAD}" y="{PAD / 2}" width="{W - 1.5 * PAD}" height="{H - 1.5 * PAD}" fill="#fff" '
                 f'stroke="#8c959f"/>']
        for t in _ticks(self.x0, self.x1):
            x = self.px(t)
            parts.append(f'<text x="{x:.1f}" y="{H - PAD + 13}" font-size="10" text-anchor="middle">{t:g}</text>')
        for t in _ticks(self.y0, self.y1):
            y = self.py(t)
            parts.append(f'<line x1="{PAD}" x2="{W - PAD / 2}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eaeef2"/>'
                         f'<text x="{PAD - 3}" y="{y + 3:.1f}" font-size="10" text-anchor="end">{t:g}</text>')
        parts.append(f'<text x="{W / 2}" y="{H - 4}" font-size="11" text-anchor="middle">{_esc(xlabel)}</text>')
        parts.append(f'<text x="10" y="{H / 2}" font-size="11" transform="rotate(-90 10 {H / 2})" '
                     f'text-anchor="middle">{_esc(ylabel)}</text>')
        return "".join(parts)

    def line(self, xs: Sequence[float], ys: Sequence[float], colour: str, dash: str = "") -> str:
        pts = " ".join(f"{self.px(x):.1f},{self.py(y):.1f}" for x, y in zip(xs, ys, strict=True))
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        return f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="1.5"{extra}/>'


def _svg(body: str, title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img">'
            f"<title>{_esc(title)}</title>{body}</svg>")


def trajectory_svg(doc: dict[str, Any], overlay: Overlay = ()) -> str:
    """The pelvis path from above, in the start pose's frame (x along the start heading, y to its left)."""
    runs = [(doc, "#0969da"), *overlay]
    ax = _Axes([-s["y"] for d, _ in runs for s in d["trace"]], [s["x"] for d, _ in runs for s in d["trace"]],
               equal=True)  # forward is up, the robot's left is left
    body = ax.frame("right (m)", "forward (m)")
    for d, colour in runs:
        xs, ys = [s["x"] for s in d["trace"]], [s["y"] for s in d["trace"]]
        body += ax.line([-y for y in ys], xs, colour)
        body += (f'<circle cx="{ax.px(-ys[0]):.1f}" cy="{ax.py(xs[0]):.1f}" r="4" fill="#1a7f37"><title>start'
                 f'</title></circle><circle cx="{ax.px(-ys[-1]):.1f}" cy="{ax.py(xs[-1]):.1f}" r="4" '
                 f'fill="{"#cf222e" if d["outcome"]["fell_at"] is not None else colour}"><title>end</title></circle>')
    return _svg(body, f"{doc['scenario']}: trajectory from above")


def events(doc: dict[str, Any]) -> list[tuple[float, str, str]]:
    """What happened to the robot on a scenario's time line, as (time, colour, label): the bench's fall (recovery
    off), and with the recovery chain each fall and each return upright (outcome ``fall_times``,
    ``recovery_times``)."""
    o = doc.get("outcome") or {}
    out: list[tuple[float, str, str]] = []
    if o.get("fell_at") is not None:
        out.append((float(o["fell_at"]), FALL_COLOUR, f"fell at {o['fell_at']:.2f} s"))
    for t in o.get("fall_times") or []:
        out.append((float(t), FALL_COLOUR, f"down at {t:.2f} s (recovery chain)"))
    for t, took in zip(o.get("recovery_times") or [], o.get("recovery_s") or [], strict=False):
        out.append((float(t), UP_COLOUR, f"upright again at {t:.2f} s, {took:.1f} s after the fall"))
    return sorted(out)


def _event_lines(ax: _Axes, doc: dict[str, Any]) -> str:
    """Vertical lines for ``events``, each with its label as a tooltip and drawn as the line's class."""
    body = ""
    for t, colour, label in events(doc):
        x = ax.px(t)
        kind = "fall" if colour == FALL_COLOUR else "recovery"
        body += (f'<line class="{kind}" x1="{x:.1f}" x2="{x:.1f}" y1="{PAD / 2}" y2="{H - PAD}" stroke="{colour}" '
                 f'stroke-width="2"><title>{_esc(label)}</title></line>')
    return body


def velocity_svg(doc: dict[str, Any], key: str, label: str, overlay: Overlay = ()) -> str:
    """Commanded (dashed) against measured (solid) ``key`` over scenario time, pushes/modes as vertical lines; an
    overlaid run adds its 1 s mean in its colour."""
    tr = doc["trace"]
    ts = [s["t"] for s in tr]
    cmd, meas = [s[f"cmd_{key}"] for s in tr], [s[key] for s in tr]
    ax = _Axes([0.0, doc.get("duration", ts[-1])], cmd + meas + [s[key] for d, _ in overlay for s in d["trace"]])
    body = ax.frame("t (s)", label)
    for p in doc.get("pushes", []):
        x = ax.px(p["t"])
        body += (f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{PAD / 2}" y2="{H - PAD}" stroke="#bf8700">'
                 f'<title>push {p["force"]} N on {_esc(p["body"])}</title></line>')
    for t, mode in doc.get("modes", []):
        x = ax.px(t)
        body += (f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{PAD / 2}" y2="{H - PAD}" stroke="#8250df">'
                 f"<title>{_esc(mode)}</title></line>")
    body += _event_lines(ax, doc)
    body += ax.line(ts, meas, "#b6d4fb") + ax.line(ts, cmd, "#57606a", "4 3")
    body += ax.line(ts, _smooth(ts, meas), "#0969da")
    for d, colour in overlay:
        ots = [s["t"] for s in d["trace"]]
        body += ax.line(ots, _smooth(ots, [s[key] for s in d["trace"]]), colour)
    return _svg(body, f"{doc['scenario']}: commanded (dashed), measured (light) and its 1 s mean (blue) {label}")


def tilt_svg(doc: dict[str, Any], overlay: Overlay = ()) -> str:
    """Torso tilt from upright over scenario time, with the fall rule's limit (red, dashed)."""
    runs = [(doc, "#0969da"), *overlay]
    limit = doc.get("fall", {}).get("max_tilt_deg")
    tilts = [s["tilt_deg"] for d, _ in runs for s in d["trace"]]
    ax = _Axes([0.0, doc.get("duration", doc["trace"][-1]["t"])],
               [0.0, *tilts, *([limit] if limit is not None else [])])
    body = ax.frame("t (s)", "tilt (deg)")
    if limit is not None:
        body += ax.line([ax.x0, ax.x1], [limit, limit], "#cf222e", "4 3")
    body += _event_lines(ax, doc)
    for d, colour in runs:
        body += ax.line([s["t"] for s in d["trace"]], [s["tilt_deg"] for s in d["trace"]], colour)
    return _svg(body, f"{doc['scenario']}: torso tilt and the fall limit")


Axes, svg = _Axes, _svg  # the plot primitives other reports draw with (vasimov_tools.replay)


def _smooth(ts: Sequence[float], ys: Sequence[float], window: float = 1.0) -> list[float]:
    """Centred moving mean over ``window`` s: the gait's step-to-step sway averaged out, as the tracking error
    averages it (walk_bench.TRACKING_BLOCK)."""
    out = []
    lo = hi = 0
    total = 0.0
    for t in ts:
        while hi < len(ts) and ts[hi] <= t + window / 2:
            total += ys[hi]
            hi += 1
        while ts[lo] < t - window / 2:
            total -= ys[lo]
            lo += 1
        out.append(total / (hi - lo))
    return out


def _row(doc: dict[str, Any]) -> str:
    status = doc["status"]
    o = doc.get("outcome")
    colour = STATUS_COLOUR.get(status, "#000")
    name = f'<a href="#{_esc(doc["scenario"])}">{_esc(doc["scenario"])}</a>' if o else _esc(doc["scenario"])
    if o is None:
        return (f'<tr><td>{name}</td><td class="s l" style="color:{colour}">{status}</td>'
                f'<td colspan="6" class="l">{_esc(doc.get("reason") or doc.get("error", ""))}</td></tr>')
    fell = f"{o['fell_at']:.2f}" if o["fell_at"] is not None else "-"
    return (f'<tr><td>{name}</td><td class="s l" style="color:{colour}">{status}</td><td>{fell}</td>'
            f"<td>{o['along']:.2f}</td><td>{o['lateral']:.2f}</td><td>{o['heading']:.2f}</td>"
            f"<td>{o['tracking_error']:.3f}</td><td class=\"l\">{_esc('; '.join(o['failures']))}</td></tr>")


def scenario_plots(doc: dict[str, Any], overlay: Overlay = ()) -> list[str]:
    """A scenario's plots (trajectory, vx, vy, yaw rate, tilt), with ``overlay`` runs drawn over ``doc``."""
    return [trajectory_svg(doc, overlay), velocity_svg(doc, "vx", "vx (m/s)", overlay),
            velocity_svg(doc, "vy", "vy (m/s)", overlay), velocity_svg(doc, "wz", "yaw rate (rad/s)", overlay),
            tilt_svg(doc, overlay)]


def render(docs: Sequence[dict[str, Any]], title: str = "vasimov bench run") -> str:
    """The whole page."""
    counts = {s: sum(d["status"] == s for d in docs) for s in STATUS_COLOUR}
    meta = docs[0] if docs else {}
    policies = sorted({str(d.get("policy")) for d in docs if d.get("policy")})
    out = [page_head(title),
           f'<p class="meta">policy {_esc(", ".join(policies) or "-")} &middot; model sha256 '
           f'{_esc(str(meta.get("model_sha256", "?"))[:16])} &middot; code {_esc(meta.get("code_version", "?"))}</p>',
           "<p>" + ", ".join(f"{n} {s}" for s, n in counts.items()) + "</p>",
           "<table><tr><th>scenario</th><th>status</th><th>fell (s)</th><th>along (m)</th><th>lateral (m)</th>"
           "<th>heading (rad)</th><th>tracking (m/s)</th><th>failures</th></tr>",
           *(_row(d) for d in docs), "</table>"]
    for d in docs:
        if not d.get("trace"):
            continue
        out.append(f'<section id="{_esc(d["scenario"])}"><h2>{_esc(d["scenario"])} '
                   f'<span style="color:{STATUS_COLOUR.get(d["status"], "#000")}">{d["status"]}</span></h2>'
                   f'<p class="meta">{_esc(d.get("description", ""))} seed {d.get("seed")} &middot; '
                   f'{_esc(d.get("source", ""))}</p>')
        out.extend(scenario_plots(d))
        out.append("</section>")
    out.append("</body></html>\n")
    return "\n".join(out)


def write(out_dir: Path, docs: Sequence[dict[str, Any]]) -> Path:
    path = Path(out_dir) / "report.html"
    path.write_text(render(docs), encoding="utf-8")
    return path
