package dev.odradek.streams;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The transactions benchmark's loop on the Java client 4.4 (bench/transactions_java.py):
 * begin, records spread over the partitions, the offsets of an input topic when one is
 * named, commit; for a fixed time after a few untimed transactions. Against a broker that
 * finalizes transaction.version 2 the client runs transactions version 2. Prints one
 * line of figures: transactions, seconds, commit latencies, failures.
 *
 * <p>Arguments: bootstrap topic partitions seconds warmup records valueSize offsetsTopic|-
 */
public final class TxnBench {
    private TxnBench() {}

    public static void main(String[] args) {
        String bootstrap = args[0];
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        double seconds = Double.parseDouble(args[3]);
        int warmup = Integer.parseInt(args[4]);
        int records = Integer.parseInt(args[5]);
        byte[] value = new byte[Integer.parseInt(args[6])];
        String offsetsTopic = args[7].equals("-") ? null : args[7];

        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "bench-java-" + UUID.randomUUID());
        props.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        ConsumerGroupMetadata group = new ConsumerGroupMetadata("bench-java-" + UUID.randomUUID());
        List<Double> commitMs = new ArrayList<>();
        List<Double> txnMs = new ArrayList<>();
        int failed = 0;
        String firstError = null;
        double initMs;
        double elapsed;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            long began = System.nanoTime();
            producer.initTransactions();
            initMs = (System.nanoTime() - began) / 1e6;
            long sequence = 0;
            long start = 0;
            long deadline = Long.MAX_VALUE;
            for (int txn = 0; System.nanoTime() < deadline; txn++) {
                if (txn == warmup) {
                    start = System.nanoTime();
                    deadline = start + (long) (seconds * 1e9);
                }
                long opened = System.nanoTime();
                try {
                    producer.beginTransaction();
                    for (int i = 0; i < records; i++) {
                        int partition = (int) ((sequence + i) % partitions);
                        producer.send(new ProducerRecord<>(topic, partition, null, value));
                    }
                    sequence += records;
                    if (offsetsTopic != null) {
                        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                        for (int p = 0; p < 8; p++) {
                            offsets.put(new TopicPartition(offsetsTopic, p), new OffsetAndMetadata(sequence));
                        }
                        producer.sendOffsetsToTransaction(offsets, group);
                    }
                    long committing = System.nanoTime();
                    producer.commitTransaction();
                    long done = System.nanoTime();
                    if (txn >= warmup) {
                        commitMs.add((done - committing) / 1e6);
                        txnMs.add((done - opened) / 1e6);
                    }
                } catch (RuntimeException e) {
                    failed++;
                    if (firstError == null) {
                        firstError = e.toString();
                    }
                    break;
                }
            }
            elapsed = (System.nanoTime() - start) / 1e9;
        }
        Collections.sort(commitMs);
        Collections.sort(txnMs);
        System.out.printf(
                "{\"transactions\": %d, \"seconds\": %.3f, \"init_ms\": %.1f, \"commit_p50_ms\": %.3f, "
                        + "\"commit_p99_ms\": %.3f, \"commit_max_ms\": %.3f, \"txn_p50_ms\": %.3f, "
                        + "\"failed_transactions\": %d, \"first_error\": %s}%n",
                commitMs.size(), elapsed, initMs, at(commitMs, 50), at(commitMs, 99),
                commitMs.isEmpty() ? Double.NaN : commitMs.get(commitMs.size() - 1), at(txnMs, 50),
                failed, firstError == null ? "null" : "\"" + firstError.replace("\"", "'") + "\"");
    }

    private static double at(List<Double> sorted, int percentile) {
        if (sorted.isEmpty()) {
            return Double.NaN;
        }
        int index = Math.min(sorted.size() - 1, (int) Math.ceil(percentile / 100.0 * sorted.size()) - 1);
        return sorted.get(Math.max(index, 0));
    }
}
