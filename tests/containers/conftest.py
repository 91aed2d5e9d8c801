"""The image tests build their images once per session (the Debian base once per machine)."""

from __future__ import annotations

import pytest
from helpers.containers import build_images


@pytest.fixture(scope="session")
def images() -> None:
    build_images()
