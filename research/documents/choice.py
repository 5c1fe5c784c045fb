"""The source mix of a run: the web, the person's documents, or both.

One function for the CLI (`--docs`, `--collection`, `--no-web`) and the New research form, so
both build the same configuration: "documents" joins the search providers, with the run's
collection or chosen documents; leaving the web out leaves only "documents" (no search key
needed, no academic search added).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from research.core.config import DOCUMENTS, ResearchConfig
from research.core.errors import ConfigError

Mix = Literal["web", "documents", "both"]
MIXES: dict[str, str] = {"web": "The web only", "documents": "My documents only",
                         "both": "The web and my documents"}


def with_sources(config: ResearchConfig, mix: Mix, *, collection: str = "",
                 document_ids: Sequence[str] = ()) -> ResearchConfig:
    """`config` reading from `mix`: its web providers are kept unless the mix leaves them out."""
    if mix not in MIXES:
        raise ConfigError(f"Unknown source choice {mix!r}; choose web, documents or both.")
    web = tuple(n for n in config.search_providers if n != DOCUMENTS)
    if mix == "web":
        providers, collection, document_ids = web, "", ()
    elif mix == "documents":
        providers = (DOCUMENTS,)
    else:
        providers = (*(web or ("web",)), DOCUMENTS)
    data = config.model_dump()
    data.update(search_providers=providers, document_collection=collection.strip(),
                document_ids=tuple(dict.fromkeys(document_ids)))
    return ResearchConfig(**data)


def mix_of(config: ResearchConfig) -> Mix:
    """Which mix a stored configuration reads from."""
    if not config.uses_documents():
        return "web"
    return "both" if config.uses_web() else "documents"
