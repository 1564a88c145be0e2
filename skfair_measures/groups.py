"""Groups: how the sensitive attribute becomes groups, and what to do with small ones.

The public face of the core's one group encoder: :func:`resolve_sensitive` reads the
sensitive attribute from columns of ``X`` or from values, and :func:`encode_groups`
turns it into one integer code per row and the index of the groups that occur (or
the declared ``groups=``). Integrations build on these two, never on the private
modules behind them.

Small groups. Crossing a few sensitive columns quickly yields groups of a handful of rows, whose
rates are noise (or undefined, which makes the whole measure NaN). Two tools:

- ``min_group_size=`` on any measure (``msr("fairness.tpr", min_group_size=30)``, or
  ``measure.with_inputs(min_group_size=30)``): groups with fewer rows are left out of
  the comparison with a warning naming them, or pooled into one group "other" with
  ``small_groups="merge"``. Scorers built from such a measure do the same in every
  cross-validation fold.
- :func:`merge_rare_levels`: before crossing the columns, replace the rare levels of
  each column by "other", so that the intersections are built from well-populated
  levels.
"""

# each public name listed once: "name as name" re-exports it (PEP 484), for type checkers too
from ._groups import SingleGroupError as SingleGroupError
from ._groups import encode_groups as encode_groups
from ._groups import resolve_sensitive as resolve_sensitive
from ._small_groups import SMALL_GROUP_ROWS as SMALL_GROUP_ROWS
from ._small_groups import SmallGroupWarning as SmallGroupWarning
from ._small_groups import fold_group_sizes as fold_group_sizes
from ._small_groups import merge_rare_levels as merge_rare_levels
from ._small_groups import small_group_effect as small_group_effect
from ._small_groups import small_groups_in_folds as small_groups_in_folds
from ._stats import restrict_small_groups as restrict_small_groups
