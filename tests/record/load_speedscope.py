"""load_speedscope.py — opens a speedscope profile in the speedscope web app
(the release shipped in the speedscope npm package) in headless Chromium,
driven over the Chrome DevTools Protocol, checks that the app shows the
profile (the names given on the command line appear in its Sandwich view's
function table, and the app reports no import error) and saves a
screenshot of its Left Heavy flame graph.

usage: load_speedscope.py SPEEDSCOPE_RELEASE_DIR PROFILE.json OUT.png NAME [NAME...]
       [--size WxH]
Exit status 0 when every NAME is shown; 1 with a one-line reason otherwise
(2 when Chromium or python3-websocket is missing)."""
import base64
import functools
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

LOAD_TIMEOUT_S = 60
NAMES_TIMEOUT_S = 10   # the Sandwich table lists every function at once; a name missing after this is not there
DEVTOOLS_TIMEOUT_S = 30
POLL_S = 0.2
SETTLE_S = 1.0
DEFAULT_SIZE = (1400, 800)
CHROMIUM = ("chromium", "chromium-browser")


class Fail(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(directory):
    handler = functools.partial(QuietHandler, directory=directory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Page:
    """One page of a headless Chromium, spoken to over its DevTools socket."""

    def __init__(self, ws_url):
        import websocket
        self.ws = websocket.create_connection(ws_url, timeout=DEVTOOLS_TIMEOUT_S)
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise Fail(f"{method}: {msg['error'].get('message')}")
                return msg.get("result", {})

    def js(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        return r.get("result", {}).get("value")

    def wait_for(self, expr, what):
        deadline = time.monotonic() + LOAD_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.js(expr):
                return
            time.sleep(POLL_S)
        raise Fail(f"speedscope did not show {what} within {LOAD_TIMEOUT_S} s")


# Clicks the view tab with this label (its text is an emoji, then the label).
CLICK = """(() => { const want = %s;
  const el = [...document.querySelectorAll('div, span, button, a')]
    .find(e => e.textContent.replace(/[^A-Za-z ]/g, '').trim() === want);
  if (!el) return false; el.click(); return true; })()"""


def run(release, profile, png, names, size):
    exe = next((shutil.which(c) for c in CHROMIUM if shutil.which(c)), None)
    if exe is None:
        raise SystemExit("load_speedscope: chromium not found") from None
    site = tempfile.mkdtemp(prefix="fp-speedscope-")
    chrome = None
    try:
        shutil.copytree(release, os.path.join(site, "app"))
        shutil.copy(profile, os.path.join(site, "app", "profile.json"))
        server = serve(site)
        base = f"http://127.0.0.1:{server.server_address[1]}/app/"
        port = free_port()
        chrome = subprocess.Popen([exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                   f"--remote-debugging-port={port}", f"--user-data-dir={site}/chrome",
                                   f"--window-size={size[0]},{size[1]}", "about:blank"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + DEVTOOLS_TIMEOUT_S
        targets = None
        while time.monotonic() < deadline and not targets:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as r:
                    targets = [t for t in json.load(r) if t.get("type") == "page"]
            except OSError:
                time.sleep(POLL_S)
        if not targets:
            raise Fail("Chromium's DevTools endpoint did not come up")
        page = Page(targets[0]["webSocketDebuggerUrl"])
        page.call("Page.enable")
        page.call("Page.navigate", url=base + "index.html#profileURL=" + base + "profile.json")
        # Loaded: the view tabs are there and the import did not fail.
        page.wait_for("document.body && document.body.innerText.includes('Sandwich')", "its views")
        time.sleep(SETTLE_S)
        text = page.js("document.body.innerText") or ""
        for bad in ("Something went wrong", "Unrecognized format", "Failed to"):
            if bad in text:
                raise Fail(f"speedscope says: {bad} ...")
        if not page.js(CLICK % json.dumps("Sandwich")):
            raise Fail("no Sandwich tab to click")
        missing = names
        deadline = time.monotonic() + NAMES_TIMEOUT_S
        while missing and time.monotonic() < deadline:
            text = page.js("document.body.innerText") or ""
            missing = [n for n in names if n not in text]
            time.sleep(POLL_S)
        if missing:
            raise Fail(f"the Sandwich view does not list {', '.join(missing)}")
        if not page.js(CLICK % json.dumps("Left Heavy")):
            raise Fail("no Left Heavy tab to click")
        time.sleep(SETTLE_S)
        shot = page.call("Page.captureScreenshot", format="png")
        with open(png, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        server.shutdown()
    finally:
        if chrome:
            chrome.kill()
            chrome.wait()
        shutil.rmtree(site, ignore_errors=True)


def main():
    args = sys.argv[1:]
    size = DEFAULT_SIZE
    if "--size" in args:
        i = args.index("--size")
        size = tuple(int(v) for v in args[i + 1].split("x"))
        del args[i:i + 2]
    if len(args) < 4:
        sys.exit(__doc__.split("\n\n")[1])
    try:
        import websocket  # noqa: F401
    except ImportError:
        print("load_speedscope: python3-websocket not installed", file=sys.stderr)
        return 2
    try:
        run(args[0], args[1], args[2], args[3:], size)
    except Fail as e:
        print(f"load_speedscope: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
