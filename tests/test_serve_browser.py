"""The web page of ``gseek serve`` in a real browser: Debian's headless Chromium driven by Selenium
submits queries and reads the hit table (skipped where chromium or chromium-driver is absent:
``apt-get install -y chromium chromium-driver``). The screenshot is kept in the test's tmp dir."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
webdriver = pytest.importorskip("selenium.webdriver")

from serve_helpers import Service, call, make_queries, search_body  # noqa: E402

from gseek.datasets import lambda_genome  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="no chromium / chromedriver (Debian: chromium "
                                                                  "chromium-driver)")
#: Seconds the page may take to show a result.
WAIT_S = 120


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    from gseek.index import Index

    d = tmp_path_factory.mktemp("browser")
    Index.build(lambda_genome(), wgram=8, device="cpu").save(d / "lambda.gseek")
    make_queries(d / "q.fa", 4, seed=5)
    svc = Service(d / "lambda.gseek", cwd=d)
    svc.queries = d / "q.fa"
    yield svc
    assert svc.stop() == 0, svc.err.decode()


@pytest.fixture
def browser(tmp_path):
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service as DriverService

    options = Options()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1400",
                f"--user-data-dir={tmp_path / 'profile'}", "--no-first-run", "--disable-extensions"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=DriverService(DRIVER), options=options)
    driver.set_page_load_timeout(WAIT_S)
    try:
        yield driver
    finally:
        driver.quit()


def test_the_page_searches_and_shows_a_sortable_table(service, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import Select, WebDriverWait

    wait = WebDriverWait(browser, WAIT_S)
    browser.get(service.url + "/")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#database option"))
    assert Select(browser.find_element(By.ID, "database")).first_selected_option.get_attribute("value") == "lambda"
    browser.find_element(By.ID, "queries").send_keys(service.queries.read_text())
    browser.find_element(By.ID, "submit").click()
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "table.hits tbody tr")))

    expected = json.loads(call(service.url + "/api/v1/search", search_body(service.queries, fmt="json"))[1])
    sections = browser.find_elements(By.CSS_SELECTOR, "section.query")
    assert [s.get_attribute("data-query") for s in sections] == [q["name"] for q in expected["queries"]]
    first = expected["queries"][0]["hits"][0]
    cells = [td.text for td in sections[0].find_elements(By.CSS_SELECTOR, "tbody tr:first-child td")]
    assert cells[0] == first["saccver"] and cells[1] == str(first["pident"]) and int(cells[5]) == first["qstart"]
    assert len(sections[0].find_elements(By.CSS_SELECTOR, "svg.overview rect.hsp")) == len(expected["queries"][0]["hits"])
    assert sections[-1].find_element(By.CSS_SELECTOR, ".nohits").text == "No hits found."

    # sort the first table by query start, both ways
    header = sections[0].find_element(By.CSS_SELECTOR, 'th[data-key="qstart"]')
    header.click()
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert header.get_attribute("aria-sort") == "descending"

    # the pairwise view of a hit
    sections[0].find_element(By.CSS_SELECTOR, "tbody tr").click()
    text = sections[0].find_element(By.CSS_SELECTOR, "pre.alignment").text
    assert text.splitlines()[0].startswith(expected["queries"][0]["name"] + " vs ") and "Query" in text and "Sbjct" in text
    assert not browser.find_element(By.ID, "downloads").get_attribute("hidden")
    shot = tmp_path / "serve-page.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000


def test_the_page_shows_a_refusal(service, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, WAIT_S)
    browser.get(service.url + "/")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#database option"))
    browser.find_element(By.ID, "queries").send_keys(">a\nAC@GT\n")
    browser.find_element(By.ID, "submit").click()
    wait.until(lambda d: "error" in d.find_element(By.ID, "status").get_attribute("class"))
    assert "queries:2: invalid DNA character '@'" in browser.find_element(By.ID, "status").text
