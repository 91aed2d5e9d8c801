// KafkaTool's transactional commands: txn-producer (a scripted transactional producer)
// and ctp (consume-transform-produce).

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

final class TxnCommands {
    private TxnCommands() {
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
        ObjectNode n = KafkaTool.JSON.createObjectNode();
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
    static int txnProducer(KafkaTool.Opts o) throws Exception {
        Properties props = KafkaTool.clientProps(o, txnProducerDefaults());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props);
        ObjectNode ready = KafkaTool.JSON.createObjectNode();
        ready.put("event", "ready");
        KafkaTool.emit(ready);
        String line;
        try {
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                JsonNode c = KafkaTool.JSON.readTree(line);
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
                                        partition, KafkaTool.readBytes(r.get("key")), KafkaTool.readBytes(r.get("value")))));
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
                            KafkaTool.emit(res);
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
                KafkaTool.emit(res);
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
    static int ctp(KafkaTool.Opts o) throws Exception {
        String input = o.require("input");
        String output = o.require("output");
        String group = o.require("group");
        int every = Integer.parseInt(o.get("commit-every", "100"));
        long idleMs = Long.parseLong(o.get("idle-ms", "2000"));
        long sleepMs = Long.parseLong(o.get("sleep-ms", "0"));
        long maxMs = Long.parseLong(o.get("timeout-ms", "300000"));
        Properties pp = KafkaTool.clientProps(o, txnProducerDefaults());
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
        Map<String, String> extra = KafkaTool.pairs(o.all("consumer-prop"));
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
            ObjectNode ready = KafkaTool.JSON.createObjectNode();
            ready.put("event", "ready");
            KafkaTool.emit(ready);
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
                ObjectNode ev = KafkaTool.JSON.createObjectNode();
                ev.put("event", "committed");
                ev.put("copied", copied);
                ev.put("transactions", transactions);
                KafkaTool.emit(ev);
            }
        }
        ObjectNode done = KafkaTool.JSON.createObjectNode();
        done.put("event", "done");
        done.put("copied", copied);
        done.put("transactions", transactions);
        KafkaTool.emit(done);
        return 0;
    }

}
