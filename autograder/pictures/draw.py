"""Drawing a heatmap picture (`weights.picture_of`'s data) with matplotlib: the expected
values and the student's side by side, on one colour scale from 0 to 1, each row's sum
written at its end (a row of weights must sum to 1), values in the cells of small tables."""
from __future__ import annotations

import base64
import io

import numpy as np


def png(picture: dict) -> bytes:
    """The picture as PNG bytes (matplotlib's Agg canvas: no display, no pyplot state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    panels = [("expected", picture["expected"]), ("yours", picture["got"])]
    tables = [np.array([[np.nan if v is None else v for v in row] for row in t], dtype=float)
              for _, t in panels]
    n_rows, n_cols = tables[0].shape
    width = 2.2 + 2 * (1.0 + 0.5 * n_cols)
    height = 1.6 + 0.5 * n_rows
    fig = Figure(figsize=(max(width, 5.5), max(height, 2.4)), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2)
    image = None
    for ax, (label, _), table in zip(axes, panels, tables):
        masked = np.ma.masked_invalid(table)
        image = ax.imshow(masked, vmin=0.0, vmax=1.0, cmap="viridis", aspect="equal")
        ax.set_title(label, fontsize=10)
        ax.set_xlabel(picture["cols"], fontsize=8)
        if label == "expected":
            ax.set_ylabel(picture["rows"], fontsize=8)
        ax.set_xlim(-0.5, n_cols + 0.9)      # room for the row sums
        ax.set_xticks(range(n_cols))
        ax.set_yticks(range(n_rows))
        ax.tick_params(labelsize=7)
        if n_rows * n_cols <= 64:
            for (i, j), v in np.ndenumerate(table):
                text = "NaN" if not np.isfinite(v) else f"{v:.2f}"
                ax.text(j, i, text, ha="center", va="center", fontsize=7,
                        color="black" if np.isfinite(v) and v > 0.6 else "white")
        for i, row in enumerate(table):
            total = np.sum(row)
            ax.text(n_cols - 0.45, i, f"Σ {total:.2f}" if np.isfinite(total) else "Σ NaN",
                    ha="left", va="center", fontsize=7,
                    color="#1e6b34" if np.isfinite(total) and abs(total - 1) < 1e-3
                    else "#b00020")
    fig.suptitle(picture["title"] + (" (first rows and columns)" if picture.get("cropped")
                                     else ""), fontsize=10)
    if image is not None:
        fig.colorbar(image, ax=list(axes), shrink=0.8)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def data_uri(picture: dict) -> str:
    """The picture as a `data:` URI, for an <img> of a page that stands on its own."""
    return "data:image/png;base64," + base64.b64encode(png(picture)).decode("ascii")
