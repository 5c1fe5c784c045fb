"""Results whose text came with them: read as they are, never fetched.

A passage of the person's documents (`research.search.documents`) and an MCP tool's answer
(`research.search.mcp_tools`) carry their text; research takes it from the result instead of
fetching the address (which for them is `doc://` or `mcp://`, or a web page's address that is
shown but not read).
"""

from __future__ import annotations

from research.search.base import SearchResult
from research.search.documents import is_document_result, page_of


def text_in_hand(result: SearchResult) -> bool:
    return is_document_result(result) or (result.in_hand and result.content is not None)


__all__ = ["page_of", "text_in_hand"]
