"""analyzer: a metrics-driven batch analyser for Kubernetes clusters."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("analyzer")
except PackageNotFoundError:  # running from a checkout without an install
    __version__ = "0.0.0+checkout"
