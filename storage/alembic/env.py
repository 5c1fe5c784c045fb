"""Alembic's entry point, run by `storage.migrate` on a connection it has already locked.

There is no alembic.ini: `storage.migrate.alembic_config` points Alembic at this folder and
hands over the connection (in `config.attributes["connection"]`), inside the transaction
that holds the migration lock, so two processes starting at once cannot both migrate.
SQLite migrations run in batch mode (copy-and-move), the only way SQLite can alter a table.
"""

from __future__ import annotations

from alembic import context

from storage.schema import metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
