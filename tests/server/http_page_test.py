#!/usr/bin/python3
"""The translation page in a real headless browser against the real transerve-server.

Starts transerve-server with the shipped model and --http_port, opens / in headless Chromium
(Selenium + chromedriver, Debian packages) and checks what a user sees: the language choices
filled from /languages, a random multi-sentence English text translated to German as it streams
(one element per sentence, the final text equal to POST /v1/translate's), a target word's hover
highlighting the source words it aligns to, an HTML input keeping its tags, and a server error
shown in the error element; then, against a server with a bearer token, the key field (the
request fails without it, works with it). Saves a screenshot (http_page.png) to $TRANSERVE_ARTIFACTS_DIR
(default: BIN_DIR/../artifacts). A missing browser fails the test: CI installs it.

Usage: http_page_test.py BIN_DIR SOURCE_DIR   (TRANSERVE_TEST_SEED=N repeats a run)
"""

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

# Software text, the domain of the shipped model (models/en-de-small/README.md).
SENTENCES = [
    "Click the button to continue.",
    "This package contains the documentation.",
    "Select a folder for the backup.",
    "The printer is out of paper.",
    "Do you want to delete these files?",
    "Your changes have been saved.",
    "Restart the computer to finish the update.",
    "The password is too short.",
    "Open the file in a new window.",
    "The connection to the server was lost.",
    "Enter your name and your e-mail address.",
    "This program is free software.",
]
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WAIT_S = 120  # a translation on one CPU thread, a slow CI machine


def fail(message):
    print(f"http_page: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


class Server:
    """transerve-server as a child process, its log in a file, killed if still running."""

    def __init__(self, bin_dir, source_dir, work, name="server", token=None):
        self.log_path = work / f"{name}.log"
        env = dict(os.environ)
        env.pop("TRANSERVE_AUTH_TOKEN", None)
        if token:
            env["TRANSERVE_AUTH_TOKEN"] = token  # off the command line, as docs/server.md asks
        args = [
            str(bin_dir / "transerve-server"),
            f"--model_dir={source_dir / 'models/en-de-small'}",
            "--host=127.0.0.1", "--port=0", "--metrics_port=-1", "--num_threads=1",
            "--http_host=127.0.0.1", "--http_port=0",  # the port bound is in the log
        ]
        self.log = open(self.log_path, "wb")
        self.process = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.url = None

    def log_tail(self):
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-30:])

    def wait_serving(self, limit_s=180):
        until = time.monotonic() + limit_s
        while time.monotonic() < until:
            if self.process.poll() is not None:
                fail(f"the server exited {self.process.returncode}:\n{self.log_tail()}")
            serving = re.search(r"serving: .* http_port=(\d+)",
                                self.log_path.read_text(errors="replace"))
            if serving:
                self.url = f"http://127.0.0.1:{serving.group(1)}"
                try:
                    with urllib.request.urlopen(self.url + "/healthz", timeout=5) as reply:
                        if reply.status == 200:
                            return
                except OSError:
                    pass
            time.sleep(0.2)
        fail(f"the server did not serve HTTP within {limit_s} s:\n{self.log_tail()}")

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            fail("the server did not stop within 60 s of SIGTERM")
        self.log.close()
        if code != 0:
            fail(f"the server exited {code} after SIGTERM:\n{self.log_tail()}")

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def post_json(url, body):
    """POSTs JSON; returns (HTTP status, parsed answer), error answers included."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=WAIT_S) as reply:
            return reply.status, json.load(reply)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def translate_request(text, source, target, html):
    return {"texts": [text], "sourceLanguage": source, "targetLanguage": target,
            "document": {"format": "FORMAT_HTML" if html else "FORMAT_TEXT"},
            "options": {"returnAlignment": True}}


def start_browser(work):
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            fail(f"{path} is missing: install chromium and chromium-driver (scripts/setup.sh)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        fail(f"Selenium is missing for {sys.executable}: install python3-selenium")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1200,1500", "--lang=en-US", f"--user-data-dir={work / 'chromium'}"):
        options.add_argument(arg)
    service = Service(executable_path=CHROMEDRIVER, log_path=str(work / "chromedriver.log"))
    return webdriver.Chrome(service=service, options=options)


class PageTest:
    def __init__(self, driver, server, rng):
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import Select, WebDriverWait
        self.By, self.Select, self.WebDriverWait = By, Select, WebDriverWait
        self.driver = driver
        self.server = server
        self.rng = rng

    def find(self, element_id):
        return self.driver.find_element(self.By.ID, element_id)

    def text_of(self, element):
        return element.get_attribute("textContent")

    def wait(self, condition, what, limit_s=WAIT_S):
        try:
            return self.WebDriverWait(self.driver, limit_s, poll_frequency=0.1).until(
                lambda _: condition())
        except Exception:  # selenium's TimeoutException; anything else is as fatal
            fail(f"timed out waiting for {what}; status: {self.text_of(self.find('status'))!r}, "
                 f"error: {self.text_of(self.find('error'))!r}")

    def random_sentences(self, low, high):
        return self.rng.sample(SENTENCES, self.rng.randint(low, high))

    def check_files(self, source_dir):
        """The server serves the page's files as they are in server/http/web."""
        web = source_dir / "server/http/web"
        for name, kind in (("index.html", "text/html"), ("app.js", "text/javascript"),
                           ("style.css", "text/css")):
            url = self.server.url + ("/" if name == "index.html" else f"/static/{name}")
            try:
                with urllib.request.urlopen(url, timeout=30) as reply:
                    body, content_type = reply.read(), reply.headers.get("Content-Type", "")
            except urllib.error.HTTPError as error:
                fail(f"GET {url} answered {error.code}: {error.read()[:200]!r}")
            if body != (web / name).read_bytes() or not content_type.startswith(kind):
                fail(f"GET {url}: {len(body)} bytes of {content_type!r}, want {name} as {kind}")

    def open_page(self):
        self.driver.get(self.server.url + "/")
        self.wait(lambda: self.find("status").get_attribute("data-state") != "loading",
                  "the languages to load")
        if self.find("status").get_attribute("data-state") != "ready":
            fail(f"the page did not get ready: {self.text_of(self.find('error'))!r}")
        with urllib.request.urlopen(self.server.url + "/languages", timeout=30) as reply:
            languages = json.load(reply)
        sources = [o.get_attribute("value")
                   for o in self.Select(self.find("source-lang")).options]
        if sources != ["auto"] + [l["code"] for l in languages]:
            fail(f"source choices {sources} against /languages {languages}")
        targets = [o.get_attribute("value")
                   for o in self.Select(self.find("target-lang")).options]
        want = sorted({t for l in languages for t in l["targets"]})
        if sorted(targets) != want or "de" not in targets:
            fail(f"target choices with auto: {targets}, want {want} (with de)")
        # A chosen source offers its own targets (a placeholder when it has none).
        for language in languages:
            self.Select(self.find("source-lang")).select_by_value(language["code"])
            offered = [o.get_attribute("value")
                       for o in self.Select(self.find("target-lang")).options]
            if offered != (language["targets"] or [""]):
                fail(f"source {language['code']} offers targets {offered}, /languages says "
                     f"{language['targets']}")
        self.Select(self.find("source-lang")).select_by_value("auto")
        print(f"http_page: languages {[l['code'] for l in languages]}, targets {targets}")

    def submit(self, text, source, target, html):
        """Fills the form as a user does and clicks Translate; returns the final state."""
        area = self.find("source-text")
        area.clear()
        area.send_keys(text)
        self.Select(self.find("format")).select_by_value("html" if html else "text")
        self.Select(self.find("source-lang")).select_by_value(source)
        self.Select(self.find("target-lang")).select_by_value(target)
        # Every text the output shows, as it grows (each update puts in a new text node).
        self.driver.execute_script("""
            if (window.outputObserver) window.outputObserver.disconnect();
            window.outputStates = [];
            window.outputObserver = new MutationObserver((records) => {
              for (const r of records) for (const n of r.addedNodes) outputStates.push(n.data);
            });
            outputObserver.observe(document.getElementById('output'), {childList: true});""")
        self.find("translate-button").click()
        self.wait(lambda: self.find("status").get_attribute("data-state") in ("done", "error"),
                  "the translation to end")
        return self.find("status").get_attribute("data-state")

    def check_translation(self, text, source, want):
        """The page's result against POST /v1/translate's answer `want` for the same request."""
        translation = want["translations"][0]
        output = self.text_of(self.find("output"))
        if output != translation["text"]:
            fail(f"page shows {output!r}, /v1/translate says {translation['text']!r}")
        if self.text_of(self.find("model")) != want["model"]:
            fail(f"model {self.text_of(self.find('model'))!r}, want {want['model']!r}")
        items = self.driver.find_elements(self.By.CSS_SELECTOR, "#sentences > li.sentence")
        if len(items) != len(translation["sentences"]):
            fail(f"{len(items)} sentence elements, /v1/translate has "
                 f"{len(translation['sentences'])}")
        for item, sentence in zip(items, translation["sentences"]):
            target = item.find_element(self.By.CLASS_NAME, "sentence-target")
            if not self.text_of(target).strip():
                fail(f"sentence {item.get_attribute('id')} has no translation")
            if target.get_attribute("title") != sentence["text"]:
                fail(f"sentence {item.get_attribute('id')}: {target.get_attribute('title')!r}, "
                     f"want {sentence['text']!r}")
            words = item.find_elements(self.By.CLASS_NAME, "source-word")
            shown = "".join(self.text_of(w) for w in words)
            if not words or shown.replace(" ", "") != sentence["source"].replace(" ", ""):
                fail(f"sentence {item.get_attribute('id')} shows source {shown!r}, "
                     f"want {sentence['source']!r}")
        return items

    def check_growth(self, final, sentences):
        """The output grew as messages came: each state a prefix of the next, one per sentence
        at least."""
        states = [s for s in self.driver.execute_script("return window.outputStates;") if s]
        for before, after in zip(states, states[1:]):
            if not after.startswith(before):
                fail(f"the output did not grow: {before!r} then {after!r}")
        if not states or states[-1] != final or len(set(states)) < sentences:
            fail(f"{len(set(states))} output states for {sentences} sentences: {states}")

    def check_hover(self, items):
        from selenium.webdriver.common.action_chains import ActionChains
        item = self.rng.choice(items)
        words = [w for w in item.find_elements(self.By.CLASS_NAME, "target-word")
                 if re.search(r"\w", self.text_of(w))]
        if not words:
            fail(f"sentence {item.get_attribute('id')} has no target word to point at")
        word = self.rng.choice(words)
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", word)
        ActionChains(self.driver).move_to_element(word).perform()
        aligned = item.find_elements(self.By.CSS_SELECTOR, ".source-word.aligned")
        if "active" not in word.get_attribute("class") or not aligned:
            fail(f"pointing at {self.text_of(word)!r} highlighted no source word")
        elsewhere = [w for w in self.driver.find_elements(self.By.CSS_SELECTOR,
                                                          ".source-word.aligned")
                     if w not in aligned]
        if elsewhere:
            fail("a word highlighted source words of another sentence")
        print(f"http_page: {self.text_of(word)!r} aligns to "
              f"{[self.text_of(w) for w in aligned]}")
        # Leaving the word clears the highlight.
        ActionChains(self.driver).move_to_element(self.find("result-heading")).perform()
        if self.driver.find_elements(self.By.CSS_SELECTOR, ".source-word.aligned"):
            fail("the highlight stayed after the pointer left the word")
        ActionChains(self.driver).move_to_element(word).perform()  # for the screenshot

    def plain_text(self):
        chosen = self.random_sentences(2, 4)
        text = " ".join(chosen)
        print(f"http_page: plain text ({len(chosen)} sentences): {text!r}")
        if self.submit(text, "auto", "de", html=False) != "done":
            fail(f"plain text: {self.text_of(self.find('error'))!r}")
        code, want = post_json(self.server.url + "/v1/translate",
                               translate_request(text, "auto", "de", html=False))
        if code != 200:
            fail(f"/v1/translate answered {code}: {want}")
        if len(want["translations"][0]["sentences"]) != len(chosen):
            fail(f"the server cut {len(chosen)} sentences into "
                 f"{len(want['translations'][0]['sentences'])}")
        items = self.check_translation(text, "auto", want)
        self.check_growth(want["translations"][0]["text"], len(chosen))
        detected = self.text_of(self.find("detected-language"))
        if "(en)" not in detected:
            fail(f"detected language shown: {detected!r}")
        print(f"http_page: German: {want['translations'][0]['text']!r}; detected: {detected}")
        self.check_hover(items)

    def html(self):
        chosen = self.random_sentences(2, 3)
        # A word of the first sentence in bold: the tag must come back around its translation.
        first = chosen[0].split(" ")
        bold = self.rng.randrange(len(first) - 1)
        first[bold] = f"<b>{first[bold]}</b>"
        paragraphs = [" ".join(first)] + chosen[1:]
        text = "".join(f"<p>{p}</p>" for p in paragraphs)
        print(f"http_page: HTML: {text!r}")
        if self.submit(text, "en", "de", html=True) != "done":
            fail(f"HTML: {self.text_of(self.find('error'))!r}")
        code, want = post_json(self.server.url + "/v1/translate",
                               translate_request(text, "en", "de", html=True))
        if code != 200:
            fail(f"/v1/translate (HTML) answered {code}: {want}")
        self.check_translation(text, "en", want)
        output = self.text_of(self.find("output"))
        if (output.count("<p>") != len(paragraphs) or output.count("</p>") != len(paragraphs)
                or output.count("<b>") != 1 or output.count("</b>") != 1):
            fail(f"HTML lost its tags: {output!r}")
        # Shown as text: the markup the server returns never becomes elements of the page.
        if self.find("output").find_elements(self.By.CSS_SELECTOR, "*"):
            fail("the HTML translation was put in the page as markup")
        print(f"http_page: HTML German: {output!r}")

    def server_error(self):
        # A target no model serves: the page offers none, so the test adds one to the choice.
        self.driver.execute_script("""
            const option = document.createElement('option');
            option.value = 'xx';
            option.textContent = 'No such language (xx)';
            document.getElementById('target-lang').append(option);""")
        text = self.rng.choice(SENTENCES)
        if self.submit(text, "en", "xx", html=False) != "error":
            fail("a request for target xx did not fail on the page")
        code, want = post_json(self.server.url + "/v1/translate/stream",
                               translate_request(text, "en", "xx", html=False))
        message = want.get("error", {}).get("message", "") if code >= 400 else ""
        if not message:
            fail(f"the stream for target xx answered {code}: {want}")
        shown = self.find("error")
        if not shown.is_displayed() or self.text_of(shown) != message:
            fail(f"error element shows {self.text_of(shown)!r} "
                 f"(displayed {shown.is_displayed()}), the server said {message!r}")
        print(f"http_page: error shown: {message!r}")


def key_required(driver, server, rng):
    """A server with a bearer token: the page's request fails without the key, works with it."""
    test = PageTest(driver, server, rng)
    test.open_page()
    text = " ".join(test.random_sentences(1, 2))
    if test.submit(text, "en", "de", html=False) != "error":
        fail("a server with a token translated for a page without the key")
    status, answer = post_json(server.url + "/v1/translate/stream",
                               translate_request(text, "en", "de", html=False))
    message = answer.get("error", {}).get("message", "")
    if status != 401 or test.text_of(test.find("error")) != message:
        fail(f"without the key the page shows {test.text_of(test.find('error'))!r}; the "
             f"server answers {status} {answer}")
    test.driver.execute_script("document.getElementById('key-details').open = true;")
    test.find("api-key").send_keys(server.token)
    if test.submit(text, "en", "de", html=False) != "done":
        fail(f"with the key: {test.text_of(test.find('error'))!r}")
    if not test.find("error").get_attribute("hidden"):
        fail("the error of the request without the key is still shown")
    if not test.text_of(test.find("output")).strip():
        fail("with the key: no translation")
    print(f"http_page: with the key: {test.text_of(test.find('output'))!r}")


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    bin_dir, source_dir = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    seed = int(os.environ.get("TRANSERVE_TEST_SEED", random.randrange(1 << 32)))
    print(f"http_page: seed {seed} (TRANSERVE_TEST_SEED={seed} repeats this run)")
    rng = random.Random(seed)
    artifacts = Path(os.environ.get("TRANSERVE_ARTIFACTS_DIR", bin_dir.parent / "artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="transerve_http_page_"))
    server = Server(bin_dir, source_dir, work)
    driver = None
    try:
        server.wait_serving()
        driver = start_browser(work)
        test = PageTest(driver, server, rng)
        test.check_files(source_dir)
        test.open_page()
        test.html()
        test.server_error()
        test.plain_text()  # last, so the screenshot shows a translation with its highlight
        screenshot = artifacts / "http_page.png"
        if not driver.save_screenshot(str(screenshot)):
            fail(f"no screenshot written to {screenshot}")
        print(f"http_page: screenshot {screenshot}")
        server.stop()
        # The key field, against a server that wants a token.
        token = "%032x" % rng.getrandbits(128)
        server = Server(bin_dir, source_dir, work, name="auth_server", token=token)
        server.token = token
        server.wait_serving()
        key_required(driver, server, rng)
        driver.quit()
        driver = None
        server.stop()
    except SystemExit as failure:
        if failure.code:
            print(f"--- {server.log_path} (last 30 lines)\n{server.log_tail()}", file=sys.stderr)
        raise
    finally:
        if driver is not None:
            driver.quit()
        server.kill()
        shutil.rmtree(work, ignore_errors=True)
    print("http_page: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
