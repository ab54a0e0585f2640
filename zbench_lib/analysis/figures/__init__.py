"""Figures: shared chart conventions, the plotly and static charts, a run's timeline."""
