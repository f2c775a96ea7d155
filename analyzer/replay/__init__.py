"""Replay: the event-driven engine that re-places a snapshot's pods under a scheduling profile.

``input`` (snapshot → arrays and events), ``engine`` (``replay``), ``queue`` (pending pods),
``scoring`` and ``rows`` (incremental scores), ``loadfeed`` (NodeMetric state for load-aware
profiles), ``projection`` (usage under the new placement). Imports ``scheduling``, ``usage``,
``core``.
"""
