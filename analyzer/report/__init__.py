"""HTML reports (jinja2 lives only in this package).

Modules: ``tables`` (usage tables from a snapshot), ``views`` (typed cards/tables), ``context``
(nightly context), ``charts`` (matplotlib → embedded PNG), ``render`` (jinja environment),
``output`` (atomic run folders, index), ``history`` (the history store), ``nightly_report``
(``write_nightly_report``).
"""
