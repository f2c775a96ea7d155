"""Replays of real traces (Alibaba GPU openb under the FGD protocol, ByteDance M3 packing).

The cluster state, its incremental caches and the policies' math are the scheduling core's
(``analyzer.scheduling.gpu``); this package holds the published protocols around them:
``policies`` (the FGD paper's six policies), ``kube`` (kube-scheduler strategies with GPUs as an
extended resource), ``core_profiles`` (any core preset on the trace state), ``registry``,
``protocol`` (``fgd`` and ``timeline`` runners), ``curve`` (the paper's averaging), ``runner``
(policies × seeds on a process pool, JSON result), ``variants`` (other pod lists), ``m3``
(ByteDance M3 packing).
"""
