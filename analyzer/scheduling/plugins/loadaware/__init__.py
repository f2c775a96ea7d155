"""Koordinator LoadAwareScheduling: the plugin's filter and score (``plugin``), its args, the pod
usage estimator and Koordinator's priority/QoS classes (``args``), and the pod-assign cache that
turns NodeMetric objects and recent bindings into the core's load inputs (``cache``).
"""
