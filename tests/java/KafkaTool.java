// KafkaTool: a small command-line driver around the Apache Kafka Java client, used by
// the Odradek test suite (tests/helpers/java.py compiles and runs it).
//
// Output: JSON lines on stdout. Records have no "event" field; events do
// ({"event": "assigned" | "revoked" | "done" ...}). A failure prints
// {"error": {"type": <exception class>, "message": ...}} and exits with status 2.
//
// Byte fields (keys, values, header values) are encoded as: null -> null, valid UTF-8 ->
// a JSON string, anything else -> {"b64": "<base64>"}. The same forms are accepted on input.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TopicListing;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.StaleMemberEpochException;
import org.apache.kafka.common.errors.UnknownMemberIdException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class KafkaTool {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final PrintStream OUT = System.out;
    private static final Set<String> FLAGS =
            Set.of("stdin", "help", "until-end", "commit", "internal", "no-key");

    private static final String USAGE = String.join("\n",
            "usage: KafkaTool <command> --bootstrap HOST:PORT [options]",
            "",
            "commands:",
            "  produce            --topic T [--count N | --stdin] [--value-size B] [--no-key]",
            "                     [--pace-ms M: M ms between sends, progress events]",
            "                     [--partition P] [--acks A] [--compression C] [--idempotence BOOL]",
            "                     [--linger-ms MS] [--batch-size B] [--transaction commit|abort]",
            "                     stdin lines: {\"key\",\"value\",\"headers\":[[k,v]..],\"partition\",\"timestamp\"}",
            "  consume            --topic T... [--group G] [--from earliest|latest|OFFSET]",
            "                     [--partition P] [--max-records N] [--timeout-ms MS] [--until-end]",
            "                     [--isolation-level read_committed|read_uncommitted] [--commit]",
            "  offsets-for-times  --topic T --timestamp MS [--partition P]   (consumer API)",
            "  list-offsets       --topic T --spec earliest|latest|max-timestamp|MS [--partition P]",
            "                     [--isolation-level L]   (admin API)",
            "  create-topic       --topic T... [--partitions N] [--replication-factor R] [--config k=v]...",
            "  delete-topic       --topic T...",
            "  list-topics        [--internal]",
            "  describe-topics    --topic T...",
            "  describe-configs   --topic T | --group G | --broker ID",
            "  alter-configs      --topic T | --group G | --broker ID  [--set k=v]... [--delete k]...",
            "                     [--append k=v]... [--subtract k=v]...   (incremental)",
            "  create-partitions  --topic T --total N",
            "  describe-cluster",
            "  list-groups        [--type classic|consumer|share|streams|all]... [--state S]...",
            "                     (consumer groups, classic and consumer, without --type)",
            "  describe-groups    --group G...   (classic and consumer groups)",
            "  describe-share-groups --group G...",
            "  share-group-offsets --group G --topic T   (start offsets of a share group)",
            "  describe-producers --topic T [--partition P]",
            "  script             admin steps from stdin, one JSON array of arguments a line",
            "  group-scenario     --topic T --group G --protocol classic|consumer (GroupScenarios)",
            "  every-group-type   --topic T --group G (GroupScenarios)",
            "  share-scenario     --scenario NAME --topic T --group G (ShareScenarios)",
            "  group-offsets      --group G",
            "  describe-transactions --transactional-id ID...",
            "  txn-producer       --prop transactional.id=ID  (JSON commands on stdin, see txnProducer)",
            "  ctp                --input A --output B --group G --prop transactional.id=ID",
            "                     [--commit-every K] [--idle-ms MS] [--sleep-ms MS] [--timeout-ms MS]",
            "                     [--consumer-prop k=v]...   (consume-transform-produce, read_committed)",
            "  group-member       --topic T... --group G   (joins, prints assigned/revoked/lost",
            "                     events, stays; stdin commands: commit [T:P=O ...], assignment,",
            "                     close (leave and exit; also on EOF), halt (exit without leaving))",
            "  alter-group-offsets  --group G --offset T:P=O...",
            "  delete-group-offsets --group G --partition T:P...",
            "  delete-groups      --group G...",
            "  alter-scram        [--upsert USER:MECHANISM:ITERATIONS:PASSWORD]...",
            "                     [--delete USER:MECHANISM]...   (SCRAM-SHA-256 / SCRAM-SHA-512)",
            "  describe-scram     [--user U]...   (every user without --user)",
            "  create-acls        --acl SPEC...   SPEC: resource=TOPIC,name=N[,pattern=LITERAL]",
            "                     [,principal=User:ANONYMOUS][,host=*][,operation=ALL][,permission=ALLOW]",
            "  describe-acls      [--filter SPEC]   (omitted fields match any)",
            "  delete-acls        --filter SPEC...",
            "",
            "common options: --prop k=v (client property, repeatable), --bootstrap HOST:PORT",
            "output: JSON lines on stdout; errors as {\"error\": {...}} with exit status 2");

    private KafkaTool() {}

    // ------------------------------------------------------------------ arguments

    static final class Opts {
        final String command;
        final Map<String, List<String>> values = new HashMap<>();

        Opts(String[] args) {
            if (args.length == 0) {
                command = "help";
                return;
            }
            command = args[0];
            for (int i = 1; i < args.length; i++) {
                String a = args[i];
                if (!a.startsWith("--")) {
                    throw new IllegalArgumentException("unexpected argument: " + a);
                }
                String name = a.substring(2);
                String value;
                if (FLAGS.contains(name)) {
                    value = "true";
                } else {
                    if (i + 1 >= args.length) {
                        throw new IllegalArgumentException("option --" + name + " needs a value");
                    }
                    value = args[++i];
                }
                values.computeIfAbsent(name, k -> new ArrayList<>()).add(value);
            }
        }

        String get(String name, String def) {
            List<String> v = values.get(name);
            return v == null || v.isEmpty() ? def : v.get(v.size() - 1);
        }

        String require(String name) {
            String v = get(name, null);
            if (v == null) {
                throw new IllegalArgumentException("missing option --" + name);
            }
            return v;
        }

        List<String> all(String name) {
            return values.getOrDefault(name, Collections.emptyList());
        }

        boolean flag(String name) {
            return Boolean.parseBoolean(get(name, "false"));
        }

        Integer intOrNull(String name) {
            String v = get(name, null);
            return v == null ? null : Integer.valueOf(v);
        }
    }

    static Map<String, String> pairs(List<String> items) {
        Map<String, String> out = new LinkedHashMap<>();
        for (String item : items) {
            int eq = item.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("expected key=value, got: " + item);
            }
            out.put(item.substring(0, eq), item.substring(eq + 1));
        }
        return out;
    }

    static Properties clientProps(Opts o, Map<String, String> defaults) {
        Properties p = new Properties();
        p.put("bootstrap.servers", o.require("bootstrap"));
        p.putAll(defaults);
        p.putAll(pairs(o.all("prop")));
        return p;
    }

    // ------------------------------------------------------------------ JSON helpers

    // While a script step runs, what it prints is kept here instead (see script()).
    private static List<ObjectNode> captured = null;

    static void emit(JsonNode node) {
        if (captured != null && node instanceof ObjectNode) {
            captured.add((ObjectNode) node);
            return;
        }
        try {
            OUT.println(JSON.writeValueAsString(node));
            OUT.flush();
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    static void putBytes(ObjectNode node, String field, byte[] data) {
        if (data == null) {
            node.putNull(field);
            return;
        }
        try {
            String text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(data))
                    .toString();
            node.put(field, text);
        } catch (CharacterCodingException e) {
            node.putObject(field).put("b64", Base64.getEncoder().encodeToString(data));
        }
    }

    static void addBytes(ArrayNode node, byte[] data) {
        ObjectNode tmp = JSON.createObjectNode();
        putBytes(tmp, "x", data);
        node.add(tmp.get("x"));
    }

    static byte[] readBytes(JsonNode n) {
        if (n == null || n.isNull()) {
            return null;
        }
        if (n.isObject() && n.has("b64")) {
            return Base64.getDecoder().decode(n.get("b64").asText());
        }
        if (n.isTextual()) {
            return n.asText().getBytes(StandardCharsets.UTF_8);
        }
        return n.toString().getBytes(StandardCharsets.UTF_8);
    }

    static ObjectNode errorNode(Throwable t) {
        Throwable c = t;
        while ((c instanceof ExecutionException || c instanceof java.util.concurrent.CompletionException)
                && c.getCause() != null) {
            c = c.getCause();
        }
        ObjectNode err = JSON.createObjectNode();
        err.put("type", c.getClass().getName());
        err.put("message", String.valueOf(c.getMessage()));
        return err;
    }

    static ObjectNode nodeJson(Node n) {
        if (n == null) {
            return null;
        }
        ObjectNode o = JSON.createObjectNode();
        o.put("id", n.id());
        o.put("host", n.host());
        o.put("port", n.port());
        return o;
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

    static int produce(Opts o) throws Exception {
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
        Properties props = clientProps(o, d);
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
                JsonNode r = JSON.readTree(line);
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
                        headers.add(new RecordHeader(h.get(0).asText(), readBytes(h.get(1))));
                    }
                } else if (hs != null && hs.isObject()) {
                    for (var e : hs.properties()) {
                        headers.add(new RecordHeader(e.getKey(), readBytes(e.getValue())));
                    }
                }
                records.add(new ProducerRecord<>(t, partition, ts, readBytes(r.get("key")),
                        readBytes(r.get("value")), headers));
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
                        ObjectNode progress = JSON.createObjectNode();
                        progress.put("event", "progress");
                        progress.put("sent", i);
                        emit(progress);
                    }
                }
                try {
                    pending.add(new Pending(i, producer.send(records.get(i))));
                } catch (Exception e) {
                    ObjectNode n = JSON.createObjectNode();
                    n.put("index", i);
                    n.set("error", errorNode(e));
                    emit(n);
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
                ObjectNode n = JSON.createObjectNode();
                n.put("index", p.index);
                try {
                    RecordMetadata md = p.future.get();
                    n.put("topic", md.topic());
                    n.put("partition", md.partition());
                    n.put("offset", md.hasOffset() ? md.offset() : -1L);
                    n.put("timestamp", md.hasTimestamp() ? md.timestamp() : -1L);
                } catch (ExecutionException e) {
                    n.set("error", errorNode(e));
                    failures++;
                }
                emit(n);
            }
        }
        return failures == 0 ? 0 : 2;
    }

    // ------------------------------------------------------------------ consume

    static ObjectNode recordJson(ConsumerRecord<byte[], byte[]> r) {
        ObjectNode n = JSON.createObjectNode();
        n.put("topic", r.topic());
        n.put("partition", r.partition());
        n.put("offset", r.offset());
        n.put("timestamp", r.timestamp());
        n.put("timestamp_type", r.timestampType().name);
        putBytes(n, "key", r.key());
        putBytes(n, "value", r.value());
        ArrayNode hs = n.putArray("headers");
        for (Header h : r.headers()) {
            ArrayNode pair = hs.addArray();
            pair.add(h.key());
            addBytes(pair, h.value());
        }
        r.leaderEpoch().ifPresent(e -> n.put("leader_epoch", e));
        return n;
    }

    static ArrayNode partitionsJson(KafkaConsumer<?, ?> consumer, Collection<TopicPartition> parts,
            boolean withPosition) {
        ArrayNode arr = JSON.createArrayNode();
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

    static int consume(Opts o) throws Exception {
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
        Properties props = clientProps(o, d);
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
                        ObjectNode ev = JSON.createObjectNode();
                        ev.put("event", "revoked");
                        ev.set("partitions", partitionsJson(consumer, parts, false));
                        emit(ev);
                    }

                    @Override
                    public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                        // position() resolves auto.offset.reset now, so a caller that waits
                        // for this event knows where consumption starts.
                        ObjectNode ev = JSON.createObjectNode();
                        ev.put("event", "assigned");
                        ev.set("partitions", partitionsJson(consumer, parts, true));
                        emit(ev);
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
                ObjectNode ev = JSON.createObjectNode();
                ev.put("event", "assigned");
                ev.set("partitions", partitionsJson(consumer, parts, true));
                emit(ev);
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
                    emit(recordJson(r));
                    count++;
                }
                if (commit && group != null && !recs.isEmpty()) {
                    consumer.commitSync();
                }
            }
            if (commit && group != null) {
                consumer.commitSync();
            }
            ObjectNode done = JSON.createObjectNode();
            done.put("event", "done");
            done.put("count", count);
            emit(done);
        }
        return 0;
    }

    // ------------------------------------------------------------------ group member

    static ArrayNode tpsJson(Collection<TopicPartition> parts) {
        List<TopicPartition> sorted = new ArrayList<>(parts);
        sorted.sort((a, b) -> a.topic().equals(b.topic())
                ? Integer.compare(a.partition(), b.partition()) : a.topic().compareTo(b.topic()));
        ArrayNode arr = JSON.createArrayNode();
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
        ObjectNode ev = JSON.createObjectNode();
        ev.put("event", name);
        ev.set("partitions", tpsJson(parts));
        ev.set("assignment", tpsJson(consumer.assignment()));
        ev.put("generation", consumer.groupMetadata().generationId());
        ev.put("member_id", consumer.groupMetadata().memberId());
        ev.put("time_ms", System.currentTimeMillis());
        emit(ev);
    }

    static int groupMember(Opts o) throws Exception {
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
        Properties props = clientProps(o, d);
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
        ObjectNode started = JSON.createObjectNode();
        started.put("event", "started");
        emit(started);
        while (true) {
            ConsumerRecords<byte[], byte[]> recs;
            try {
                recs = consumer.poll(Duration.ofMillis(100));
            } catch (UnknownMemberIdException | StaleMemberEpochException e) {
                // A fenced member of a consumer-protocol group finds out from a request made
                // with its old member id or epoch (the 4.x client's OffsetFetch, say); like an
                // application, it polls on, and the consumer joins again.
                ObjectNode ev = JSON.createObjectNode();
                ev.put("event", "poll-failed");
                ev.set("failure", errorNode(e));
                emit(ev);
                continue;
            }
            if (!recs.isEmpty()) {
                ObjectNode ev = JSON.createObjectNode();
                ev.put("event", "polled");
                ev.put("count", recs.count());
                emit(ev);
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
                        ObjectNode ev = JSON.createObjectNode();
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
                            ev.set("failure", errorNode(e));
                        }
                        emit(ev);
                        break;
                    }
                    default: {
                        ObjectNode ev = JSON.createObjectNode();
                        ev.put("event", "unknown-command");
                        ev.put("command", cmd);
                        emit(ev);
                    }
                }
            }
            if (close) {
                break;
            }
        }
        consumer.close(CloseOptions.timeout(Duration.ofSeconds(10)));
        ObjectNode done = JSON.createObjectNode();
        done.put("event", "closed");
        emit(done);
        return 0;
    }

    // ------------------------------------------------------------------ transactions

    static Map<String, String> txnProducerDefaults() {
        Map<String, String> d = new HashMap<>();
        d.put("key.serializer", ByteArraySerializer.class.getName());
        d.put("value.serializer", ByteArraySerializer.class.getName());
        d.put("max.block.ms", "20000");
        d.put("request.timeout.ms", "10000");
        d.put("delivery.timeout.ms", "20000");
        d.put("acks", "all");
        d.put("enable.idempotence", "true");
        return d;
    }

    // The metadata of a group the producer is not a member of (what 3.x built from a name;
    // 4.4 deprecates the constructors, with nothing else that builds it).
    @SuppressWarnings("removal")
    static ConsumerGroupMetadata groupMetadata(String group) {
        return new ConsumerGroupMetadata(group, -1, "", Optional.empty());
    }

    static ObjectNode txnResult(String cmd, boolean ok) {
        ObjectNode n = JSON.createObjectNode();
        n.put("event", "result");
        n.put("cmd", cmd);
        n.put("ok", ok);
        return n;
    }

    static Map<TopicPartition, OffsetAndMetadata> offsetsFromJson(JsonNode arr) {
        Map<TopicPartition, OffsetAndMetadata> out = new LinkedHashMap<>();
        if (arr != null) {
            for (JsonNode x : arr) {
                out.put(new TopicPartition(x.get("topic").asText(), x.get("partition").asInt()),
                        new OffsetAndMetadata(x.get("offset").asLong(),
                                x.hasNonNull("metadata") ? x.get("metadata").asText() : ""));
            }
        }
        return out;
    }

    // A transactional producer driven by JSON commands on stdin, one per line:
    //   {"cmd":"init"} {"cmd":"begin"} {"cmd":"commit"} {"cmd":"abort"} {"cmd":"close"}
    //   {"cmd":"send","records":[{"topic","key","value","partition"}...]}   (waits for acks)
    //   {"cmd":"send-offsets","group":G,"offsets":[{"topic","partition","offset"}...]}
    //   {"cmd":"loop","count":N,"topic":T,"group":G,"offsets-topic":T2}: N transactions, each
    //       sending one record to T and committing offset i+1 for (T2, 0) in group G
    //   {"cmd":"sleep","ms":MS}
    // Each command answers {"event":"result","cmd":...,"ok":bool,...}; a failure carries
    // "error_type"/"error_message" and the tool keeps reading (the test decides).
    static int txnProducer(Opts o) throws Exception {
        Properties props = clientProps(o, txnProducerDefaults());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props);
        ObjectNode ready = JSON.createObjectNode();
        ready.put("event", "ready");
        emit(ready);
        String line;
        try {
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                JsonNode c = JSON.readTree(line);
                String cmd = c.get("cmd").asText();
                ObjectNode res = txnResult(cmd, true);
                try {
                    switch (cmd) {
                        case "init":
                            producer.initTransactions();
                            break;
                        case "begin":
                            producer.beginTransaction();
                            break;
                        case "commit":
                            producer.commitTransaction();
                            break;
                        case "abort":
                            producer.abortTransaction();
                            break;
                        case "sleep":
                            Thread.sleep(c.get("ms").asLong());
                            break;
                        case "send": {
                            List<Future<RecordMetadata>> fs = new ArrayList<>();
                            for (JsonNode r : c.get("records")) {
                                Integer partition = r.hasNonNull("partition")
                                        ? Integer.valueOf(r.get("partition").asInt()) : null;
                                fs.add(producer.send(new ProducerRecord<>(r.get("topic").asText(),
                                        partition, readBytes(r.get("key")), readBytes(r.get("value")))));
                            }
                            producer.flush();
                            ArrayNode offs = res.putArray("offsets");
                            for (Future<RecordMetadata> f : fs) {
                                RecordMetadata md = f.get();
                                offs.addObject().put("topic", md.topic()).put("partition", md.partition())
                                        .put("offset", md.offset());
                            }
                            break;
                        }
                        case "send-offsets":
                            producer.sendOffsetsToTransaction(offsetsFromJson(c.get("offsets")),
                                    groupMetadata(c.get("group").asText()));
                            break;
                        case "loop": {
                            int count = c.get("count").asInt();
                            String topic = c.get("topic").asText();
                            String group = c.get("group").asText();
                            String offTopic = c.get("offsets-topic").asText();
                            for (int i = 0; i < count; i++) {
                                producer.beginTransaction();
                                producer.send(new ProducerRecord<>(topic, 0, null,
                                        ("loop-" + i).getBytes(StandardCharsets.UTF_8)));
                                producer.sendOffsetsToTransaction(
                                        Map.of(new TopicPartition(offTopic, 0), new OffsetAndMetadata(i + 1)),
                                        groupMetadata(group));
                                producer.commitTransaction();
                            }
                            res.put("count", count);
                            break;
                        }
                        case "close":
                            producer.close(Duration.ofSeconds(10));
                            emit(res);
                            return 0;
                        default:
                            throw new IllegalArgumentException("unknown txn command: " + cmd);
                    }
                } catch (Exception e) {
                    Throwable t = e;
                    while ((t instanceof ExecutionException) && t.getCause() != null) {
                        t = t.getCause();
                    }
                    res.put("ok", false);
                    res.put("error_type", t.getClass().getSimpleName());
                    res.put("error_message", String.valueOf(t.getMessage()));
                    if (t.getCause() != null) {
                        res.put("cause_type", t.getCause().getClass().getSimpleName());
                    }
                }
                emit(res);
            }
        } finally {
            producer.close(Duration.ofSeconds(5));
        }
        return 0;
    }

    // Consume-transform-produce: copy records from --input to --output exactly once, with
    // a group (--group) and a transactional producer (--prop transactional.id=...),
    // committing every --commit-every records (and whenever a poll comes back empty).
    // Exits when every input partition is consumed to its end and --idle-ms passed without
    // new records. --sleep-ms waits that long inside each transaction (so kills land there).
    static int ctp(Opts o) throws Exception {
        String input = o.require("input");
        String output = o.require("output");
        String group = o.require("group");
        int every = Integer.parseInt(o.get("commit-every", "100"));
        long idleMs = Long.parseLong(o.get("idle-ms", "2000"));
        long sleepMs = Long.parseLong(o.get("sleep-ms", "0"));
        long maxMs = Long.parseLong(o.get("timeout-ms", "300000"));
        Properties pp = clientProps(o, txnProducerDefaults());
        Map<String, String> cd = new HashMap<>();
        cd.put("key.deserializer", ByteArrayDeserializer.class.getName());
        cd.put("value.deserializer", ByteArrayDeserializer.class.getName());
        cd.put("group.id", group);
        cd.put("enable.auto.commit", "false");
        cd.put("auto.offset.reset", "earliest");
        cd.put("isolation.level", "read_committed");
        cd.put("max.poll.records", String.valueOf(every));
        cd.put("request.timeout.ms", "10000");
        cd.put("default.api.timeout.ms", "20000");
        Map<String, String> extra = pairs(o.all("consumer-prop"));
        if (!"consumer".equalsIgnoreCase(extra.get("group.protocol"))) {
            // the consumer protocol takes these from the broker (4.x refuses them)
            cd.put("session.timeout.ms", "10000");
            cd.put("heartbeat.interval.ms", "1000");
        }
        Properties cp = new Properties();
        cp.put("bootstrap.servers", o.require("bootstrap"));
        cp.putAll(cd);
        cp.putAll(extra);
        long copied = 0;
        long transactions = 0;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp);
             KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp)) {
            producer.initTransactions();
            consumer.subscribe(List.of(input));
            ObjectNode ready = JSON.createObjectNode();
            ready.put("event", "ready");
            emit(ready);
            long deadline = System.currentTimeMillis() + maxMs;
            long lastData = System.currentTimeMillis();
            while (System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> recs = consumer.poll(Duration.ofMillis(200));
                if (recs.isEmpty()) {
                    Set<TopicPartition> assigned = consumer.assignment();
                    if (!assigned.isEmpty() && System.currentTimeMillis() - lastData >= idleMs) {
                        Map<TopicPartition, Long> end = consumer.endOffsets(assigned);
                        boolean done = true;
                        for (TopicPartition tp : assigned) {
                            if (consumer.position(tp) < end.get(tp)) {
                                done = false;
                            }
                        }
                        if (done) {
                            break;
                        }
                    }
                    continue;
                }
                lastData = System.currentTimeMillis();
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    producer.send(new ProducerRecord<>(output, r.partition(), r.key(), r.value()));
                    offsets.put(new TopicPartition(r.topic(), r.partition()),
                            new OffsetAndMetadata(r.offset() + 1));
                    copied++;
                }
                if (sleepMs > 0) {
                    Thread.sleep(sleepMs);
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                producer.commitTransaction();
                transactions++;
                ObjectNode ev = JSON.createObjectNode();
                ev.put("event", "committed");
                ev.put("copied", copied);
                ev.put("transactions", transactions);
                emit(ev);
            }
        }
        ObjectNode done = JSON.createObjectNode();
        done.put("event", "done");
        done.put("copied", copied);
        done.put("transactions", transactions);
        emit(done);
        return 0;
    }

    // ------------------------------------------------------------------ offsets

    static int offsetsForTimes(Opts o) throws Exception {
        String topic = o.require("topic");
        long ts = Long.parseLong(o.require("timestamp"));
        Map<String, String> d = new HashMap<>();
        d.put("key.deserializer", ByteArrayDeserializer.class.getName());
        d.put("value.deserializer", ByteArrayDeserializer.class.getName());
        d.put("request.timeout.ms", "10000");
        d.put("default.api.timeout.ms", "15000");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(clientProps(o, d))) {
            List<TopicPartition> parts = partitionsOf(consumer, List.of(topic), o.intOrNull("partition"));
            Map<TopicPartition, Long> query = new LinkedHashMap<>();
            for (TopicPartition tp : parts) {
                query.put(tp, ts);
            }
            Map<TopicPartition, OffsetAndTimestamp> res = consumer.offsetsForTimes(query);
            Map<TopicPartition, Long> begin = consumer.beginningOffsets(parts);
            Map<TopicPartition, Long> end = consumer.endOffsets(parts);
            for (TopicPartition tp : parts) {
                ObjectNode n = JSON.createObjectNode();
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
                emit(n);
            }
        }
        return 0;
    }

    static Map<String, String> adminDefaults() {
        Map<String, String> d = new HashMap<>();
        d.put("request.timeout.ms", "10000");
        d.put("default.api.timeout.ms", "15000");
        return d;
    }

    static int listOffsets(Opts o, Admin admin) throws Exception {
        String topic = o.require("topic");
        String spec = o.get("spec", "latest");
        TopicDescription desc = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        Integer only = o.intOrNull("partition");
        OffsetSpec os;
        switch (spec) {
            case "earliest":
                os = OffsetSpec.earliest();
                break;
            case "latest":
                os = OffsetSpec.latest();
                break;
            case "max-timestamp":
                os = OffsetSpec.maxTimestamp();
                break;
            default:
                os = OffsetSpec.forTimestamp(Long.parseLong(spec));
        }
        Map<TopicPartition, OffsetSpec> q = new LinkedHashMap<>();
        for (TopicPartitionInfo p : desc.partitions()) {
            if (only == null || only == p.partition()) {
                q.put(new TopicPartition(topic, p.partition()), os);
            }
        }
        String iso = o.get("isolation-level", "read_uncommitted");
        var opts = new org.apache.kafka.clients.admin.ListOffsetsOptions(
                IsolationLevel.valueOf(iso.toUpperCase()));
        Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> res =
                admin.listOffsets(q, opts).all().get();
        for (TopicPartition tp : q.keySet()) {
            ListOffsetsResult.ListOffsetsResultInfo info = res.get(tp);
            ObjectNode n = JSON.createObjectNode();
            n.put("topic", tp.topic());
            n.put("partition", tp.partition());
            n.put("offset", info.offset());
            n.put("timestamp", info.timestamp());
            info.leaderEpoch().ifPresent(e -> n.put("leader_epoch", e));
            emit(n);
        }
        return 0;
    }

    // ------------------------------------------------------------------ SCRAM credentials

    static int alterScram(Opts o, Admin admin) throws Exception {
        List<org.apache.kafka.clients.admin.UserScramCredentialAlteration> changes = new ArrayList<>();
        for (String item : o.all("upsert")) {
            String[] f = item.split(":", 4);
            if (f.length != 4) {
                throw new IllegalArgumentException("expected USER:MECHANISM:ITERATIONS:PASSWORD, got: " + item);
            }
            var info = new org.apache.kafka.clients.admin.ScramCredentialInfo(
                    org.apache.kafka.clients.admin.ScramMechanism.fromMechanismName(f[1]), Integer.parseInt(f[2]));
            changes.add(new org.apache.kafka.clients.admin.UserScramCredentialUpsertion(f[0], info, f[3]));
        }
        for (String item : o.all("delete")) {
            String[] f = item.split(":", 2);
            if (f.length != 2) {
                throw new IllegalArgumentException("expected USER:MECHANISM, got: " + item);
            }
            changes.add(new org.apache.kafka.clients.admin.UserScramCredentialDeletion(
                    f[0], org.apache.kafka.clients.admin.ScramMechanism.fromMechanismName(f[1])));
        }
        var results = admin.alterUserScramCredentials(changes).values();
        List<String> users = new ArrayList<>(results.keySet());
        Collections.sort(users);
        for (String user : users) {
            ObjectNode n = JSON.createObjectNode();
            n.put("user", user);
            try {
                results.get(user).get();
                n.put("altered", true);
            } catch (ExecutionException e) {
                n.put("altered", false);
                n.set("failure", errorNode(e));
            }
            emit(n);
        }
        return 0;
    }

    static int describeScram(Opts o, Admin admin) throws Exception {
        List<String> asked = o.all("user");
        var result = asked.isEmpty()
                ? admin.describeUserScramCredentials()
                : admin.describeUserScramCredentials(asked);
        List<String> users = asked.isEmpty() ? new ArrayList<>(result.users().get()) : asked;
        for (String user : users) {
            ObjectNode n = JSON.createObjectNode();
            n.put("user", user);
            try {
                var description = result.description(user).get();
                ArrayNode creds = n.putArray("credentials");
                // by mechanism: Kafka's order comes from a hash map, another at each start
                var infos = new ArrayList<>(description.credentialInfos());
                infos.sort((a, b) -> a.mechanism().mechanismName().compareTo(b.mechanism().mechanismName()));
                for (var info : infos) {
                    creds.addObject().put("mechanism", info.mechanism().mechanismName())
                            .put("iterations", info.iterations());
                }
            } catch (ExecutionException e) {
                n.set("failure", errorNode(e));
            }
            emit(n);
        }
        return 0;
    }

    // ------------------------------------------------------------------ ACLs

    static Map<String, String> aclSpec(String spec) {
        Map<String, String> f = new HashMap<>();
        for (String part : spec.isEmpty() ? new String[0] : spec.split(",")) {
            int eq = part.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("expected key=value in ACL spec, got: " + part);
            }
            f.put(part.substring(0, eq), part.substring(eq + 1));
        }
        return f;
    }

    static org.apache.kafka.common.acl.AclBindingFilter aclFilter(String spec) {
        Map<String, String> f = aclSpec(spec);
        var pattern = new org.apache.kafka.common.resource.ResourcePatternFilter(
                org.apache.kafka.common.resource.ResourceType.fromString(f.getOrDefault("resource", "ANY")),
                f.get("name"),
                org.apache.kafka.common.resource.PatternType.fromString(f.getOrDefault("pattern", "ANY")));
        var entry = new org.apache.kafka.common.acl.AccessControlEntryFilter(
                f.get("principal"),
                f.get("host"),
                org.apache.kafka.common.acl.AclOperation.fromString(f.getOrDefault("operation", "ANY")),
                org.apache.kafka.common.acl.AclPermissionType.fromString(f.getOrDefault("permission", "ANY")));
        return new org.apache.kafka.common.acl.AclBindingFilter(pattern, entry);
    }

    // defaults: pattern LITERAL, principal User:ANONYMOUS, host *, operation ALL, permission ALLOW
    static org.apache.kafka.common.acl.AclBinding aclBinding(String spec) {
        Map<String, String> f = aclSpec(spec);
        return new org.apache.kafka.common.acl.AclBinding(
                new org.apache.kafka.common.resource.ResourcePattern(
                        org.apache.kafka.common.resource.ResourceType.fromString(f.get("resource")),
                        f.get("name"),
                        org.apache.kafka.common.resource.PatternType.fromString(f.getOrDefault("pattern", "LITERAL"))),
                new org.apache.kafka.common.acl.AccessControlEntry(
                        f.getOrDefault("principal", "User:ANONYMOUS"),
                        f.getOrDefault("host", "*"),
                        org.apache.kafka.common.acl.AclOperation.fromString(f.getOrDefault("operation", "ALL")),
                        org.apache.kafka.common.acl.AclPermissionType.fromString(
                                f.getOrDefault("permission", "ALLOW"))));
    }

    static ObjectNode aclJson(org.apache.kafka.common.acl.AclBinding b) {
        ObjectNode n = JSON.createObjectNode();
        n.put("resource_type", b.pattern().resourceType().name());
        n.put("name", b.pattern().name());
        n.put("pattern_type", b.pattern().patternType().name());
        n.put("principal", b.entry().principal());
        n.put("host", b.entry().host());
        n.put("operation", b.entry().operation().name());
        n.put("permission", b.entry().permissionType().name());
        return n;
    }

    static int createAcls(Opts o, Admin admin) throws Exception {
        List<org.apache.kafka.common.acl.AclBinding> bindings = new ArrayList<>();
        for (String spec : o.all("acl")) {
            bindings.add(aclBinding(spec));
        }
        var results = admin.createAcls(bindings).values();
        for (var binding : bindings) {
            ObjectNode n = aclJson(binding);
            try {
                results.get(binding).get();
                n.put("created", true);
            } catch (ExecutionException e) {
                n.put("created", false);
                n.set("failure", errorNode(e));
            }
            emit(n);
        }
        return 0;
    }

    static int describeAcls(Opts o, Admin admin) throws Exception {
        List<ObjectNode> found = new ArrayList<>();
        for (var binding : admin.describeAcls(aclFilter(o.get("filter", ""))).values().get()) {
            found.add(aclJson(binding));
        }
        // the same order on every broker: by resource, then principal, then operation
        found.sort((a, b) -> a.toString().compareTo(b.toString()));
        found.forEach(KafkaTool::emit);
        return 0;
    }

    static int deleteAcls(Opts o, Admin admin) throws Exception {
        List<org.apache.kafka.common.acl.AclBindingFilter> filters = new ArrayList<>();
        for (String spec : o.all("filter")) {
            filters.add(aclFilter(spec));
        }
        var results = admin.deleteAcls(filters).values();
        for (var filter : filters) { // in the order given (the results are a hash map)
            for (var deleted : results.get(filter).get().values()) {
                ObjectNode n = aclJson(deleted.binding());
                n.put("deleted", deleted.exception() == null);
                emit(n);
            }
        }
        return 0;
    }

    // ------------------------------------------------------------------ admin

    static ConfigResource resource(Opts o) {
        String topic = o.get("topic", null);
        if (topic != null) {
            return new ConfigResource(ConfigResource.Type.TOPIC, topic);
        }
        String group = o.get("group", null);
        if (group != null) {
            return new ConfigResource(ConfigResource.Type.GROUP, group);
        }
        return new ConfigResource(ConfigResource.Type.BROKER, o.require("broker"));
    }

    // Admin steps in one JVM, one per stdin line: a JSON array of a command's arguments
    // (no --bootstrap), or {"args": [...], "lines": N, "within_ms": MS}, run again until it
    // prints N lines or MS pass (for what a broker applies a moment after it answers).
    // Each line printed carries "step": the step's index; a failed step prints
    // {"error": ..., "step": i} and the script goes on.
    static int script(Opts o) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (Admin admin = Admin.create(clientProps(o, adminDefaults()))) {
            int step = 0;
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                JsonNode spec = JSON.readTree(line);
                JsonNode argv = spec.isArray() ? spec : spec.get("args");
                String[] args = new String[argv.size()];
                for (int i = 0; i < args.length; i++) {
                    args[i] = argv.get(i).asText();
                }
                int want = spec.has("lines") ? spec.get("lines").asInt() : -1;
                long deadline = System.currentTimeMillis()
                        + (spec.has("within_ms") ? spec.get("within_ms").asLong() : 0);
                List<ObjectNode> lines;
                while (true) {
                    lines = new ArrayList<>();
                    captured = lines;
                    try {
                        adminCommand(new Opts(args), admin);
                    } catch (Exception e) {
                        lines.clear();
                        lines.add((ObjectNode) JSON.createObjectNode().set("error", errorNode(e)));
                    } finally {
                        captured = null;
                    }
                    if (want < 0 || lines.size() == want || System.currentTimeMillis() >= deadline) {
                        break;
                    }
                    Thread.sleep(200);
                }
                for (ObjectNode n : lines) {
                    n.put("step", step);
                    emit(n);
                }
                step++;
            }
        }
        return 0;
    }

    static int admin(Opts o) throws Exception {
        try (Admin admin = Admin.create(clientProps(o, adminDefaults()))) {
            return adminCommand(o, admin);
        }
    }

    static int adminCommand(Opts o, Admin admin) throws Exception {
        switch (o.command) {
            case "create-topic": {
                int partitions = Integer.parseInt(o.get("partitions", "1"));
                short rf = Short.parseShort(o.get("replication-factor", "1"));
                List<NewTopic> topics = new ArrayList<>();
                for (String name : o.all("topic")) {
                    topics.add(new NewTopic(name, partitions, rf).configs(pairs(o.all("config"))));
                }
                if (topics.isEmpty()) {
                    throw new IllegalArgumentException("missing option --topic");
                }
                var res = admin.createTopics(topics);
                res.all().get();
                for (NewTopic nt : topics) {
                    ObjectNode n = JSON.createObjectNode();
                    n.put("topic", nt.name());
                    n.put("partitions", res.numPartitions(nt.name()).get());
                    n.put("replication_factor", res.replicationFactor(nt.name()).get());
                    n.put("topic_id", String.valueOf(res.topicId(nt.name()).get()));
                    emit(n);
                }
                return 0;
            }
            case "delete-topic": {
                List<String> topics = o.all("topic");
                admin.deleteTopics(topics).all().get();
                for (String t : topics) {
                    ObjectNode n = JSON.createObjectNode();
                    n.put("deleted", t);
                    emit(n);
                }
                return 0;
            }
            case "list-topics": {
                ListTopicsOptions lto = new ListTopicsOptions().listInternal(o.flag("internal"));
                List<TopicListing> listings = new ArrayList<>(admin.listTopics(lto).listings().get());
                listings.sort((a, b) -> a.name().compareTo(b.name()));
                for (TopicListing l : listings) {
                    ObjectNode n = JSON.createObjectNode();
                    n.put("topic", l.name());
                    n.put("internal", l.isInternal());
                    n.put("topic_id", String.valueOf(l.topicId()));
                    emit(n);
                }
                return 0;
            }
            case "describe-topics": {
                List<String> topics = o.all("topic");
                Map<String, TopicDescription> res = admin.describeTopics(topics).allTopicNames().get();
                for (String t : topics) {
                    TopicDescription td = res.get(t);
                    ObjectNode n = JSON.createObjectNode();
                    n.put("topic", td.name());
                    n.put("internal", td.isInternal());
                    n.put("topic_id", String.valueOf(td.topicId()));
                    ArrayNode ps = n.putArray("partitions");
                    for (TopicPartitionInfo p : td.partitions()) {
                        ObjectNode pn = ps.addObject();
                        pn.put("partition", p.partition());
                        pn.set("leader", nodeJson(p.leader()));
                        ArrayNode rs = pn.putArray("replicas");
                        p.replicas().forEach(r -> rs.add(r.id()));
                        ArrayNode isr = pn.putArray("isr");
                        p.isr().forEach(r -> isr.add(r.id()));
                    }
                    emit(n);
                }
                return 0;
            }
            case "describe-configs": {
                ConfigResource res = resource(o);
                Config cfg = admin.describeConfigs(List.of(res)).all().get().get(res);
                List<ConfigEntry> entries = new ArrayList<>(cfg.entries());
                entries.sort((a, b) -> a.name().compareTo(b.name()));
                for (ConfigEntry e : entries) {
                    ObjectNode n = JSON.createObjectNode();
                    n.put("name", e.name());
                    n.put("value", e.value());
                    n.put("source", e.source().name());
                    n.put("read_only", e.isReadOnly());
                    n.put("default", e.isDefault());
                    n.put("sensitive", e.isSensitive());
                    emit(n);
                }
                return 0;
            }
            case "alter-configs": {
                ConfigResource res = resource(o);
                List<AlterConfigOp> ops = new ArrayList<>();
                pairs(o.all("set")).forEach((k, v) -> ops.add(
                        new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
                pairs(o.all("append")).forEach((k, v) -> ops.add(
                        new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.APPEND)));
                pairs(o.all("subtract")).forEach((k, v) -> ops.add(
                        new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SUBTRACT)));
                for (String k : o.all("delete")) {
                    ops.add(new AlterConfigOp(new ConfigEntry(k, null), AlterConfigOp.OpType.DELETE));
                }
                admin.incrementalAlterConfigs(Map.of(res, ops)).all().get();
                ObjectNode n = JSON.createObjectNode();
                n.put("altered", res.name());
                n.put("ops", ops.size());
                emit(n);
                return 0;
            }
            case "create-partitions": {
                String topic = o.require("topic");
                int total = Integer.parseInt(o.require("total"));
                admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(total))).all().get();
                ObjectNode n = JSON.createObjectNode();
                n.put("topic", topic);
                n.put("total", total);
                emit(n);
                return 0;
            }
            case "describe-cluster": {
                DescribeClusterResult r = admin.describeCluster();
                ObjectNode n = JSON.createObjectNode();
                n.put("cluster_id", r.clusterId().get());
                n.set("controller", nodeJson(r.controller().get()));
                ArrayNode nodes = n.putArray("nodes");
                for (Node node : r.nodes().get()) {
                    nodes.add(nodeJson(node));
                }
                emit(n);
                return 0;
            }
            case "list-groups":
                return Groups.list(o, admin);
            case "describe-share-groups":
                return Groups.describeShare(o, admin);
            case "share-group-offsets":
                return Groups.shareOffsets(o, admin);
            case "describe-producers":
                return Groups.describeProducers(o, admin);
            case "describe-groups": {
                List<String> groups = o.all("group");
                Map<String, ConsumerGroupDescription> res = admin.describeConsumerGroups(groups).all().get();
                for (String g : groups) {
                    ConsumerGroupDescription cg = res.get(g);
                    ObjectNode n = JSON.createObjectNode();
                    n.put("group", cg.groupId());
                    n.put("type", String.valueOf(cg.type()));
                    n.put("state", String.valueOf(cg.groupState()));
                    n.put("assignor", cg.partitionAssignor());
                    n.set("coordinator", nodeJson(cg.coordinator()));
                    ArrayNode ms = n.putArray("members");
                    for (MemberDescription m : cg.members()) {
                        ObjectNode mn = ms.addObject();
                        mn.put("member_id", m.consumerId());
                        mn.put("client_id", m.clientId());
                        mn.put("host", m.host());
                        m.groupInstanceId().ifPresent(i -> mn.put("group_instance_id", i));
                        ArrayNode a = mn.putArray("assignment");
                        for (TopicPartition tp : m.assignment().topicPartitions()) {
                            a.addObject().put("topic", tp.topic()).put("partition", tp.partition());
                        }
                    }
                    emit(n);
                }
                return 0;
            }
            case "group-offsets": {
                String g = o.require("group");
                Map<TopicPartition, OffsetAndMetadata> offs =
                        admin.listConsumerGroupOffsets(g).partitionsToOffsetAndMetadata().get();
                List<TopicPartition> keys = new ArrayList<>(offs.keySet());
                keys.sort((a, b) -> a.topic().equals(b.topic())
                        ? Integer.compare(a.partition(), b.partition()) : a.topic().compareTo(b.topic()));
                for (TopicPartition tp : keys) {
                    OffsetAndMetadata om = offs.get(tp);
                    ObjectNode n = JSON.createObjectNode();
                    n.put("topic", tp.topic());
                    n.put("partition", tp.partition());
                    if (om == null) {
                        n.putNull("offset");
                    } else {
                        n.put("offset", om.offset());
                        n.put("metadata", om.metadata());
                    }
                    emit(n);
                }
                return 0;
            }
            case "alter-group-offsets": {
                String g = o.require("group");
                Map<TopicPartition, OffsetAndMetadata> offs = new LinkedHashMap<>();
                for (String item : o.all("offset")) {
                    int eq = item.indexOf('=');
                    offs.put(parseTp(item.substring(0, eq)),
                            new OffsetAndMetadata(Long.parseLong(item.substring(eq + 1))));
                }
                admin.alterConsumerGroupOffsets(g, offs).all().get();
                ObjectNode n = JSON.createObjectNode();
                n.put("altered", g);
                n.set("partitions", tpsJson(offs.keySet()));
                emit(n);
                return 0;
            }
            case "delete-group-offsets": {
                String g = o.require("group");
                Set<TopicPartition> parts = new HashSet<>();
                for (String item : o.all("partition")) {
                    parts.add(parseTp(item));
                }
                var res = admin.deleteConsumerGroupOffsets(g, parts);
                for (TopicPartition tp : parts) {
                    ObjectNode n = JSON.createObjectNode();
                    n.put("partition", tp.topic() + ":" + tp.partition());
                    try {
                        res.partitionResult(tp).get();
                        n.put("deleted", true);
                    } catch (ExecutionException e) {
                        n.put("deleted", false);
                        n.set("failure", errorNode(e));
                    }
                    emit(n);
                }
                return 0;
            }
            case "delete-groups": {
                List<String> groups = o.all("group");
                var res = admin.deleteConsumerGroups(groups).deletedGroups();
                for (String g : groups) {
                    ObjectNode n = JSON.createObjectNode();
                    n.put("group", g);
                    try {
                        res.get(g).get();
                        n.put("deleted", true);
                    } catch (ExecutionException e) {
                        n.put("deleted", false);
                        n.set("failure", errorNode(e));
                    }
                    emit(n);
                }
                return 0;
            }
            case "list-offsets":
                return listOffsets(o, admin);
            case "alter-scram":
                return alterScram(o, admin);
            case "describe-scram":
                return describeScram(o, admin);
            case "create-acls":
                return createAcls(o, admin);
            case "describe-acls":
                return describeAcls(o, admin);
            case "delete-acls":
                return deleteAcls(o, admin);
            case "describe-transactions": {
                for (String id : o.all("transactional-id")) {
                    var d = admin.describeTransactions(List.of(id)).description(id).get();
                    ObjectNode n = JSON.createObjectNode();
                    n.put("transactional_id", id);
                    n.put("state", d.state().toString());
                    n.put("producer_id", d.producerId());
                    n.put("producer_epoch", d.producerEpoch());
                    n.put("timeout_ms", d.transactionTimeoutMs());
                    ArrayNode ps = n.putArray("partitions");
                    for (TopicPartition tp : d.topicPartitions()) {
                        ps.addObject().put("topic", tp.topic()).put("partition", tp.partition());
                    }
                    emit(n);
                }
                return 0;
            }
            default:
                throw new IllegalArgumentException("unknown command: " + o.command);
        }
    }

    // ------------------------------------------------------------------ main

    public static void main(String[] args) {
        int status;
        try {
            Opts o = new Opts(args);
            switch (o.command) {
                case "help":
                case "--help":
                case "-h":
                    OUT.println(USAGE);
                    status = 0;
                    break;
                case "produce":
                    status = produce(o);
                    break;
                case "consume":
                    status = consume(o);
                    break;
                case "offsets-for-times":
                    status = offsetsForTimes(o);
                    break;
                case "txn-producer":
                    status = txnProducer(o);
                    break;
                case "ctp":
                    status = ctp(o);
                    break;
                case "group-member":
                    status = groupMember(o);
                    break;
                case "script":
                    status = script(o);
                    break;
                case "group-scenario":
                    status = GroupScenarios.split(o);
                    break;
                case "every-group-type":
                    status = GroupScenarios.everyType(o);
                    break;
                case "share-scenario":
                    status = ShareScenarios.run(o);
                    break;
                default:
                    if (o.flag("help")) {
                        OUT.println(USAGE);
                        status = 0;
                    } else {
                        status = admin(o);
                    }
            }
        } catch (IllegalArgumentException e) {
            ObjectNode n = JSON.createObjectNode();
            n.set("error", errorNode(e));
            emit(n);
            System.err.println(e.getMessage());
            System.err.println(USAGE);
            status = 64;
        } catch (Throwable t) {
            ObjectNode n = JSON.createObjectNode();
            n.set("error", errorNode(t));
            emit(n);
            t.printStackTrace();
            status = 2;
        }
        OUT.flush();
        System.exit(status);
    }
}
