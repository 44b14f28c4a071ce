#!/usr/bin/python3
"""The report in a real browser (issue 45): renders `stalesim report` of the tutorial's lesson 1
runs (BSP, ASP and SSP(3), traced) in headless Chromium and checks that the page loads without
console errors and without any network request, that every image is present and non-empty, and
that the three timelines are drawn at one width. Keeps a screenshot as the test's artefact.

Usage: report_browser_test.py STALESIM SOURCE_DIR WORK_DIR
WORK_DIR is made fresh (it must be absent, empty, or hold the marker .stalesim-browser-test);
the screenshot is WORK_DIR/report-screenshot.png.

No network: the page's Content-Security-Policy allows only inline script and style and data:
images, every host name resolves to nothing (--host-resolver-rules), and the HTML is scanned for
http(s) URLs; a blocked request would show as a console error ("Refused to load").
Exit 0 passed, 1 failed (each failure printed), 77 skipped (no headless Chromium, or no python3
with matplotlib for the figures), with the reason printed.
"""

import json
import os
import re
import shutil
import subprocess
import sys

MARKER = ".stalesim-browser-test"
BROWSERS = ("chromium-headless-shell", "chrome-headless-shell", "chromium", "google-chrome")
LESSON1 = "scenarios/tutorial/01-bsp-straggler.json"
RUNS = (("tutorial-01-bsp", []), ("tutorial-01-asp", ["--set", "policy.type=asp"]),
        ("tutorial-01-ssp3", ["--set", "policy.type=ssp", "--set", "policy.staleness=3"]))


def skip(why):
    print(f"report_browser_test: SKIPPED: {why}")
    sys.exit(77)


def find_browser():
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    for path in ("/usr/lib/chromium/chrome-headless-shell", "/usr/lib/chromium/chromium"):
        if os.access(path, os.X_OK):
            return path
    return None


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    stalesim, source, work = (os.path.abspath(a) for a in sys.argv[1:])
    browser = find_browser()
    if not browser:
        skip("no headless Chromium on PATH (tried " + ", ".join(BROWSERS) + "); install it with "
             "tools/install-deps.sh --all (Debian: apt-get install chromium-headless-shell)")
    if subprocess.run([os.path.join(source, "tools", "find-python")], capture_output=True).returncode != 0:
        skip("no python3 with matplotlib for the report's figures (tools/find-python)")
    if os.path.exists(work):
        if os.listdir(work) and not os.path.isfile(os.path.join(work, MARKER)):
            print(f"report_browser_test: {work}: exists and is not this test's folder; not touched", file=sys.stderr)
            sys.exit(2)
        shutil.rmtree(work)
    os.makedirs(work)
    open(os.path.join(work, MARKER), "w").close()

    results = os.path.join(work, "results")
    for name, extra in RUNS:
        subprocess.run([stalesim, "run", os.path.join(source, LESSON1), *extra, "--record", "gradients", "--trace",
                        "--trace-window", "0:0.02", "--out", os.path.join(results, name), "--quiet"],
                       check=True, cwd=work)
    report = os.path.join(work, "report")
    subprocess.run([stalesim, "report", *[os.path.join(results, n) for n, _ in RUNS], "--out", report],
                   check=True, cwd=work)
    page = os.path.join(report, "report.html")
    failures = []
    with open(page, encoding="utf-8") as f:
        html = f.read()
    urls = re.findall(r"https?://[^\s\"'<>)]+", html)
    if urls:
        failures.append(f"the page names network URLs: {urls[:5]}")
    if "Content-Security-Policy" not in html:
        failures.append("the page has no Content-Security-Policy")
    with open(os.path.join(report, "report.json")) as f:
        manifest = json.load(f)
    for name in manifest["files"]:
        if os.path.getsize(os.path.join(report, name)) == 0:
            failures.append(f"{name}: empty")

    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
             "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0",
             "--virtual-time-budget=10000", "--window-size=1280,3000", f"--user-data-dir={work}/chrome-profile"]
    url = "file://" + page
    dom = subprocess.run([browser, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    shot = os.path.join(work, "report-screenshot.png")
    subprocess.run([browser, *flags, f"--screenshot={shot}", url], capture_output=True, text=True, timeout=120)
    console = [line for line in dom.stderr.splitlines()
               if "CONSOLE" in line or "Refused to" in line or "Uncaught" in line]
    if console:
        failures.append("console messages: " + " | ".join(console[:5]))
    m = re.search(r'<pre id="selfcheck">(.*?)</pre>', dom.stdout, re.S)
    if dom.returncode != 0 or not m or not m.group(1).strip():
        failures.append(f"no self-check in the rendered page (browser exit {dom.returncode}): "
                        f"{dom.stderr.strip()[-400:]}")
    else:
        check = json.loads(m.group(1).replace("&quot;", '"'))
        print(f"report_browser_test: the page reports {json.dumps(check)}")
        if check["images"] < 1 + len(RUNS):
            failures.append(f"only {check['images']} images")
        if check["broken"]:
            failures.append(f"{check['broken']} images did not load")
        widths = check["timeline_widths"]
        if len(widths) != len(RUNS):
            failures.append(f"{len(widths)} timelines, expected {len(RUNS)} (one per traced run)")
        if len({tuple(w) for w in widths}) > 1:
            failures.append(f"the timelines differ in width: {widths}")
        if any(w[0] <= 0 or w[1] <= 0 for w in widths):
            failures.append(f"a timeline has no width: {widths}")
    if not os.path.isfile(shot) or os.path.getsize(shot) == 0:
        failures.append("no screenshot")
    for f in failures:
        print(f"report_browser_test: FAIL: {f}", file=sys.stderr)
    if failures:
        sys.exit(1)
    print(f"report_browser_test: passed ({browser}); screenshot: {shot}")


if __name__ == "__main__":
    main()
