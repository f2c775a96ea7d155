"""kube-scheduler ``plugins/noderesources``: NodeResourcesFit (with its three scoring strategies) and BalancedAllocation."""
