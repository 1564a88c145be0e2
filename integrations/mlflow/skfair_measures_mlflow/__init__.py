"""MLflow integration for skfair-measures."""
