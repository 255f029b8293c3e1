"""One module per figure, named like its notebook (``fig05_load_metric`` -> ``notebooks/fig05_load_metric.ipynb``).

Each declares ``Params`` (full-run defaults, a ``quick()`` preset), ``compute``, ``plot`` and ``claims``;
see :mod:`smetric.experiments.figure` for the contract and ``README.md`` for how to add a figure.
"""
