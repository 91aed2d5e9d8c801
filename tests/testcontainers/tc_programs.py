"""The Java and Go programs of tests/testcontainers, which `make install-test` builds:
java/ with Maven (classes in java/target/classes, jars in java/lib, then java/lib/.stamp)
and go/ with Go (go/bin/tckafka). A missing build skips (fails under CI=true); a build
older than its sources fails."""

from __future__ import annotations

import os
from pathlib import Path

from helpers.env import missing

HERE = Path(__file__).resolve().parent
JAVA_DIR = HERE / "java"
JAVA_CLASS = JAVA_DIR / "target/classes/dev/odradek/testcontainers/KafkaModuleCheck.class"
JAVA_MAIN = "dev.odradek.testcontainers.KafkaModuleCheck"
GO_DIR = HERE / "go"
GO_BINARY = GO_DIR / "bin" / "tckafka"


def _built(target: Path, sources: list[Path]) -> Path:
    if not target.is_file():
        missing(f"{target} is not built (run `make install-test`)")
    stale = [p.name for p in sources if p.stat().st_mtime > target.stat().st_mtime]
    if stale:
        raise AssertionError(f"{target} is older than {', '.join(stale)}: run `make install-test`")
    return target


def java_classpath() -> str:
    sources = [JAVA_DIR / "pom.xml", *JAVA_DIR.glob("src/main/java/**/*.java")]
    _built(JAVA_DIR / "lib" / ".stamp", sources)  # touched after each build
    if not JAVA_CLASS.is_file():
        missing(f"{JAVA_CLASS} is not built (run `make install-test`)")
    return os.pathsep.join([str(JAVA_DIR / "target" / "classes"), str(JAVA_DIR / "lib" / "*")])


def go_binary() -> Path:
    return _built(GO_BINARY, [GO_DIR / "go.mod", GO_DIR / "go.sum", *GO_DIR.glob("*.go")])
