"""The short soak (``make soak`` runs the long one): kill -9 cycles under mixed load,
then nothing acknowledged is lost or doubled, transactions are all or nothing and
committed group offsets keep up with the acknowledged commits."""

from __future__ import annotations

import os
import random

import pytest
from helpers.broker import Broker
from helpers.env import soak_scale

from soak.soak import SoakSettings, run_soak

# ODRADEK_SOAK=N runs N cycles; ODRADEK_SOAK_SEED repeats a run's random choices.
CYCLES = soak_scale(default_full=5, default_ci=5)


@pytest.mark.soak
@pytest.mark.timeout(600)
def test_kill9_cycles_under_mixed_load(broker: Broker) -> None:
    seed = int(os.environ.get("ODRADEK_SOAK_SEED") or random.randrange(1 << 31))
    result = run_soak(broker, SoakSettings(cycles=CYCLES, seed=seed))
    print(result.table())
    assert not result.problems, "\n".join([*result.problems, result.table()])
