"""`python -m research serve`: the HTTP API under /v1 (issue 34), for other programs and agents.

- `app`: the FastAPI application (`create_app`), its error shape and size bound;
- `runs`, `events`, `documents`: the routes (a run's life and results, its event stream,
  the documents library); `models`: what they take and give, which the OpenAPI document shows;
- `auth`: bearer tokens, the person a token acts as, and the per-token rate limit (one
  dependency, and one ASGI wrapper for apps mounted beside the routes: `mounts`);
- `door`: the one module that reaches a run's life (start, resume, pause, cancel, status);
- `callbacks`: the signed POST a run started with `callback_url` gets when it ends or waits;
- `commands`: `python -m research serve` and `python -m research token create|list|revoke`.

Nothing here imports Streamlit.
"""
