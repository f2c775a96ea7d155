"""Replays of real traces (Alibaba GPU openb under the FGD protocol, ByteDance M3 packing).

Modules: ``state`` (cluster state and incremental caches), ``policies`` / ``fgd_score`` (the FGD
paper's six policies), ``kube`` (kube-scheduler strategies with GPUs as an extended resource),
``registry``, ``protocol`` (``fgd`` and ``timeline`` runners), ``curve`` (the paper's averaging),
``runner`` (policies × seeds on a process pool, JSON result), ``m3`` (ByteDance M3 packing).
"""
