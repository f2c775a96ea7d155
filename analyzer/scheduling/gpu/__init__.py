"""GPU sharing in the scheduling core: the per-GPU device model (``model``), pod GPU requests
(``requests``), the FGD measure of a node (``fragments``), the per-GPU cluster state with its
incremental caches (``cluster``), its attachment to ``ClusterState`` (``devices``), the FGD
paper's policies as scores (``scores``, ``fgd_score``) and as framework plugins (``plugins``).
"""
