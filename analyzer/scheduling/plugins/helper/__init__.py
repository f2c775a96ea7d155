"""kube-scheduler ``plugins/helper``: score normalisation and the taint / node-selector matching the filters share."""
