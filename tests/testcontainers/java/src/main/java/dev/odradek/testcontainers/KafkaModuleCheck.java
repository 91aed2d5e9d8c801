package dev.odradek.testcontainers;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.Container.ExecResult;
import org.testcontainers.containers.Network;
import org.testcontainers.kafka.KafkaContainer;
import org.testcontainers.utility.DockerImageName;

/**
 * Starts a Kafka image through Testcontainers' Kafka module ({@link KafkaContainer}, for
 * apache/kafka) and runs, with the Apache Kafka Java client, what a test would: a producer,
 * a consumer group and transactions. It prints one JSON line, which
 * tests/testcontainers/scenario.py reads.
 *
 * <pre>java -cp target/classes:lib/* dev.odradek.testcontainers.KafkaModuleCheck IMAGE [KEY=VALUE]</pre>
 *
 * The optional KEY=VALUE is a label for the container. The container is on a network of its
 * own with an extra listener, {@code withListener("kafka:19092")} (named TC-0 by the module),
 * which is asked from inside the network. With {@code -Dready.only=true} it sets up
 * Testcontainers' client, starts a plain {@code new KafkaContainer(image)}, prints how long
 * each took and stops it (bench/testcontainers_start.py).
 */
public final class KafkaModuleCheck {
    private static final String ORDERS = "orders";
    private static final String PAYMENTS = "payments";
    private static final int RECORDS = 20;
    private static final Duration LIMIT = Duration.ofSeconds(60);

    private KafkaModuleCheck() {}

    public static void main(String[] args) throws Exception {
        DockerImageName image = DockerImageName.parse(args[0]).asCompatibleSubstituteFor("apache/kafka");
        if (Boolean.getBoolean("ready.only")) {
            // Testcontainers' client first (once per JVM: finding Docker, its info): the
            // start that follows is what each further container costs
            long began = System.nanoTime();
            DockerClientFactory.instance().client();
            double client = (System.nanoTime() - began) / 1e9;
            try (KafkaContainer kafka = new KafkaContainer(image)) {
                label(kafka, args);
                began = System.nanoTime();
                kafka.start();
                double ready = (System.nanoTime() - began) / 1e9;
                System.out.println("{\"client_seconds\":" + client + ",\"ready_seconds\":" + ready + "}");
            }
            return;
        }
        try (Network network = Network.newNetwork();
                KafkaContainer kafka = new KafkaContainer(image)
                        .withNetwork(network)
                        .withListener("kafka:19092")) {
            label(kafka, args);
            long began = System.nanoTime();
            kafka.start();
            double ready = (System.nanoTime() - began) / 1e9;
            StringBuilder out = new StringBuilder("{");
            field(out, "ready_seconds", Double.toString(ready));
            field(out, "bootstrap", quote(kafka.getBootstrapServers()));
            ExecResult health = kafka.execInContainer("odradek", "health", "--bootstrap", "kafka:19092");
            field(out, "extra_listener_health", Integer.toString(health.getExitCode()));
            scenario(kafka.getBootstrapServers(), out);
            out.setLength(out.length() - 1);
            System.out.println(out.append("}"));
        }
    }

    private static void label(KafkaContainer kafka, String[] args) {
        if (args.length > 1) {
            String[] label = args[1].split("=", 2);
            kafka.withLabel(label[0], label[1]);
        }
    }

    private static void scenario(String bootstrap, StringBuilder out) throws Exception {
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(common)) {
            admin.createTopics(List.of(new NewTopic(ORDERS, 3, (short) 1), new NewTopic(PAYMENTS, 1, (short) 1)))
                    .all()
                    .get();
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerSettings(bootstrap, null))) {
                for (int i = 0; i < RECORDS; i++) {
                    producer.send(new ProducerRecord<>(ORDERS, "k" + i, "order-" + i)).get();
                }
            }
            field(out, "consumed", list(consumeAsGroup(bootstrap)));
            Map<TopicPartition, OffsetAndMetadata> offsets =
                    admin.listConsumerGroupOffsets("readers").partitionsToOffsetAndMetadata().get();
            long committed = offsets.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
            field(out, "group_committed", Long.toString(committed));
        }
        transact(bootstrap);
        field(out, "read_committed", list(readPayments(bootstrap, "read_committed")));
        field(out, "read_uncommitted", list(readPayments(bootstrap, "read_uncommitted")));
    }

    private static List<String> consumeAsGroup(String bootstrap) {
        Properties settings = consumerSettings(bootstrap, "read_uncommitted");
        settings.put(ConsumerConfig.GROUP_ID_CONFIG, "readers");
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(settings)) {
            consumer.subscribe(List.of(ORDERS));
            long deadline = System.nanoTime() + LIMIT.toNanos();
            while (values.size() < RECORDS && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    values.add(record.value());
                }
            }
            consumer.commitSync();
        }
        return values;
    }

    /** Five payments committed, two aborted, a last one committed. */
    private static void transact(String bootstrap) {
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(producerSettings(bootstrap, "payments-txn"))) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < 5; i++) {
                producer.send(new ProducerRecord<>(PAYMENTS, "paid-" + i));
            }
            producer.commitTransaction();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(PAYMENTS, "void-0"));
            producer.send(new ProducerRecord<>(PAYMENTS, "void-1"));
            producer.flush();
            producer.abortTransaction();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(PAYMENTS, "paid-last"));
            producer.commitTransaction();
        }
    }

    /** The payments topic from its start up to "paid-last". */
    private static List<String> readPayments(String bootstrap, String isolation) {
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerSettings(bootstrap, isolation))) {
            TopicPartition partition = new TopicPartition(PAYMENTS, 0);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            long deadline = System.nanoTime() + LIMIT.toNanos();
            while (!values.contains("paid-last") && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    values.add(record.value());
                }
            }
        }
        return values;
    }

    private static Properties producerSettings(String bootstrap, String transactionalId) {
        Properties settings = new Properties();
        settings.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        settings.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        settings.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        if (transactionalId != null) {
            settings.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        }
        return settings;
    }

    private static Properties consumerSettings(String bootstrap, String isolation) {
        Properties settings = new Properties();
        settings.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        settings.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        settings.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        settings.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        settings.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        settings.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        return settings;
    }

    private static void field(StringBuilder out, String name, String json) {
        out.append(quote(name)).append(':').append(json).append(',');
    }

    private static String list(List<String> values) {
        return values.stream().map(KafkaModuleCheck::quote).collect(Collectors.joining(",", "[", "]"));
    }

    private static String quote(String text) {
        return '"' + text.replace("\\", "\\\\").replace("\"", "\\\"") + '"';
    }
}
