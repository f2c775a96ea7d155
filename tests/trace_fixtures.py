"""Hand-made results of ``analyzer trace alibaba-gpu`` (the single-trace JSON shape) for report tests.

The numbers are chosen by hand so a test can say which policy must come out best; the curve is a
few points consistent with the table (allocation = arrived until the plateau).
"""

from __future__ import annotations

from typing import Any

CURVE_XS = (0, 50, 90, 100, 110, 120, 130)


def fake_policy(alloc: tuple[float, float, float], first_failure: float | None) -> dict[str, Any]:
    """One policy: mean allocation at 100/110/130 % arrived and the first-failure arrived %."""
    at = dict(zip((100, 110, 130), alloc, strict=True))
    curve = [
        {
            "arrived_pct": x,
            "alloc_pct_mean": float(at.get(x, min(x, alloc[0]))),
            "alloc_pct_std": 0.5 if x >= 100 else 0.0,
            "frag_ratio_mean": 14.0 + 0.6 * x,
            "frag_amount_mean": 10.0,
        }
        for x in CURVE_XS
    ]
    return {
        "seeds": [1, 2],
        "curve": curve,
        "first_failure_arrived_pct": first_failure,
        "table": {
            str(x): {"alloc_pct_mean": a, "alloc_pct_std": 0.5, "frag_ratio_mean": 70.0}
            for x, a in at.items()
        },
        "per_seed": [
            {
                "seed": seed,
                "pods": 100,
                "failed": 3,
                "first_failure_arrived_pct": first_failure,
                "final_alloc_pct": alloc[2],
                "peak_alloc_pct": alloc[2],
                "pending_max": 0,
                "mean_wait_seconds": 0.0,
                "seconds": 0.1,
            }
            for seed in (1, 2)
        ],
    }


def fake_single(pods_file: str, policies: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One pod list's result with the given policies (from ``fake_policy``)."""
    return {
        "protocol": "fgd",
        "tune": 1.3,
        "tie_break": "artifact",
        "trace": {
            "nodes_file": "nodes.csv",
            "pods_file": pods_file,
            "nodes": 10,
            "gpus": 80,
            "pods": 100,
        },
        "target_workload": {"shapes": 3, "distinct_shapes": 5, "coverage_pct": 96.0},
        "empty_cluster": {"frag_ratio_pct": 12.5, "frag_amount_gpus": 10.0},
        "averaging": "hand-made",
        "seconds": 0.5,
        "policies": policies,
    }


def fake_variants() -> dict[str, Any]:
    """Three pod lists; the best policy at 130 % is (by construction):

    - ``openb_pod_list_default.csv``: Packer alone (91.50 vs 91.49 and 90.00);
    - ``openb_pod_list_cpu050.csv``: Spreader and Packer tie at 92.10;
    - ``openb_pod_list_gpushare20.csv``: Random alone (95.00); Spreader never fails.
    """
    return {
        "variants": {
            "openb_pod_list_default.csv": fake_single(
                "openb_pod_list_default.csv",
                {
                    "Spreader": fake_policy((89.0, 89.5, 90.0), 60.0),
                    "Packer": fake_policy((91.0, 91.2, 91.5), 90.0),
                    "Random": fake_policy((90.0, 91.3, 91.49), 90.04),
                },
            ),
            "openb_pod_list_cpu050.csv": fake_single(
                "openb_pod_list_cpu050.csv",
                {
                    "Spreader": fake_policy((92.0, 92.0, 92.1), 85.0),
                    "Packer": fake_policy((92.0, 92.05, 92.1), 88.0),
                    "Random": fake_policy((80.0, 80.0, 80.0), 50.0),
                },
            ),
            "openb_pod_list_gpushare20.csv": fake_single(
                "openb_pod_list_gpushare20.csv",
                {
                    "Spreader": fake_policy((93.0, 93.0, 93.0), None),
                    "Packer": fake_policy((94.0, 94.0, 94.0), 95.0),
                    "Random": fake_policy((94.0, 94.5, 95.0), 96.0),
                },
            ),
        }
    }
