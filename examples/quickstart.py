"""Score a page you load with Playwright: `python examples/quickstart.py [URL]`.

Needs a daemon (`webshepherd serve`, at $WEBSHEPHERD_URL or ws://127.0.0.1:8765/v1; one still
starting is waited for)
and the built extension (`make extension`), whose capture gives the page's text exactly as the
model was trained on it. Prints the page's text, each candidate's reward and the judge's pick.
The default URL is the README's local page (`python -m http.server 8070 --directory
examples/page`).

With a person paired (a paired `webshepherd tui` or extension connected, the default mode
`ask`), a score whose best reward is below the daemon's threshold (0.3) waits for that person:
the tiny judge's rewards on a page it does not know are low, so the script waits until they
decide, or `--approval-timeout` (120 s) passes and `--approval-default` (reject) applies.
With nobody paired, or `serve --mode watch`, nothing waits.
"""

# --- README ---
import sys

from playwright.sync_api import sync_playwright
from webshepherd.integrations.playwright import launch, page_observation
from webshepherd.protocol.client.script import one_line_errors
from webshepherd.protocol.client.sync import Client

one_line_errors()  # no daemon, a wrong token: the error's one line, no traceback (-v: with it)
url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8070/"
with sync_playwright() as pw, Client() as client:  # the daemon at $WEBSHEPHERD_URL or the default
    page = launch(pw).new_page()  # Chromium with the extension: its capture, no pairing needed
    page.goto(url)
    observation = page_observation(page)  # the AX tree as BrowserGym writes it, "[bid] role 'name'"
    print(observation.axtree[:300])
    session = client.start_session("Find out what this page is about", observation=observation)
    candidates = [("Read on: scroll down.", "scroll(0, 300)"), ("Leave the page.", "go_back()")]
    scored = session.score(candidates)  # one reward in [0, 1] per candidate (None: no verdict)
    for (_, action), result in zip(candidates, scored.results, strict=True):
        reward = "none" if result.reward is None else f"{result.reward:.2f}"
        print(f"{action:16} reward {reward}  feedback {result.feedback[:60]!r}")
    print("best:", candidates[scored.best][1] if scored.best is not None else None)
    session.end("success")
# --- README ---
