"""Canonical URLs and the address check that guards every fetch (no network: resolvers are fakes)."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest

from research.core.errors import FetchError, FetchRefused
from research.untrusted.urls import canonical_url, check_url, domain_of, parse_ip


def resolver(table: dict[str, list[str]]) -> Callable[[str], list[str]]:
    def resolve(host: str) -> list[str]:
        if host not in table:
            raise OSError(f"unknown host {host}")
        return table[host]
    return resolve


PUBLIC = resolver({"news.example": ["93.184.216.34"]})


# --- canonical_url ------------------------------------------------------------------------------

@pytest.mark.parametrize("url, expected", [
    ("https://www.Example.COM/a/b/", "https://example.com/a/b"),
    ("http://example.com/a", "https://example.com/a"),
    ("HTTP://EXAMPLE.COM:80/", "https://example.com/"),
    ("https://example.com:443", "https://example.com/"),
    ("https://example.com:8443/x/", "https://example.com:8443/x"),
    ("https://example.com/page#section-2", "https://example.com/page"),
    ("https://example.com/p?utm_source=tw&utm_Medium=x&b=2&a=1&fbclid=abc&gclid=1",
     "https://example.com/p?a=1&b=2"),
    ("https://example.com/p?mc_cid=1&mc_eid=2&ref=hn&ref_src=twsrc&q=x", "https://example.com/p?q=x"),
    ("https://example.com/?utm_campaign=spring", "https://example.com/"),
    ("https://example.com/Case/Sensitive%2f", "https://example.com/Case/Sensitive%2F"),
    ("https://example.com/search?q=a+b&page=2", "https://example.com/search?page=2&q=a+b"),
    ("example.com/path/", "https://example.com/path"),
])
def test_canonical_url(url: str, expected: str) -> None:
    assert canonical_url(url) == expected


def test_http_and_https_of_the_same_page_are_one_url() -> None:
    assert canonical_url("http://www.example.com/x?b=1&a=2") == canonical_url(
        "https://example.com/x/?a=2&b=1#top")


def test_domain_of() -> None:
    assert domain_of("https://www.News.Example.com:8080/a?b") == "news.example.com"
    assert domain_of("http://[2001:db8::1]/x") == "2001:db8::1"
    assert domain_of("not a url") == ""


# --- check_url: schemes and tricks --------------------------------------------------------------

@pytest.mark.parametrize("url", [
    "file:///etc/passwd",
    "ftp://news.example/file.txt",
    "javascript:alert(1)",
    "data:text/html,<p>hi</p>",
    "gopher://news.example/",
    "http:///nohost",
])
def test_only_http_and_https_with_a_host(url: str) -> None:
    with pytest.raises(FetchRefused, match="refused"):
        check_url(url, allow_private=True, resolver=PUBLIC)


@pytest.mark.parametrize("url", [
    "http://user:pass@news.example/",
    "http://news.example@10.0.0.5/",
    "http://10.0.0.5\\@news.example/",
    "http://news.example\\@10.0.0.5/",
    "http://a@b@news.example/",
])
def test_user_info_tricks_are_refused(url: str) -> None:
    with pytest.raises(FetchRefused, match="refused"):
        check_url(url, allow_private=False, resolver=PUBLIC)


def test_public_host_passes_and_returns_checked_addresses() -> None:
    assert check_url("https://news.example/a", allow_private=False, resolver=PUBLIC) == [
        "93.184.216.34"]
    assert check_url("http://93.184.216.34:8080/", allow_private=False) == ["93.184.216.34"]


# --- check_url: addresses -----------------------------------------------------------------------

@pytest.mark.parametrize("host", [
    "127.0.0.1", "127.1", "2130706433", "0x7f000001", "0x7F.0.0.1", "0177.0.0.1", "0177.1",
    "127.0.0.1.", "127.000.000.001",
    "10.0.0.5", "012.0.0.5", "167772165", "172.16.3.4", "192.168.1.1", "0xc0a80101",
    "169.254.10.1", "100.64.0.1", "0.0.0.0", "0", "224.0.0.1", "240.0.0.1",
    "255.255.255.255", "192.0.2.10",
    "[::1]", "[::]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::ffff:10.0.0.5]",
    "[::ffff:169.254.169.254]", "[::127.0.0.1]", "[fc00::1]", "[fd12:3456::1]", "[fe80::1]",
    "[ff02::1]", "[2002:7f00:1::]", "[64:ff9b::10.0.0.5]",
])
def test_every_spelling_of_a_non_public_address_is_refused(host: str) -> None:
    with pytest.raises(FetchRefused, match="refused"):
        check_url(f"http://{host}/", allow_private=False)


@pytest.mark.parametrize("spelling", ["2130706433", "0x7f000001", "0177.0.0.1", "127.1",
                                      "0x7f.1", "10.1", "1.2.3.4", "4294967295"])
def test_ipv4_spellings_match_inet_aton(spelling: str) -> None:
    assert str(parse_ip(spelling)) == socket.inet_ntoa(socket.inet_aton(spelling))


@pytest.mark.parametrize("host", ["256.0.0.1", "08.0.0.1", "1.2.3.4.5", "0x1g.1"])
def test_numeric_hosts_that_are_not_addresses_are_refused(host: str) -> None:
    with pytest.raises(FetchRefused):
        check_url(f"http://{host}/", allow_private=True, resolver=PUBLIC)


def test_reason_names_the_address_and_the_kind() -> None:
    with pytest.raises(FetchRefused, match=r"^refused: address 10\.0\.0\.5 is private$"):
        check_url("http://10.0.0.5/admin", allow_private=False)
    with pytest.raises(FetchRefused, match="127.0.0.1 is loopback"):
        check_url("http://0x7f000001/", allow_private=False)


def test_a_name_resolving_to_a_private_address_is_refused() -> None:
    inside = resolver({"intranet.example": ["10.1.2.3"]})
    with pytest.raises(FetchRefused, match=r"10\.1\.2\.3 \(from intranet\.example\) is private"):
        check_url("https://intranet.example/", allow_private=False, resolver=inside)


def test_a_name_resolving_to_public_and_private_is_refused() -> None:
    mixed = resolver({"mixed.example": ["93.184.216.34", "192.168.0.10"]})
    with pytest.raises(FetchRefused, match="192.168.0.10"):
        check_url("https://mixed.example/", allow_private=False, resolver=mixed)


def test_resolver_answers_are_checked_in_every_spelling() -> None:
    mapped = resolver({"v6.example": ["2606:2800:220:1::1", "::ffff:127.0.0.1"]})
    with pytest.raises(FetchRefused, match="loopback"):
        check_url("https://v6.example/", allow_private=False, resolver=mapped)


def test_unknown_host_is_a_fetch_error_not_a_crash() -> None:
    with pytest.raises(FetchError, match="could not find the host"):
        check_url("https://nowhere.example/", allow_private=False, resolver=PUBLIC)


def test_allow_private_permits_loopback_private_and_link_local() -> None:
    for host in ["127.0.0.1", "2130706433", "10.0.0.5", "192.168.1.1", "169.254.1.1", "[::1]",
                 "[fd12::1]", "[fe80::1]"]:
        assert check_url(f"http://{host}/", allow_private=True)
    local = resolver({"localhost": ["127.0.0.1", "::1"]})
    assert check_url("http://localhost:8080/", allow_private=True, resolver=local) == [
        "127.0.0.1", "::1"]


@pytest.mark.parametrize("url", [
    "http://169.254.169.254/latest/meta-data/",
    "http://2852039166/",                       # 169.254.169.254 as one number
    "http://0xa9.0xfe.0xa9.0xfe/",
    "http://[fd00:ec2::254]/",
    "http://[::ffff:169.254.169.254]/",
    "http://100.100.100.200/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://METADATA.google.internal./",
])
def test_cloud_metadata_is_refused_even_when_private_is_allowed(url: str) -> None:
    with pytest.raises(FetchRefused, match="metadata"):
        check_url(url, allow_private=True, resolver=PUBLIC)


def test_a_name_resolving_to_metadata_is_refused_even_when_private_is_allowed() -> None:
    sneaky = resolver({"sneaky.example": ["169.254.169.254"]})
    with pytest.raises(FetchRefused, match="metadata"):
        check_url("http://sneaky.example/", allow_private=True, resolver=sneaky)


@pytest.mark.parametrize("host", ["0.0.0.0", "224.0.0.1", "240.0.0.1"])
def test_unspecified_multicast_reserved_stay_refused_when_private_is_allowed(host: str) -> None:
    with pytest.raises(FetchRefused):
        check_url(f"http://{host}/", allow_private=True)


def test_international_names_are_resolved_in_their_idna_form() -> None:
    asked: list[str] = []

    def record(host: str) -> list[str]:
        asked.append(host)
        return ["93.184.216.34"]

    check_url("https://Bücher.example/x", allow_private=False, resolver=record)
    check_url("https://xn--bcher-kva.example/", allow_private=False, resolver=record)
    assert asked == ["xn--bcher-kva.example", "xn--bcher-kva.example"]
