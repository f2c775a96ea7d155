"""``--cluster-label``: the matcher added to every selector (``analyzer/prom/selectors.py``).

Facts checked: every metric of every bundled query is selected by the cluster (counted against
the metric names the expression holds), nothing else in the expression changes, and a hostile
value — quotes, backslashes, line breaks, ``}``, a regex — stays one value when a real Prometheus
parses it (it selects nothing instead of widening the selection or failing to parse).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
import requests
import small_cluster as sc
from hostile_names import LINE_BREAKS
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.core.errors import InputError
from analyzer.prom.profile import load_profile
from analyzer.prom.selectors import check_label, with_matcher

MATCHER = 'cluster="east"'
HOSTILE = [
    'east",cluster=~".*',
    'east"} or up{',
    "east\\",
    "e\"a\\s't",
    "}",
    "{{span}}",
    *LINE_BREAKS,
]


def _render(name: str) -> str:
    return load_profile()[name].render(step_seconds=60, span_seconds=3600)


@pytest.mark.parametrize("name", sorted(load_profile()))
def test_every_metric_of_every_bundled_query_is_selected(name: str) -> None:
    expr = _render(name)
    scoped = with_matcher(expr, "cluster", "east")
    metrics = re.findall(r"\b(?:kube|kubernetes|node|container|machine)_[a-zA-Z_]+\b", expr)
    assert metrics, expr
    # each metric occurrence now opens its matchers with the cluster, and nothing else was added
    assert scoped.count(MATCHER) == len(metrics), scoped
    for metric in metrics:
        assert f"{metric}{{{MATCHER}" in scoped
    assert scoped.replace(MATCHER + ",", "").replace("{" + MATCHER + "}", "") == expr


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("sum by (node) (x)", 'sum by (node) (x{cluster="east"})'),
        ("sum(x) without (a) > bool 0", 'sum(x{cluster="east"}) without (a) > bool 0'),
        ('{__name__=~"kube_.*"}', '{cluster="east",__name__=~"kube_.*"}'),
        ("a{} offset 5m", 'a{cluster="east"} offset 5m'),
        (
            "a * on(node) group_left(pool) b",
            'a{cluster="east"} * on(node) group_left(pool) b{cluster="east"}',
        ),
        (
            'label_replace(up, "dst", "$1", "src", "(.*)")',
            'label_replace(up{cluster="east"}, "dst", "$1", "src", "(.*)")',
        ),
        ("max_over_time(x[1h:5m]) - 1e3", 'max_over_time(x{cluster="east"}[1h:5m]) - 1e3'),
    ],
)
def test_what_is_and_is_not_a_selector(expr: str, expected: str) -> None:
    assert with_matcher(expr, "cluster", "east") == expected


@given(st.text(max_size=30))
@settings(max_examples=50, deadline=None)
def test_any_value_is_one_quoted_string(value: str) -> None:
    scoped = with_matcher("x", "cluster", value)
    assert scoped.startswith('x{cluster="') and scoped.endswith('"}')
    inner = scoped[len('x{cluster="') : -2]
    # no unescaped quote inside: the string cannot end early
    assert re.search(r'(?<!\\)(\\\\)*"', inner) is None, scoped


@pytest.mark.parametrize("label", ["", "1cluster", "__name__", "clu-ster", 'c"'])
def test_a_label_that_is_not_a_name_is_refused(label: str) -> None:
    with pytest.raises(InputError, match="--cluster-label"):
        check_label(label)


@pytest.mark.prometheus
def test_hostile_values_select_nothing_on_a_real_prometheus(
    small_prometheus: Callable[..., object],
) -> None:
    url = small_prometheus().url  # type: ignore[attr-defined]

    def count(expr: str) -> int:
        answer = requests.get(
            f"{url}/api/v1/query", params={"query": expr, "time": sc.END}, timeout=30
        )
        assert answer.status_code == 200, (expr, answer.text)
        return len(answer.json()["data"]["result"])

    assert count("kube_node_info") == 2
    # the small cluster carries no cluster label: the empty value selects it, any other nothing
    assert count(with_matcher("kube_node_info", "cluster", "")) == 2
    for value in HOSTILE:
        assert count(with_matcher("kube_node_info", "cluster", value)) == 0, value
