"""The API's one error shape: `{"error": {"code": "...", "message": "..."}}`.

`code` is stable (programs branch on it); `message` is plain words for a person, never an
exception's class name, never a key. Bad input is a 4xx whose message names the bound it
broke; anything unexpected is a 500 that says only that, its details in the server's log.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from research.core.errors import ResearchError, redact

log = logging.getLogger(__name__)

_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
          405: "method_not_allowed", 406: "not_acceptable", 409: "conflict",
          413: "too_large", 415: "unsupported_media_type", 422: "invalid_request",
          429: "rate_limited"}


class ApiError(Exception):
    """A refusal with its HTTP status, stable code and plain message."""

    def __init__(self, status: int, code: str, message: str,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})


def not_found(what: str = "run") -> ApiError:
    return ApiError(404, "not_found", f"There is no {what} with that id.")


def body(code: str, message: str) -> dict[str, dict[str, str]]:
    return {"error": {"code": code, "message": message}}


def error_response(status: int, code: str, message: str,
                   headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse(body(code, redact(message)), status_code=status, headers=headers)


def install(app: FastAPI) -> None:
    """Every way a request can fail answers in the one shape."""

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message, exc.headers)

    @app.exception_handler(ResearchError)
    async def _research_error(request: Request, exc: ResearchError) -> JSONResponse:
        # The engine's refusals (a setting out of bounds, an empty question, a missing key).
        return error_response(422, "invalid_settings", str(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, "invalid_request", validation_message(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _CODES.get(exc.status_code, "error")
        message = exc.detail if isinstance(exc.detail, str) else "The request failed."
        if exc.status_code == 404:
            message = "There is nothing at this address; see /docs for the API's addresses."
        return error_response(exc.status_code, code, message, getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error answering %s %s", request.method, request.url.path)
        return error_response(500, "internal", "Something went wrong on the server; the "
                              "request may not have been carried out. Try again, and tell "
                              "the administrator if it keeps happening.")


def validation_message(errors: Sequence[Any]) -> str:
    """The first problem, naming the field and its bound ("limit: Input should be less than
    or equal to 100")."""
    if not errors:
        return "The request is not valid."
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("body", "query",
                                                                         "path", "header"))
    message = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
    if first.get("type") == "extra_forbidden":
        message = "This field is not one the API knows"
    if first.get("type") == "missing":
        message = "This field is required"
    if first.get("type") == "json_invalid":
        return "The request body is not valid JSON."
    return f"{where}: {message}." if where else f"{message}."
