"""The node autoscalers' scale-down decision at one instant: cluster-autoscaler and Karpenter.

Pure functions over pods, nodes and options (``docs/autoscaling.md``): ``utilization``,
``drainability``, ``eligibility``, ``removal`` and ``planner`` for cluster-autoscaler,
``karpenter`` for Karpenter's consolidation, ``scenario`` for ``analyzer autoscale``.
"""
