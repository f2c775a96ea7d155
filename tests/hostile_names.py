"""Names a cluster's metrics can carry and that analyzer must write out without harm.

Label values reach the snapshot and the history with whatever they hold (the first campaign showed
newlines survive). The list mixes the campaign's ``snap-host`` names with every line break PyYAML
or a spreadsheet honours, a whole-document YAML injection, formula prefixes, markup, bidi
overrides, 10 kB, and words pandas reads as missing (``NA``, ``null``) unless told not to.
"""

from __future__ import annotations

# every character a YAML 1.1 reader, str.splitlines or a CSV reader may break a line on
LINE_BREAKS = (
    "\n",
    "\r",
    "\r\n",
    "\x85",
    "\u2028",
    "\u2029",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x1d",
    "\x1e",
)
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")

CLUSTER_ADMIN = (
    "x\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n"
    "metadata: {name: pwned}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, "
    "name: cluster-admin}\nsubjects: [{kind: ServiceAccount, name: default, namespace: ops}]\n"
    "---\n#"
)
SECRET_LINES = "evil\nkind: Secret\nmetadata: {name: pwned}\n#"
FORMULA = '=HYPERLINK("http://evil.example/x","click")'

WORKLOAD_NAMES: tuple[str, ...] = (
    CLUSTER_ADMIN,
    SECRET_LINES,
    *(f"brk{i}{b}---{b}kind: Secret{b}#" for i, b in enumerate(LINE_BREAKS)),
    FORMULA,
    "+cmd",
    "-2+3",
    "@SUM(1)",
    "\tq",
    "\rr",
    "'=already-quoted",
    "<script>alert(1)</script>",
    'coredns"}}',
    "rtl\u202etxt.exe",
    "W" * 10_000,
    "NA",
    "a,b;c\"d'e",
    "\x00nul\x1besc",
)
NAMESPACES: tuple[str, ...] = ("-2+3", "@SUM(1)", "ops\n---\n#", "team")
# names the API server accepts (DNS-1123): their patches must still be written
VALID_WORKLOADS: tuple[tuple[str, str], ...] = (("team", "api"), ("team", "null"))


def hostile_workloads() -> list[tuple[str, str]]:
    """(namespace, name) pairs: every hostile name in a rotating hostile namespace."""
    return [(NAMESPACES[i % 3], name) for i, name in enumerate(WORKLOAD_NAMES)]
