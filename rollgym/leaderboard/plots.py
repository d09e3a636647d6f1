"""Inline SVG plots drawn on the server: a scatter (score versus model size or date) and bars with intervals.

No JavaScript or plotting library: the page works when saved, printed or hosted as static files.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 560, 300
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 24, 48
COLORS = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4d7c0f", "#be185d")


@dataclass(frozen=True)
class Point:
    """One scatter point: x, y, its label and an optional link."""

    x: float
    y: float
    label: str
    href: str | None = None


@dataclass(frozen=True)
class Bar:
    """One bar: its label, value and 95% interval (values are fractions, drawn in percent)."""

    label: str
    value: float
    low: float | None = None
    high: float | None = None


def _nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    if high <= low:
        high = low + 1.0
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    start = math.floor(low / step) * step
    ticks = []
    value = start
    while value <= high + step * 0.5:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _frame(title: str, x_label: str, y_label: str, body: list[str]) -> str:
    return (
        f'<svg class="plot" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        f'xmlns="http://www.w3.org/2000/svg" aria-label="{escape(title)}">'
        f'<title>{escape(title)}</title>'
        f'<text x="{WIDTH / 2}" y="16" text-anchor="middle" font-size="13" font-weight="600">{escape(title)}</text>'
        f'<text x="{WIDTH / 2}" y="{HEIGHT - 8}" text-anchor="middle" font-size="12">{escape(x_label)}</text>'
        f'<text x="14" y="{HEIGHT / 2}" text-anchor="middle" font-size="12" '
        f'transform="rotate(-90 14 {HEIGHT / 2})">{escape(y_label)}</text>'
        + "".join(body)
        + "</svg>"
    )


def _y_axis(ticks: list[float], y_of: object, percent: bool) -> list[str]:
    out = []
    for t in ticks:
        y = y_of(t)  # type: ignore[operator]
        text = f"{100 * t:.0f}%" if percent else f"{t:g}"
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e7eb"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{text}</text>')
    return out


def _log_ticks(low: float, high: float) -> list[float]:
    """Tick positions (in log10 units) at 1-2-5 multiples of powers of ten inside ``[low, high]``."""
    ticks = []
    for power in range(math.floor(low) - 1, math.ceil(high) + 1):
        for mantissa in (1, 2, 5):
            value = power + math.log10(mantissa)
            if low <= value <= high:
                ticks.append(value)
    decades = [t for t in ticks if abs(t - round(t)) < 1e-9]
    return decades if len(decades) >= 2 else ticks


def scatter(points: list[Point], *, title: str, x_label: str, y_label: str = "score", log_x: bool = False,
            x_format: Callable[[float], str] = lambda v: f"{v:g}", percent: bool = True) -> str:
    """An SVG scatter plot; points with a link are clickable. Empty input gives a note instead.

    ``x_format`` turns an x value (not its logarithm) into a tick label.
    """
    usable = [p for p in points if p.x == p.x and p.y == p.y and (not log_x or p.x > 0)]
    if not usable:
        return f'<p class="empty-plot">{escape(title)}: no data yet.</p>'
    xs = [math.log10(p.x) if log_x else p.x for p in usable]
    x_low, x_high = min(xs), max(xs)
    if x_high - x_low < 1e-9:
        x_low, x_high = x_low - 1, x_high + 1
    pad = (x_high - x_low) * 0.08
    x_low, x_high = x_low - pad, x_high + pad
    y_ticks = _nice_ticks(0.0, max(1.0 if percent else max(p.y for p in usable), 1e-9))
    y_high = y_ticks[-1]

    def x_of(v: float) -> float:
        return LEFT + (v - x_low) / (x_high - x_low) * (WIDTH - LEFT - RIGHT)

    def y_of(v: float) -> float:
        return HEIGHT - BOTTOM - v / y_high * (HEIGHT - TOP - BOTTOM - 8)

    body = _y_axis(y_ticks, y_of, percent)
    shown: set[str] = set()
    for t in _log_ticks(x_low, x_high) if log_x else _nice_ticks(x_low, x_high, 4):
        label = x_format(10**t if log_x else t)
        if x_low <= t <= x_high and label not in shown:
            shown.add(label)
            body.append(f'<text x="{x_of(t):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle" '
                        f'font-size="11">{escape(label)}</text>')
    axis_y = HEIGHT - BOTTOM
    body.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{axis_y}" y2="{axis_y}" stroke="#6b7280"/>')
    for i, (p, xv) in enumerate(zip(usable, xs)):
        cx, cy = x_of(xv), y_of(p.y)
        right_half = cx > LEFT + (WIDTH - LEFT - RIGHT) * 0.6  # label on the inner side, never clipped
        anchor, dx = ("end", -8) if right_half else ("start", 8)
        dot = (f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="6" fill="{COLORS[i % len(COLORS)]}" opacity="0.85">'
               f'<title>{escape(p.label)}: {100 * p.y:.1f}%</title></circle>'
               f'<text x="{cx + dx:.1f}" y="{cy - 8:.1f}" font-size="11" text-anchor="{anchor}">'
               f'{escape(p.label[:24])}</text>')
        body.append(f'<a href="{escape(p.href)}">{dot}</a>' if p.href else dot)
    return _frame(title, x_label, y_label, body)


def bars(items: list[Bar], *, title: str, y_label: str = "accuracy", percent: bool = True) -> str:
    """An SVG bar chart with 95% interval whiskers."""
    if not items:
        return f'<p class="empty-plot">{escape(title)}: no data yet.</p>'
    top = 1.0 if percent else max(max((b.high if b.high is not None else b.value) for b in items), 1e-9)
    y_ticks = _nice_ticks(0.0, top)
    y_high = y_ticks[-1]

    def y_of(v: float) -> float:
        return HEIGHT - BOTTOM - max(v, 0.0) / y_high * (HEIGHT - TOP - BOTTOM - 8)

    body = _y_axis(y_ticks, y_of, percent)
    slot = (WIDTH - LEFT - RIGHT) / len(items)
    width = min(48.0, slot * 0.6)
    for i, b in enumerate(items):
        cx = LEFT + slot * (i + 0.5)
        value = b.value if b.value == b.value else 0.0
        y = y_of(value)
        body.append(
            f'<rect x="{cx - width / 2:.1f}" y="{y:.1f}" width="{width:.1f}" height="{HEIGHT - BOTTOM - y:.1f}" '
            f'fill="{COLORS[i % len(COLORS)]}" opacity="0.8"><title>{escape(b.label)}: '
            f'{100 * value:.1f}%</title></rect>'
        )
        if b.low is not None and b.high is not None:
            y1, y2 = y_of(b.low), y_of(b.high)
            body.append(
                f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y1:.1f}" y2="{y2:.1f}" stroke="#111827" stroke-width="1.5"/>'
            )
            for yy in (y1, y2):
                body.append(f'<line x1="{cx - 5:.1f}" x2="{cx + 5:.1f}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#111827"/>')
        body.append(f'<text x="{cx:.1f}" y="{HEIGHT - BOTTOM + 14}" text-anchor="middle" font-size="10">'
                    f'{escape(b.label[:18])}</text>')
    return _frame(title, "", y_label, body)
