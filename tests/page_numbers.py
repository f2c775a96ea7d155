"""Read a rendered nightly page in the browser and list the numbers on it that cannot be right.

``READ_PAGE`` (JavaScript, run through ``cdp_client.Chromium.evaluate``) returns what a reader
sees: the answer sentences, the cards, every table (title, column kinds, cell texts) and the
page's text. ``page_problems`` checks it:

- no NaN / Infinity / undefined anywhere in the text;
- every "x %" in the text is a share within 0–100 % (the test clusters never use more than
  their allocatable, so a larger share is a bug there too);
- count cells (int columns) and count cards are whole, non-negative numbers written as integers
  ("2,762", never "2,762.0");
- a breach lasts between 0 and 24 h (the report covers one day), and the node-time over
  threshold is at most nodes × 24 h;
- the headroom sentence names its instant, agrees with the headroom table, and does not read
  "0 more pods" while the fragmentation table shows free CPU the common shapes can use then;
- each sentence's figures match the table or cards beside it (free capacity per resource, the
  nodes over threshold, the data coverage);
- headroom per pod shape: the sentence's copies and shape are the table's first row, no shape
  has more copies at its tightest hour than now, the tightest hour lies in the day, and no
  reason counts more refused nodes than the nodes card.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any

READ_PAGE = """(() => {
  const text = e => (e ? e.textContent.replace(/\\s+/g, ' ').trim() : null);
  const tables = {};
  document.querySelectorAll('table[data-table]').forEach(t => {
    const heads = [...t.tHead.rows[0].cells];
    tables[t.dataset.table] = {
      title: text(document.getElementById('t-' + t.dataset.table)),
      keys: heads.map(h => h.dataset.key),
      kinds: heads.map(h => h.dataset.kind),
      rows: [...t.tBodies[0].rows].map(r => [...r.cells].map(text)),
    };
  });
  const answers = {};
  document.querySelectorAll('[data-answer]').forEach(a => { answers[a.dataset.answer] = text(a); });
  const cards = {};
  document.querySelectorAll('[data-card]').forEach(c => { cards[c.dataset.card] = text(c.querySelector('.value')); });
  const day = (document.title.match(/\\d{4}-\\d\\d-\\d\\d/) || [''])[0];
  return {answers, cards, tables, day, body: document.body.innerText};
})()"""

NAMES = {"cpu": "CPU", "memory": "memory"}
COUNT = re.compile(r"\d{1,3}(,\d{3})*")
COUNT_CARDS = ("nodes", "pods", "breaches", "nodes_with_breaches")


DAY_SECONDS = 86400
UNIT_SECONDS = {"d": 86400, "h": 3600, "min": 60, "s": 1}


def duration_seconds(text: str) -> float:
    """ "2 h 14 min" → 8040; "−20 min" → −1200."""
    sign = -1 if text.startswith(("−", "-")) else 1
    words = text.lstrip("−-").replace(",", "").split()
    pairs = zip(words[::2], words[1::2], strict=True)
    return sign * float(sum(float(n) * UNIT_SECONDS[u] for n, u in pairs))


def _number(text: str) -> float:
    return float(text.replace(",", "").replace("−", "-"))


def _column(table: dict[str, Any], key: str) -> list[str]:
    index = table["keys"].index(key)
    return [row[index] for row in table["rows"]]


def page_problems(page: dict[str, Any]) -> list[str]:
    """Everything on the page that cannot be right (empty when the page is sound)."""
    problems: list[str] = []
    body: str = page["body"]
    for bad in re.findall(r"\b(NaN|nan|Infinity|undefined)\b", body):
        problems.append(f"{bad} on the page")
    for value in re.findall(r"(−?-?[\d,]*\.?\d+) %", body):
        if not 0 <= _number(value) <= 100:
            problems.append(f"share {value} % outside 0–100 %")
    for name, table in page["tables"].items():
        for i, kind in enumerate(table["kinds"]):
            for row in table["rows"]:
                cell = row[i]
                if kind == "int" and cell != "–" and not COUNT.fullmatch(cell):
                    problems.append(f"{name}.{table['keys'][i]}: count written as {cell!r}")
                if kind == "pct" and cell != "–" and not 0 <= _number(cell.rstrip(" %")) <= 100:
                    problems.append(f"{name}.{table['keys'][i]}: share {cell!r}")
    for name in ("breaches", "breach_nodes", "nodes"):
        table = page["tables"].get(name)
        for i, kind in enumerate(table["kinds"] if table else []):
            for row in table["rows"] if kind == "duration" else []:
                seconds = duration_seconds(row[i])
                if not 0 <= seconds <= DAY_SECONDS:
                    problems.append(f"{name}.{table['keys'][i]}: {row[i]!r} outside one day")
    node_time = page["cards"].get("breach_node_seconds")
    nodes = page["cards"].get("nodes")
    if node_time and nodes and COUNT.fullmatch(nodes):
        limit = _number(nodes) * DAY_SECONDS
        if not 0 <= duration_seconds(node_time) <= limit:
            problems.append(f"node-time {node_time!r} outside 0 … {nodes} nodes × 24 h")
    for key in COUNT_CARDS:
        shown = page["cards"].get(key)
        if shown is not None and not COUNT.fullmatch(shown):
            problems.append(f"card {key}: count written as {shown!r}")
    problems += _headroom_problems(page)
    problems += _sentence_problems(page)
    problems += shape_headroom_problems(page)
    return problems


def shape_headroom_problems(page: dict[str, Any]) -> list[str]:
    """The headroom-per-shape table and sentence (``report/headroom_view.py``)."""
    table = page["tables"].get("shape_headroom")
    answer = page["answers"].get("shape-headroom", "")
    if table is None:
        return [] if "not counted" in answer else [f"no headroom-per-shape table for {answer!r}"]
    problems = []
    rows = [dict(zip(table["keys"], row, strict=True)) for row in table["rows"]]
    first = rows[0]
    one = first["copies_now"] == "1"
    said = f"{first['copies_now']} more {'copy' if one else 'copies'} of {first['shape']} " + (
        "fits" if one else "fit"
    )
    if said not in answer:
        problems.append(f"shape headroom sentence lacks {said!r}")
    nodes = page["cards"].get("nodes")
    # the day's points run from 01:00 to 24:00 (the next day's 00:00)
    day = date.fromisoformat(page["day"])
    days = (day.isoformat(), (day + timedelta(days=1)).isoformat())
    for row in rows:
        whole = COUNT.fullmatch(row["copies_now"]) and COUNT.fullmatch(row["copies_min"])
        if whole and _number(row["copies_min"]) > _number(row["copies_now"]):
            problems.append(f"{row['shape']}: {row['copies_min']} at the tightest hour > now")
        inside = row["min_at"][:10] == days[0] and row["min_at"] != f"{days[0]} 00:00"
        if not (inside or row["min_at"] == f"{days[1]} 00:00"):
            problems.append(f"{row['shape']}: tightest hour {row['min_at']} outside the day")
        for reason in (row["reason_now"], row["reason_min"]):
            for count in re.findall(r"\((\d[\d,]*)\)", reason):
                if nodes and COUNT.fullmatch(nodes) and _number(count) > _number(nodes):
                    problems.append(f"{row['shape']}: {count} refused nodes > {nodes} nodes")
    return problems


def _headroom_problems(page: dict[str, Any]) -> list[str]:
    """The headroom of the first screen's answer and of the section's full one (when the page
    has both) against the headroom table."""
    answers = page["answers"]
    problems = []
    for key in ("fragmentation", "fragmentation-detail"):
        if key in answers:
            problems += _one_headroom(page, answers[key])
    return problems


def _one_headroom(page: dict[str, Any], answer: str) -> list[str]:
    # "Headroom at 24:00 UTC (end of the day): 5 more pods" or, short, "Headroom at 24:00 UTC: 5"
    match = re.search(r"Headroom at (\d\d:\d\d) UTC(?: \([^)]*\))?: ([\d,]+) more pods", answer)
    if match is None:
        return [] if "Headroom: no" in answer else [f"no headroom instant in {answer!r}"]
    at, fit = match.group(1), int(match.group(2).replace(",", ""))
    problems = []
    head = page["tables"]["headroom"]
    if at not in head["title"]:
        problems.append(f"headroom table title {head['title']!r} does not name {at}")
    if _column(head, "fit")[0].replace(",", "") != str(fit):
        problems.append(f"headroom sentence {fit} ≠ table {_column(head, 'fit')[0]}")
    if fit == 0:
        # 0 more pods is possible only if nothing is free or the free CPU is all unusable then.
        frag = page["tables"]["fragmentation"]
        hh = "00:00" if at == "24:00" else at
        for row in frag["rows"]:
            cells = dict(zip(frag["keys"], row, strict=True))
            usable = _number(cells["free"]) > 0 and cells["frag_pct"] != "100.0 %"
            if cells["time"].endswith(hh) and cells["resource"] == "cpu" and usable:
                problems.append(f"0 more pods at {at} with {cells['free']} cores free")
    return problems


def _sentence_problems(page: dict[str, Any]) -> list[str]:
    problems = []
    answers, cards = page["answers"], page["cards"]
    free = page["tables"].get("free_capacity")
    if free is not None:
        for row in free["rows"]:
            cells = dict(zip(free["keys"], row, strict=True))
            name = NAMES.get(cells["resource"], cells["resource"])
            expected = f"{name} {cells['frag_pct']} of {cells['free']} {cells['unit']} free"
            # the section's full answer names every resource; the first screen's short one
            # CPU and memory with the table's figures, and every other resource at least by name
            full = answers.get("fragmentation-detail", answers["fragmentation"])
            if expected not in full:
                problems.append(f"fragmentation sentence lacks {expected!r}")
            short = answers["fragmentation"]
            if cells["resource"] in ("cpu", "memory") and expected not in short:
                problems.append(f"fragmentation sentence lacks {expected!r} (first screen)")
            if name not in short:
                problems.append(f"short fragmentation answer does not name {name!r}")
            if cells["stranded"] != "–":
                stranded = f"{cells['stranded']} {cells['unit']} of {name}"
                if stranded not in full:
                    problems.append(f"fragmentation sentence lacks {stranded!r}")
    hot = re.match(r"([\d,]+) of ([\d,]+) nodes went over", answers.get("hot", ""))
    if hot is not None:
        if hot.group(1) != cards["nodes_with_breaches"] or hot.group(2) != cards["nodes"]:
            problems.append(f"hot sentence {hot.group(0)!r} ≠ cards {cards}")
        over = page["tables"].get("breach_nodes")
        if over is not None and len(over["rows"]) != int(hot.group(1).replace(",", "")):
            problems.append("hot sentence ≠ rows of the nodes-over-threshold table")
    coverage = re.search(r": ([\d.]+ %) of the expected", answers.get("data", ""))
    if coverage is None or coverage.group(1) != cards["coverage_pct"]:
        problems.append(f"data sentence ≠ coverage card {cards.get('coverage_pct')!r}")
    return problems
