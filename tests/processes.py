"""Stopping a server the tests started: by its own process handle, politely first."""

from __future__ import annotations

import subprocess


def stop_process(process: subprocess.Popen[bytes], grace_seconds: float = 10) -> None:
    """SIGTERM, wait up to ``grace_seconds``, then SIGKILL; a finished process is left alone."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace_seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=grace_seconds)
