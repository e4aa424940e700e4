import pytest
import torch

#: Where tests/test_notebooks_run.py leaves a copy of each notebook it executed (under the session's base
#: temporary folder), so that tests/test_book_browser.py builds the book from them instead of executing
#: the notebooks a second time.
EXECUTED_FOR_BOOK = "executed-notebooks"


def pytest_collection_modifyitems(config, items):
    """The book's browser test runs last: it builds the book from the notebooks the suite executed."""
    items.sort(key=lambda item: item.path.name == "test_book_browser.py")


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
import os  # noqa: E402

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
