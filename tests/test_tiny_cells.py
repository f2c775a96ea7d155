"""A table cell for a positive amount too small for its digits says so ("< 0.1"), where the
column asks for it; the CSV and JSON keep the value, the sort key too."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from analyzer.report.views import Column, TableView


def _texts(values: list[float], tiny: bool) -> list[tuple[str, str]]:
    table = TableView(
        "t", "T", [Column("h", "Node-hours", "num", 1, tiny=tiny)], pd.DataFrame({"h": values})
    )
    return [(cell.text, cell.sort) for _, (cell,) in table.rows()]


def test_a_positive_amount_under_half_a_tenth_reads_less_than_a_tenth() -> None:
    # 10 s of a node is 0.0028 node-hours: one decimal would show 0.0, as for none at all
    values = [0.0, 10 / 3600, 0.049, 0.05, 1.26]
    assert [t for t, _ in _texts(values, tiny=True)] == ["0.0", "< 0.1", "< 0.1", "0.1", "1.3"]
    # the sort key is the value itself, so "< 0.1" sorts between 0 and 0.1
    assert [float(s) for _, s in _texts(values, tiny=True)] == values
    # a column that does not ask keeps the page's one convention (0.0)
    assert [t for t, _ in _texts(values, tiny=False)][:3] == ["0.0", "0.0", "0.0"]


def test_the_why_nodes_stayed_column_asks_for_it() -> None:
    from analyzer.report.whatif_autoscaled import reasons_table

    outcome = SimpleNamespace(
        strategy="kube-default", autoscaler="cluster-autoscaler", seed=0,
        reasons_node_hours={"NotUnderutilized": 12.5, "NoPlaceToMovePods": 10 / 3600},
    )  # fmt: skip
    result = SimpleNamespace(autoscaled=[outcome])

    table = reasons_table(result)  # type: ignore[arg-type]
    assert table is not None
    texts = [cells[3].text for _, cells in table.rows()]
    assert texts == ["12.5", "< 0.1"]
    assert table.csv_frame()["node_hours"].tolist() == [12.5, 10 / 3600]
