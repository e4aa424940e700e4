"""The course book in a real browser: headless Chromium opens the built site from disk, with every request
that leaves the site blocked.

- Every HTML page loads without a console error or a failed request, and MathJax typesets each of its
  equations (an `mjx-container` for every `.math` element, none of them a MathJax error).
- Every plotly figure with a slider (the alpha sliders drawn in advance, `tutorial_lib.views.slider_steps`)
  moves when its rail is clicked, and shows another step: other traces and another title.
- Every exercise's solution is hidden until its title is clicked, and shown after.
- Every solution of the exercises page shows the value its executed notebook computed.
- The site's own search finds "Lemma 3" (notebook 02's Lemma 3 by simulation among the results).
- Every image says what it shows: its alt text is neither empty, nor a file name, nor the generic "static
  copy of the figure" (`alt_problem`).
- No page shows a bare `inf`, `-inf` or `NaN`: every such word of a page's visible text stands in a
  sentence that explains it (`unexplained_tokens` gives the rule).

The site is built (book/build_book.py) from executed notebooks, never executing them here: in a run of the
whole suite, from the copies tests/test_notebooks_run.py leaves (it executes every notebook, at small
parameters; this module runs after it, see conftest.py); else from `$TUTORIAL_LIB_BOOK_NOTEBOOKS`; else from
what `make tutorial` left in build/notebooks/, into build/book/ when that site is missing or older than its
sources. With none of them, the test fails saying what to run.

Needs Debian's `chromium` (driven through `executable_path`, never `playwright install`) and Playwright
for Python. Without them the module is skipped, except under CI (`CI` set), where it fails.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from conftest import EXECUTED_FOR_BOOK

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _unavailable(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the book's browser test: {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


if not CHROMIUM.exists():
    _unavailable(
        "the book's browser test needs Debian's chromium at /usr/bin/chromium: `apt-get install chromium` "
        "(.ci/run installs it when run as root)"
    )
try:
    from playwright import sync_api
except ImportError:
    _unavailable(
        "the book's browser test needs Playwright for Python: `pip install -e '.[dev]'` (never "
        "`playwright install`: it drives /usr/bin/chromium)"
    )

sys.path.insert(0, str(REPO / "book"))
import build_book  # noqa: E402

#: JavaScript: once MathJax has typeset the page, its `.math` elements and what MathJax made of them.
_MATHS = """async () => {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
    const maths = document.querySelectorAll('.math');
    const rendered = document.querySelectorAll('.math mjx-container, mjx-container.MathJax').length;
    return {maths: maths.length, rendered: rendered,
            errors: document.querySelectorAll('mjx-merror').length, mathjax: !!window.MathJax};
}"""

#: JavaScript: the state of the `index`-th plotly figure that has a slider.
_SLIDER_STATE = """(index) => {
    const plots = Array.from(document.querySelectorAll('.js-plotly-plot'))
        .filter(p => p.layout && p.layout.sliders && p.layout.sliders.length);
    const plot = plots[index];
    const title = plot.layout.title;
    return {active: plot.layout.sliders[0].active || 0, steps: plot.layout.sliders[0].steps.length,
            visible: JSON.stringify(plot.data.map(t => t.visible !== false)),
            title: typeof title === 'string' ? title : (title && title.text) || ''};
}"""


def _executed_notebooks(tmp_path_factory) -> tuple[Path, Path]:
    """(folder of executed notebooks, folder the site goes to), by the order the module's docstring gives."""
    names = build_book.notebook_names()
    suite_copies = tmp_path_factory.getbasetemp() / EXECUTED_FOR_BOOK
    if all((suite_copies / f"{name}.ipynb").exists() for name in names):
        return suite_copies, tmp_path_factory.getbasetemp() / "book"
    given = os.environ.get("TUTORIAL_LIB_BOOK_NOTEBOOKS")
    if given:
        return Path(given), tmp_path_factory.getbasetemp() / "book"
    if not build_book.missing_notebooks(build_book.EXECUTED):
        return build_book.EXECUTED, build_book.OUT
    pytest.fail(
        "the book's browser test needs executed notebooks and has none: run `make tutorial` (it writes "
        "build/notebooks/), or the whole suite (tests/test_notebooks_run.py executes every notebook), or "
        "set TUTORIAL_LIB_BOOK_NOTEBOOKS to a folder of executed notebooks"
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    executed, out = _executed_notebooks(tmp_path_factory)
    if out != build_book.OUT or build_book.is_stale(executed, out):
        build_book.build(executed, out)
    return out


@pytest.fixture(scope="module")
def browser(site, tmp_path_factory):
    """Headless Chromium that reaches nothing but the files of `site`; `blocked` lists what it refused."""
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("book-chromium-profile")),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1300, "height": 1000},
        )
        context.blocked = []
        inside = str(site.resolve())

        def gate(route):
            url = route.request.url
            parsed = urlparse(url)
            if parsed.scheme == "file" and unquote(parsed.path).startswith(inside + os.sep):
                route.continue_()
            elif parsed.scheme in ("data", "blob"):
                route.continue_()
            else:
                context.blocked.append(url)
                route.abort()

        context.route("**/*", gate)
        yield context
        context.close()


def _open(browser, path: Path):
    """A new page at `path`, with the console errors, page errors and failed requests it collects."""
    page = browser.new_page()
    problems = []
    page.on(
        "console",
        lambda message: problems.append(f"console: {message.text}") if message.type == "error" else None,
    )
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on(
        "requestfailed", lambda request: problems.append(f"request failed: {request.url} ({request.failure})")
    )
    uri = path.resolve().as_uri()
    page.goto(uri, wait_until="load")
    if 'http-equiv="Refresh"' in path.read_text(
        errors="replace"
    ):  # the root index.html forwards to the intro
        page.wait_for_url(lambda url: url != uri, wait_until="load")
    return page, problems


def _pages(site: Path) -> list[Path]:
    """The site's pages, without its copies of sources: `_sources`, and `_modules`, the library's code
    as `sphinx.ext.viewcode` shows it (code, like a notebook's code cells, may print `inf` and `nan`)."""
    copies = {"_sources", "_static", "_modules"}
    return sorted(p for p in site.rglob("*.html") if not copies & set(p.parts))


@pytest.fixture(scope="module")
def page_reports(site, browser) -> dict:
    """Every page opened once: its equations, text and images as the browser shows them, and the console
    errors, page errors and failed requests it collected (the page tests below read these)."""
    reports = {}
    for path in _pages(site):
        page, problems = _open(browser, path)
        try:
            found = page.evaluate(_TEXT_AND_IMAGES)  # as the page loaded, before MathJax typesets
            maths = page.evaluate(_MATHS)
            page.wait_for_timeout(100)  # a late script error still counts
        finally:
            page.close()
        reports[str(path.relative_to(site))] = dict(maths=maths, problems=problems, **found)
    return reports


def test_every_page_loads_and_renders_its_equations(page_reports, browser):
    assert len(page_reports) > 20, f"the site has only {len(page_reports)} pages"
    failures, with_maths = [], 0
    for name, report in page_reports.items():
        maths, problems = report["maths"], list(report["problems"])
        if maths["maths"]:
            with_maths += 1
            if not maths["mathjax"] or maths["rendered"] < maths["maths"] or maths["errors"]:
                problems.append(f"equations: {maths}")
        failures += [f"{name}: {problem}" for problem in problems]
    assert not browser.blocked, (
        f"pages asked for addresses outside the site: {sorted(set(browser.blocked))[:10]}"
    )
    assert not failures, "\n".join(failures[:30])
    # the lessons, the reruns and the API reference write maths
    assert with_maths >= 10, f"only {with_maths} pages have equations"
    print(f"\n{len(page_reports)} pages loaded, {with_maths} with equations typeset")


def _slider_pages(site: Path) -> list[Path]:
    return [p for p in _pages(site) if '"sliders"' in p.read_text(errors="replace")]


def test_each_plotly_slider_moves_and_changes_its_figure(site, browser):
    pages = _slider_pages(site)
    # notebooks 01-05 each draw at least one alpha slider in advance
    assert {p.stem for p in pages} >= {
        "01_target_distributions",
        "02_rejection_rates",
        "03_lemma1_token_cascades",
        "04_lemma2_lossy",
        "05_lemma4_spec_cascades",
    }, [p.stem for p in pages]
    moved = 0
    for path in pages:
        page, problems = _open(browser, path)
        try:
            page.wait_for_function(
                "() => document.querySelectorAll('.js-plotly-plot .slider-container').length > 0",
                timeout=30_000,
            )
            count = page.evaluate(
                "() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                ".filter(p => p.layout && p.layout.sliders && p.layout.sliders.length).length"
            )
            assert count >= 1, path.name
            for index in range(count):
                plot = (
                    page.locator(".js-plotly-plot").filter(has=page.locator(".slider-container")).nth(index)
                )
                plot.scroll_into_view_if_needed()
                before = page.evaluate(_SLIDER_STATE, index)
                rail = plot.locator(".slider-rail-touch-rect").first
                box = rail.bounding_box()
                # click the rail far from the active step: near its right end, or its left end if that is it
                x = 0.9 if before["active"] < before["steps"] / 2 else 0.1
                page.mouse.click(box["x"] + box["width"] * x, box["y"] + box["height"] / 2)
                page.wait_for_function(
                    f"(old) => {{ const now = ({_SLIDER_STATE})({index});"
                    " return now.active !== old.active && now.visible !== old.visible"
                    " && now.title !== old.title; }",
                    arg=before,
                    timeout=10_000,
                )
                moved += 1
        finally:
            page.close()
        assert not problems, f"{path.name}: {problems}"
    print(f"\n{moved} sliders moved on {len(pages)} pages")


_SOLUTIONS = """() => Array.from(document.querySelectorAll('.solution')).map(s => {
    const body = Array.from(s.children).filter(c => !c.classList.contains('admonition-title'));
    return {id: s.id, shown: body.some(c => c.offsetParent !== null && c.getBoundingClientRect().height > 0)};
})"""


def test_each_solution_is_hidden_until_clicked(site, browser):
    pages = [p for p in _pages(site) if 'class="solution' in p.read_text(errors="replace")]
    assert pages, (
        "the book has no exercise solution ({solution} of sphinx-exercise): "
        "the teaching chapter lacks its exercises"
    )
    opened = 0
    for path in pages:
        page, problems = _open(browser, path)
        try:
            page.wait_for_function(
                "() => document.querySelectorAll('.solution .toggle-button').length"
                " === document.querySelectorAll('.solution').length",
                timeout=10_000,
            )
            before = page.evaluate(_SOLUTIONS)
            assert before and not any(s["shown"] for s in before), (
                f"{path.name}: a solution shows unopened: {before}"
            )
            for k, solution in enumerate(before):
                title = page.locator(".solution > .admonition-title").nth(k)
                title.scroll_into_view_if_needed()
                title.click()
                page.wait_for_function(f"() => ({_SOLUTIONS})()[{k}].shown", timeout=5_000)
                opened += 1
        finally:
            page.close()
        assert not problems, f"{path.name}: {problems}"
    print(f"\n{opened} solutions opened on {len(pages)} pages")


#: JavaScript: the page's visible text, without the code a reader reads as code (a notebook's input cells,
#: the API reference's signatures), and every image but Sphinx's expand/collapse icons of the module index
#: (a control whose alt text is its sign, "+" or "-").
_TEXT_AND_IMAGES = """() => {
    const style = document.createElement('style');
    style.textContent = '.cell_input, dt.sig {display: none !important}';
    document.head.appendChild(style);
    const text = (document.querySelector('main') || document.body || document.documentElement).innerText;
    style.remove();
    const images = Array.from(document.images).filter(i => !i.classList.contains('toggler'))
        .map(i => ({alt: i.getAttribute('alt'), src: i.getAttribute('src') || ''}));
    return {text: text, images: images};
}"""

#: A value that is not one: `inf`, `-inf`, `+inf`, `Inf`, `nan` or `NaN` as a word of its own (not part of a
#: longer name such as `allow_nan` or `np.inf`, nor of a word such as "info").
BARE_TOKEN = re.compile(r"(?<![\w.])[-+]?(?:inf|Inf|nan|NaN)(?![\w(])")
#: Words that make a sentence explain such a value: what it means, or when it occurs.
EXPLAINING = re.compile(
    r"\b(?:where|when|if|without|unless|means|infinite|infinitely|infinity|unbounded|not a number|undefined|"
    r"missing|never|not reached|no value|none|fails|allowed)\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[\n\t]+|(?<=[.;!?])\s+")
GENERIC_ALT = "static copy of the figure"
_IMAGE_FILE = re.compile(r"\.(?:png|jpe?g|gif|svg|webp)$", re.IGNORECASE)


_WORD = re.compile(r"\b[A-Za-z][A-Za-z'-]+\b")
_NUMBER_TOKEN = re.compile(r"(?<![\w.])[-+]?\d[\d.,eE+-]*")
#: A sentence of prose, which says something of the words in it, has at least this many words.
PROSE_WORDS = 6


def _explains(sentence: str) -> bool:
    """An `EXPLAINING` word, or a sentence of prose: at least `PROSE_WORDS` words and more words than
    numbers (a table row printed as text, `facts 1.0 SpecDecode 0.36 49 NaN`, has more numbers)."""
    if EXPLAINING.search(sentence):
        return True
    words = len(_WORD.findall(sentence))
    return words >= PROSE_WORDS and words > len(_NUMBER_TOKEN.findall(sentence))


def unexplained_tokens(text: str) -> list:
    """The sentences of `text` that show a `BARE_TOKEN` and do not explain it. The rule: split the visible
    text into sentences at every line break and tab (so a table cell or an output line is a sentence of
    its own) and after `.`, `;`, `!` or `?`; a sentence with such a token explains it when it holds one of
    the `EXPLAINING` words or is a sentence of prose (`_explains`). A cell that reads just `NaN`, or a
    printed table's row, never does."""
    return [
        sentence.strip()
        for sentence in _SENTENCE_END.split(text)
        if BARE_TOKEN.search(sentence) and not _explains(sentence)
    ]


def alt_problem(alt, src: str) -> str:
    """Why an image's alt text does not describe it ("" when it does): missing or empty, a file name (what
    myst-nb writes by default), or the generic phrase of a static copy."""
    alt = (alt or "").strip()
    if not alt:
        return "no alt text"
    if alt.lower() == GENERIC_ALT or alt.lower().startswith(GENERIC_ALT):
        return f"the generic alt {alt!r}"
    if _IMAGE_FILE.search(alt) or alt == src.rsplit("/", 1)[-1]:
        return f"a file name as alt text: {alt!r}"
    return ""


def test_unexplained_tokens_rule():
    assert unexplained_tokens("facts\t1.0\tNaN\t0.3\nrate\t-inf") == ["NaN", "-inf"]
    assert unexplained_tokens("NaN where no item ran. The value is inf without calls.") == []
    assert unexplained_tokens("allow_nan and np.inf and information") == []
    assert unexplained_tokens("3  facts  1.0  SpecDecode [Lossy]  0.360  49  0.347  NaN") != []
    assert unexplained_tokens("The lossy target is not a mixture: NaN.") == []
    assert alt_problem("../_images/ab12.png", "../_images/ab12.png")
    assert alt_problem("static copy of the figure", "data:image/png;base64,x")
    assert not alt_problem("Figure: Lemma 3; rejection rate against alpha.", "x.png")


def test_every_image_is_described_and_no_page_shows_a_bare_inf_or_nan(page_reports):
    images = described = 0
    bad_images, bare = [], {}
    for name, found in page_reports.items():
        for image in found["images"]:
            images += 1
            why = alt_problem(image["alt"], image["src"])
            if why:
                bad_images.append(f"{name}: {why}")
            else:
                described += 1
        left = unexplained_tokens(found["text"])
        if left:
            bare[name] = left
    print(f"\n{described} of {images} images described; bare inf/NaN on {len(bare)} pages")
    assert not bad_images, "\n".join(bad_images[:30])
    assert not bare, "\n".join(
        f"{name} ({len(left)}): {' | '.join(s[:80] for s in left[:4])}" for name, left in bare.items()
    )


def test_search_finds_lemma_3(site, browser):
    page, problems = _open(browser, site / "search.html")
    try:
        page.goto((site / "search.html").resolve().as_uri() + "?q=Lemma+3", wait_until="load")
        page.wait_for_function(  # Sphinx appends results one by one, then says it has finished
            "() => (document.getElementById('search-results')?.innerText || '').includes('Search finished')",
            timeout=30_000,
        )
        results = page.evaluate(
            "() => Array.from(document.querySelectorAll('#search-results li a'))"
            ".map(a => a.getAttribute('href'))"
        )
    finally:
        page.close()
    assert any("02_rejection_rates" in href for href in results), results[:20]
    assert not problems, problems
    print(f"\nsearch for 'Lemma 3': {len(results)} results, first {json.dumps(results[:3])}")


#: JavaScript: the text of every solution on the page, opened or not.
_SOLUTION_TEXTS = "() => Array.from(document.querySelectorAll('.solution')).map(s => s.textContent)"
_NUMBER = r"-?\d+(?:\.\d+)?(?:e[-+]\d+)?"


def test_each_solution_shows_the_value_its_notebook_computed(site, browser):
    """The exercises page gives every solution's value as the executed notebook's check cell glued it: a
    number, a verdict or a method's name, or for a (method, number) exercise each method's number."""
    from tutorial_lib.lessons.exercises import EXERCISES

    page, problems = _open(browser, site / "teaching" / "exercises.html")
    try:
        texts = page.evaluate(_SOLUTION_TEXTS)
    finally:
        page.close()
    assert len(texts) == len(EXERCISES), f"{len(texts)} solutions for {len(EXERCISES)} exercises"
    method_value = rf"[^:;]+: (?:{_NUMBER}|not reached)"
    for spec, text in zip(EXERCISES.values(), texts):
        found = re.search(
            r"Value in the executed notebook(?:\.|, for each method of its table:)[ \t]*(.*)", text
        )
        assert found, f"{spec.id}: its solution gives no value: {text!r}"
        value = found.group(1).strip()
        if spec.kind in ("number", "integer"):
            assert re.fullmatch(_NUMBER, value), f"{spec.id}: {value!r} is not a number"
        elif spec.kind == "method_and_number":
            assert re.fullmatch(rf"{method_value}(?:; {method_value})*", value), f"{spec.id}: {value!r}"
        else:
            assert value and (not spec.choices or value in spec.choices), f"{spec.id}: {value!r}"
    assert not problems, problems
    print(f"\n{len(texts)} solutions with the values of their executed notebooks")


def test_each_notebook_page_links_to_its_part_of_the_exercises_page(site):
    """The notebook's link (a heading anchor, `build_book.exercises_anchor`) leads to the section of the
    exercises page whose heading names that notebook."""
    exercises = (site / "teaching" / "exercises.html").read_text(encoding="utf-8")
    for name in build_book.notebook_names():
        page = (site / build_book.chapter(name) / f"{name}.html").read_text(encoding="utf-8")
        targets = re.findall(r'href="\.\./teaching/exercises\.html#([^"]+)"', page)
        assert targets, f"{name} does not link to its solutions"
        for target in targets:
            section = re.search(rf'<section id="{re.escape(target)}">\s*<h2>Notebook (\d\d): ', exercises)
            assert section and section.group(1) == name[:2], f"{name} links to #{target}, not its section"


def test_executed_reruns_are_staged_without_this_checkouts_paths(tmp_path_factory):
    """The real thing: papermill's injected `output_dir` and the result folders notebooks 06-08 print, as
    the notebooks the book is built from ran here (the suite's own runs, or `make tutorial`'s)."""
    executed, _ = _executed_notebooks(tmp_path_factory)
    for name in ("06_t5_evaluation", "07_gemma_evaluation", "08_real_pair_token_analysis"):
        raw = (executed / f"{name}.ipynb").read_text()
        folders = [folder for folder, _ in build_book.builder_paths()]  # the checkout, home, temporary folder
        assert any(folder in raw for folder in folders), f"{name}: its run printed no path to remove"
        staged = json.dumps(build_book.stage_notebook(json.loads(raw), name))
        assert not [folder for folder in folders if folder in staged], name
        assert staged.count(f"]({build_book.ARXIV})") == 1, name


def test_pages_link_the_modules_they_name_to_api_pages_with_their_source(site):
    """A module a notebook page names links to its page of the API reference, which links to the
    module's code (`sphinx.ext.viewcode`)."""
    linked = set()
    for page in _pages(site):
        if not re.match(r"\d\d_", page.name):
            continue
        for href in re.findall(r'href="([^"#]*_autosummary/tutorial_lib[^"#]*)', page.read_text()):
            target = (page.parent / unquote(href)).resolve()
            assert target.is_file(), f"{page.name}: a link to {href}, which the site does not have"
            linked.add(target)
    assert len(linked) >= 10, f"only {len(linked)} module pages are linked from the notebook pages"

    def is_package(page: Path) -> bool:
        return (REPO.joinpath(*page.stem.split(".")) / "__init__.py").is_file()

    # a module's page links its code; a package's page (a wing's index) lists its modules, whose pages do
    without_source = [p.name for p in linked if not is_package(p) and "viewcode-link" not in p.read_text()]
    assert not without_source, f"API pages without a [source] link: {without_source}"
    packages = [p for p in linked if is_package(p)]
    unlisted = [p.name for p in packages if f'href="{p.stem}.' not in p.read_text()]
    assert not unlisted, f"package pages that list none of their modules: {unlisted}"
