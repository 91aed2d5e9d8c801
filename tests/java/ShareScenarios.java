// KafkaShareConsumer scenarios in one JVM (KafkaTool dispatches here):
//   share-scenario --scenario NAME --topic T --group G
// Each creates T (one partition), sets the group's share.auto.offset.reset to earliest,
// produces records (values v-0, v-1, ...) and prints one line per delivery,
// {"consumer", "offset", "value", "delivery_count", "ack"}, events ({"event": ...}) and at
// the end the group's start offset ({"event": "offsets", "start_offset": N}).
//   implicit      one consumer, acknowledgement implicit, 10 records
//   explicit      6 records acknowledged ACCEPT, RELEASE, REJECT, ACCEPT, RELEASE, ACCEPT by
//                 offset; the released ones come back (delivery count 2) and are accepted
//   two-members   two consumers (explicit, at most 5 records a poll) on one partition hold
//                 records at once, then take turns until 20 records are accepted
//   release-on-close  a consumer holds 10 records unacknowledged and closes; the other
//                 member gets them again (delivery count 2)

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

final class ShareScenarios {
    static final long WAIT_MS = 90_000;

    private final KafkaTool.Opts opts;
    private final String topic;
    private final String group;
    private final Admin admin;

    private ShareScenarios(KafkaTool.Opts opts, Admin admin) {
        this.opts = opts;
        this.topic = opts.require("topic");
        this.group = opts.require("group");
        this.admin = admin;
    }

    static int run(KafkaTool.Opts o) throws Exception {
        try (Admin admin = Admin.create(KafkaTool.clientProps(o, AdminCommands.adminDefaults()))) {
            ShareScenarios s = new ShareScenarios(o, admin);
            String name = o.require("scenario");
            switch (name) {
                case "implicit":
                    s.implicit();
                    break;
                case "explicit":
                    s.explicit();
                    break;
                case "two-members":
                    s.twoMembers();
                    break;
                case "release-on-close":
                    s.releaseOnClose();
                    break;
                default:
                    throw new IllegalArgumentException("unknown share scenario: " + name);
            }
        }
        return 0;
    }

    // ------------------------------------------------------------------ helpers

    void setUp(int records) throws Exception {
        GroupScenarios.createTopic(admin, topic, 1);
        ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
        var reset = new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
        admin.incrementalAlterConfigs(Map.of(res, List.of(reset))).all().get();
        produceValues(records);
    }

    void produceValues(int records) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", opts.require("bootstrap"));
        p.put("key.serializer", org.apache.kafka.common.serialization.ByteArraySerializer.class.getName());
        p.put("value.serializer", org.apache.kafka.common.serialization.ByteArraySerializer.class.getName());
        p.put("acks", "all");
        try (var producer = new org.apache.kafka.clients.producer.KafkaProducer<byte[], byte[]>(p)) {
            for (int i = 0; i < records; i++) {
                producer.send(new org.apache.kafka.clients.producer.ProducerRecord<>(topic, 0, null,
                        ("v-" + i).getBytes(StandardCharsets.UTF_8)));
            }
            producer.flush();
        }
    }

    KafkaShareConsumer<byte[], byte[]> consumer(String name, boolean explicit, Map<String, String> extra) {
        Properties p = new Properties();
        p.put("bootstrap.servers", opts.require("bootstrap"));
        p.put("group.id", group);
        p.put("client.id", group + "-" + name);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("share.acknowledgement.mode", explicit ? "explicit" : "implicit");
        p.put("request.timeout.ms", "10000");
        p.put("default.api.timeout.ms", "30000");
        p.putAll(extra);
        KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p);
        c.subscribe(List.of(topic));
        return c;
    }

    static void delivery(String consumer, ConsumerRecord<byte[], byte[]> r, AcknowledgeType ack) {
        ObjectNode n = KafkaTool.JSON.createObjectNode();
        n.put("consumer", consumer);
        n.put("offset", r.offset());
        n.put("value", new String(r.value(), StandardCharsets.UTF_8));
        n.put("delivery_count", r.deliveryCount().map(Short::intValue).orElse(-1));
        n.put("ack", ack == null ? "none" : ack.toString());
        KafkaTool.emit(n);
    }

    static void event(String name) {
        ObjectNode n = KafkaTool.JSON.createObjectNode();
        n.put("event", name);
        KafkaTool.emit(n);
    }

    static void commit(String consumer, KafkaShareConsumer<byte[], byte[]> c) {
        Map<TopicIdPartition, Optional<KafkaException>> res = c.commitSync();
        for (var e : res.entrySet()) {
            if (e.getValue().isPresent()) {
                ObjectNode n = KafkaTool.JSON.createObjectNode();
                n.put("event", "commit-failed");
                n.put("consumer", consumer);
                n.set("failure", KafkaTool.errorNode(e.getValue().get()));
                KafkaTool.emit(n);
            }
        }
    }

    // Polls until the records it returns (at least one) and stops; none after WAIT_MS fails.
    static List<ConsumerRecord<byte[], byte[]>> pollSome(String name, KafkaShareConsumer<byte[], byte[]> c) {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (System.currentTimeMillis() < deadline) {
            var recs = c.poll(Duration.ofMillis(200));
            if (!recs.isEmpty()) {
                List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
                recs.forEach(out::add);
                return out;
            }
        }
        throw new IllegalStateException(name + " got no records within " + WAIT_MS + " ms");
    }

    static void check(String what, BooleanSupplier done) {
        if (!done.getAsBoolean()) {
            throw new IllegalStateException("timed out after " + WAIT_MS + " ms: " + what);
        }
    }

    // The group's lag once every record is done with (0), or what it is after WAIT_MS, and
    // its start offset (Kafka stores the start offset of a moment before its last write).
    void offsets() throws Exception {
        TopicPartition tp = new TopicPartition(topic, 0);
        var spec = new ListShareGroupOffsetsSpec().topicPartitions(List.of(tp));
        long deadline = System.currentTimeMillis() + WAIT_MS;
        SharePartitionOffsetInfo info;
        while (true) {
            info = admin.listShareGroupOffsets(Map.of(group, spec)).partitionsToOffsetInfo(group).get().get(tp);
            if ((info != null && info.lag().orElse(-1L) == 0) || System.currentTimeMillis() > deadline) {
                break;
            }
            Thread.sleep(200);
        }
        ObjectNode n = KafkaTool.JSON.createObjectNode();
        n.put("event", "offsets");
        if (info != null) {
            n.put("start_offset", info.startOffset());
            n.put("lag", info.lag().orElse(-1L));
        }
        KafkaTool.emit(n);
    }

    // ------------------------------------------------------------------ scenarios

    void implicit() throws Exception {
        int records = 10;
        setUp(records);
        Set<Long> seen = new TreeSet<>();
        try (var c = consumer("a", false, Map.of())) {
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (seen.size() < records && System.currentTimeMillis() < deadline) {
                for (var r : c.poll(Duration.ofMillis(200))) {
                    delivery("a", r, null);
                    seen.add(r.offset());
                }
            }
            commit("a", c); // acknowledges what the last poll returned
        }
        check(seen.size() + " of " + records + " records", () -> seen.size() == records);
        offsets();
    }

    void explicit() throws Exception {
        int records = 6;
        AcknowledgeType[] plan = {
            AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT,
            AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.ACCEPT,
        };
        setUp(records);
        Set<Long> first = new TreeSet<>();
        Set<Long> again = new TreeSet<>();
        try (var c = consumer("a", true, Map.of())) {
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while ((first.size() < records || again.size() < 2) && System.currentTimeMillis() < deadline) {
                var recs = c.poll(Duration.ofMillis(200));
                for (var r : recs) {
                    boolean firstTime = r.deliveryCount().orElse((short) 1) == 1;
                    AcknowledgeType ack = firstTime ? plan[(int) r.offset()] : AcknowledgeType.ACCEPT;
                    c.acknowledge(r, ack);
                    delivery("a", r, ack);
                    (firstTime ? first : again).add(r.offset());
                }
                if (!recs.isEmpty()) {
                    commit("a", c);
                }
            }
            check("every record and the released ones again", () -> first.size() == records && again.size() == 2);
            // nothing else comes: the rejected record is gone for good
            long quiet = System.currentTimeMillis() + 2000;
            while (System.currentTimeMillis() < quiet) {
                var recs = c.poll(Duration.ofMillis(200));
                for (var r : recs) {
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                    delivery("a", r, AcknowledgeType.ACCEPT);
                }
                if (!recs.isEmpty()) {
                    commit("a", c);
                }
            }
        }
        offsets();
    }

    void twoMembers() throws Exception {
        int records = 20;
        setUp(records);
        Map<String, String> limited = Map.of("max.poll.records", "5", "share.acquire.mode", "record_limit");
        Set<Long> accepted = new TreeSet<>();
        try (var a = consumer("a", true, limited); var b = consumer("b", true, limited)) {
            // a holds its first records unacknowledged while b gets its own
            List<ConsumerRecord<byte[], byte[]>> held = pollSome("a", a);
            held.forEach(r -> delivery("a", r, null));
            List<ConsumerRecord<byte[], byte[]>> other = pollSome("b", b);
            other.forEach(r -> delivery("b", r, null));
            event("both-hold");
            for (var r : held) {
                a.acknowledge(r, AcknowledgeType.ACCEPT);
                accepted.add(r.offset());
            }
            commit("a", a);
            for (var r : other) {
                b.acknowledge(r, AcknowledgeType.ACCEPT);
                accepted.add(r.offset());
            }
            commit("b", b);
            Map<String, KafkaShareConsumer<byte[], byte[]>> members = new HashMap<>();
            members.put("a", a);
            members.put("b", b);
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (accepted.size() < records && System.currentTimeMillis() < deadline) {
                for (String name : List.of("a", "b")) {
                    var c = members.get(name);
                    var recs = c.poll(Duration.ofMillis(100));
                    for (var r : recs) {
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                        delivery(name, r, AcknowledgeType.ACCEPT);
                        accepted.add(r.offset());
                    }
                    if (!recs.isEmpty()) {
                        commit(name, c);
                    }
                }
            }
        }
        check(accepted.size() + " of " + records + " accepted", () -> accepted.size() == records);
        offsets();
    }

    void releaseOnClose() throws Exception {
        int records = 10;
        setUp(records);
        Set<Long> again = new TreeSet<>();
        var a = consumer("a", true, Map.of());
        boolean aOpen = true;
        try {
            Set<Long> held = new TreeSet<>();
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (held.size() < records && System.currentTimeMillis() < deadline) {
                for (var r : a.poll(Duration.ofMillis(200))) {
                    delivery("a", r, null);
                    held.add(r.offset());
                }
            }
            check("a to hold every record", () -> held.size() == records);
            try (var b = consumer("b", true, Map.of())) {
                // b joins and is assigned the partition, but a holds every record
                long joined = System.currentTimeMillis() + WAIT_MS;
                while (!assigned("b") && System.currentTimeMillis() < joined) {
                    for (var r : b.poll(Duration.ofMillis(200))) {
                        b.acknowledge(r, AcknowledgeType.ACCEPT);
                        delivery("b", r, AcknowledgeType.ACCEPT);
                    }
                }
                check("b's assignment", () -> assigned("b"));
                event("b-assigned");
                aOpen = false;
                a.close();
                event("a-closed");
                deadline = System.currentTimeMillis() + WAIT_MS;
                while (again.size() < records && System.currentTimeMillis() < deadline) {
                    var recs = b.poll(Duration.ofMillis(200));
                    for (var r : recs) {
                        b.acknowledge(r, AcknowledgeType.ACCEPT);
                        delivery("b", r, AcknowledgeType.ACCEPT);
                        again.add(r.offset());
                    }
                    if (!recs.isEmpty()) {
                        commit("b", b);
                    }
                }
            }
        } finally {
            if (aOpen) {
                a.close();
            }
        }
        check("b to get the released records", () -> again.size() == records);
        offsets();
    }

    boolean assigned(String member) {
        try {
            var d = admin.describeShareGroups(List.of(group)).all().get().get(group);
            for (var m : d.members()) {
                if (m.clientId().equals(group + "-" + member)) {
                    return !m.assignment().topicPartitions().isEmpty();
                }
            }
            return false;
        } catch (Exception e) {
            return false;
        }
    }
}
