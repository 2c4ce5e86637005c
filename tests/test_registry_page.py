"""The registry page in a real browser: Debian's chromium, driven by playwright, served by garden.

Skipped only where chromium is missing and ``CI`` is unset; under ``CI=true`` a missing browser
fails the run, because ``.ci/run`` installs it.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import ROOT
from garden.registry import stage_summary
from garden.schema import validate_registry
from garden.serve import make_server

#: a real chromium (deselect with -m 'not browser')
pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
if not CHROMIUM and not IN_CI:
    pytest.skip("Debian's chromium is not installed (apt-get install chromium)", allow_module_level=True)
try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:
    if IN_CI:
        raise
    pytest.skip("playwright is not installed (pip install -e '.[dev]')", allow_module_level=True)

CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def model(name: str, domain: str, tasks: list[str], plugin: str, params: int, description: str,
          layouts: dict | None = None) -> dict:
    """A registry record, complete enough to pass the schema, with one pretrained variant."""
    return {
        "name": name, "family": name, "domain": domain, "description": description, "tasks": tasks,
        "builder": f"{plugin.replace('-', '_')}:Family",
        "variants": [{"name": "base", "hub_id": f"org/{name}-base", "revision": "0123abcdef" * 4, "params": params,
                      "flops": 200 * params, "flops_input": "input_ids 1x128", "file_size": 4 * params,
                      "config": {}, "description": "", "weights_format": "safetensors"}],
        "default": "base", "paper": f"The {name} paper", "paper_url": f"https://arxiv.org/abs/{name}",
        "license": "apache-2.0", "layouts": layouts or {},
        "stage_summaries": {ipus: stage_summary(layers, tasks, tied=[t for t in tasks if t == "mlm"])  # mlm ties its head
                            for ipus, layers in (layouts or {}).items()},
        "results": [], "plugin": plugin, "plugin_version": "1.0",
        "commands": {t: f"python -m garden model={name} task={t}" for t in tasks},
    }


MODELS = [
    model("bert", "nlp", ["mlm", "qa"], "garden-nlp", 110_000_000, "Bidirectional encoder from transformers",
          {"4": [0, 4, 4, 4]}),
    model("gpt2", "nlp", ["causal-lm", "generate"], "garden-nlp", 124_000_000, "Decoder-only language model"),
    model("lxmert", "multimodal", ["vqa"], "garden-lxmert", 208_000_000, "Cross-modality encoder for questions on images"),
    model("schnet", "gnn", ["regress"], "garden-gnn", 455_000, "Continuous-filter convolutions on molecules"),
    model("vit", "vision", ["classify"], "garden-vit", 86_000_000, "Vision Transformer on image patches",
          {"4": [3, 3, 3, 3], "2": [6, 6]}),
    model("wav2vec2", "speech", ["asr"], "garden-speech", 95_000_000, "Self-supervised speech representations"),
]


def names(predicate=lambda m: True) -> list[str]:
    return sorted(m["name"] for m in MODELS if predicate(m))


@contextmanager
def serving(registry: Path):
    server = make_server(registry, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def sample_url(tmp_path_factory):
    """The page, serving a registry with one model per domain (two NLP ones)."""
    document = {"schema_version": 1, "models": MODELS}
    assert validate_registry(document) == []
    path = tmp_path_factory.mktemp("registry") / "registry.json"
    path.write_text(json.dumps(document))
    with serving(path) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM:
        pytest.fail("CI is set but chromium is missing; .ci/run installs it with apt-get install chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def open_page(browser):
    """``open_page(url)`` loads the page and waits for its cards; any JavaScript error fails the test."""
    contexts, errors = [], []

    def load(url: str, **context_options):
        context = browser.new_context(**context_options)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda err: errors.append(f"page error: {err}"))
        page.on("console", lambda msg: errors.append(f"console: {msg.text}") if msg.type == "error" else None)
        page.goto(url)
        page.wait_for_selector("#count:has-text(' of ')")
        return page

    yield load
    for context in contexts:
        context.close()
    assert errors == []


def card_names(page) -> list[str]:
    return page.locator(".card h2").all_inner_texts()


def test_every_entry_of_the_real_registry_renders_without_javascript_errors(open_page):
    models = json.loads((ROOT / "registry.json").read_text())["models"]
    with serving(ROOT / "registry.json") as url:
        page = open_page(url)
        expect(page.locator(".card")).to_have_count(len(models))
        assert card_names(page) == sorted(m["name"] for m in models)
        for m in models:
            card = page.locator(f".card[data-name='{m['name']}']")
            expect(card.locator(".badge")).to_have_text(m["domain"])
            assert card.locator(".commands code").all_inner_texts() == list(m["commands"].values())


def test_a_card_shows_variants_sizes_layouts_license_and_links(open_page, sample_url):
    vit = open_page(sample_url).locator(".card[data-name=vit]")
    expect(vit.locator(".variants")).to_contain_text("86.0M")
    expect(vit.locator(".variants")).to_contain_text("17.2 GFLOPs")
    expect(vit.locator(".variants")).to_contain_text("344.0 MB")
    expect(vit.locator(".meta")).to_contain_text("license apache-2.0")
    assert vit.locator(".layout-ipus").all_inner_texts() == ["2 IPUs", "4 IPUs"]
    expect(vit.locator(".layout").nth(1).locator(".stage").first).to_have_attribute(
        "aria-label", "IPU 0: embeddings + layers 0-2")
    bert = open_page(sample_url).locator(".card[data-name=bert]")
    expect(bert.locator(".stage").first).to_have_attribute("aria-label", "IPU 0: embeddings + tied head (mlm)")
    expect(bert.locator(".stage").last).to_have_attribute("aria-label", "IPU 3: layers 8-11 + head (qa)")
    expect(vit.get_by_role("link", name="Hugging Face Hub")).to_have_attribute("href", "https://huggingface.co/org/vit-base")
    expect(vit.get_by_role("link", name="Paper")).to_have_attribute("href", "https://arxiv.org/abs/vit")


def test_the_domain_filter_keeps_only_that_domain(open_page, sample_url):
    page = open_page(sample_url)
    page.locator("input[name=domain][value=nlp]").check()
    expect(page.locator(".card h2")).to_have_text(names(lambda m: m["domain"] == "nlp"))
    expect(page.locator("#count")).to_have_text(f"2 of {len(MODELS)} models")


def test_the_task_filter_keeps_only_models_with_that_task(open_page, sample_url):
    page = open_page(sample_url)
    page.select_option("#task", "qa")
    expect(page.locator(".card h2")).to_have_text(["bert"])


def test_the_plugin_filter_keeps_only_that_plugins_models(open_page, sample_url):
    page = open_page(sample_url)
    page.select_option("#plugin", "garden-nlp")
    expect(page.locator(".card h2")).to_have_text(["bert", "gpt2"])


@pytest.mark.parametrize("text, expected", [
    ("wav", ["wav2vec2"]),                   # a name
    ("molecules", ["schnet"]),               # a description
    ("causal-lm", ["gpt2"]),                 # a task
    ("encoder images", ["lxmert"]),          # every word, anywhere
    ("no such model", []),
])
def test_search_matches_names_descriptions_and_tasks(open_page, sample_url, text, expected):
    page = open_page(sample_url)
    page.fill("#q", text)
    expect(page.locator(".card h2")).to_have_text(expected)
    assert page.locator("#empty").is_visible() == (expected == [])


def test_filters_combine_and_clearing_brings_every_card_back(open_page, sample_url):
    page = open_page(sample_url)
    page.locator("input[name=domain][value=nlp]").check()
    page.fill("#q", "decoder")
    expect(page.locator(".card h2")).to_have_text(["gpt2"])
    page.click("#clear")
    expect(page.locator(".card")).to_have_count(len(MODELS))
    assert page.url == sample_url


def test_sorting_by_size_orders_cards_by_parameter_count(open_page, sample_url):
    page = open_page(sample_url)
    by_size = [m["name"] for m in sorted(MODELS, key=lambda m: m["variants"][0]["params"])]
    page.select_option("#sort", "params")
    expect(page.locator(".card h2")).to_have_text(by_size)
    page.select_option("#sort", "-params")
    expect(page.locator(".card h2")).to_have_text(by_size[::-1])
    page.select_option("#sort", "name")
    expect(page.locator(".card h2")).to_have_text(names())


def test_the_url_carries_the_filter_state_to_a_fresh_page(open_page, sample_url):
    page = open_page(sample_url)
    page.locator("input[name=domain][value=nlp]").check()
    page.select_option("#task", "generate")
    page.select_option("#sort", "-params")
    page.fill("#q", "language")
    expect(page.locator(".card h2")).to_have_text(["gpt2"])
    shared = page.url
    assert "domain=nlp" in shared and "task=generate" in shared and "sort=-params" in shared and "q=language" in shared

    fresh = open_page(shared)
    expect(fresh.locator(".card h2")).to_have_text(["gpt2"])
    expect(fresh.locator("input[name=domain][value=nlp]")).to_be_checked()
    expect(fresh.locator("#task")).to_have_value("generate")
    expect(fresh.locator("#sort")).to_have_value("-params")
    expect(fresh.locator("#q")).to_have_value("language")


def test_a_link_with_filters_opens_filtered(open_page, sample_url):
    page = open_page(sample_url + "?domain=speech")
    expect(page.locator(".card h2")).to_have_text(["wav2vec2"])


def test_the_copy_button_copies_its_tasks_command_from_the_keyboard(open_page, sample_url):
    page = open_page(sample_url, permissions=["clipboard-read", "clipboard-write"])
    button = page.get_by_role("button", name="Copy the command that runs bert qa")
    button.focus()
    page.keyboard.press("Enter")
    expect(page.locator("body")).to_have_attribute("data-last-copied", "python -m garden model=bert task=qa")
    assert page.evaluate("navigator.clipboard.readText()") == "python -m garden model=bert task=qa"
    expect(page.locator("#status")).to_have_text("Copied: python -m garden model=bert task=qa")


def test_on_a_phone_the_cards_stack_in_one_column_without_sideways_scrolling(open_page, sample_url):
    page = open_page(sample_url, viewport={"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    lefts = {round(box["x"]) for box in (c.bounding_box() for c in page.locator(".card").all())}
    assert len(lefts) == 1


def test_on_a_desktop_the_cards_sit_side_by_side(open_page, sample_url):
    page = open_page(sample_url, viewport={"width": 1280, "height": 900})
    tops = [round(c.bounding_box()["y"]) for c in page.locator(".card").all()]
    assert tops[0] == tops[1] == tops[2]


def test_the_screenshot_script_writes_desktop_and_phone_pictures(browser, tmp_path):
    from importlib.util import module_from_spec, spec_from_file_location

    spec = spec_from_file_location("screenshots", ROOT / "docs" / "registry" / "screenshots.py")
    screenshots = module_from_spec(spec)
    spec.loader.exec_module(screenshots)
    written = screenshots.take_screenshots(ROOT / "registry.json", tmp_path, browser)
    assert [p.name for p in written] == ["screenshot-desktop.png", "screenshot-phone.png"]
    from PIL import Image

    for path, size in zip(written, screenshots.SIZES.values()):
        with Image.open(path) as picture:
            assert picture.format == "PNG" and picture.size == size  # the viewport, at one pixel per CSS pixel
            colours = picture.convert("RGB").getcolors(maxcolors=4096)  # None: more than 4096
            assert colours is None or len(colours) > 64, f"{path.name} is (nearly) blank: {len(colours)} colours"


def test_each_entry_links_its_notebook_and_the_notebook_is_served(open_page, monkeypatch):
    monkeypatch.delenv("GARDEN_NOTEBOOK_URL", raising=False)
    with serving(ROOT / "registry.json") as url:
        page = open_page(url)
        link = page.get_by_role("link", name="Notebook for vit classify")
        expect(link).to_have_attribute("href", "notebooks/vit-classify.ipynb")
        expect(page.locator(".notebook .open")).to_have_count(0)  # no launch template: no "Open in" button
        served = page.request.get(url + "notebooks/vit-classify.ipynb")
        assert served.ok and served.json()["metadata"]["garden"]["model"] == "vit"
        models = json.loads((ROOT / "registry.json").read_text())["models"]
        assert page.locator(".notebook .nb").count() == sum(len(m["tasks"]) for m in models)


def test_the_open_in_button_follows_the_launch_url_template(open_page, monkeypatch):
    template = "https://colab.research.google.com/github/org/garden/blob/main/{path}"
    monkeypatch.setenv("GARDEN_NOTEBOOK_URL", template)
    with serving(ROOT / "registry.json") as url:
        page = open_page(url)
        button = page.get_by_role("link", name="Open the bert qa notebook in Colab")
        expected = template.replace("{path}", "notebooks/bert-qa.ipynb")
        expect(button).to_have_attribute("href", expected)
        expect(button).to_have_text("Open in Colab")
        # the host is outside this machine: answer for it, and check the click lands there
        page.context.route("https://colab.research.google.com/**",
                           lambda route: route.fulfill(status=200, content_type="text/html", body="<p>opened</p>"))
        with page.context.expect_page() as opened:
            button.click()
        launched = opened.value
        launched.wait_for_load_state()
        assert launched.url == expected
        assert launched.locator("p").inner_text() == "opened"
