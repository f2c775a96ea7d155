"""The scheduler plugins, one module or package per upstream plugin, named as upstream names them.

A reader who knows kube-scheduler's ``pkg/scheduler/framework/plugins/`` finds each here:

| upstream directory | here |
|---|---|
| ``noderesources/`` (``fit.go``, ``balanced_allocation.go``, ``resource_allocation.go``; LeastAllocated, MostAllocated and RequestedToCapacityRatio live in ``fit.go``'s strategies) | ``noderesources/`` (``fit.py``, ``balanced_allocation.py``, ``resource_allocation.py``) |
| ``tainttoleration/`` | ``tainttoleration.py`` |
| ``nodeaffinity/`` | ``nodeaffinity.py`` |
| ``nodeports/`` | ``nodeports.py`` |
| ``interpodaffinity/`` | ``interpodaffinity.py`` |
| ``podtopologyspread/`` | ``podtopologyspread.py`` |
| ``imagelocality/`` | ``imagelocality.py`` |
| ``queuesort/`` (PrioritySort) | ``queuesort.py`` |
| ``defaultpreemption/`` | ``defaultpreemption.py`` |
| ``helper/`` (``normalize_score.go``; the taint and node-selector matching of component-helpers) | ``helper/`` (``normalize_score.py``, ``node_constraints.py``) |
| ``registry.go`` | ``registry.py`` |
| Koordinator ``pkg/scheduler/plugins/loadaware/`` | ``loadaware/`` |

Beside this package, in ``analyzer.scheduling``: the framework (``framework.py``: profiles, the
filter/score cycle, selection), the configuration (``config.py``, ``strategies.py``), the state
(``state.py``), the queue both loops share (``queue_order.py``), version rules (``versions.py``,
``feature_gates.py``) and the API types the plugins read (``constraint_types.py``,
``spread_types.py``, ``affinity_types.py``, ``priority_class.py``, ``pdb.py``). The GPU-sharing
plugins of the FGD paper are not upstream kube-scheduler plugins and stay with their device model in
``analyzer.scheduling.gpu``.
"""
