"""Regulatory audits: the bias audit of NYC Local Law 144 (6 RCNY 5-300 to 5-304) and the four-fifths rule.

- :func:`bias_audit`: the rule's three tables (sex, race/ethnicity, intersectional) of
  selection or scoring rates and impact ratios, with the exclusion and unknown rules, an
  interval and a verdict against 0.8 for every impact ratio, Fisher's exact test, the
  two-standard-deviation rule and the practical-significance check; ``.write(out)`` writes
  the CSV files, ``summary.json`` and a publishable HTML page.
- :func:`bias_audit_log`: the same over a time window of a prediction log (a Parquet
  folder or file, or a CSV), e.g. the yearly audit of a monitored model.
- :func:`impact_ratio_intervals`: the intervals alone (Koopman score intervals of the
  ratios to every other category, simultaneous over the reference chosen from the data;
  Koopman's interval itself lives in the uncertainty home, ``uncertainty._proportions.koopman``).

Import it explicitly (``from skfair_measures.audits import bias_audit``) or as
``skfair_measures.bias_audit``.
"""

# each public name listed once: "name as name" re-exports it (PEP 484), for type checkers too
from ._bias_audit import CONSTRUCTION as CONSTRUCTION
from ._bias_audit import BiasAudit as BiasAudit
from ._bias_audit import bias_audit as bias_audit
from ._bias_audit import bias_audit_log as bias_audit_log
from ._bias_audit import impact_ratio_intervals as impact_ratio_intervals
