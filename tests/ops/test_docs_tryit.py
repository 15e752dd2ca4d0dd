#!/usr/bin/env python3
"""Swagger UI's "Try it out" uploads a chosen file, in
headless Chromium driven over its DevTools protocol: open /docs at
uploadBuffer, press Try it out, type a real buffer id, choose a file,
Execute, and expect 200 with the file's bytes in the buffer. Nothing may be
pre-filled that breaks it (the Content-Range example did).

Skipped (77) when Chromium, websocket-client or the Swagger UI assets are
not installed here (install-deps.sh --test installs them).

usage: test_docs_tryit.py GPUHTTPD_BINARY OUT_DIR"""
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import Server, check, fail, skip  # noqa: E402

OP = "#operations-buffers-uploadBuffer"
DEADLINE_S = 90


class Page:
    """One page of a Chromium started with --remote-debugging-port=0."""

    def __init__(self, chromium, profile):
        import websocket  # websocket-client
        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--disable-extensions", "--remote-debugging-port=0",
             "--remote-debugging-address=127.0.0.1", f"--user-data-dir={profile}",
             "--window-size=1280,2000", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ, HOME=profile),
            start_new_session=True)
        port_file = os.path.join(profile, "DevToolsActivePort")
        deadline = time.monotonic() + 30
        while not os.path.exists(port_file) or os.path.getsize(port_file) == 0:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                fail(f"Chromium did not open its DevTools port: {self.proc.stderr.read()[-2000:]!r}")
            time.sleep(0.1)
        port = int(open(port_file).read().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            targets = [t for t in json.load(r) if t.get("type") == "page"]
        check(targets, "Chromium has no page target")
        self.ws = websocket.create_connection(targets[0]["webSocketDebuggerUrl"], timeout=30,
                                              suppress_origin=True)
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    fail(f"DevTools {method}: {msg['error']}")
                return msg.get("result", {})

    def js(self, expr):
        res = self.call("Runtime.evaluate", expression=expr, returnByValue=True,
                        awaitPromise=True)
        if "exceptionDetails" in res:
            fail(f"script failed: {expr[:200]}: {res['exceptionDetails']}")
        return res.get("result", {}).get("value")

    def wait(self, expr, what, until, fail_on_timeout=True):
        while time.monotonic() < until:
            value = self.js(expr)
            if value:
                return value
            time.sleep(0.2)
        if not fail_on_timeout:
            return None
        self.screenshot()
        fail(f"timed out waiting for {what}")

    def screenshot(self):
        out = os.environ.get("GHD_TRYIT_SHOT")
        if out:
            data = self.call("Page.captureScreenshot", format="png")["data"]
            with open(out, "wb") as f:
                f.write(base64.b64decode(data))

    def close(self):
        # Chromium's helpers (renderer, zygote, crashpad) share its process
        # group and write into the profile: end them all before the profile
        # folder is removed (killing the browser alone left 'Default' being
        # written while TemporaryDirectory removed it).
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(self.proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)


# Sets a React-controlled input's value the way typing does.
SET_VALUE = """(function (sel, value) {
  const el = document.querySelector(sel);
  if (!el) return false;
  const proto = el.tagName === 'TEXTAREA' ? HTMLTextAreaElement : HTMLInputElement;
  Object.getOwnPropertyDescriptor(proto.prototype, 'value').set.call(el, value);
  el.dispatchEvent(new Event('input', {bubbles: true}));
  el.dispatchEvent(new Event('change', {bubbles: true}));
  return true;
})"""


# Chooses an option of a React-controlled select the way a click does.
SET_SELECT = """(function (sel, value) {
  const el = document.querySelector(sel);
  if (!el || ![...el.options].some(o => o.value === value)) return false;
  Object.getOwnPropertyDescriptor(HTMLSelectElement.prototype, 'value').set.call(el, value);
  el.dispatchEvent(new Event('change', {bubbles: true}));
  return el.value === value;
})"""


def try_it_out(page, srv, buf_id, file_path, until):
    page.call("Page.enable")
    page.call("Runtime.enable")
    page.call("Page.navigate", url=srv.url("/docs#/buffers/uploadBuffer"))
    page.wait(f"!!document.querySelector('{OP}')", "the uploadBuffer operation", until)
    if not page.js(f"!!document.querySelector('{OP}.is-open')"):
        page.js(f"document.querySelector('{OP} .opblock-summary-control, {OP} .opblock-summary')"
                ".click()")
    page.wait(f"!!document.querySelector('{OP} .try-out__btn')", "the Try it out button", until)
    page.js(f"document.querySelector('{OP} .try-out__btn').click()")
    id_input = f"{OP} tr[data-param-name='id'] input"
    range_input = f"{OP} tr[data-param-name='Content-Range'] input"
    page.wait(f"!!document.querySelector(\"{id_input}\")", "the id field", until)
    prefilled = page.js(f"(document.querySelector(\"{range_input}\") || {{}}).value || ''")
    check(not prefilled, f"Try it out pre-fills Content-Range with {prefilled!r}")
    check(page.js(f"{SET_VALUE}(\"{id_input}\", '{buf_id}')"), "cannot type the id")
    # PUT lists application/x-npy first: raw bytes are the list's other choice.
    media_sel = f"{OP} .body-param-content-type select"
    page.wait(f"!!document.querySelector('{media_sel}')", "the request media type list", until)
    check(page.js(f"{SET_SELECT}(\"{media_sel}\", 'application/octet-stream')"),
          "cannot choose application/octet-stream")
    file_sel = f"{OP} input[type=file]"
    page.wait(f"!!document.querySelector('{file_sel}')", "the file chooser", until)
    doc = page.call("DOM.getDocument", depth=-1)
    node = page.call("DOM.querySelector", nodeId=doc["root"]["nodeId"], selector=file_sel)
    check(node.get("nodeId"), "no file input node")
    page.call("DOM.setFileInputFiles", files=[file_path], nodeId=node["nodeId"])
    # A click that lands before Swagger UI has taken the chosen file into its
    # state does nothing (seen under load): click again every 5 s until a
    # response shows, within the same deadline.
    response = (f"(document.querySelector('{OP} .live-responses-table tr.response "
                ".response-col_status') || {}).textContent")
    while True:
        page.js(f"document.querySelector('{OP} .execute').click()")
        status = page.wait(response, "the response of Execute", min(until, time.monotonic() + 5),
                           fail_on_timeout=time.monotonic() + 5 >= until)
        if status:
            break
    body = page.js(f"(document.querySelector('{OP} .live-responses-table tr.response "
                   f".response-col_description') || {{}}).textContent || ''")
    return status.strip(), body


def main():
    binary, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    chromium = next((shutil.which(n) for n in ["chromium", "chromium-browser", "google-chrome"]
                     if shutil.which(n)), None)
    if not chromium:
        skip("no Chromium here (Debian: apt-get install chromium)")
    try:
        import websocket  # noqa: F401
    except ImportError:
        skip("websocket-client is not installed (python3 -m pip install websocket-client)")
    until = time.monotonic() + DEADLINE_S
    with Server(binary) as srv, tempfile.TemporaryDirectory(prefix="ghd-tryit-") as tmp:
        status, _, body = srv.request("GET", "/docs")
        if status == 503:
            skip("the Swagger UI assets are not installed (see /docs)")
        payload = bytes(range(7, 7 + 64))
        status, _, buf = srv.json("POST", "/v1/buffers", {"size": len(payload)})
        check(status == 201, f"create: {status}")
        file_path = os.path.join(tmp, "chosen.bin")
        with open(file_path, "wb") as f:
            f.write(payload)
        os.environ.setdefault("GHD_TRYIT_SHOT", os.path.join(out_dir, "tryit.png"))
        page = Page(chromium, os.path.join(tmp, "profile"))
        try:
            status, shown = try_it_out(page, srv, buf["id"], file_path, until)
            page.screenshot()
        finally:
            page.close()
        check(status == "200", f"Try it out's upload answered {status}: {shown[:500]}")
        check(f'"bytes_written": {len(payload)}' in shown or
              f'"bytes_written":{len(payload)}' in shown, f"the page shows: {shown[:500]}")
        status, _, got = srv.request("GET", f"/v1/buffers/{buf['id']}")
        check(status == 200 and got == payload, f"the buffer holds {got[:16]!r}..., not the file")
    print("test_docs_tryit: ok (the chosen file was uploaded through Swagger UI)")


if __name__ == "__main__":
    main()
