"""A service the person runs themselves (a SearXNG instance): the one exception to our URL rules.

Every address we connect to on behalf of untrusted text (a search result, a redirect, a page's
link) must be public and on a web port (research.untrusted.urls). A base URL the person typed
into Settings or set in the environment is different: it is their own choice, like the model
server address, and the common case is an instance on their own machine or network
(`http://localhost:8888`, `http://192.168.1.20:8080`, a team's host on the VPN). Refusing those
would refuse what the person asked for, so for such an address:

- loopback, private (RFC 1918, IPv6 unique-local), link-local and shared (CGNAT/VPN) addresses
  are allowed, and so is any port (SearXNG's own defaults are 8888 and 8080);
- everything else still holds: http or https only, no user name or '@' in the address (it can
  hide the real host, and a password there would end up in logs), no ambiguous host, and never
  a cloud metadata service, an unspecified, multicast or reserved address.

The exception covers the base URL only: redirects from it are not followed (research.search.
searxng reports them), and the results such a service returns are untrusted like any other and
go through the usual rules before anything is fetched.
"""

from __future__ import annotations

from research.core.errors import FetchRefused
from research.untrusted.urls import Resolver, check_url

ANY_PORT = range(1, 65536)


def check_own_service_url(url: str, *, resolver: Resolver | None = None) -> list[str]:
    """The addresses `url`'s host resolves to, if the person's own service may be reached
    there; FetchRefused (or FetchError when the host cannot be found) otherwise."""
    return check_url(url, allow_private=True, resolver=resolver, allowed_ports=ANY_PORT)


def own_service_problem(url: str, *, resolver: Resolver | None = None) -> str | None:
    """Why `url` cannot be the person's own service, in plain words (None: it can).
    Only the address's form is judged here; whether the host exists is known when it is
    reached."""
    try:
        check_own_service_url(url, resolver=resolver or _no_lookup)
    except FetchRefused as exc:
        return str(exc).removeprefix("refused: ")
    return None


def _no_lookup(name: str) -> list[str]:
    """Stands for any host name's addresses when only the form of the address is judged."""
    return ["10.0.0.1"]  # a private address: allowed here, so only the form is judged
