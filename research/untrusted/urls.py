"""Web addresses: one canonical form per page, and the safety check before any fetch.

`canonical_url` is an identity key (two search results for the same page get the same key);
fetch the original URL, not the canonical one (it forces https).

`check_url` / `check_host` / `check_port` decide whether we may connect.

Only web ports are fetched (`WEB_PORTS`: 80, 443 and the common alternates 8080 and 8443, plus
any the person allows with `DEEP_RESEARCH_ALLOWED_PORTS`): a page or redirect pointing at :22 or
:25 would otherwise make us talk HTTP to an SSH or mail server. The port rule holds for private
hosts too, so allowing an intranet does not open its every service; tests allow the stand-in's
own random port explicitly.

The address rule is "every address the host resolves to is public": a name that resolves to
one public and one private address is refused, because the connection could land on either.
IPv4 hosts are read with inet_aton rules (the ones the C resolver applies when the connection
is made), so 2130706433, 0x7f000001, 0177.0.0.1 and 127.1 are all 127.0.0.1 to us too. Cloud metadata endpoints are refused even when private
addresses are allowed: they hand out credentials.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import socket
from collections.abc import Callable, Collection
from urllib.parse import unquote_plus, urlsplit

import httpx

from research.core.errors import FetchError, FetchRefused, redact

Resolver = Callable[[str], list[str]]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_TRACKING_KEYS = frozenset({"fbclid", "gclid", "mc_cid", "mc_eid", "ref", "ref_src"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
WEB_PORTS = frozenset({80, 443, 8080, 8443})

_METADATA_IPS = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, most others
        "169.254.170.2",    # AWS ECS task credentials
        "fd00:ec2::254",    # AWS over IPv6
        "100.100.100.200",  # Alibaba Cloud
    )
)
_METADATA_NAMES = frozenset({"metadata.google.internal", "metadata"})

# What allow_private=True lets through: loopback, RFC 1918, link-local, shared (CGNAT, used by
# VPNs such as Tailscale) and IPv6 unique-local. Everything else that is not global stays refused.
_PRIVATE_NETS: tuple[tuple[str, ipaddress.IPv4Network | ipaddress.IPv6Network], ...] = tuple(
    (kind, ipaddress.ip_network(net))
    for kind, net in (
        ("loopback", "127.0.0.0/8"),
        ("loopback", "::1/128"),
        ("private", "10.0.0.0/8"),
        ("private", "172.16.0.0/12"),
        ("private", "192.168.0.0/16"),
        ("private", "fc00::/7"),
        ("link-local", "169.254.0.0/16"),
        ("link-local", "fe80::/10"),
        ("carrier-grade NAT (shared)", "100.64.0.0/10"),
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPAT = ipaddress.ip_network("::/96")


# --- canonical form -------------------------------------------------------------------------

@functools.lru_cache(maxsize=8192)
def canonical_url(url: str) -> str:
    """The one spelling we store for a page, so the same page found twice is one source.

    Cached: a pure function of the text, asked again for the same addresses all through a
    run (each section's citations are matched against every gathered source)."""
    url = url.strip()
    if url.startswith("//"):
        url = "https:" + url
    elif "://" not in url:
        url = "https://" + url
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unclosed IPv6 bracket: nothing sensible to normalise
        return url
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    if host.startswith("www."):
        host = host[4:]
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None and port == _DEFAULT_PORTS.get(scheme):
        port = None
    if scheme == "http":
        scheme = "https"
        if port == 443:
            port = None
    netloc = host if port is None else f"{host}:{port}"

    path = _upper_escapes(parts.path) or "/"
    if len(path) > 1:
        path = path.rstrip("/") or "/"

    pairs = [p for p in parts.query.split("&") if p]
    kept = sorted(_upper_escapes(p) for p in pairs if not _is_tracking(p))
    query = "&".join(kept)
    return f"{scheme}://{netloc}{path}" + (f"?{query}" if query else "")


def domain_of(url: str) -> str:
    """The site a URL belongs to, for display and per-site limits: "news.example.com"."""
    if "://" not in url and not url.startswith("//"):
        url = "//" + url
    try:
        host = (urlsplit(url.strip()).hostname or "").rstrip(".")
    except ValueError:
        return ""
    if any(c.isspace() for c in host):
        return ""
    return host[4:] if host.startswith("www.") else host


def _is_tracking(pair: str) -> bool:
    key = unquote_plus(pair.split("=", 1)[0]).lower()
    return key.startswith("utm_") or key in _TRACKING_KEYS


def _upper_escapes(text: str) -> str:
    return re.sub(r"%[0-9a-fA-F]{2}", lambda m: m.group(0).upper(), text)


# --- safety check ---------------------------------------------------------------------------

def check_url(url: str, *, allow_private: bool, resolver: Resolver | None = None,
              allowed_ports: Collection[int] = ()) -> list[str]:
    """Refuse (FetchRefused) any URL we must not connect to; return the addresses checked.

    The port is checked before the host is resolved: a refused port costs no DNS lookup and
    opens no connection. `allowed_ports` are allowed besides WEB_PORTS.

    The URL is parsed the way httpx will parse it for the connection, and again with urllib;
    if the two disagree about the host, or there is any user-info part ("a@b"), the host is
    ambiguous and we refuse rather than guess which one a server or proxy would pick.
    """
    try:
        parsed = httpx.URL(url)
    except Exception:  # noqa: BLE001 - httpx raises InvalidURL, idna its own errors
        raise FetchRefused(_safe(f"refused: not a valid web address ({url[:100]})")) from None
    scheme = parsed.scheme.lower()
    if scheme not in ("http", "https"):
        raise FetchRefused(
            f"refused: only http and https pages can be read (this is {scheme or 'no'} address)"
        )
    host = parsed.raw_host.decode("ascii")  # IDNA-encoded: the name that will be resolved
    if not host:
        raise FetchRefused(_safe(f"refused: the address has no host ({url[:100]})"))
    authority = url.split("://", 1)[-1].split("/", 1)[0]
    if parsed.userinfo or "@" in authority or "\\" in authority:
        raise FetchRefused(
            "refused: the address contains a user name or '@' or '\\', which can hide the real host"
        )
    if _ascii_host(url) != host.rstrip(".").lower():
        raise FetchRefused(_safe(f"refused: the host of {url[:100]} is ambiguous"))
    check_port(parsed.port or _DEFAULT_PORTS[scheme], allowed_ports)
    return check_host(host, allow_private=allow_private, resolver=resolver)


def _ascii_host(url: str) -> str | None:
    """The host as urllib sees it, IDNA-encoded the way httpx does, to compare the two parsers."""
    try:
        host = urlsplit(url).hostname or ""
        if host.isascii():
            return host.rstrip(".").lower()
        bracketed = f"[{host}]" if ":" in host else host
        return httpx.URL(f"http://{bracketed}/").raw_host.decode("ascii").rstrip(".").lower()
    except Exception:  # noqa: BLE001 - unparseable means ambiguous
        return None


def check_port(port: int, allowed_ports: Collection[int] = ()) -> None:
    """Refuse a port that is not a web port nor one the person allowed."""
    if port in WEB_PORTS or port in allowed_ports:
        return
    raise FetchRefused(
        f"refused: port {port} is not a web port (80, 443, 8080 and 8443 are read; "
        "DEEP_RESEARCH_ALLOWED_PORTS allows more)"
    )


def check_host(host: str, *, allow_private: bool, resolver: Resolver | None = None) -> list[str]:
    """Resolve a host and refuse unless every address is one we may connect to.

    Also used at connection time by the fetcher, so what is checked is what is connected to.
    """
    name = host.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if not name:
        raise FetchRefused("refused: the address has no host")
    if name in _METADATA_NAMES:
        raise FetchRefused(_safe(f"refused: {name} is a cloud metadata service"))

    literal = parse_ip(name)
    if literal is not None:
        addresses = [literal]
    else:
        addresses = [_parse_resolved(a, name) for a in _resolve(name, resolver)]
    for address in addresses:
        kind = refusal_kind(address, allow_private=allow_private)
        if kind is not None:
            source = "" if literal is not None else f" (from {name})"
            raise FetchRefused(_safe(f"refused: address {address}{source} is {kind}"))
    return list(dict.fromkeys(str(a) for a in addresses))


def parse_ip(host: str) -> IPAddress | None:
    """An IP literal in any spelling the C library accepts, or None for a host name.

    A host whose last label is numeric is an IPv4 spelling (as browsers decide); if it does not
    parse as one we refuse, since we cannot know what a resolver would make of it.
    """
    host = host.strip().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            raise FetchRefused(_safe(f"refused: {host} is not a valid IPv6 address")) from None
    labels = host.split(".")
    if not _is_number(labels[-1]):
        return None
    value = _inet_aton(labels)
    if value is None:
        raise FetchRefused(_safe(f"refused: {host} is not a valid address"))
    return ipaddress.IPv4Address(value)


def refusal_kind(address: IPAddress, *, allow_private: bool) -> str | None:
    """Why we will not connect to this address ("private", "loopback"...), or None if we will."""
    if address in _METADATA_IPS:
        return "a cloud metadata service"
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id:
            address = ipaddress.IPv6Address(str(address).split("%", 1)[0])
            if address in _METADATA_IPS:
                return "a cloud metadata service"
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            kind = refusal_kind(embedded, allow_private=allow_private)
            return None if kind is None else f"{kind} (IPv4 {embedded} inside IPv6)"
    if address.is_unspecified:
        return "unspecified"
    if address.is_multicast:
        return "multicast"
    for kind, net in _PRIVATE_NETS:
        if address.version == net.version and address in net:
            return None if allow_private else kind
    if address.is_reserved:
        return "reserved"
    if not address.is_global:
        return "not a public address"
    return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64 or (address in _IPV4_COMPAT and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _is_number(label: str) -> bool:
    if label[:2].lower() == "0x":
        return all(c in "0123456789abcdefABCDEF" for c in label[2:])
    return label.isdigit() and label.isascii()


def _inet_aton(labels: list[str]) -> int | None:
    """inet_aton(3): 1-4 parts, each decimal, 0x-hex or 0-octal; the last fills the rest."""
    if not 1 <= len(labels) <= 4:
        return None
    numbers = []
    for label in labels:
        if not _is_number(label):
            return None
        if label[:2].lower() == "0x":
            numbers.append(int(label[2:] or "0", 16))
        elif len(label) > 1 and label.startswith("0"):
            if any(c not in "01234567" for c in label):
                return None
            numbers.append(int(label, 8))
        else:
            numbers.append(int(label))
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (4 - len(head)):
        return None
    value = 0
    for n in head:
        value = value * 256 + n
    return (value << (8 * (4 - len(head)))) + last


def _resolve(name: str, resolver: Resolver | None) -> list[str]:
    try:
        if resolver is not None:
            found = list(resolver(name))
        else:
            infos = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
            found = [str(info[4][0]) for info in infos]
    except (OSError, UnicodeError) as exc:
        raise FetchError(_safe(f"could not find the host {name}")) from exc
    if not found:
        raise FetchError(_safe(f"could not find the host {name}"))
    return found


def _parse_resolved(text: str, name: str) -> IPAddress:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        raise FetchRefused(_safe(f"refused: {name} resolved to something that is not an address")) from None


def _safe(message: str) -> str:
    return redact(message)
