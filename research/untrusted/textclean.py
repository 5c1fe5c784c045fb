"""Invisible formatting controls in text we keep: what goes, and what must stay.

Model answers are untrusted like web pages: a model that read a hostile page (or was asked
to) can write zero-width characters, bidi overrides and Unicode tag characters that hide or
reorder text in the report, the Markdown and the PDF. `strip_hidden_controls` removes them
from every text the store keeps (see `storage.base.StoreBase.clean_content`), once, at the door.

Why at the store and not in the LLM seam (`research.llm.base.RoleLLM`): the store is the one
door every model text passes on its way to a report or an export, whichever road it took:
answers through `RoleLLM`, JSON string values that spelled a control as an escape
(`"\\u202e"`, invisible in the raw answer, real after parsing), and hosted deep-research
reports that never go through `RoleLLM`. Exports are rebuilt from the store, so what the
store keeps is what the person sees.

Unlike `research.core.prompts.strip_invisible` (which cleans text before a model reads it and may
be blunt), this keeps what carries meaning in real writing:
- ZWJ inside emoji sequences (👩‍💻, 🏳️‍🌈) and ZWJ/ZWNJ between letters of scripts that shape
  with them (Persian "می‌خواهم", Indic conjuncts);
- emoji tag sequences (the flag of Scotland is U+1F3F4 + tag letters + U+E007F);
- Arabic and Hebrew letters, and the directional marks LRM, RLM and ALM, which only nudge
  neutral characters; the overrides, embeddings and isolates that can reorder whole runs go.
"""

from __future__ import annotations

import re
import unicodedata

# Always removed: zero-width space, word joiner and invisible operators, BOM, bidi embeddings,
# overrides and isolates, the deprecated format controls, and tag characters.
_HIDDEN = "\u200b\u2060-\u2064\ufeff\u202a-\u202e\u2066-\u2069\u206a-\u206f\U000e0000-\U000e007f"
_JOINERS = "\u200c\u200d"  # ZWNJ, ZWJ: kept only where they shape text (see _keep_joiner)
_EMOJI_FLAG = "\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{2,6}\U000e007f"
_PATTERN = re.compile(f"(?P<flag>{_EMOJI_FLAG})|[{_HIDDEN}]|(?P<joiner>[{_JOINERS}])")
_EMOJI_TAIL = "\ufe0f\U0001f3fb\U0001f3fc\U0001f3fd\U0001f3fe\U0001f3ff"  # VS16, skin tones
# Scripts whose letters join or form conjuncts with ZWJ/ZWNJ: Arabic, Syriac, Thaana, N'Ko and
# the other Arabic-script blocks; the Indic scripts through Sinhala; Myanmar; Khmer and
# Mongolian; Arabic presentation forms.
_SHAPING = ((0x0600, 0x08FF), (0x0900, 0x0DFF), (0x1000, 0x109F), (0x1780, 0x18AF),
            (0xA8E0, 0xA8FF), (0xFB50, 0xFDFF), (0xFE70, 0xFEFE))


# Any character `_PATTERN` can match starts with or holds one of these (a flag holds tag
# characters): a text without them is returned as it is, after one quick scan (`_PATTERN` is
# tried at every position, which costs far more on a long text).
_ANY = re.compile(f"[{_HIDDEN}{_JOINERS}]")


def strip_hidden_controls(text: str) -> str:
    """`text` without invisible formatting controls that could hide or reorder what is shown."""
    if text.isascii() or not _ANY.search(text):
        return text
    return _PATTERN.sub(lambda m: _replacement(m, text), text)


def _replacement(match: re.Match[str], text: str) -> str:
    if match.group("flag"):
        return match.group(0)
    if match.group("joiner") and _keep_joiner(text, match.start()):
        return match.group(0)
    return ""


def _keep_joiner(text: str, at: int) -> bool:
    """A joiner between two emoji (ZWJ) or between two letters of a shaping script."""
    if at == 0 or at + 1 >= len(text):
        return False
    before, after = text[at - 1], text[at + 1]
    if text[at] == "\u200d" and _emoji(after) and (_emoji(before) or before in _EMOJI_TAIL):
        return True
    return _shaping_letter(before) and _shaping_letter(after)


def _emoji(char: str) -> bool:
    return unicodedata.category(char) == "So"


def _shaping_letter(char: str) -> bool:
    code = ord(char)
    return (unicodedata.category(char)[0] in "LM"
            and any(low <= code <= high for low, high in _SHAPING))
