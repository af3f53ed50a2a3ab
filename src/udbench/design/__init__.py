"""udbench.design (see DESIGN.md)."""
