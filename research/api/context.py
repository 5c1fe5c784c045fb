"""What every route of the API server shares: the store, the door to runs, the settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fastapi import Request

from research.api.auth import Authenticator
from research.api.door import RunDoor
from research.api.settings import ApiSettings
from research.core.config import Credentials
from research.core.errors import ConfigError
from research.core.settings import effective_env, prices_path
from research.llm.pricing import PriceTable
from storage import Store


@dataclass
class ApiContext:
    """One per server process. `environ` None: the process environment (and the secrets
    file under it), read afresh for each new run so a key saved in Settings applies."""

    store: Store
    door: RunDoor
    settings: ApiSettings
    authenticator: Authenticator
    secret_folder: Path  # where `api-secret` lives (research.api.tokens)
    environ: Mapping[str, str] | None = None
    db: str = ""  # what the store opened (a file or a postgresql:// URL), for mounted apps

    def env(self) -> dict[str, str]:
        return effective_env(self.environ)

    def credentials(self) -> Credentials:
        return Credentials.from_env(self.env())

    def prices(self) -> PriceTable | None:
        try:
            return PriceTable.load(prices_path(self.env()))
        except ConfigError:  # a broken prices file: the built-in prices
            return None


def api_context(request: Request) -> ApiContext:
    """The route dependency for the server's context."""
    context: ApiContext = request.app.state.api
    return context
