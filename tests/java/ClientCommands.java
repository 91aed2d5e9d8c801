// KafkaTool's producer and consumer commands: produce, consume, group-member and
// offsets-for-times.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.StaleMemberEpochException;
import org.apache.kafka.common.errors.UnknownMemberIdException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

final class ClientCommands {
    private ClientCommands() {
    }

    // ------------------------------------------------------------------ produce

    static final class Pending {
        final int index;
        final Future<RecordMetadata> future;

        Pending(int index, Future<RecordMetadata> future) {
            this.index = index;
            this.future = future;
        }
    }

    static int produce(KafkaTool.Opts o) throws Exception {
        String topic = o.require("topic");
        Map<String, String> d = new HashMap<>();
        d.put("key.serializer", ByteArraySerializer.class.getName());
        d.put("value.serializer", ByteArraySerializer.class.getName());
        d.put("max.block.ms", "15000");
        d.put("request.timeout.ms", "10000");
        d.put("delivery.timeout.ms", "20000");
        d.put("acks", o.get("acks", "all"));
        d.put("compression.type", o.get("compression", "none"));
        if (o.get("idempotence", null) != null) {
            d.put("enable.idempotence", o.get("idempotence", null));
        }
        if (o.get("linger-ms", null) != null) {
            d.put("linger.ms", o.get("linger-ms", null));
        }
        if (o.get("batch-size", null) != null) {
            d.put("batch.size", o.get("batch-size", null));
        }
        Properties props = KafkaTool.clientProps(o, d);
        String txn = o.get("transaction", null);
        if (txn != null && !props.containsKey("transactional.id")) {
            throw new IllegalArgumentException("--transaction needs --prop transactional.id=...");
        }
        Integer fixedPartition = o.intOrNull("partition");

        List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
        if (o.flag("stdin")) {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                JsonNode r = KafkaTool.JSON.readTree(line);
                Integer partition = fixedPartition;
                if (r.hasNonNull("partition")) {
                    partition = Integer.valueOf(r.get("partition").asInt());
                }
                Long ts = null;
                if (r.hasNonNull("timestamp")) {
                    ts = Long.valueOf(r.get("timestamp").asLong());
                }
                String t = r.hasNonNull("topic") ? r.get("topic").asText() : topic;
                List<Header> headers = new ArrayList<>();
                JsonNode hs = r.get("headers");
                if (hs != null && hs.isArray()) {
                    for (JsonNode h : hs) {
                        headers.add(new RecordHeader(h.get(0).asText(), KafkaTool.readBytes(h.get(1))));
                    }
                } else if (hs != null && hs.isObject()) {
                    for (var e : hs.properties()) {
                        headers.add(new RecordHeader(e.getKey(), KafkaTool.readBytes(e.getValue())));
                    }
                }
                records.add(new ProducerRecord<>(t, partition, ts, KafkaTool.readBytes(r.get("key")),
                        KafkaTool.readBytes(r.get("value")), headers));
            }
        } else {
            int count = Integer.parseInt(o.get("count", "1"));
            int valueSize = Integer.parseInt(o.get("value-size", "-1"));
            boolean noKey = o.flag("no-key");
            Random rnd = new Random(42);
            for (int i = 0; i < count; i++) {
                byte[] value;
                if (valueSize >= 0) {
                    value = new byte[valueSize];
                    for (int j = 0; j < valueSize; j++) {
                        value[j] = (byte) ('a' + rnd.nextInt(26));
                    }
                } else {
                    value = ("value-" + i).getBytes(StandardCharsets.UTF_8);
                }
                byte[] key = noKey ? null : ("key-" + i).getBytes(StandardCharsets.UTF_8);
                records.add(new ProducerRecord<>(topic, fixedPartition, key, value));
            }
        }

        int failures = 0;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            if (txn != null) {
                producer.initTransactions();
                producer.beginTransaction();
            }
            List<Pending> pending = new ArrayList<>();
            int paceMs = Integer.parseInt(o.get("pace-ms", "0"));
            for (int i = 0; i < records.size(); i++) {
                if (paceMs > 0) {
                    Thread.sleep(paceMs);
                    if (i % 250 == 0) {
                        ObjectNode progress = KafkaTool.JSON.createObjectNode();
                        progress.put("event", "progress");
                        progress.put("sent", i);
                        KafkaTool.emit(progress);
                    }
                }
                try {
                    pending.add(new Pending(i, producer.send(records.get(i))));
                } catch (Exception e) {
                    ObjectNode n = KafkaTool.JSON.createObjectNode();
                    n.put("index", i);
                    n.set("error", KafkaTool.errorNode(e));
                    KafkaTool.emit(n);
                    failures++;
                }
            }
            producer.flush();
            if (txn != null) {
                if (txn.equals("commit")) {
                    producer.commitTransaction();
                } else {
                    producer.abortTransaction();
                }
            }
            for (Pending p : pending) {
                ObjectNode n = KafkaTool.JSON.createObjectNode();
                n.put("index", p.index);
                try {
                    RecordMetadata md = p.future.get();
                    n.put("topic", md.topic());
                    n.put("partition", md.partition());
                    n.put("offset", md.hasOffset() ? md.offset() : -1L);
                    n.put("timestamp", md.hasTimestamp() ? md.timestamp() : -1L);
                } catch (ExecutionException e) {
                    n.set("error", KafkaTool.errorNode(e));
                    failures++;
                }
                KafkaTool.emit(n);
            }
        }
        return failures == 0 ? 0 : 2;
    }

    // ------------------------------------------------------------------ consume

    static ObjectNode recordJson(ConsumerRecord<byte[], byte[]> r) {
        ObjectNode n = KafkaTool.JSON.createObjectNode();
        n.put("topic", r.topic());
        n.put("partition", r.partition());
        n.put("offset", r.offset());
        n.put("timestamp", r.timestamp());
        n.put("timestamp_type", r.timestampType().name);
        KafkaTool.putBytes(n, "key", r.key());
        KafkaTool.putBytes(n, "value", r.value());
        ArrayNode hs = n.putArray("headers");
        for (Header h : r.headers()) {
            ArrayNode pair = hs.addArray();
            pair.add(h.key());
            KafkaTool.addBytes(pair, h.value());
        }
        r.leaderEpoch().ifPresent(e -> n.put("leader_epoch", e));
        return n;
    }

    static ArrayNode partitionsJson(KafkaConsumer<?, ?> consumer, Collection<TopicPartition> parts,
            boolean withPosition) {
        ArrayNode arr = KafkaTool.JSON.createArrayNode();
        for (TopicPartition tp : parts) {
            ObjectNode p = arr.addObject();
            p.put("topic", tp.topic());
            p.put("partition", tp.partition());
            if (withPosition) {
                p.put("position", consumer.position(tp));
            }
        }
        return arr;
    }

    static List<TopicPartition> partitionsOf(KafkaConsumer<?, ?> consumer, List<String> topics,
            Integer only) {
        List<TopicPartition> out = new ArrayList<>();
        for (String t : topics) {
            List<PartitionInfo> infos = consumer.partitionsFor(t, Duration.ofSeconds(15));
            if (infos == null || infos.isEmpty()) {
                throw new IllegalStateException("no partitions for topic " + t);
            }
            for (PartitionInfo pi : infos) {
                if (only == null || only == pi.partition()) {
                    out.add(new TopicPartition(t, pi.partition()));
                }
            }
        }
        out.sort((a, b) -> a.topic().equals(b.topic())
                ? Integer.compare(a.partition(), b.partition()) : a.topic().compareTo(b.topic()));
        return out;
    }

    static int consume(KafkaTool.Opts o) throws Exception {
        List<String> topics = o.all("topic");
        if (topics.isEmpty()) {
            throw new IllegalArgumentException("missing option --topic");
        }
        String group = o.get("group", null);
        String from = o.get("from", "earliest");
        Map<String, String> d = new HashMap<>();
        d.put("key.deserializer", ByteArrayDeserializer.class.getName());
        d.put("value.deserializer", ByteArrayDeserializer.class.getName());
        d.put("request.timeout.ms", "10000");
        d.put("default.api.timeout.ms", "15000");
        d.put("isolation.level", o.get("isolation-level", "read_uncommitted"));
        if (group != null) {
            d.put("group.id", group);
            d.put("auto.offset.reset", from);
            d.put("enable.auto.commit", o.flag("commit") ? "false" : "true");
        } else {
            d.put("enable.auto.commit", "false");
        }
        Properties props = KafkaTool.clientProps(o, d);
        long maxRecords = Long.parseLong(o.get("max-records", "-1"));
        long timeoutMs = Long.parseLong(o.get("timeout-ms", "10000"));
        boolean untilEnd = o.flag("until-end");
        boolean commit = o.flag("commit");
        long count = 0;

        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            Map<TopicPartition, Long> endOffsets = null;
            if (group != null) {
                consumer.subscribe(topics, new ConsumerRebalanceListener() {
                    @Override
                    public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                        ObjectNode ev = KafkaTool.JSON.createObjectNode();
                        ev.put("event", "revoked");
                        ev.set("partitions", partitionsJson(consumer, parts, false));
                        KafkaTool.emit(ev);
                    }

                    @Override
                    public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                        // position() resolves auto.offset.reset now, so a caller that waits
                        // for this event knows where consumption starts.
                        ObjectNode ev = KafkaTool.JSON.createObjectNode();
                        ev.put("event", "assigned");
                        ev.set("partitions", partitionsJson(consumer, parts, true));
                        KafkaTool.emit(ev);
                    }
                });
            } else {
                List<TopicPartition> parts = partitionsOf(consumer, topics, o.intOrNull("partition"));
                consumer.assign(parts);
                if (from.equals("earliest")) {
                    consumer.seekToBeginning(parts);
                } else if (from.equals("latest")) {
                    consumer.seekToEnd(parts);
                } else {
                    for (TopicPartition tp : parts) {
                        consumer.seek(tp, Long.parseLong(from));
                    }
                }
                ObjectNode ev = KafkaTool.JSON.createObjectNode();
                ev.put("event", "assigned");
                ev.set("partitions", partitionsJson(consumer, parts, true));
                KafkaTool.emit(ev);
            }

            long deadline = System.currentTimeMillis() + timeoutMs;
            while (System.currentTimeMillis() < deadline) {
                if (maxRecords >= 0 && count >= maxRecords) {
                    break;
                }
                if (untilEnd && !consumer.assignment().isEmpty()) {
                    if (endOffsets == null || !endOffsets.keySet().equals(consumer.assignment())) {
                        endOffsets = consumer.endOffsets(consumer.assignment());
                    }
                    boolean done = true;
                    for (Map.Entry<TopicPartition, Long> e : endOffsets.entrySet()) {
                        if (consumer.position(e.getKey()) < e.getValue()) {
                            done = false;
                            break;
                        }
                    }
                    if (done) {
                        break;
                    }
                }
                long left = Math.max(1, Math.min(200, deadline - System.currentTimeMillis()));
                ConsumerRecords<byte[], byte[]> recs = consumer.poll(Duration.ofMillis(left));
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    if (maxRecords >= 0 && count >= maxRecords) {
                        // Rewind so a committing caller does not skip what it did not print.
                        consumer.seek(new TopicPartition(r.topic(), r.partition()), r.offset());
                        break;
                    }
                    KafkaTool.emit(recordJson(r));
                    count++;
                }
                if (commit && group != null && !recs.isEmpty()) {
                    consumer.commitSync();
                }
            }
            if (commit && group != null) {
                consumer.commitSync();
            }
            ObjectNode done = KafkaTool.JSON.createObjectNode();
            done.put("event", "done");
            done.put("count", count);
            KafkaTool.emit(done);
        }
        return 0;
    }

    // ------------------------------------------------------------------ group member

    static ArrayNode tpsJson(Collection<TopicPartition> parts) {
        List<TopicPartition> sorted = new ArrayList<>(parts);
        sorted.sort((a, b) -> a.topic().equals(b.topic())
                ? Integer.compare(a.partition(), b.partition()) : a.topic().compareTo(b.topic()));
        ArrayNode arr = KafkaTool.JSON.createArrayNode();
        for (TopicPartition tp : sorted) {
            arr.add(tp.topic() + ":" + tp.partition());
        }
        return arr;
    }

    static TopicPartition parseTp(String text) {
        int colon = text.lastIndexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException("expected TOPIC:PARTITION, got: " + text);
        }
        return new TopicPartition(text.substring(0, colon), Integer.parseInt(text.substring(colon + 1)));
    }

    static void memberEvent(KafkaConsumer<?, ?> consumer, String name, Collection<TopicPartition> parts) {
        ObjectNode ev = KafkaTool.JSON.createObjectNode();
        ev.put("event", name);
        ev.set("partitions", tpsJson(parts));
        ev.set("assignment", tpsJson(consumer.assignment()));
        ev.put("generation", consumer.groupMetadata().generationId());
        ev.put("member_id", consumer.groupMetadata().memberId());
        ev.put("time_ms", System.currentTimeMillis());
        KafkaTool.emit(ev);
    }

    static int groupMember(KafkaTool.Opts o) throws Exception {
        List<String> topics = o.all("topic");
        if (topics.isEmpty()) {
            throw new IllegalArgumentException("missing option --topic");
        }
        Map<String, String> d = new HashMap<>();
        d.put("key.deserializer", ByteArrayDeserializer.class.getName());
        d.put("value.deserializer", ByteArrayDeserializer.class.getName());
        d.put("request.timeout.ms", "10000");
        d.put("default.api.timeout.ms", "15000");
        d.put("group.id", o.require("group"));
        d.put("auto.offset.reset", "earliest");
        d.put("enable.auto.commit", "false");
        Properties props = KafkaTool.clientProps(o, d);
        java.util.concurrent.LinkedBlockingQueue<String> commands =
                new java.util.concurrent.LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            try {
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                String line;
                while ((line = in.readLine()) != null) {
                    if (!line.isBlank()) {
                        commands.add(line.trim());
                    }
                }
            } catch (Exception e) {
                // treat as EOF
            }
            commands.add("close");
        });
        reader.setDaemon(true);
        reader.start();

        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props);
        consumer.subscribe(topics, new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                memberEvent(consumer, "revoked", parts);
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                memberEvent(consumer, "assigned", parts);
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> parts) {
                memberEvent(consumer, "lost", parts);
            }
        });
        ObjectNode started = KafkaTool.JSON.createObjectNode();
        started.put("event", "started");
        KafkaTool.emit(started);
        while (true) {
            ConsumerRecords<byte[], byte[]> recs;
            try {
                recs = consumer.poll(Duration.ofMillis(100));
            } catch (UnknownMemberIdException | StaleMemberEpochException e) {
                // A fenced member of a consumer-protocol group finds out from a request made
                // with its old member id or epoch (the 4.x client's OffsetFetch, say); like an
                // application, it polls on, and the consumer joins again.
                ObjectNode ev = KafkaTool.JSON.createObjectNode();
                ev.put("event", "poll-failed");
                ev.set("failure", KafkaTool.errorNode(e));
                KafkaTool.emit(ev);
                continue;
            }
            if (!recs.isEmpty()) {
                ObjectNode ev = KafkaTool.JSON.createObjectNode();
                ev.put("event", "polled");
                ev.put("count", recs.count());
                KafkaTool.emit(ev);
            }
            String cmd;
            boolean close = false;
            while ((cmd = commands.poll()) != null) {
                String[] words = cmd.split("\\s+");
                switch (words[0]) {
                    case "close":
                        close = true;
                        break;
                    case "halt":
                        Runtime.getRuntime().halt(0);
                        break;
                    case "assignment":
                        memberEvent(consumer, "assignment", consumer.assignment());
                        break;
                    case "commit": {
                        ObjectNode ev = KafkaTool.JSON.createObjectNode();
                        ev.put("event", "committed");
                        try {
                            if (words.length > 1) {
                                Map<TopicPartition, OffsetAndMetadata> offs = new LinkedHashMap<>();
                                for (int i = 1; i < words.length; i++) {
                                    int eq = words[i].indexOf('=');
                                    offs.put(parseTp(words[i].substring(0, eq)),
                                            new OffsetAndMetadata(Long.parseLong(words[i].substring(eq + 1))));
                                }
                                consumer.commitSync(offs);
                            } else {
                                consumer.commitSync();
                            }
                        } catch (Exception e) {
                            ev.set("failure", KafkaTool.errorNode(e));
                        }
                        KafkaTool.emit(ev);
                        break;
                    }
                    default: {
                        ObjectNode ev = KafkaTool.JSON.createObjectNode();
                        ev.put("event", "unknown-command");
                        ev.put("command", cmd);
                        KafkaTool.emit(ev);
                    }
                }
            }
            if (close) {
                break;
            }
        }
        consumer.close(CloseOptions.timeout(Duration.ofSeconds(10)));
        ObjectNode done = KafkaTool.JSON.createObjectNode();
        done.put("event", "closed");
        KafkaTool.emit(done);
        return 0;
    }

    // ------------------------------------------------------------------ offsets

    static int offsetsForTimes(KafkaTool.Opts o) throws Exception {
        String topic = o.require("topic");
        long ts = Long.parseLong(o.require("timestamp"));
        Map<String, String> d = new HashMap<>();
        d.put("key.deserializer", ByteArrayDeserializer.class.getName());
        d.put("value.deserializer", ByteArrayDeserializer.class.getName());
        d.put("request.timeout.ms", "10000");
        d.put("default.api.timeout.ms", "15000");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(KafkaTool.clientProps(o, d))) {
            List<TopicPartition> parts = partitionsOf(consumer, List.of(topic), o.intOrNull("partition"));
            Map<TopicPartition, Long> query = new LinkedHashMap<>();
            for (TopicPartition tp : parts) {
                query.put(tp, ts);
            }
            Map<TopicPartition, OffsetAndTimestamp> res = consumer.offsetsForTimes(query);
            Map<TopicPartition, Long> begin = consumer.beginningOffsets(parts);
            Map<TopicPartition, Long> end = consumer.endOffsets(parts);
            for (TopicPartition tp : parts) {
                ObjectNode n = KafkaTool.JSON.createObjectNode();
                n.put("topic", tp.topic());
                n.put("partition", tp.partition());
                OffsetAndTimestamp oat = res.get(tp);
                if (oat == null) {
                    n.putNull("offset");
                    n.putNull("timestamp");
                } else {
                    n.put("offset", oat.offset());
                    n.put("timestamp", oat.timestamp());
                }
                n.put("beginning", begin.get(tp));
                n.put("end", end.get(tp));
                KafkaTool.emit(n);
            }
        }
        return 0;
    }

}
