"""Static copies of the interactive views, so a saved notebook still shows each figure without a kernel.

A widget lives in the kernel: a notebook reopened later (saved from JupyterLab, executed by papermill,
or rendered on a web page) has no model for it and shows "Error displaying widget: model not found"
or the widget's text, `VBox(children=...)`. So every live view (`widgets.live_view`, notebook 08's
token view) also leaves, right under itself, a static copy: a PNG of the figure at its current setting
(or the view's HTML) and one line saying to run the cell to move the controls again (`HINT`).

While the widget is alive its copy stays hidden (a CSS rule shipped with the copy hides a copy that
follows a rendered widget, and a broken widget output that precedes a copy), so a running notebook
shows each figure once. The PNG is drawn by `plotly_to_png` with matplotlib from the plotly figure
itself (Scatter, Bar and Heatmap traces, reference lines, annotations, subplot titles: everything the views
draw), so it shows the very numbers of the live figure, with no browser engine such as kaleido.

Every picture of a figure says in words what it shows (`figure_description`: its title, each panel's
title and axes, the names of its lines): the copy's `<img alt=...>`, and the text form of each matplotlib
figure a notebook shows (`panels.matplotlib_drawing.DescribedFigure`, whose text the course book makes
the image's alt text), read from the figure itself, so a reader who cannot see the picture still learns
what it is about.
"""

from __future__ import annotations

import base64
import html
import io
import re
from typing import Dict, List, Optional

from matplotlib.figure import Figure

__all__ = [
    "HINT",
    "WIDGET_TEXT",
    "STATIC_CLASS",
    "plain_text",
    "plotly_to_png",
    "static_bundle",
    "figure_description",
]

#: The line above every static copy.
HINT = "Static copy of the figure at its last setting: run this cell to move the controls again."
#: What the widget's own output says where widgets cannot be drawn (instead of `VBox(children=...)`).
WIDGET_TEXT = (
    "[interactive controls: they need a running kernel - run this cell to use them; a static copy follows]"
)
STATIC_CLASS = "tl-static-copy"

# Hide a copy whose widget is alive, and a broken widget output ("model not found") that has a copy: only
# the output itself (`>`), never the outputs inside a live widget's own Output area.
_STYLE = (
    f"<style>.jp-OutputArea-child:has(.widget-vbox) + .jp-OutputArea-child .{STATIC_CLASS}"
    "{display:none}"
    f".jp-OutputArea-child:has(+ .jp-OutputArea-child .{STATIC_CLASS}) "
    "> .jp-OutputArea-output:not(:has(.widget-vbox)){display:none}"
    # any other widget output left as bare text ("Error displaying widget: model not found"): a
    # progress bar of an earlier run, which has nothing to show once its kernel is gone
    ".jp-OutputArea-output.jupyter-widgets:not(:has(*)){display:none}</style>"
)

_TAG = re.compile(r"<[^>]+>")


def plain_text(text: Optional[str]) -> str:
    """A plotly title or label as plain text: `<br>` as a new line, other tags dropped."""
    if not text:
        return ""
    return html.unescape(_TAG.sub("", re.sub(r"<br\s*/?>", "\n", str(text))))


#: How many line or bar names a description lists before it says how many more there are.
DESCRIBED_NAMES = 8


def _one_line(text) -> str:
    return " ".join(plain_text(text).split())


def _panel_words(title: str, x_label: str, y_label: str, names: List[str]) -> str:
    axes = (
        f"{y_label} against {x_label}"
        if x_label and y_label
        else y_label or (f"along {x_label}" if x_label else "")
    )
    words = "; ".join(part for part in (title, axes) if part)
    if names:
        listed = ", ".join(names[:DESCRIBED_NAMES])
        more = len(names) - DESCRIBED_NAMES
        words += ("; " if words else "") + "showing " + listed + (f" and {more} more" if more > 0 else "")
    return words


def _description(title: str, panels: List[str]) -> str:
    panels = [panel for panel in panels if panel]
    if len(panels) > 1:
        body = " ".join(f"Panel {k}: {panel}." for k, panel in enumerate(panels, 1))
    else:
        body = f"{panels[0]}." if panels else ""
    title = title.rstrip(".")
    if title and body:
        return f"Figure: {title}. {body}"
    return f"Figure: {title or body.rstrip('.')}."


def _plotly_description(fig) -> str:
    layout = fig.layout
    by_axis: Dict[str, List[str]] = {}
    for trace in fig.data:
        names = by_axis.setdefault(_axis_name(getattr(trace, "xaxis", None) or "x", "x"), [])
        name = _one_line(trace.name)
        if name and trace.showlegend is not False and name not in names:
            names.append(name)
    subplot_titles = [
        _one_line(note.text)
        for note in layout.annotations or ()
        if str(note.xref) == "paper" and str(note.yref) == "paper" and note.text
    ]
    axes = sorted(
        by_axis or {"xaxis": []}, key=lambda name: layout[name].domain[0] if layout[name].domain else 0
    )
    panels = []
    for k, name in enumerate(axes):
        titled = subplot_titles[k] if len(subplot_titles) == len(axes) else ""
        panels.append(
            _panel_words(
                titled,
                _one_line(layout[name].title.text),
                _one_line(layout["y" + name[1:]].title.text),
                by_axis.get(name, []),
            )
        )
    return _description(_one_line(layout.title.text), panels)


def _matplotlib_description(fig) -> str:
    suptitle = getattr(fig, "_suptitle", None)
    panels = []
    for ax in fig.axes:
        if ax.get_label() == "<colorbar>":
            continue
        names = [
            _one_line(label)
            for label in ax.get_legend_handles_labels()[1]
            if label and not label.startswith("_")
        ]
        panels.append(
            _panel_words(
                _one_line(ax.get_title()), _one_line(ax.get_xlabel()), _one_line(ax.get_ylabel()), names
            )
        )
    if len(fig.axes) and not any(names for names in panels) and fig.legends:
        panels.append(_panel_words("", "", "", [_one_line(t.get_text()) for t in fig.legends[0].get_texts()]))
    return _description(_one_line(suptitle.get_text()) if suptitle is not None else "", panels)


def figure_description(fig) -> str:
    """What a figure shows, in words, for a reader who cannot see it (an image's alt text): "Figure:
    <title>. <y label> against <x label>; showing <line names>.", with "Panel k:" before each panel of a
    figure of several. Read from the figure itself: a plotly figure's title, axis titles, subplot titles
    and trace names, or a matplotlib figure's suptitle, axes titles and labels and legend entries."""
    if hasattr(fig, "layout") and hasattr(fig, "data"):
        return _plotly_description(fig)
    if isinstance(fig, Figure):
        return _matplotlib_description(fig)
    raise TypeError(f"figure_description takes a plotly or matplotlib figure, not {type(fig).__name__}")


def _axis_name(ref: str, letter: str) -> str:
    """'x2' -> 'xaxis2', 'x' -> 'xaxis', 'x2 domain' -> 'xaxis2'."""
    ref = (ref or letter).split()[0]
    return f"{letter}axis{ref[1:]}"


def _floats(values) -> List[float]:
    return [float("nan") if v is None else float(v) for v in values]


def _heatmap(ax, trace, *, reversed_rows: bool) -> None:
    """A plotly Heatmap (rows `y`, columns `x`, cells `text`) drawn with `imshow`, first row on top."""
    z = [[float("nan") if v is None else float(v) for v in row] for row in trace.z]
    image = ax.imshow(
        z,
        cmap="Blues",
        vmin=trace.zmin,
        vmax=trace.zmax,
        aspect="auto",
        origin="upper" if reversed_rows else "lower",
    )
    ax.figure.colorbar(image, ax=ax, fraction=0.04)
    if trace.x is not None:
        ax.set_xticks(range(len(trace.x)))
        ax.set_xticklabels([plain_text(x) for x in trace.x], rotation=45, ha="right", fontsize=7)
    if trace.y is not None:
        ax.set_yticks(range(len(trace.y)))
        ax.set_yticklabels([plain_text(y) for y in trace.y], fontsize=6)
    for i, row in enumerate(trace.text or ()):
        for j, text in enumerate(row):
            if text:
                ax.text(j, i, text, ha="center", va="center", fontsize=6)


def plotly_to_png(fig, *, width: float = 8.0, dpi: int = 80) -> bytes:
    """A PNG of a plotly figure of Scatter, Bar and Heatmap traces in one row of subplots, drawn with
    matplotlib."""
    layout = fig.layout
    x_axes = sorted(
        {_axis_name(getattr(t, "xaxis", None) or "x", "x") for t in fig.data} or {"xaxis"},
        key=lambda name: layout[name].domain[0] if layout[name].domain else 0.0,
    )
    height = (layout.height or 480) / 100 * 0.9
    # a bare Figure, not pyplot: the copy may be drawn from a timer thread while a cell draws with pyplot
    figure = Figure(figsize=(width, height))
    axes = figure.subplots(1, len(x_axes), squeeze=False)
    where = {name: ax for name, ax in zip(x_axes, axes[0])}
    categories: Dict[str, List[str]] = {}
    handles: Dict[str, object] = {}
    bars = {
        name: [t for t in fig.data if t.type == "bar" and _axis_name(t.xaxis, "x") == name] for name in x_axes
    }
    for trace in fig.data:
        name = _axis_name(getattr(trace, "xaxis", None) or "x", "x")
        ax = where[name]
        if trace.type == "heatmap":
            _heatmap(ax, trace, reversed_rows=layout["y" + name[1:]].autorange == "reversed")
            continue
        xs = list(trace.x) if trace.x is not None else []
        if any(isinstance(x, str) for x in xs):
            known = categories.setdefault(name, [])
            known.extend(x for x in xs if x not in known)
            xs = [known.index(x) for x in xs]
        xs, ys = _floats(xs), _floats(trace.y if trace.y is not None else [])
        label = plain_text(trace.name) or None
        if trace.type == "bar":
            group = bars[name]
            k, bar_width = group.index(trace), 0.8 / len(group)
            color = trace.marker.color if isinstance(trace.marker.color, str) else None
            handle = ax.bar(
                [x + (k - (len(group) - 1) / 2) * bar_width for x in xs],
                ys,
                width=bar_width,
                color=color,
                label=label,
            )
        else:
            mode = trace.mode or "lines"
            line_color = trace.line.color or (
                trace.marker.color if isinstance(trace.marker.color, str) else None
            )
            style = dict(
                linestyle=(
                    "--"
                    if trace.line.dash in ("dash", "dashdot")
                    else ":"
                    if trace.line.dash == "dot"
                    else "-"
                )
                if "lines" in mode
                else "none",
                marker="o" if "markers" in mode else None,
                markersize=max(2.0, (trace.marker.size or 6) / 2),
                linewidth=trace.line.width or 1.5,
            )
            (handle,) = ax.plot(xs, ys, color=line_color, label=label, **style)
            if "text" in mode and trace.text is not None:
                for x, y, text in zip(xs, ys, trace.text):
                    ax.annotate(
                        plain_text(text), (x, y), textcoords="offset points", xytext=(3, 3), fontsize=7
                    )
        if label and trace.showlegend is not False and label not in handles:
            handles[label] = handle
    for name, ax in where.items():
        axis, yaxis = layout[name], layout["y" + name[1:]]
        if name in categories:
            ax.set_xticks(range(len(categories[name])))
            ax.set_xticklabels(categories[name], rotation=45, ha="right", fontsize=7)
        if axis.type == "log":
            ax.set_xscale("log")
        if yaxis.type == "log":
            ax.set_yscale("log")
        if yaxis.range is not None:
            ax.set_ylim(*yaxis.range)
        ax.set_xlabel(plain_text(axis.title.text), fontsize=8)
        ax.set_ylabel(plain_text(yaxis.title.text), fontsize=8)
        ax.tick_params(labelsize=7)
    for shape in layout.shapes or ():
        ax = (
            where.get(_axis_name(shape.xref or "x", "x")) if not str(shape.xref).startswith("paper") else None
        )
        ax = ax if ax is not None else where.get("x" + _axis_name(shape.yref or "y", "y")[1:], axes[0][0])
        if shape.x0 == shape.x1 and str(shape.yref).endswith("domain"):
            ax.axvline(float(shape.x0), color="grey", linestyle=":", linewidth=1)
        elif shape.y0 == shape.y1 and str(shape.xref).endswith("domain"):
            ax.axhline(float(shape.y0), color="grey", linestyle="--", linewidth=1)
    for note in layout.annotations or ():
        text = plain_text(note.text)
        if str(note.xref) == "paper" and str(note.yref) == "paper":  # a subplot's title
            figure.text(float(note.x), min(float(note.y), 0.98), text, ha="center", va="bottom", fontsize=8)
            continue
        ax = where.get(_axis_name(note.xref, "x"), axes[0][0])
        y_in_axes = str(note.yref).endswith("domain")
        ax.annotate(
            text,
            (float(note.x), float(note.y)),
            xycoords=("data", "axes fraction") if y_in_axes else "data",
            fontsize=7,
            color="dimgrey",
        )
    title = plain_text(layout.title.text)
    if title:
        figure.suptitle(title, fontsize=9)
    if handles:
        axes[0][-1].legend(
            list(handles.values()),
            list(handles),
            fontsize=6,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            frameon=False,
        )
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def static_bundle(
    *, png: Optional[bytes] = None, html_body: Optional[str] = None, text: str = "", alt: str = ""
) -> dict:
    """The display bundle of a static copy: the hint, then a PNG (`png`, described by `alt`: its
    `figure_description`) or the view's HTML (`html_body`), then `text` (a read-out); `text/plain` for
    places that draw no HTML."""
    if (png is None) == (html_body is None):
        raise ValueError("static_bundle needs exactly one of png= (a figure) or html_body= (an HTML view).")
    if png is not None and not alt.strip():
        raise ValueError("static_bundle(png=...) needs alt=, what the figure shows: figure_description(fig).")
    body = (
        f'<img alt="{html.escape(alt, quote=True)}" '
        f'src="data:image/png;base64,{base64.b64encode(png).decode()}">'
        if png is not None
        else html_body
    )
    readout = f"<pre>{html.escape(text)}</pre>" if text else ""
    content = (
        f'{_STYLE}<div class="{STATIC_CLASS}"><p style="font-style:italic;color:#555;margin:2px 0">'
        f"{html.escape(HINT)}</p>{body}{readout}</div>"
    )
    bundle = {"text/html": content, "text/plain": HINT + (f"\n{text}" if text else "")}
    if png is not None:
        bundle["image/png"] = base64.b64encode(png).decode()
    return bundle
