"""What kind of source a page is, and simple signals of how far to trust it.

Derived from facts we hold, never from a model's guess: the address (domain and path), the
search provider that found it (arXiv, Semantic Scholar) and the page's own metadata (a date, an
author). The writer sees the kind so it can prefer stronger sources; the Sources tab filters on
it; the Markdown export lists it. A domain we do not recognise stays "unknown" rather than
being guessed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from urllib.parse import urlsplit

from research.core.records import Source

KINDS: tuple[str, ...] = ("peer-reviewed paper", "preprint", "government", "company", "news",
                          "reference", "blog", "forum", "unknown")

# Rough order of strength, strongest first: how the writer is told to weigh them.
STRONGER_FIRST: tuple[str, ...] = ("peer-reviewed paper", "government", "reference", "preprint",
                                   "news", "company", "blog", "forum", "unknown")

SIGNAL_WORDS: tuple[str, ...] = ("academic domain", "official domain", "dated", "author named")

_PEER_REVIEWED = (
    "doi.org", "nature.com", "sciencedirect.com", "springer.com", "wiley.com", "tandfonline.com",
    "jstor.org", "pubmed.ncbi.nlm.nih.gov", "ncbi.nlm.nih.gov", "dl.acm.org", "ieeexplore.ieee.org",
    "science.org", "cell.com", "thelancet.com", "nejm.org", "bmj.com", "plos.org",
    "frontiersin.org", "mdpi.com", "academic.oup.com", "cambridge.org", "sagepub.com",
    "aclanthology.org", "jamanetwork.com", "pnas.org", "iop.org", "acs.org", "aps.org",
    "elifesciences.org", "biomedcentral.com", "royalsocietypublishing.org",
)
_PREPRINT = ("arxiv.org", "biorxiv.org", "medrxiv.org", "ssrn.com", "osf.io", "preprints.org",
             "researchsquare.com", "chemrxiv.org", "hal.science", "openreview.net")
_GOVERNMENT_DOMAINS = ("europa.eu", "who.int", "un.org", "oecd.org", "worldbank.org", "imf.org",
                       "iea.org", "irena.org", "gov.uk", "gouv.fr", "gc.ca", "bund.de",
                       "admin.ch", "govt.nz")
_GOVERNMENT_LABELS = ("gov", "mil", "int")   # as the last label, or second-level: .gov.au
_ACADEMIC_LABELS = ("edu", "ac")             # .edu, .ac.uk, .edu.au
_REFERENCE = ("wikipedia.org", "britannica.com", "wiktionary.org", "developer.mozilla.org",
              "docs.python.org", "readthedocs.io", "w3.org", "ietf.org", "iso.org",
              "merriam-webster.com", "stanford.edu/entries", "plato.stanford.edu")
_NEWS = ("reuters.com", "apnews.com", "bbc.co.uk", "bbc.com", "nytimes.com", "theguardian.com",
         "washingtonpost.com", "ft.com", "wsj.com", "economist.com", "bloomberg.com", "cnn.com",
         "npr.org", "aljazeera.com", "lemonde.fr", "spiegel.de", "techcrunch.com", "theverge.com",
         "wired.com", "arstechnica.com", "axios.com", "politico.com", "forbes.com",
         "cnbc.com", "latimes.com", "nzz.ch", "zeit.de", "elpais.com", "lefigaro.fr")
_BLOG = ("medium.com", "substack.com", "wordpress.com", "blogspot.com", "dev.to", "hashnode.dev",
         "tumblr.com", "ghost.io", "mirror.xyz")
_FORUM = ("reddit.com", "stackoverflow.com", "stackexchange.com", "quora.com",
          "news.ycombinator.com", "superuser.com", "serverfault.com", "discourse.org")
_COMPANY_TLDS = ("com", "io", "ai", "co", "biz", "inc", "tech", "app")
_PAPER_PROVIDERS = {"semantic scholar": "peer-reviewed paper", "semanticscholar":
                    "peer-reviewed paper", "arxiv": "preprint"}


@dataclass(frozen=True)
class Credibility:
    kind: str
    signals: tuple[str, ...]   # "academic domain", "official domain", "dated", "author named"

    def label(self) -> str:
        """`kind; signal, signal` for one line of a source list."""
        return f"{self.kind}; {', '.join(self.signals)}" if self.signals else self.kind


def _host(url: str) -> str:
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""
    return host.removeprefix("www.")


def _matches(host: str, path: str, domains: tuple[str, ...]) -> bool:
    """True when `host` is one of `domains` or a subdomain of one ("stanford.edu/entries"
    style entries also need the path to start that way)."""
    for entry in domains:
        domain, _, prefix = entry.partition("/")
        if (host == domain or host.endswith("." + domain)) and path.startswith("/" + prefix):
            return True
    return False


def _labels(host: str) -> list[str]:
    return host.split(".") if host else []


def is_academic_domain(host: str) -> bool:
    labels = _labels(host)
    return (len(labels) >= 2 and (labels[-1] == "edu" or labels[-2] in _ACADEMIC_LABELS)
            or _matches(host, "/", _PEER_REVIEWED + _PREPRINT))


def is_official_domain(host: str) -> bool:
    labels = _labels(host)
    return (len(labels) >= 2 and (labels[-1] in _GOVERNMENT_LABELS
                                  or labels[-2] in _GOVERNMENT_LABELS)
            or _matches(host, "/", _GOVERNMENT_DOMAINS))


@functools.lru_cache(maxsize=4096)
def source_kind(url: str, provider: str = "") -> str:
    """The kind, from the address first (it is the firmest fact), then the provider (cached:
    a pure function, asked for every source each time a source list is built)."""
    host = _host(url)
    try:
        path = urlsplit(url).path or "/"
    except ValueError:
        path = "/"
    if _matches(host, path, _PREPRINT):
        return "preprint"
    if _matches(host, path, _PEER_REVIEWED):
        return "peer-reviewed paper"
    if is_official_domain(host):
        return "government"
    if _matches(host, path, _REFERENCE):
        return "reference"
    if _matches(host, path, _FORUM) or host.split(".")[0] in ("forum", "forums", "community"):
        return "forum"
    if _matches(host, path, _NEWS) or host.startswith("news."):
        return "news"
    if (_matches(host, path, _BLOG) or host.startswith("blog.") or "/blog/" in path.lower()
            or path.lower().startswith("/blog")):
        return "blog"
    by_provider = _PAPER_PROVIDERS.get(provider.strip().lower())
    if by_provider:
        return by_provider
    labels = _labels(host)
    if len(labels) >= 2 and labels[-1] in _COMPANY_TLDS and not is_academic_domain(host):
        return "company"
    return "unknown"


def assess(url: str, provider: str = "", *, published: str | None = None,
           author: str | None = None) -> Credibility:
    """Kind and signals for one source."""
    host = _host(url)
    signals: list[str] = []
    if is_academic_domain(host):
        signals.append("academic domain")
    if is_official_domain(host):
        signals.append("official domain")
    if published:
        signals.append("dated")
    if author and author.strip():
        signals.append("author named")
    return Credibility(source_kind(url, provider), tuple(signals))


def kind_of(source: Source) -> str:
    """The stored kind, or (for a source stored before kinds existed) the kind its address
    and provider give."""
    stored = source.source_kind
    if stored and stored != "unknown":
        return stored
    return source_kind(source.url, source.provider)
