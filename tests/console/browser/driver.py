"""A headless Chromium that the console's browser tests (tests/support/browser.rs)
steer one command at a time: a JSON object per line on standard input, a JSON answer per line on
standard output ({"ok": ...} or {"error": "..."}). The journey and its
checks live in the Rust test; this only does what a person's browser does.

Usage: driver.py CHROMIUM CHROMEDRIVER USER_DATA_DIR
"""

import base64
import json
import sys

from selenium import webdriver
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

# What a wait asks again instead of failing: the element not there yet, and
# a look that a navigation under way cut short ("aborted by navigation",
# seen on a loaded machine while a submitted form's answer came in).
TRANSIENT = (WebDriverException,)

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1100,1400",
]

# fetch() from the page: the browser's own cookies, origin and CSP apply.
FETCH = """
const done = arguments[arguments.length - 1];
fetch(arguments[0], {credentials: "same-origin"})
  .then(r => r.arrayBuffer().then(b => {
    let s = "";
    const bytes = new Uint8Array(b);
    for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
    done({status: r.status, type: r.headers.get("content-type"), body: btoa(s)});
  }))
  .catch(e => done({error: String(e)}));
"""


# axe-core's run over the whole page with its standard rules: the
# violations, and what it could not decide ("incomplete", to review), each
# with its impact and the elements it was found on, with the measurements
# its checks took (a colour contrast's ratio).
AXE_RUN = """
const done = arguments[arguments.length - 1];
const results = list => list.map(v => ({
  id: v.id, impact: v.impact, help: v.help,
  nodes: v.nodes.map(n => ({
    target: n.target, html: n.html, impact: n.impact, summary: n.failureSummary,
    data: n.any.concat(n.all, n.none).map(c => c.data).filter(d => d),
  })),
}));
axe.run(document, {resultTypes: ["violations", "incomplete"]})
  .then(r => done({violations: results(r.violations), incomplete: results(r.incomplete)}))
  .catch(e => done({error: String(e)}));
"""

# The focused element, as a test names it: tag, id, and what it says.
FOCUSED = """
const e = document.activeElement;
if (!e || e === document.body) return null;
const style = getComputedStyle(e);
return {tag: e.tagName.toLowerCase(), id: e.id, href: e.getAttribute("href"),
        name: e.getAttribute("name"), text: (e.innerText || e.value || "").trim().slice(0, 80),
        outline: style.outlineStyle + " " + style.outlineWidth, shadow: style.boxShadow,
        rect: e.getBoundingClientRect().toJSON()};
"""


def main():
    chromium, chromedriver, profile = sys.argv[1:4]
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in FLAGS + [f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    driver.set_page_load_timeout(15)
    driver.set_script_timeout(15)
    reply({"ok": driver.capabilities.get("browserVersion")})
    try:
        for line in sys.stdin:
            cmd = json.loads(line)
            if cmd["op"] == "quit":
                reply({"ok": None})
                break
            try:
                reply({"ok": run(driver, cmd)})
            except Exception as e:  # reported to the test, which fails with it
                reply({"error": f"{type(e).__name__}: {e}", "url": driver.current_url})
    finally:
        driver.quit()


def run(driver, cmd):
    op = cmd["op"]
    css = cmd.get("css")
    if op == "get":
        driver.get(cmd["url"])
        return driver.current_url
    if op == "wait":
        try:
            WebDriverWait(driver, cmd.get("timeout", 10), poll_frequency=0.02,
                          ignored_exceptions=TRANSIENT).until(
                ec.presence_of_element_located((By.CSS_SELECTOR, css))
            )
        except TimeoutException:
            raise TimeoutException(f"no {css} on {driver.current_url}:\n{driver.page_source}")
        return driver.current_url
    if op == "wait_text":
        try:
            WebDriverWait(driver, cmd.get("timeout", 10), poll_frequency=0.02,
                          ignored_exceptions=TRANSIENT).until(
                ec.text_to_be_present_in_element((By.CSS_SELECTOR, css), cmd["text"])
            )
        except TimeoutException:
            raise TimeoutException(f"no {cmd['text']!r} in {css} on {driver.current_url}:\n{driver.page_source}")
        return driver.current_url
    if op == "count":
        return len(driver.find_elements(By.CSS_SELECTOR, css))
    if op == "type":
        field = driver.find_element(By.CSS_SELECTOR, css)
        field.clear()
        field.send_keys(cmd["text"])
        return None
    if op == "click":
        driver.find_element(By.CSS_SELECTOR, css).click()
        return None
    if op == "attr":
        return driver.find_element(By.CSS_SELECTOR, css).get_attribute(cmd["name"])
    if op == "text":
        return driver.find_element(By.CSS_SELECTOR, css).text
    if op == "url":
        return driver.current_url
    if op == "source":
        return driver.page_source
    if op == "fetch":
        got = driver.execute_async_script(FETCH, cmd["url"])
        if "error" in got:
            raise RuntimeError(got["error"])
        return got
    if op == "script":
        return driver.execute_script(cmd["js"], *cmd.get("args", []))
    if op == "screen":
        return screen(driver, cmd)
    if op == "axe":
        return axe(driver, cmd["path"])
    if op == "press":
        return press(driver, cmd["keys"])
    if op == "type_focused":
        driver.switch_to.active_element.send_keys(cmd["text"])
        return None
    if op == "focused":
        return driver.execute_script(FOCUSED)
    if op == "screenshot":
        return screenshot(driver, cmd["path"])
    raise ValueError(f"unknown op {op}")


def screen(driver, cmd):
    """Chromium's device emulation: the layout viewport, pixel ratio, and for
    a phone the meta viewport and touch, kept across page loads."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {
            "width": cmd["width"],
            "height": cmd["height"],
            "deviceScaleFactor": cmd["scale"],
            "mobile": cmd["mobile"],
        },
    )
    driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": cmd["mobile"]})
    return None


def axe(driver, path):
    """axe-core injected into the page shown (once a page load) and run
    with its standard rules: the page's violations and incomplete results.
    Injected through the driver, so the console's Content-Security-Policy
    (no script from elsewhere) stays as it is for people."""
    if not driver.execute_script("return typeof window.axe === 'object';"):
        with open(path, encoding="utf-8") as f:
            driver.execute_script(f.read())
    driver.set_script_timeout(25)
    try:
        got = driver.execute_async_script(AXE_RUN)
    finally:
        driver.set_script_timeout(15)
    if "error" in got:
        raise RuntimeError(got["error"])
    return got


def press(driver, keys):
    """Keys pressed on whatever has the focus, one after another, as a
    keyboard does: each the name of one of selenium's Keys ("TAB",
    "ENTER") or a chord of them and a character ("CONTROL+a")."""
    for k in keys:
        parts = [getattr(Keys, p) if len(p) > 1 else p for p in k.split("+")]
        driver.switch_to.active_element.send_keys(*parts)
    return None


def screenshot(driver, path):
    """The whole page, scrolled parts too, as a PNG file."""
    size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
        },
    )
    with open(path, "wb") as f:
        f.write(base64.b64decode(shot["data"]))
    return None


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
