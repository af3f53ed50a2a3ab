"""Sub-commands of the ``udbench`` CLI; each module exposes ``register(app)``."""
