"""The model against real clusters: published experiments as YAML specs, replayed and scored (``smetric validate``)."""
