"""udbench.priors (see DESIGN.md)."""
