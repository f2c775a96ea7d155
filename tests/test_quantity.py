"""Kubernetes quantities become exact integers, rounding up like apimachinery's MilliValue/Value."""

from __future__ import annotations

import pytest

from analyzer.core.errors import InputError
from analyzer.core.quantity import (
    format_quantity,
    resource_value,
    sanitize_resource_name,
)


@pytest.mark.parametrize(
    ("resource", "text", "expected"),
    [
        ("cpu", "100m", 100),
        ("cpu", "0.1", 100),  # decimal cores are exact, not 99.99999
        ("cpu", "2", 2000),
        ("cpu", 4, 4000),
        ("cpu", "0.0001", 1),  # MilliValue rounds up: 0.1 milli -> 1
        ("cpu", "1500u", 2),  # 1.5 milli rounds up to 2
        ("memory", "1Gi", 2**30),
        ("memory", "1.5Gi", 1610612736),
        ("memory", "256Mi", 256 * 2**20),
        ("memory", "500M", 500_000_000),
        ("memory", "1k", 1000),
        ("memory", "1e3", 1000),
        ("memory", "1.5", 2),  # Value rounds up
        ("memory", "10000", 10000),
        ("nvidia.com/gpu", "8", 8),
        ("ephemeral-storage", "10Ei", 10 * 2**60),  # beyond float64's exact range, still exact
    ],
)
def test_resource_value_is_exact(resource: str, text: str | int, expected: int) -> None:
    assert resource_value(resource, text) == expected


@pytest.mark.parametrize("text", ["abc", "1.2.3", "5 Gi", "Gi", "", "1Gb"])
def test_bad_quantity_names_the_field(text: str) -> None:
    with pytest.raises(InputError, match=r"pods\[0\]\.cpu"):
        resource_value("cpu", text, field="pods[0].cpu")


def test_negative_quantity_is_refused() -> None:
    with pytest.raises(InputError, match="negative"):
        resource_value("memory", "-1Gi")


def test_format_round_trips() -> None:
    assert format_quantity("cpu", 1500) == "1500m"
    assert format_quantity("cpu", 2000) == "2"
    assert format_quantity("memory", 3 * 2**30) == "3Gi"
    assert resource_value("memory", format_quantity("memory", 123456789)) == 123456789


def test_sanitize_matches_kube_state_metrics() -> None:
    # research/prometheus.md §1.3: KSM replaces every char outside [a-zA-Z0-9_] with "_"
    assert sanitize_resource_name("nvidia.com/gpu") == "nvidia_com_gpu"
    assert sanitize_resource_name("ephemeral-storage") == "ephemeral_storage"
    assert sanitize_resource_name("hugepages-2Mi") == "hugepages_2Mi"
