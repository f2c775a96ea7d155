"""Parse a Prometheus matrix response (``/query_range``, or ``/query`` of ``selector[span]``) from
its bytes into numpy-backed series, in two steps so the caller can drop the body in between.

``json.loads`` builds a Python list and two objects per sample (~150 bytes each). Here only the
labels go through ``json``. ``scan_matrix`` finds every series' ``[[t,"v"],...]`` text and copies
it, behind one ``[nan,0]`` sentinel row per series, into one buffer (the only copy of the
samples); ``MatrixText.series`` turns that buffer into CSV rows in place and parses it with
Arrow (in C, on every core). Memory while Arrow parses: that buffer and Arrow's columns, which
the series then view.

JSON cannot hold an unescaped ``"`` inside a string, so the markers searched for cannot occur
inside label values; timestamps are never NaN, so the sentinels are unambiguous.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

from analyzer.prom.series import LabelCache, LabelKey, Series

_PREFIX = b'{"status":"success","data":{"resultType":"matrix","result":['
_SERIES = b'{"metric":'
_VALUES = b',"values":['
_WARNINGS = b',"warnings":'
_SENTINEL = b"[nan,0]"  # a row before every series; its NaN timestamp marks where a series starts
# '[' → ',' and ']' → '⏎' turn [t,"v"],[t,"v"] into ,t,"v"⏎,,t,"v"⏎ (CSV unquotes "v"), in place.
_OPEN, _CLOSE, _COMMA, _NEWLINE = ord("["), ord("]"), ord(","), ord("\n")
_TRANSLATE_BLOCK = 1 << 16  # bytes: the masks of a block stay on the malloc heap
_CSV_READ = pa_csv.ReadOptions(column_names=["_", "__", "t", "v"], block_size=1 << 22)
_CSV_CONVERT = pa_csv.ConvertOptions(
    include_columns=["t", "v"],
    column_types={"t": pa.float64(), "v": pa.float64()},
    null_values=[],  # "NaN" is a value here, not a missing one
    strings_can_be_null=False,
)


@dataclass
class MatrixText:
    """A scanned matrix response: each series' labels, and all samples as one text buffer."""

    labels: list[dict[str, str]]
    keys: list[LabelKey]
    rows: bytearray  # ",[nan,0],[t,"v"],..." per series, joined; turned into CSV by ``series``
    warnings: list[str]
    seen: LabelCache  # this response's label JSON → (labels, key), for the next response

    def series(self) -> list[Series]:
        """The series, their arrays views of Arrow's columns (no copy per series, so thousands
        of small arrays do not fragment the heap; a column block goes back to the system when
        its last view goes). Consumes the text buffer; ValueError if Arrow cannot read it."""
        if not self.labels:
            return []
        rows, self.rows = self.rows, bytearray()
        _rows_in_place(rows)
        try:
            table = pa_csv.read_csv(  # Arrow reads the buffer itself, without copying it
                pa.BufferReader(pa.py_buffer(rows)),
                read_options=_CSV_READ,
                convert_options=_CSV_CONVERT,
            )
        except pa.ArrowInvalid as exc:  # Prometheus' values (NaN, +Inf, 1e-3, ...) all parse
            raise ValueError(str(exc).splitlines()[0]) from None
        blocks = [
            (
                b.column("t").to_numpy(zero_copy_only=False),
                b.column("v").to_numpy(zero_copy_only=False),
            )
            for b in table.to_batches()
        ]
        del table, rows  # the series view the column blocks
        return _split(blocks, self.labels, self.keys)


def scan_matrix(content: bytes, cache: LabelCache | None = None) -> MatrixText | None:
    """Find the series of a successful matrix response; None if its shape is unexpected.

    ``cache`` maps label JSON seen in an earlier response (the previous chunk of the same query:
    mostly the same series) to its parsed labels and key, so repeated series skip
    ``json.loads`` and the sort of their labels.
    """
    if not content.startswith(_PREFIX):
        return None
    labels_list: list[dict[str, str]] = []
    keys: list[LabelKey] = []
    seen: LabelCache = {}
    previous: LabelCache = cache if cache is not None else {}
    parts: list[bytes | memoryview] = []
    view = memoryview(content)  # slices of it are not copies
    pos = content.find(_SERIES)
    end = len(_PREFIX)
    while pos != -1:
        labels_end = content.find(_VALUES, pos)
        if labels_end == -1:
            return None
        text = content[pos + len(_SERIES) : labels_end]
        entry = previous.get(text)
        if entry is None:
            labels = json.loads(text)
            entry = (labels, tuple(sorted(labels.items())))
        seen[text] = entry
        labels_list.append(entry[0])
        keys.append(entry[1])
        parts.append(_SENTINEL)
        start = labels_end + len(_VALUES)
        if content[start : start + 1] == b"]":  # "values":[] (no samples)
            end = start
        else:
            stop = content.find(b"]]", start)
            if stop == -1:
                return None
            parts.append(view[start : stop + 1])
            end = stop
        pos = content.find(_SERIES, end)
    # a leading "," makes every line ",,t,v" (four columns, the first two empty)
    rows = bytearray(b",").join([b"", *parts]) if labels_list else bytearray()
    del parts
    view.release()
    warnings: list[str] = []
    marker = content.rfind(_WARNINGS, end)
    if marker != -1:
        found, _ = json.JSONDecoder().raw_decode(content[marker + len(_WARNINGS) :].decode())
        warnings = [str(w) for w in found]
    return MatrixText(labels_list, keys, rows, warnings, seen)


def parse_matrix_text(
    content: bytes, cache: LabelCache | None = None
) -> tuple[list[Series], list[str], LabelCache] | None:
    """Both steps at once, for a caller that keeps the body anyway: (series, warnings, this
    response's label cache); None if the shape is unexpected."""
    scanned = scan_matrix(content, cache)
    if scanned is None:
        return None
    return scanned.series(), scanned.warnings, scanned.seen


def _rows_in_place(text: bytearray) -> None:
    """Turn the joined ``[t,"v"]`` pairs into CSV rows in place ('[' → ',', ']' → newline).

    ``bytes.translate`` would allocate a second copy of the text; a block at a time the masks
    are small and the text's pages are already there.
    """
    data = np.frombuffer(text, dtype=np.uint8)
    for lo in range(0, len(data), _TRANSLATE_BLOCK):
        block = data[lo : lo + _TRANSLATE_BLOCK]
        np.putmask(block, block == _OPEN, _COMMA)
        np.putmask(block, block == _CLOSE, _NEWLINE)


def _split(
    blocks: list[tuple[np.ndarray, np.ndarray]],
    labels: list[dict[str, str]],
    keys: list[LabelKey],
) -> list[Series]:
    """Cut the column blocks at the sentinel rows into one series each (a view where a series
    lies within one block, a joined copy where it crosses a block boundary)."""
    sizes = np.array([len(t) for t, _ in blocks], dtype=np.int64)
    offsets = np.r_[0, np.cumsum(sizes)]
    found = [np.flatnonzero(np.isnan(t)) + offsets[b] for b, (t, _) in enumerate(blocks)]
    starts = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
    if len(starts) != len(labels):
        raise ValueError(f"{len(starts)} series markers for {len(labels)} series")
    los = starts + 1
    his = np.r_[starts[1:], offsets[-1]]
    first_block = np.searchsorted(offsets, los, side="right") - 1
    last_block = np.searchsorted(offsets, his - 1, side="right") - 1
    out = []
    for i in range(len(labels)):
        lo, hi = int(los[i]), int(his[i])
        if hi <= lo:  # "values":[]
            out.append(Series(labels[i], np.zeros(0), np.zeros(0), keys[i]))
            continue
        a, z = int(first_block[i]), int(last_block[i])
        pieces = [(blocks[b], lo - int(offsets[b]), hi - int(offsets[b])) for b in range(a, z + 1)]
        if a == z:
            (ts, vs), p, q = pieces[0]
            out.append(Series(labels[i], ts[p:q], vs[p:q], keys[i]))
        else:  # the rows cross a block boundary: clamp each block's share and join them
            ts = np.concatenate([t[max(p, 0) : q] for (t, _), p, q in pieces])
            vs = np.concatenate([v[max(p, 0) : q] for (_, v), p, q in pieces])
            out.append(Series(labels[i], ts, vs, keys[i]))
    return out
