"""Every chart label a name reaches is one printable line, and drawing it prints nothing.

A pool, node or workload name can hold a carriage return or another control character (no glyph:
matplotlib warns "Glyph 13 missing from font") or a script the bundled font lacks (CJK: one
warning per glyph). Both reach stderr, which cron mails, on every nightly run. pytest turns
warnings into errors here (pyproject's filterwarnings), so a warning fails these tests.
"""

from __future__ import annotations

import base64

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure

from analyzer.report.charts import encode_png

HOSTILE = ["pool\rone", "数据平台", "tab\there", "\x1b[31mred", "rtl\u202eevil", "é" * 50]


def _figure() -> Figure:
    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot()
    ax.bar(range(len(HOSTILE)), [1] * len(HOSTILE))
    ax.set_xticks(range(len(HOSTILE)), labels=HOSTILE)
    ax.set_title("pool\rname 数据")
    ax.legend(["line\u2028two"])
    return fig


def test_hostile_labels_draw_without_a_warning() -> None:
    uri = encode_png(_figure())
    assert base64.b64decode(uri.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"


def test_labels_are_one_printable_line_after_fitting() -> None:
    fig = _figure()
    encode_png(fig)
    ax = fig.axes[0]
    shown = [ax.title.get_text(), *(t.get_text() for t in ax.get_legend().get_texts())]
    shown += [ax.xaxis.get_major_formatter()(i, i) for i in range(len(HOSTILE))]
    assert all(text.isprintable() for text in shown), shown
    assert "pool\\rname 数据" in shown  # escaped, not dropped: the reader sees what is there
    assert all(len(text) <= 100 for text in shown)
