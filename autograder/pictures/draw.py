"""Drawing pictures as inline SVG, written out as text: no plotting library, no image encoding.

`heatmap(picture)` draws `weights.picture_of`'s data: the expected values and the student's side
by side, on one colour scale from 0 to 1 (viridis, with its colour bar), each row's sum written
at its end in green when it is 1 and red when not (a row of weights must sum to 1), the values in
the cells of small tables, "NaN" in a grey cell, the title saying when the table was cropped.
`histogram(...)` draws a distribution of scores for the class report.

Drawing one heatmap takes well under a millisecond (matplotlib took about 0.3 s a picture, most
of a class run's feedback pages). Every text is XML-escaped; the markup is safe to put in a page
as it is (`markupsafe.Markup`) and is shown under a notebook's check (`IPython.display.SVG`).
"""
from __future__ import annotations

import math
from xml.sax.saxutils import escape

# matplotlib's viridis at 17 evenly spaced points, interpolated in between.
_VIRIDIS = ["#440154", "#48186a", "#472d7b", "#424086", "#3b528b", "#33638d", "#2c728e",
            "#26828e", "#21918c", "#1fa088", "#28ae80", "#3fbc73", "#5ec962", "#84d44b",
            "#addc30", "#d8e219", "#fde725"]
_RGB = [tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)) for c in _VIRIDIS]
GOOD, BAD, MISSING = "#1e6b34", "#b00020", "#d9d9d9"
FONT = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\""


def colour(v: float) -> str:
    """viridis at `v`, clipped to [0, 1]."""
    x = min(max(v, 0.0), 1.0) * (len(_RGB) - 1)
    i = min(int(x), len(_RGB) - 2)
    f = x - i
    a, b = _RGB[i], _RGB[i + 1]
    return "#%02x%02x%02x" % tuple(round(p + (q - p) * f) for p, q in zip(a, b))


def _text(x: float, y: float, text: str, size: float = 11, anchor: str = "middle",
          fill: str = "#222", extra: str = "") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
            f'dominant-baseline="central" fill="{fill}"{extra}>{escape(text)}</text>')


def _finite(v) -> bool:
    return v is not None and math.isfinite(v)


def heatmap(picture: dict) -> str:
    """The picture as an `<svg>` element (see the module's note)."""
    panels = [("expected", picture["expected"]), ("yours", picture["got"])]
    n_rows = len(panels[0][1])
    n_cols = max((len(row) for row in panels[0][1]), default=0)
    cell = 30 if n_cols <= 8 and n_rows <= 8 else 22
    values_shown = n_rows * n_cols <= 64
    sums = 50                        # the row sums' column
    left, top = 42, 44               # room for the row label and ticks; the titles
    grid_w, grid_h = n_cols * cell, n_rows * cell
    gap = 28
    panel_w = grid_w + sums
    bar_x = left + 2 * panel_w + gap + 6
    width = bar_x + 44
    height = top + grid_h + 40
    title = picture["title"] + (" (first rows and columns)" if picture.get("cropped") else "")
    label = f"{title}: the expected values beside yours, as heatmaps"
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" role="img" '
           f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           f'aria-label="{escape(label, {chr(34): "&quot;"})}" {FONT}>',
           f"<title>{escape(label)}</title>",
           '<rect width="100%" height="100%" fill="#fff"/>',
           _text(width / 2, 14, title, 13, extra=' font-weight="bold"')]
    for k, (name, table) in enumerate(panels):
        x0 = left + k * (panel_w + gap)
        out.append(_text(x0 + grid_w / 2, top - 12, name, 12))
        for i, row in enumerate(table):
            y = top + i * cell
            for j, v in enumerate(row):
                x = x0 + j * cell
                fill = colour(v) if _finite(v) else MISSING
                out.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" '
                           f'fill="{fill}"/>')
                if not _finite(v):
                    out.append(_text(x + cell / 2, y + cell / 2, "NaN", 8 if cell < 30 else 9,
                                     fill=BAD))
                elif values_shown:
                    out.append(_text(x + cell / 2, y + cell / 2, f"{v:.2f}", 9,
                                     fill="#000" if v > 0.6 else "#fff"))
            total = sum(row) if all(_finite(v) for v in row) else math.nan
            ok = math.isfinite(total) and abs(total - 1) < 1e-3
            out.append(_text(x0 + grid_w + 5, y + cell / 2,
                             f"Σ {total:.2f}" if math.isfinite(total) else "Σ NaN", 10,
                             anchor="start", fill=GOOD if ok else BAD,
                             extra=' class="row-sum ok"' if ok else ' class="row-sum off"'))
        out.append(f'<rect x="{x0}" y="{top}" width="{grid_w}" height="{grid_h}" fill="none" '
                   'stroke="#888" stroke-width="0.5"/>')
        for j in range(n_cols):
            out.append(_text(x0 + j * cell + cell / 2, top + grid_h + 9, str(j), 8,
                             fill="#555"))
        out.append(_text(x0 + grid_w / 2, top + grid_h + 26, picture["cols"], 10, fill="#333"))
        for i in range(n_rows):
            out.append(_text(x0 - 5, top + i * cell + cell / 2, str(i), 8, anchor="end",
                             fill="#555"))
        if k == 0:
            cy = top + grid_h / 2
            out.append(_text(12, cy, picture["rows"], 10, fill="#333",
                             extra=f' transform="rotate(-90 12 {cy:.1f})"'))
    # The colour bar: 0 at the bottom, 1 at the top, as tall as the grid.
    steps = 32
    for s in range(steps):
        h = grid_h / steps
        out.append(f'<rect x="{bar_x}" y="{top + grid_h - (s + 1) * h:.2f}" width="10" '
                   f'height="{h + 0.3:.2f}" fill="{colour((s + 0.5) / steps)}"/>')
    for v in (0.0, 0.5, 1.0):
        out.append(_text(bar_x + 14, top + grid_h * (1 - v), f"{v:g}", 9, anchor="start",
                         fill="#333"))
    out.append("</svg>")
    return "".join(out)


def histogram(values: list[float], maximum: float, title: str, xlabel: str,
              width: int = 420, height: int = 260) -> str:
    """A histogram of `values` over [0, maximum] as an `<svg>` element: one bar per whole point
    when the values are whole points up to 12, else at most 20 equal bins; the y axis counts
    students."""
    if maximum <= 12 and all(float(v).is_integer() for v in values):
        edges = [x - 0.5 for x in range(int(maximum) + 2)]
    else:
        n = min(20, max(5, int(maximum)))
        top_ = max(maximum, 1e-9)
        edges = [top_ * i / n for i in range(n + 1)]
    counts = [0] * (len(edges) - 1)
    for v in values:
        for b in range(len(counts)):
            last = b == len(counts) - 1
            if edges[b] <= v < edges[b + 1] or (last and v == edges[-1]):
                counts[b] += 1
                break
    left, right, top, bottom = 46, 12, 26, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    lo, hi = -0.5, maximum + 0.5
    sx = lambda x: left + (x - lo) / (hi - lo) * plot_w          # noqa: E731
    peak = max(counts, default=0) or 1
    step = max(1, math.ceil(peak / 5))
    y_top = step * math.ceil(peak / step)
    sy = lambda c: top + plot_h - c / y_top * plot_h            # noqa: E731
    label = f"{title}: distribution of {xlabel} over {len(values)} students"
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="histogram" role="img" '
           f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           f'aria-label="{escape(label, {chr(34): "&quot;"})}" {FONT}>',
           f"<title>{escape(label)}</title>",
           '<rect width="100%" height="100%" fill="#fff"/>',
           _text(left + plot_w / 2, 12, title, 12)]
    for c in range(0, y_top + 1, step):
        y = sy(c)
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" '
                   'stroke="#eee"/>')
        out.append(_text(left - 6, y, str(c), 9, anchor="end", fill="#444"))
    for b, n in enumerate(counts):
        if n:
            x0, x1 = sx(edges[b]), sx(edges[b + 1])
            out.append(f'<rect x="{x0:.1f}" y="{sy(n):.1f}" width="{max(x1 - x0 - 1, 1):.1f}" '
                       f'height="{plot_h + top - sy(n):.1f}" fill="#4a7bd0"><title>{n} '
                       f'student{"s" if n != 1 else ""}</title></rect>')
    out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" '
               f'y2="{top + plot_h}" stroke="#666"/>')
    ticks = _ticks(maximum)
    for t in ticks:
        out.append(_text(sx(t), top + plot_h + 10, f"{t:g}", 9, fill="#444"))
    out.append(_text(left + plot_w / 2, height - 10, xlabel, 10, fill="#333"))
    cy = top + plot_h / 2
    out.append(_text(12, cy, "students", 10, fill="#333",
                     extra=f' transform="rotate(-90 12 {cy:.1f})"'))
    out.append("</svg>")
    return "".join(out)


def _ticks(maximum: float) -> list[float]:
    """About six round ticks from 0 to `maximum`."""
    if maximum <= 0:
        return [0.0]
    raw = maximum / 6
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return [i * step for i in range(int(maximum // step) + 1)]
