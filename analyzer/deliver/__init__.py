"""Delivery: telling a team that a report was written, over channels it already watches.

A second kind of network output beside ``analyzer/prom/`` (which reads metrics): Slack-compatible
incoming webhooks, a generic JSON webhook and e-mail through the team's SMTP relay, each with
bounded retries and an idempotency record so a retried job delivers each report once per channel
(docs/delivery.md). It knows nothing of reports: it sends a ``Message`` built by ``report/``.
"""
