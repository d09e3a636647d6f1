"""Grouped bar charts side by side: a PNG with matplotlib, or an SVG written without it.

The figure of :meth:`rollgym.train.distill_diagnostic.DiagnosticReport.plot`. A panel is
``(title, y label, group labels, {series name: one value per group (None: no bar)})``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from rollgym.core.io import write_bytes_atomic

Panel = tuple[str, str, list[str], dict[str, list[float | None]]]


def draw_bar_panels(panels: Sequence[Panel], path: str | Path) -> Path:
    """Draw ``panels`` side by side into ``path``; return the path written.

    A ``.svg`` path, or any path when matplotlib is not installed (the suffix becomes ``.svg``), gets an
    SVG written without matplotlib; otherwise a PNG from matplotlib.
    """
    path = Path(path)
    if path.suffix.lower() != ".svg":
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            path = path.with_suffix(".svg")
        else:
            from rollgym.train.figures import save_figure

            fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.2), squeeze=False)
            for ax, (title, ylabel, groups, series) in zip(axes[0], panels):
                width = 0.8 / max(1, len(series))
                for k, (name, values) in enumerate(series.items()):
                    xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(groups))]
                    ax.bar(xs, [0.0 if v is None else v for v in values], width, label=name)
                ax.axhline(0.0, color="black", linewidth=0.8)
                ax.set_xticks(range(len(groups)), groups, rotation=30, ha="right", fontsize=8)
                ax.set_title(title, fontsize=10)
                ax.set_ylabel(ylabel)
                ax.legend(fontsize=8)
            return save_figure(fig, path)
    write_bytes_atomic(path, svg_bar_panels(panels).encode())
    return path


def svg_bar_panels(panels: Sequence[Panel]) -> str:
    """Grouped bar charts side by side as an SVG document (no matplotlib needed)."""
    from xml.sax.saxutils import escape

    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
    pw, ph, top, bottom, left = 460, 320, 40, 70, 60
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{pw * len(panels)}" height="{ph}" '
             f'font-family="sans-serif" font-size="11">', '<rect width="100%" height="100%" fill="white"/>']
    for p, (title, ylabel, groups, series) in enumerate(panels):
        x0, plot_w, plot_h = p * pw + left, pw - left - 20, ph - top - bottom
        values = [v for vs in series.values() for v in vs if v is not None and math.isfinite(v)]
        hi, lo = max([0.0, *values]), min([0.0, *values])
        span = (hi - lo) or 1.0

        def y(v: float, hi: float = hi, span: float = span, plot_h: int = plot_h) -> float:
            return top + (hi - v) / span * plot_h

        parts.append(f'<text x="{x0 + plot_w / 2:.1f}" y="20" text-anchor="middle">{escape(title)}</text>')
        parts.append(f'<text x="{p * pw + 14}" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
                     f'transform="rotate(-90 {p * pw + 14} {top + plot_h / 2:.1f})">{escape(ylabel)}</text>')
        for tick in (hi, 0.0, lo):
            parts.append(f'<text x="{x0 - 4}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:.3g}</text>')
        slot = plot_w / max(1, len(groups))
        width = 0.8 * slot / max(1, len(series))
        for k, (name, vs) in enumerate(series.items()):
            colour = colours[k % len(colours)]
            for i, v in enumerate(vs):
                if v is None or not math.isfinite(v):
                    continue
                x = x0 + i * slot + 0.1 * slot + k * width
                y_top, y_bottom = sorted((y(v), y(0.0)))
                parts.append(f'<rect x="{x:.1f}" y="{y_top:.1f}" width="{width:.1f}" '
                             f'height="{max(y_bottom - y_top, 0.5):.1f}" fill="{colour}"><title>{escape(name)}: '
                             f'{v:.4g}</title></rect>')
            parts.append(f'<rect x="{x0 + plot_w - 150}" y="{top + 4 + 14 * k}" width="10" height="10" '
                         f'fill="{colour}"/>')
            parts.append(f'<text x="{x0 + plot_w - 136}" y="{top + 13 + 14 * k}">{escape(name)}</text>')
        parts.append(f'<line x1="{x0}" x2="{x0 + plot_w}" y1="{y(0.0):.1f}" y2="{y(0.0):.1f}" stroke="black"/>')
        for i, g in enumerate(groups):
            gx = x0 + (i + 0.5) * slot
            parts.append(f'<text x="{gx:.1f}" y="{ph - bottom + 16}" text-anchor="end" '
                         f'transform="rotate(-30 {gx:.1f} {ph - bottom + 16})">{escape(g)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
