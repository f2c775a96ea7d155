"""HTML reports (jinja2 and charts live only in this package).

Modules: ``views`` (typed cards/tables), ``context`` (nightly context), ``charts`` (matplotlib →
embedded PNG) and ``nightly_charts``, ``render`` (jinja environment), ``output`` (atomic run
folders, index), ``nightly_report`` (``write_nightly_report``), ``whatif``, ``trace``,
``trace_m3`` and ``trace_variants`` (the what-if and trace pages).
"""
