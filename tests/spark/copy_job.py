"""A Spark driver of its own for the exactly-once tests: a streaming query copying one
topic to another through ``format("odradek")``, restarted from its checkpoint when it
fails. It prints one JSON line per event on stdout (started, progress, failed, done)
so a test can follow it, kill it with -9 and start it again.

    python tests/spark/copy_job.py --bootstrap H:P --input A --output B --checkpoint DIR
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any


def say(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def report(query: Any, seen: int) -> int:
    """Announce the micro-batches finished since batch ``seen``; return the last one."""
    for progress in query.recentProgress:
        if progress["batchId"] > seen:
            seen = progress["batchId"]
            say("progress", batch=seen, rows=progress["numInputRows"])
    return seen


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--max-offsets", type=int, default=0)
    parser.add_argument("--interval-ms", type=int, default=0, help="0: Trigger.AvailableNow")
    parser.add_argument("--restarts", type=int, default=0)
    parser.add_argument("--task-retries", type=int, default=1)
    args = parser.parse_args()

    import odradek.spark as odradek_spark

    spark = odradek_spark.local_session("copy-job", master=f"local[2,{args.task_retries}]")

    def start() -> Any:
        source = (
            spark.readStream.format("odradek")
            .option("kafka.bootstrap.servers", args.bootstrap)
            .option("subscribe", args.input)
            .option("startingOffsets", "earliest")
            .option("kafkaConsumer.pollTimeoutMs", "20000")
        )
        if args.max_offsets:
            source = source.option("maxOffsetsPerTrigger", str(args.max_offsets))
        writer = (
            source.load()
            .select("key", "value")
            .writeStream.format("odradek")
            .option("kafka.bootstrap.servers", args.bootstrap)
            .option("topic", args.output)
            .option("kafkaProducer.timeoutMs", "20000")
            .option("checkpointLocation", args.checkpoint)
        )
        if args.interval_ms:
            writer = writer.trigger(processingTime=f"{args.interval_ms} milliseconds")
        else:
            writer = writer.trigger(availableNow=True)
        return writer.start()

    restarts = args.restarts
    while True:
        query = start()
        say("started", id=query.id)
        seen = -1
        try:
            while query.isActive:
                seen = report(query, seen)
                time.sleep(0.2)
            query.awaitTermination()
            report(query, seen)
            say("done")
            return 0
        except Exception as exc:  # the query failed: go on from the checkpoint
            say("failed", error=str(exc).splitlines()[0][:500])
            if restarts == 0:
                return 1
            restarts -= 1
            time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
