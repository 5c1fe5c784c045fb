"""Model answers laced with invisible formatting controls (the stand-in's `hidden` fault).

A model that read a hostile page, or was told to, can write characters that show as nothing
or reorder what is shown. `lace` hides them in every sentence of the writer's report and in
every longer string of a structured answer; the structured answer is sent with JSON escapes
(`\\u202e`), so the controls only appear once the engine has parsed it. Legitimate text that
looks similar rides along (an emoji ZWJ sequence, Arabic and Persian words with ZWNJ) and
must survive the cleaning.
"""

from __future__ import annotations

import json
from typing import Any

# (what, text) for each kind of control the engine must remove.
HIDDEN = (
    ("zero-width space", "\u200b"),
    ("zero-width non-joiner", "\u200c"),
    ("zero-width joiner", "\u200d"),
    ("word joiner", "\u2060"),
    ("byte-order mark", "\ufeff"),
    ("right-to-left override", "\u202e"),
    ("left-to-right embedding", "\u202a"),
    ("pop directional formatting", "\u202c"),
    ("right-to-left isolate", "\u2067"),
    ("pop directional isolate", "\u2069"),
    ("tag characters", "".join(chr(0xE0000 + ord(c)) for c in "obey me")),
)
HIDDEN_CHARS = frozenset(ch for _, text in HIDDEN for ch in text)
# Survives the cleaning: a woman technologist (ZWJ between emoji), Arabic, Persian with ZWNJ.
LEGIT = "\U0001f469\u200d\U0001f4bb \u0645\u0631\u062d\u0628\u0627 \u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"


def lace_text(text: str) -> str:
    """Every line that has words gets a control after its first word, in turn."""
    out = []
    for i, line in enumerate(text.split("\n")):
        head, sep, tail = line.partition(" ")
        out.append(f"{head}{sep}{HIDDEN[i % len(HIDDEN)][1]}{tail}" if sep and tail else line)
    return "\n".join(out)


def lace_report(text: str) -> str:
    """The writer's report: controls in its lines, and the legitimate text in its title."""
    lines = lace_text(text).split("\n")
    if lines and lines[0].startswith("# "):
        lines[0] += f" {LEGIT}"
    return "\n".join(lines)


def lace_json(answer: str) -> str:
    """A structured answer with controls inside its longer strings, written as JSON escapes."""
    try:
        payload = json.loads(answer)
    except ValueError:
        return answer
    counter = iter(range(10**9))
    return json.dumps(_walk(payload, counter), ensure_ascii=True)


def _walk(value: Any, counter: Any) -> Any:
    if isinstance(value, dict):
        return {k: _walk(v, counter) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, counter) for v in value]
    if isinstance(value, str) and value.count(" ") >= 2:  # prose, not ids or verdict names
        head, _, tail = value.partition(" ")
        return f"{head} {HIDDEN[next(counter) % len(HIDDEN)][1]}{tail}"
    return value
