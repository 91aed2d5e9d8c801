"""`quorum-state` in the metadata log's directory: a voter's epoch, the leader it knew
and its vote, in Kafka's layout, written (and synced) before the voter acts on a
change, so that a restarted voter never votes twice in one epoch."""

from __future__ import annotations

import json
import os
from pathlib import Path

from odradek.broker.cluster.quorum.rules import NONE, Election

FILE_NAME = "quorum-state"
NO_DIRECTORY = "AAAAAAAAAAAAAAAAAAAAAA"


def read(directory: Path) -> Election:
    path = directory / FILE_NAME
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return Election()
    except (OSError, ValueError) as exc:
        raise RuntimeError(f"{path}: unreadable quorum state ({exc})") from exc
    return Election(
        epoch=int(data.get("leaderEpoch", 0)),
        leader_id=int(data.get("leaderId", NONE)),
        voted_id=int(data.get("votedId", NONE)),
    )


def write(directory: Path, state: Election) -> None:
    document = {
        "leaderId": state.leader_id,
        "leaderEpoch": state.epoch,
        "votedId": state.voted_id,
        "votedDirectoryId": NO_DIRECTORY,
        "data_version": 1,
    }
    path = directory / FILE_NAME
    staged = path.with_name(FILE_NAME + ".tmp")
    with open(staged, "w") as out:
        out.write(json.dumps(document))
        out.flush()
        os.fsync(out.fileno())
    os.replace(staged, path)
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
