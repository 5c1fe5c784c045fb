"""`python -m research serve`: the HTTP API under /v1 (issue 34), for other programs and agents.

- `app`: the FastAPI application (`create_app`) and its size bound; `errors`: the one error
  shape, `{"error": {"code", "message"}}`;
- `runs`, `events`, `documents`: the routes (a run's life and results, its event stream,
  the documents library); `models`: what they take and give, which the OpenAPI document shows;
  `status`: a run's status as the routes and callbacks give it;
- `auth`: bearer tokens, the person a token acts as, and the per-token rate limit (one
  dependency, and one ASGI wrapper for apps mounted beside the routes: `mounts`); `tokens`:
  making a token (shown once, stored as a hash) and its callback signing secret;
- `context`, `settings`: what every route shares, and the server's bounds from the settings;
- `door`: the one module that reaches a run's life (start, resume, pause, cancel, status);
- `callbacks`: the signed POST a run started with `callback_url` gets when it ends or waits;
- `commands`: `python -m research serve` and `python -m research token create|list|revoke`.

Nothing here imports Streamlit.
"""
