#!/usr/bin/python3
"""A minimal Chrome DevTools Protocol client.

Starts headless Debian `chromium`, attaches to its page over a WebSocket
(Debian's python3-websocket, so run it with /usr/bin/python3) and drives it:

    with Browser() as b:
        b.navigate("http://127.0.0.1:8080/")
        b.wait_for("document.querySelector('#input') !== null")
        b.focus("#input"); b.insert_text("Hello"); b.click("#send")
        b.screenshot("page.png")

CLI, used by tests/integration/serve_chat_page.sh:

    python3 cdp.py chat-page URL SCREENSHOT_PATH MESSAGE
    python3 cdp.py chat-stop URL MESSAGE

chat-page opens the chat page at URL, sends MESSAGE, waits (60 s at most) for the
streamed answer to end, saves a screenshot and prints one JSON line:
{"assistant_text", "observed_lengths", "mutation_lengths", "status", "page_errors"}.
observed_lengths: the distinct, increasing lengths of the answer bubble's text
sampled every 50 ms before the answer ended (two or more: it streamed);
mutation_lengths: the same taken in the page at every assignment to the bubble's text.

chat-stop sends MESSAGE, clicks Stop as soon as the answer shows, and prints
{"stopped_class", "text_length", "seconds_to_idle", "generated_tokens",
"send_enabled", "page_errors"}: seconds from Stop until the server's /metrics
show no request running or waiting, and how much xftctl_generation_tokens_total
grew meanwhile (the page's max_tokens if the server ignored the closed connection).
"""

import atexit
import base64
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse

try:
    import websocket
except ImportError:
    sys.exit("cdp.py needs the websocket module: Debian's python3-websocket with /usr/bin/python3 "
             "(scripts/install-deps.sh installs it)")


class CdpError(Exception):
    pass


class DevToolsSocket:
    """The page's DevTools WebSocket, on Debian's python3-websocket (websocket-client)."""

    def __init__(self, url, timeout=30.0):
        # chromium refuses DevTools connections that carry a foreign Origin.
        self.conn = websocket.create_connection(url, timeout=timeout, suppress_origin=True)

    def send_text(self, text):
        self.conn.send(text)

    def recv_text(self, timeout):
        """The next text message; None if none came within timeout seconds."""
        self.conn.settimeout(timeout)
        try:
            return self.conn.recv()
        except websocket.WebSocketTimeoutException:
            return None
        except websocket.WebSocketConnectionClosedException as error:
            raise CdpError(f"the browser closed the DevTools connection: {error}")

    def close(self):
        self.conn.close()


class Browser:
    """Headless chromium with one page target, driven over CDP."""

    def __init__(self, width=1000, height=720, startup_timeout=30.0):
        self.tmp = tempfile.mkdtemp(prefix="xft-cdp-")
        self.proc = None
        self.ws = None
        self.next_id = 0
        self.events = []
        self.page_errors = []
        atexit.register(self.close)
        try:
            self._start(startup_timeout)
            self.call("Page.enable")
            self.call("Runtime.enable")
            self.call("Emulation.setDeviceMetricsOverride",
                      width=width, height=height, deviceScaleFactor=1, mobile=False)
        except BaseException:
            self.close()
            raise

    def _start(self, timeout):
        log = open(os.path.join(self.tmp, "chromium.log"), "wb")
        self.proc = subprocess.Popen(
            ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
             f"--user-data-dir={self.tmp}/profile", "--no-first-run", "--no-default-browser-check",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        port_file = os.path.join(self.tmp, "profile", "DevToolsActivePort")
        deadline = time.monotonic() + timeout
        port = None
        while port is None:
            if self.proc.poll() is not None:
                raise CdpError(f"chromium exited ({self.proc.returncode}): {self._log_tail()}")
            if time.monotonic() > deadline:
                raise CdpError(f"no DevToolsActivePort after {timeout:.0f} s: {self._log_tail()}")
            try:
                with open(port_file) as f:
                    first = f.readline().strip()
                if first.isdigit():
                    port = int(first)
            except FileNotFoundError:
                pass
            if port is None:
                time.sleep(0.05)
        while True:  # the about:blank page target shows up shortly after the port
            pages = [t for t in self._http_json(port, "/json/list") if t.get("type") == "page"]
            if pages:
                break
            if time.monotonic() > deadline:
                raise CdpError("chromium has no page target")
            time.sleep(0.05)
        self.ws = DevToolsSocket(pages[0]["webSocketDebuggerUrl"])

    @staticmethod
    def _http_json(port, path):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            conn.request("GET", path)
            return json.loads(conn.getresponse().read())
        finally:
            conn.close()

    def _log_tail(self):
        try:
            with open(os.path.join(self.tmp, "chromium.log"), errors="replace") as f:
                return f.read()[-2000:]
        except OSError:
            return "(no log)"

    def close(self):
        if self.ws:
            self.ws.close()
            self.ws = None
        if self.proc:
            # SIGTERM lets chromium stop (and reap) its helpers itself; whatever is
            # left of its process group (its own session) after 5 s gets SIGKILL.
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    pass
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
            self.proc = None
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- protocol ---

    def _dispatch(self, message):
        if message.get("method") == "Runtime.exceptionThrown":
            details = message["params"]["exceptionDetails"]
            self.page_errors.append(details.get("exception", {}).get("description") or details.get("text"))
        elif message.get("method") == "Runtime.consoleAPICalled" and message["params"]["type"] == "error":
            self.page_errors.append(" ".join(str(a.get("value", a.get("description", "")))
                                             for a in message["params"]["args"]))
        self.events.append(message)

    def call(self, method, timeout=30.0, **params):
        self.next_id += 1
        my_id = self.next_id
        self.ws.send_text(json.dumps({"id": my_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            raw = self.ws.recv_text(max(left, 0.001)) if left > 0 else None
            if raw is None:
                raise CdpError(f"{method}: no answer within {timeout:.0f} s")
            message = json.loads(raw)
            if message.get("id") == my_id:
                if "error" in message:
                    raise CdpError(f"{method}: {message['error'].get('message')}")
                return message.get("result", {})
            self._dispatch(message)

    def wait_event(self, method, timeout=30.0):
        deadline = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method:
                    del self.events[i]
                    return event.get("params", {})
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError(f"no {method} within {timeout:.0f} s")
            raw = self.ws.recv_text(left)
            if raw is not None:
                self._dispatch(json.loads(raw))

    # --- page ---

    def navigate(self, url, timeout=30.0):
        self.events.clear()
        result = self.call("Page.navigate", url=url)
        if result.get("errorText"):
            raise CdpError(f"navigate {url}: {result['errorText']}")
        self.wait_event("Page.loadEventFired", timeout)

    def evaluate(self, expression, timeout=30.0):
        """The value of a JavaScript expression (promises awaited), as JSON-able Python."""
        result = self.call("Runtime.evaluate", timeout=timeout, expression=expression,
                           returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            d = result["exceptionDetails"]
            raise CdpError(f"evaluate: {d.get('exception', {}).get('description') or d.get('text')}")
        return result["result"].get("value")

    def wait_for(self, condition, timeout=30.0, interval=0.05):
        """Polls a JavaScript condition until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(condition)
            if value:
                return value
            if time.monotonic() > deadline:
                raise CdpError(f"timed out after {timeout:.0f} s waiting for: {condition}")
            time.sleep(interval)

    def focus(self, selector):
        if not self.evaluate(f"(e => e ? (e.focus(), document.activeElement === e) : false)"
                             f"(document.querySelector({json.dumps(selector)}))"):
            raise CdpError(f"cannot focus {selector}")

    def insert_text(self, text):
        """Types text into the focused element, as an input method would."""
        self.call("Input.insertText", text=text)

    def click(self, selector):
        """A left click at the middle of the element, through real mouse events."""
        box = self.evaluate(f"(e => {{ if (!e) return null; e.scrollIntoView({{block: 'center'}});"
                            f" const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})"
                            f"(document.querySelector({json.dumps(selector)}))")
        if not box:
            raise CdpError(f"no element {selector} to click")
        x, y = box
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def screenshot(self, path):
        data = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


# Records the answer bubble's text length at every assignment the page makes to
# an unfinished assistant bubble's textContent. A MutationObserver would batch
# the changes of one task: when the whole stream arrives in one network read (a
# loaded machine), the page's per-token updates fall in one task and it would
# see only the final length.
WATCH_JS = """(() => {
  window.__xftLengths = [];
  const own = Object.getOwnPropertyDescriptor(Node.prototype, 'textContent');
  Object.defineProperty(Node.prototype, 'textContent', {
    configurable: true, enumerable: own.enumerable,
    get() { return own.get.call(this); },
    set(value) {
      own.set.call(this, value);
      if (this.classList && this.classList.contains('msg') && this.classList.contains('assistant') && !this.dataset.done)
        window.__xftLengths.push(own.get.call(this).length);
    }
  });
  return true;
})()"""

SAMPLE_JS = """(() => {
  const b = [...document.querySelectorAll('#messages .msg.assistant')].pop();
  return b ? {len: b.textContent.length, done: b.dataset.done === '1'} : {len: 0, done: false};
})()"""


def increasing(lengths):
    out = []
    for n in lengths:
        if n > 0 and (not out or n > out[-1]):
            out.append(n)
    return out


def chat_page(url, screenshot_path, message, timeout=60.0):
    with Browser() as browser:
        browser.navigate(url)
        browser.wait_for("document.querySelector('#input') !== null")
        browser.evaluate(WATCH_JS)
        browser.focus("#input")
        browser.insert_text(message)
        browser.click("#send")
        sampled = []
        deadline = time.monotonic() + timeout
        while True:
            sample = browser.evaluate(SAMPLE_JS)
            if sample["done"]:
                break
            sampled.append(sample["len"])
            if time.monotonic() > deadline:
                raise CdpError(f"the answer did not end within {timeout:.0f} s (lengths seen: {increasing(sampled)})")
            time.sleep(0.05)
        text = browser.evaluate("[...document.querySelectorAll('#messages .msg.assistant')].pop().textContent")
        if not text:
            errors = browser.evaluate("[...document.querySelectorAll('#messages .msg.error')]"
                                      ".map(e => e.textContent).join(' | ')")
            raise CdpError(f"the answer is empty; page errors: {errors or browser.page_errors}")
        browser.wait_for("!document.querySelector('#send').disabled", 10)
        time.sleep(0.3)  # the status line catches up with the final usage and /metrics
        browser.screenshot(screenshot_path)
        return {
            "assistant_text": text,
            "observed_lengths": increasing(sampled),
            "mutation_lengths": increasing(browser.evaluate("window.__xftLengths")),
            "status": browser.evaluate("document.querySelector('#status').textContent.replace(/\\s+/g, ' ').trim()"),
            "page_errors": browser.page_errors,
        }


def server_metrics(url):
    """The samples of the server's GET /metrics (Prometheus text) as {name: value}, labels dropped."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=10)
    try:
        conn.request("GET", "/metrics")
        response = conn.getresponse()
        text = response.read().decode()
        if response.status != 200:
            raise CdpError(f"GET /metrics: HTTP {response.status}: {text[:200]}")
    finally:
        conn.close()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            name = name.split("{")[0].strip()
            samples[name] = samples.get(name, 0.0) + float(value)
    return samples


def chat_stop(url, message, timeout=60.0):
    """Sends message, clicks Stop once the answer has begun, and measures how the
    server winds down: seconds until no request runs or waits, tokens generated."""
    before = server_metrics(url)["xftctl_generation_tokens_total"]
    with Browser() as browser:
        browser.navigate(url)
        browser.wait_for("document.querySelector('#input') !== null")
        browser.focus("#input")
        browser.insert_text(message)
        browser.click("#send")
        browser.wait_for("(b => b ? b.textContent.length > 0 : false)"
                         "([...document.querySelectorAll('#messages .msg.assistant')].pop())", timeout)
        browser.click("#stop")
        stopped_at = time.monotonic()
        browser.wait_for("[...document.querySelectorAll('#messages .msg.assistant')].pop().dataset.done === '1'", 10)
        bubble = browser.evaluate("(b => ({text: b.textContent, stopped: b.classList.contains('stopped')}))"
                                  "([...document.querySelectorAll('#messages .msg.assistant')].pop())")
        while True:
            samples = server_metrics(url)
            if samples["xftctl_requests_running"] == 0 and samples["xftctl_requests_waiting"] == 0:
                break
            if time.monotonic() - stopped_at > timeout:
                raise CdpError(f"the server still generates {timeout:.0f} s after Stop")
            time.sleep(0.05)
        return {
            "stopped_class": bubble["stopped"],
            "text_length": len(bubble["text"]),
            "seconds_to_idle": round(time.monotonic() - stopped_at, 3),
            "generated_tokens": int(samples["xftctl_generation_tokens_total"] - before),
            "send_enabled": browser.evaluate("!document.querySelector('#send').disabled"),
            "page_errors": browser.page_errors,
        }


USAGE = """usage: cdp.py chat-page URL SCREENSHOT_PATH MESSAGE
       cdp.py chat-stop URL MESSAGE"""


def main(argv):
    try:
        if len(argv) == 5 and argv[1] == "chat-page":
            print(json.dumps(chat_page(argv[2], argv[3], argv[4])))
        elif len(argv) == 4 and argv[1] == "chat-stop":
            print(json.dumps(chat_stop(argv[2], argv[3])))
        else:
            print(USAGE, file=sys.stderr)
            return 2
    except (CdpError, OSError) as e:
        print(f"cdp.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so atexit still stops chromium
    sys.exit(main(sys.argv))
