"""Asks a question in a running Open WebUI pointed at `pmc-rag serve`, in a headless Chromium, and checks that the
answer's citations show as clickable sources that link to the papers in its reference list.

Needs Debian's `chromium` and `chromium-driver` and the `selenium` package (in the test extras). Open WebUI itself
is installed apart from pmc-rag (see docs, "Use with Open WebUI"):

    python scripts/check_open_webui.py --url http://127.0.0.1:8080 --screenshots docs/

Exit status 0 when every citation chip opens a window whose link is one of the answer's references.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

QUESTION = "Is first-line erlotinib effective in EGFR-mutant lung cancer?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080", help="Open WebUI's address (signed in, or no auth)")
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--screenshots", type=Path, help="folder for the answer's and a citation's screenshots")
    parser.add_argument("--timeout", type=float, default=300, help="seconds to wait for the answer")
    args = parser.parse_args()
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(argument)
    options.binary_location = "/usr/bin/chromium"
    browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        return _check(browser, args)
    finally:
        browser.quit()


def _check(browser: webdriver.Chrome, args: argparse.Namespace) -> int:
    browser.get(args.url)
    WebDriverWait(browser, 60).until(lambda b: b.find_elements(By.ID, "chat-input"))
    time.sleep(2)
    for button in browser.find_elements(By.TAG_NAME, "button"):  # the "what's new" window of a fresh install
        try:
            if "Okay" in button.text:
                button.click()
                break
        except StaleElementReferenceException:  # the page re-rendered meanwhile
            continue
    box = browser.find_element(By.ID, "chat-input")
    box.click()
    box.send_keys(args.question)
    box.send_keys(Keys.ENTER)
    started = time.monotonic()
    while time.monotonic() - started < args.timeout:
        time.sleep(2)
        text = browser.find_element(By.TAG_NAME, "body").text
        chips = browser.find_elements(By.CSS_SELECTOR, "button[aria-label^='View source']")
        if "References:" in text and chips:
            break
    else:
        print(f"no answer with citation chips within {args.timeout:g} s", file=sys.stderr)
        return 1
    time.sleep(2)  # the last events
    chips = browser.find_elements(By.CSS_SELECTOR, "button[aria-label^='View source']")
    references = dict(re.findall(r"(PMC\d+|PMID:\d+|doi:\S+) · .*? · (https://\S+)", text))
    print(f"answered in {time.monotonic() - started:.0f} s with {len(chips)} citation chip(s); "
          f"references: {references}")
    if args.screenshots:
        args.screenshots.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(args.screenshots / "open-webui-answer.png"))
    failures = 0
    for index in range(len(chips)):
        chip = browser.find_elements(By.CSS_SELECTOR, "button[aria-label^='View source']")[index]
        name = chip.get_attribute("aria-label").removeprefix("View source: ")
        chip.click()
        time.sleep(1)
        links = {a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "a[target='_blank']")}
        expected = references.get(name)
        ok = expected is not None and expected in links
        failures += not ok
        print(f"chip {index + 1}: {name} -> {'links to ' + expected if ok else 'NOT linked to its reference'}")
        if args.screenshots and index == 0:
            browser.save_screenshot(str(args.screenshots / "open-webui-citation.png"))
        browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
        time.sleep(0.5)
    return 1 if failures or not chips else 0


if __name__ == "__main__":
    sys.exit(main())
