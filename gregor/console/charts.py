"""Charts drawn as SVG text on the server: a lag-over-time line chart and a small sparkline.
No chart library and nothing fetched at run time; the SVG goes into the page (or an <img>) and
obeys the page's Content-Security-Policy (no script, no <style>: colours are presentation
attributes, picked to read on light and dark pages alike). Sans-I/O: numbers in, text out."""
from __future__ import annotations

import time
from xml.sax.saxutils import escape

_TEXT = 'fill="#8a93a3" font-family="system-ui, sans-serif" font-size="11"'
_LINE = 'stroke="#3b7be8" stroke-width="2" fill="none"'
_GRID = 'stroke="#8a93a3" stroke-opacity="0.3" stroke-width="1"'


def _nice_max(v: float) -> float:
    if v <= 0:
        return 1.0
    mag = 10 ** (len(str(int(v))) - 1)
    for step in (1, 2, 5, 10):
        if v <= step * mag:
            return float(step * mag)
    return float(10 * mag)


def _fmt(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:g}M"
    if v >= 1e3:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


def line_chart(series: list[tuple[float, float]], *, width: int = 640, height: int = 200,
               title: str = "", unit: str = "records") -> str:
    """series: [(unix seconds, value)] in time order."""
    left, right, top, bottom = 56, 12, 24, 28
    w, h = width - left - right, height - top - bottom
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
             f'viewBox="0 0 {width} {height}" width="{width}" height="{height}">',
             f"<title>{escape(title)}</title>",
             f'<text class="chart-title" {_TEXT} font-weight="600" x="{left}" y="16">'
             f"{escape(title)}</text>"]
    if not series:
        parts.append(f'<text class="chart-empty" {_TEXT} x="{left + 10}" y="{top + h / 2}">'
                     "no samples yet</text></svg>")
        return "".join(parts)
    t0, t1 = series[0][0], series[-1][0]
    span = max(t1 - t0, 1.0)
    vmax = _nice_max(max(v for _, v in series))
    for i in range(5):                       # horizontal grid with value labels
        v = vmax * i / 4
        y = top + h - h * i / 4
        parts.append(f'<line class="grid" {_GRID} x1="{left}" y1="{y:.1f}" x2="{left + w}" '
                     f'y2="{y:.1f}"/>')
        parts.append(f'<text class="axis" {_TEXT} x="{left - 6}" y="{y + 4:.1f}" '
                     f'text-anchor="end">{_fmt(v)}</text>')
    for frac, anchor in ((0, "start"), (1, "end")):
        t = t0 + span * frac
        parts.append(f'<text class="axis" {_TEXT} x="{left + w * frac:.1f}" y="{height - 8}" '
                     f'text-anchor="{anchor}">{time.strftime("%H:%M:%S", time.localtime(t))}'
                     "</text>")
    pts = " ".join(f"{left + w * (t - t0) / span:.1f},{top + h - h * v / vmax:.1f}"
                   for t, v in series)
    parts.append(f'<polyline class="line" {_LINE} points="{pts}"/>')
    lt, lv = series[-1]
    parts.append(f'<circle class="dot" cx="{left + w * (lt - t0) / span:.1f}" '
                 f'cy="{top + h - h * lv / vmax:.1f}" r="3" fill="#3b7be8"/>')
    parts.append(f'<text class="axis" {_TEXT} x="{left + w}" y="16" text-anchor="end">'
                 f'{escape(_fmt(lv))} {escape(unit)} now</text>')
    parts.append("</svg>")
    return "".join(parts)


def sparkline(values: list[float], *, width: int = 120, height: int = 24) -> str:
    if len(values) < 2:
        return ""
    vmax = max(values) or 1.0
    step = width / (len(values) - 1)
    pts = " ".join(f"{i * step:.1f},{height - 2 - (height - 4) * v / vmax:.1f}"
                   for i, v in enumerate(values))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="spark" viewBox="0 0 {width} '
            f'{height}" width="{width}" height="{height}"><polyline class="line" fill="none" '
            f'points="{pts}"/></svg>')
