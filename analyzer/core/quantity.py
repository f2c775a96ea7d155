"""Kubernetes resource quantities as exact integers.

Kubernetes keeps quantities exactly and the scheduler reads them as int64 through
``Quantity.MilliValue()`` (cpu) or ``Quantity.Value()`` (everything else), both rounding **up**
to the next integer (apimachinery ``resource.Quantity``). We reproduce that with ``Fraction`` so
``"0.1"`` cpu is exactly 100 milli and ``"1.5Gi"`` memory is exactly 1610612736 bytes.

Units used across analyzer (DESIGN.md "Units and names"): cpu in millicores, every other
resource in its base unit (bytes for memory/storage/hugepages, a count for pods and extended
resources).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from analyzer.core.errors import InputError
from analyzer.core.structured import preview

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# apimachinery grammar: <signedNumber><suffix>, suffix = binarySI | decimalSI | decimalExponent
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:\d+\.?\d*|\.\d+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$"
)


def parse_quantity(value: str | int | float, *, field: str = "quantity") -> Fraction:
    """Parse a Kubernetes quantity (``"250m"``, ``"1.5Gi"``, ``"1e3"``, ``4``) exactly.

    ``field`` names the input in the error message, e.g. ``pods[3].spec.containers[0].cpu``.
    """
    if isinstance(value, bool):
        raise InputError(
            f"{field}: {preview(value)} is not a quantity (expected e.g. 500m, 2, 1Gi)"
        )
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InputError(f"{field}: {preview(value)} is not a finite quantity")
        return Fraction(str(value))
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if not match:
        raise InputError(
            f"{field}: {preview(value)} is not a Kubernetes quantity (expected e.g. 500m, 2, 1.5Gi, 1e3)"
        )
    number = Fraction(match.group("num"))
    suffix = match.group("suffix") or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    return number * Fraction(10) ** int(suffix[1:])  # decimal exponent e3 / E-2


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


def milli_value(value: str | int | float, *, field: str = "quantity") -> int:
    """``Quantity.MilliValue()``: the quantity × 1000, rounded up (``"0.0001"`` → 1)."""
    return _ceil(parse_quantity(value, field=field) * 1000)


def base_value(value: str | int | float, *, field: str = "quantity") -> int:
    """``Quantity.Value()``: the quantity in base units, rounded up (``"0.5"`` → 1)."""
    return _ceil(parse_quantity(value, field=field))


def resource_value(resource: str, value: str | int | float, *, field: str | None = None) -> int:
    """A quantity in analyzer units for ``resource``: millicores for cpu, base units otherwise.

    Negative quantities are refused: no Kubernetes resource list may hold one.
    """
    name = field or resource
    result = milli_value(value, field=name) if resource == "cpu" else base_value(value, field=name)
    if result < 0:
        raise InputError(f"{name}: {preview(value)} is negative; resource quantities must be >= 0")
    return result


def format_quantity(resource: str, value: int) -> str:
    """Render an analyzer integer back as a Kubernetes quantity string (``1500`` cpu → ``"1500m"``)."""
    if resource == "cpu":
        return f"{value // 1000}" if value % 1000 == 0 else f"{value}m"
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        unit = _BINARY[suffix]
        if value and value % unit == 0 and resource in ("memory", "ephemeral-storage"):
            return f"{value // unit}{suffix}"
    return str(value)


_SANITIZE = re.compile(r"[^a-zA-Z0-9_]")


def sanitize_resource_name(resource: str) -> str:
    """kube-state-metrics' ``resource`` label for a resource name (``nvidia.com/gpu`` → ``nvidia_com_gpu``).

    Match by sanitising the configured name, never the reverse (the mapping is not invertible).
    """
    return _SANITIZE.sub("_", resource)
