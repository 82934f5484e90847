# SPDX-License-Identifier: Apache-2.0
"""Structured chart data from a matplotlib figure, in the shape of E2B's e2b_charts extractor
(docs/e2b-wire.md §4.1): {type, title, elements, ...} for line, scatter, bar, pie,
box_and_whisker, superchart (several axes) and unknown."""
import re
from datetime import date
from decimal import Decimal, localcontext

import matplotlib
import matplotlib.dates
import numpy
from matplotlib.collections import PathCollection
from matplotlib.lines import Line2D
from matplotlib.patches import PathPatch, Rectangle, Wedge
from matplotlib.text import Text

_UNIT = re.compile(r"\s\((.*?)\)|\[(.*?)\]")


def dynamic_round(number):
    d = Decimal(str(number))
    with localcontext() as ctx:
        ctx.prec = max(1, 8 - d.adjusted())
        return float(+d)


def is_grid_line(line):
    x, y = line.get_xdata(), line.get_ydata()
    if len(x) != 2 or len(y) != 2:
        return False
    return bool(x[0] == x[1] or y[0] == y[1])


def chart_type(ax):
    objs = [o for o in ax._children if not isinstance(o, Text)]
    if all(isinstance(o, Line2D) for o in objs):
        return "line"
    if all(isinstance(o, (PathPatch, Line2D)) for o in objs):
        return "box_and_whisker"
    objs = [o for o in objs if not (isinstance(o, Line2D) and is_grid_line(o))]
    if all(isinstance(o, PathCollection) for o in objs):
        return "scatter"
    if all(isinstance(o, Wedge) for o in objs):
        return "pie"
    if all(isinstance(o, Rectangle) for o in objs):
        return "bar"
    return "unknown"


def _base(ax, kind):
    return {"type": kind, "title": ax.get_title() or None, "elements": []}


def _labels(chart, ax):
    for axis, label in (("x", ax.get_xlabel()), ("y", ax.get_ylabel())):
        label = label or None
        chart[axis + "_label"] = label
        unit = None
        if label:
            m = _UNIT.search(label)
            if m:
                unit = m.group(1) or m.group(2)
        chart[axis + "_unit"] = unit


def _swap_axes(chart):
    for a, b in (("x_label", "y_label"), ("x_unit", "y_unit")):
        chart[a], chart[b] = chart[b], chart[a]


def _is_date(converter):
    return isinstance(converter, matplotlib.dates._SwitchableDateConverter)


def _ticks(converter, ticks):
    if _is_date(converter):
        return [matplotlib.dates.num2date(t).isoformat() for t in ticks]
    if len(ticks) and isinstance(ticks[0], (int, float)):
        return [float(t) for t in ticks]
    return list(ticks)


def _scale(converter, scale, ticks, labels):
    if _is_date(converter):
        return "datetime"
    if scale != "linear":
        return scale
    for i, (tick, label) in enumerate(zip(ticks, labels)):
        if isinstance(tick, (int, float)) and tick == i and str(i) != label:
            continue
        return "linear"
    return "categorical"


def _point(v):
    if isinstance(v, date):
        return v.isoformat()
    if isinstance(v, numpy.datetime64):
        return str(v.astype("datetime64[s]"))
    if isinstance(v, numpy.generic):
        v = v.item()
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return v


def _point_chart(ax, kind):
    chart = _base(ax, kind)
    _labels(chart, ax)
    for axis in ("x", "y"):
        a = getattr(ax, axis + "axis")
        labels = [t.get_text() for t in getattr(ax, "get_%sticklabels" % axis)()]
        ticks = _ticks(a.converter, getattr(ax, "get_%sticks" % axis)())
        chart[axis + "_ticks"] = ticks
        chart[axis + "_tick_labels"] = labels
        chart[axis + "_scale"] = _scale(a.converter, getattr(ax, "get_%sscale" % axis)(), ticks, labels)
    return chart


def line_chart(ax):
    chart = _point_chart(ax, "line")
    for line in ax.get_lines():
        if is_grid_line(line):
            continue
        label = line.get_label()
        if label.startswith("_child"):
            label = "Line %d" % int(label[6:])
        points = [[_point(x), _point(y)] for x, y in zip(line.get_xdata(), line.get_ydata())]
        chart["elements"].append({"label": label, "points": points})
    return chart


def scatter_chart(ax):
    chart = _point_chart(ax, "scatter")
    for coll in ax.collections:
        points = [[_point(x), _point(y)] for x, y in coll.get_offsets()]
        chart["elements"].append({"label": coll.get_label(), "points": points})
    return chart


def bar_chart(ax):
    chart = _base(ax, "bar")
    _labels(chart, ax)
    for container in ax.containers:
        group = container.get_label()
        if group.startswith("_container"):
            group = "Group %d" % int(group[10:])
        heights = [r.get_height() for r in container]
        if all(h == heights[0] for h in heights):
            # Every bar equally high: horizontal bars (barh), values are widths.
            _swap_axes(chart)
            labels = [t.get_text() for t in ax.get_yticklabels()]
            values = [r.get_width() for r in container]
        else:
            labels = [t.get_text() for t in ax.get_xticklabels()]
            values = heights
        for label, value in zip(labels, values):
            chart["elements"].append({"label": label, "group": group, "value": float(value)})
    return chart


def pie_chart(ax):
    chart = _base(ax, "pie")
    for w in ax.patches:
        angle = abs(dynamic_round(Decimal(float(w.theta2)) - Decimal(float(w.theta1))))
        chart["elements"].append({"label": w.get_label(), "angle": angle, "radius": float(w.r)})
    return chart


def _boxes(ax):
    labels = [t.get_text() for t in ax.get_xticklabels()]
    boxes = []
    for label, patch in zip(labels, ax.patches):
        v = patch.get_path().vertices
        xs = [dynamic_round(x) for x in v[:, 0]]
        ys = [dynamic_round(y) for y in v[:, 1]]
        boxes.append({"x": min(xs), "y": min(ys), "label": label, "width": max(xs) - min(xs),
                      "height": max(ys) - min(ys), "outliers": []})
    return boxes


def _box_for(boxes, lo, hi):
    for box in boxes:
        if box["x"] <= lo <= hi <= box["x"] + box["width"]:
            return box
    return None


def box_chart(ax):
    chart = _base(ax, "box_and_whisker")
    _labels(chart, ax)
    boxes = _boxes(ax)
    vertical = bool(boxes) and all(b["height"] == boxes[0]["height"] for b in boxes)
    if vertical:
        _swap_axes(chart)
        for b in boxes:
            b["x"], b["y"], b["width"], b["height"] = b["y"], b["x"], b["height"], b["width"]
    for line in ax.lines:
        xs = [dynamic_round(x) for x in line.get_xdata()]
        ys = [dynamic_round(y) for y in line.get_ydata()]
        if vertical:
            xs, ys = ys, xs
        if len(xs) == 1:
            box = _box_for(boxes, xs[0], xs[0])
            if box is not None:
                box["outliers"].append(ys[0])
            continue
        if len(ys) != 2:
            continue
        box = _box_for(boxes, xs[0], xs[1])
        if box is None:
            continue
        if ys[0] == ys[1] and box["y"] <= ys[0] <= box["y"] + box["height"]:
            box["median"] = ys[0]
            continue
        lo, hi = min(ys), max(ys)
        if hi == box["y"]:
            box["whisker_lower"] = lo
        elif lo == box["y"] + box["height"]:
            box["whisker_upper"] = hi
    for b in boxes:
        chart["elements"].append({
            "label": b["label"], "min": b.get("whisker_lower"), "first_quartile": b["y"],
            "median": b.get("median"), "third_quartile": b["y"] + b["height"],
            "max": b.get("whisker_upper"), "outliers": b["outliers"]})
    return chart


BUILDERS = {"line": line_chart, "scatter": scatter_chart, "bar": bar_chart, "pie": pie_chart,
            "box_and_whisker": box_chart}


def axes_chart(ax):
    kind = chart_type(ax)
    builder = BUILDERS.get(kind)
    if builder is None:
        return _base(ax, kind)
    return builder(ax)


def figure_to_chart(fig):
    axes = fig.get_axes()
    if not axes or not any(ax.has_data() for ax in axes):
        return None
    if len(axes) > 1:
        title = fig._suptitle.get_text() if getattr(fig, "_suptitle", None) else None
        return {"type": "superchart", "title": title or None,
                "elements": [axes_chart(ax) for ax in axes]}
    return axes_chart(axes[0])
