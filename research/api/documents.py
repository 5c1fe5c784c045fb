"""The documents library: upload, list, search, collections. One library for the install,
shared as the dashboard's Documents page shares it (runs are each person's; documents are
the team's)."""

from __future__ import annotations

from typing import Annotated

import anyio
from fastapi import APIRouter, Depends, File, Form, Query, UploadFile

from research.api.auth import caller
from research.api.context import ApiContext, api_context
from research.api.errors import ApiError, not_found
from research.api.models import (
    CollectionList,
    CollectionMembers,
    CollectionOut,
    DocumentList,
    DocumentOut,
    NewCollection,
    PassageList,
    PassageOut,
    Uploaded,
)
from research.api.runs import ERRORS
from research.documents import ingest
from research.documents.extract import MAX_FILE_BYTES
from storage import documents as docstore
from storage.records import Document

router = APIRouter(prefix="/v1", responses=ERRORS, dependencies=[Depends(caller)])
Ctx = Annotated[ApiContext, Depends(api_context)]


def _out(doc: Document) -> DocumentOut:
    return DocumentOut(id=doc.id, title=doc.title, filename=doc.filename, kind=doc.kind,
                       size_bytes=doc.size_bytes, pages=doc.pages, passages=doc.passages,
                       status=doc.status, message=doc.message, added_at=doc.added_at,
                       collections=list(doc.collections))


def _collection(name: str) -> str:
    try:
        return docstore.check_collection_name(name)
    except ValueError as exc:
        raise ApiError(422, "invalid_request", f"collection: {exc}") from None


@router.get("/documents", response_model=DocumentList, summary="List the library's documents")
def list_documents(ctx: Ctx, collection: Annotated[str | None, Query(max_length=80)] = None,
                   ) -> DocumentList:
    return DocumentList(documents=[_out(d) for d in docstore.list_documents(
        ctx.store, collection=collection or None)])


@router.post("/documents", status_code=201, response_model=Uploaded,
             summary="Add a document (PDF, DOCX, Markdown, text, HTML)")
async def upload(ctx: Ctx, file: Annotated[UploadFile, File(description=
                 f"At most {MAX_FILE_BYTES // (1024 * 1024)} MB.")],
                 collection: Annotated[str | None, Form(max_length=80)] = None) -> Uploaded:
    """A file that cannot be used is refused with the reason (422); the same file twice is
    stored once."""
    data = await file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ApiError(413, "too_large", f"The file is larger than "
                       f"{MAX_FILE_BYTES // (1024 * 1024)} MB.")
    target = _collection(collection) if collection else None
    name = file.filename or "document"
    result = await anyio.to_thread.run_sync(
        lambda: ingest(ctx.store, name, data, collection=target))
    if not result.ok and result.document_id is None:
        raise ApiError(422, "document_refused", f"{result.filename}: {result.message}")
    return Uploaded(filename=result.filename, ok=result.ok, message=result.message,
                    document_id=result.document_id)


@router.get("/documents/search", response_model=PassageList,
            summary="Search the library's passages")
def search(ctx: Ctx, q: Annotated[str, Query(min_length=1, max_length=500)],
           limit: Annotated[int, Query(ge=1, le=50)] = 10,
           collection: Annotated[str | None, Query(max_length=80)] = None) -> PassageList:
    scope = docstore.collection_documents(ctx.store, collection) if collection else None
    hits = docstore.search_passages(ctx.store, q, limit=limit, document_ids=scope)
    return PassageList(passages=[PassageOut(document_id=h.document_id, title=h.title,
                                            page=h.page, section=h.section, text=h.text,
                                            rank=h.rank) for h in hits])


@router.get("/documents/{document_id}", response_model=DocumentOut, summary="One document")
def get_document(document_id: str, ctx: Ctx) -> DocumentOut:
    doc = docstore.get_document(ctx.store, document_id)
    if doc is None:
        raise not_found("document")
    listed = {d.id: d for d in docstore.list_documents(ctx.store)}
    return _out(listed.get(doc.id, doc))


@router.delete("/documents/{document_id}", status_code=204, summary="Remove a document")
def delete_document(document_id: str, ctx: Ctx) -> None:
    if not docstore.delete_document(ctx.store, document_id):
        raise not_found("document")


@router.get("/collections", response_model=CollectionList, summary="List the collections")
def list_collections(ctx: Ctx) -> CollectionList:
    return CollectionList(collections=[
        CollectionOut(name=c.name, documents=c.documents, created_at=c.created_at)
        for c in docstore.list_collections(ctx.store)])


@router.post("/collections", status_code=201, response_model=CollectionOut,
             summary="Make a collection")
def create_collection(body: NewCollection, ctx: Ctx) -> CollectionOut:
    name = docstore.create_collection(ctx.store, _collection(body.name))
    return _collection_out(ctx, name)


@router.post("/collections/{name}/documents", response_model=CollectionOut,
             summary="Put documents in a collection (made if new)")
def add_members(name: str, body: CollectionMembers, ctx: Ctx) -> CollectionOut:
    name = _collection(name)
    docstore.add_to_collection(ctx.store, name, body.document_ids)
    return _collection_out(ctx, name)


@router.delete("/collections/{name}/documents/{document_id}", response_model=CollectionOut,
               summary="Take a document out of a collection")
def remove_member(name: str, document_id: str, ctx: Ctx) -> CollectionOut:
    if not docstore.collection_exists(ctx.store, name):
        raise not_found("collection")
    docstore.remove_from_collection(ctx.store, name, [document_id])
    return _collection_out(ctx, name)


@router.delete("/collections/{name}", status_code=204,
               summary="Forget a collection (its documents stay)")
def delete_collection(name: str, ctx: Ctx) -> None:
    if not docstore.collection_exists(ctx.store, name):
        raise not_found("collection")
    docstore.delete_collection(ctx.store, name)


def _collection_out(ctx: ApiContext, name: str) -> CollectionOut:
    for c in docstore.list_collections(ctx.store):
        if c.name == name:
            return CollectionOut(name=c.name, documents=c.documents, created_at=c.created_at)
    raise not_found("collection")
