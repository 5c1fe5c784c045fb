"""The "documents" provider: the person's own documents, searched like the web.

A result is one passage, found by the store's FTS5 index (BM25). It carries its text
(`SearchResult.content`) and a `doc://<document id>/<passage id>` address, so research reads it
straight from the result: `is_document_result` is what lets such an address past the research
phase's web-only filter, and `page_of` turns it into the page the pipeline scores, cites and
verifies. A `doc://` address never reaches the web fetcher (which refuses anything but http and
https anyway). Its title says where in the document the passage is ("Report, p. 12"), so the
report's Sources list and every export cite the page or section.

The provider needs the run's store; `bind_store` gives it one when the pipeline starts.
"""

from __future__ import annotations

from collections.abc import Iterable

from research.core.config import DOCUMENTS, ResearchConfig
from research.core.errors import ConfigError, ProviderError
from research.documents.passages import cited_title
from research.search.base import SearchProvider, SearchResult
from research.untrusted.fetch import FetchedPage
from storage import Store
from storage import documents as docstore

SCHEME = "doc://"


class DocumentSearch:
    name = DOCUMENTS
    academic = False

    def __init__(self, collection: str = "", document_ids: Iterable[str] = (),
                 store: Store | None = None) -> None:
        self.collection = collection
        self.document_ids = tuple(document_ids)
        self.store = store

    def scope(self) -> list[str] | None:
        """The document ids this run may read; None: the whole library."""
        if self.store is None:
            raise ProviderError("document search is not connected to the library",
                                provider=self.name)
        if not self.collection and not self.document_ids:
            return None
        ids = list(self.document_ids)
        if self.collection:
            ids += docstore.collection_documents(self.store, self.collection)
        return list(dict.fromkeys(ids))

    def search(self, query: str, *, max_results: int, timeout: float) -> list[SearchResult]:
        scope = self.scope()
        assert self.store is not None
        if scope is not None and not scope:  # e.g. the collection was emptied since the start
            where = f"the collection \u201c{self.collection}\u201d" if self.collection else \
                "the chosen documents"
            raise ProviderError(f"there are no documents left in {where}", provider=self.name)
        hits = docstore.search_passages(self.store, query, limit=max_results,
                                        document_ids=scope)
        return [SearchResult(
            url=f"{SCHEME}{hit.document_id}/{hit.passage_id}",
            title=cited_title(hit.title, hit.page, hit.section),
            snippet=" ".join(hit.text.split())[:300], provider=self.name,
            content=hit.text, score=-hit.rank,
        ) for hit in hits]


def build(config: ResearchConfig) -> DocumentSearch:
    return DocumentSearch(config.document_collection, config.document_ids)


def bind_store(providers: list[SearchProvider], store: Store) -> list[SearchProvider]:
    """Give every documents provider the run's store (the search seam takes no store)."""
    for provider in providers:
        if isinstance(provider, DocumentSearch) and provider.store is None:
            provider.store = store
    return providers


def check_scope(store: Store, config: ResearchConfig) -> None:
    """ConfigError in plain words when a run would read documents that are not there."""
    if not config.uses_documents():
        return
    if config.engine != "pipeline":
        raise ConfigError("Hosted deep-research engines cannot read your documents: choose "
                          "the built-in multi-agent research to use them.")
    if config.document_collection and not docstore.collection_exists(
            store, config.document_collection):
        raise ConfigError(f"There is no document collection named "
                          f"\u201c{config.document_collection}\u201d.")
    scope = DocumentSearch(config.document_collection, config.document_ids, store).scope()
    ready = [d for d in docstore.list_documents(store) if d.status == "ready"
             and (scope is None or d.id in scope)]
    if not ready:
        where = (f"the collection \u201c{config.document_collection}\u201d"
                 if config.document_collection else "the chosen documents"
                 if config.document_ids else "the document library")
        raise ConfigError(f"There are no searchable documents in {where}: add some on the "
                          "Documents page (or with --docs), or include the web.")


def is_document_result(result: SearchResult) -> bool:
    """A passage from our own store: its text is in hand, and its address is not a web page."""
    return (result.provider == DOCUMENTS and result.url.startswith(SCHEME)
            and result.content is not None)


def page_of(result: SearchResult) -> FetchedPage:
    """The passage as the page research reads, without any fetch."""
    return FetchedPage(url=result.url, final_url=result.url, status=200,
                       content_type="text/plain", title=result.title,
                       text=result.content or "", published=None)
