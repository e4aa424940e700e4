import os

import pytest
import torch

#: Where tests/test_notebooks_run.py leaves a copy of each notebook it executed (under the session's base
#: temporary folder), so that tests/test_book_browser.py builds the book from them instead of executing
#: the notebooks a second time.
EXECUTED_FOR_BOOK = "executed-notebooks"


#: Test files that must run in the process of another, after it: the book's browser test builds the book
#: from the notebooks test_notebooks_run.py executed (left under that process's base temporary folder).
RUNS_AFTER = {"test_book_browser.py": "test_notebooks_run.py"}


#: The files that take longest (minutes each on 2 cores), longest first: under `make test` each process
#: takes the next file in collection order, so these start first and the short files fill in beside them.
#: Only an order: a file missing from this list runs all the same, after them.
LONGEST_FIRST = (
    "test_notebooks_run.py",
    "test_browser_widgets.py",
    "test_committed_results.py",
    "test_hub_folder.py",
    "test_wheel.py",
    "test_engine_distribution.py",
    "test_fresh_processor.py",
    "test_batch_blocks.py",
    "test_browser_lab_numbers.py",
)


def pytest_collection_modifyitems(config, items):
    """The longest files first, and the book's browser test after the notebooks it is built from."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(
        key=lambda item: (
            rank.get(RUNS_AFTER.get(item.path.name, item.path.name), len(rank)),
            item.path.name in RUNS_AFTER,
        )
    )


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`make test` runs pytest-xdist with `--dist loadfile`: each test file is one unit of work for one
    process, so a module's fixtures (a fresh virtual environment, a loaded model pair) are built once; here
    the book's browser test joins the unit of the notebooks it is built from. (`--dist loadgroup` would be
    the usual way, but pytest-xdist 3.8 renames node ids in a way pytest 9 ignores.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LoadFileWithFollowers(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            folder, slash, name = scope.rpartition("/")
            return folder + slash + RUNS_AFTER.get(name, name)

    return LoadFileWithFollowers(config, log)


def _share_the_cores_between_workers():
    """Each pytest-xdist worker takes its share of the cores for torch, so two workers on two cores do not
    run four threads that wait for one another."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))


_share_the_cores_between_workers()


@pytest.fixture(autouse=True)
def _deterministic():
    torch.manual_seed(0)
    yield


@pytest.fixture
def one_thread():
    """Tiny models: handing work between threads costs more than the arithmetic."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="session")
def world():
    from tutorial_lib.toy.toyworld import ToyWorld

    return ToyWorld()


# CI explores the same hypothesis examples every run; locally each run explores new ones.
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default"))


# Tiny random pairs (a verifier and a perturbed copy drafting for it), shared by the engine's route tests.
@pytest.fixture(scope="module")
def llama():
    from tutorial_lib import models

    verifier = models.tiny_random_llama(0)
    return models.ModelPair(models.perturbed(verifier, 0.3, seed=1), verifier)


@pytest.fixture(scope="module")
def t5():
    from tutorial_lib import models

    verifier = models.tiny_random_t5(0)
    return models.ModelPair(models.perturbed(verifier, 0.6, seed=2), verifier)
