package dev.odradek.streams;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.TimeWindows;

/**
 * The orders application the Streams tests run: what a user would write.
 *
 * <p>Input: {@code <prefix>-orders} (key order id, value "customer,amount") and
 * {@code <prefix>-customers} (key customer id, value its region). Output:
 * <ul>
 *   <li>{@code <prefix>-totals}: per customer "count,sum" of its orders (orders re-keyed by
 *       customer through a repartition topic, aggregated in a store with a changelog);</li>
 *   <li>{@code <prefix>-enriched}: per order "customer,amount,region" (the re-keyed orders
 *       joined with the customers table);</li>
 *   <li>{@code <prefix>-window-counts}: per "customer@windowStart" the number of orders in
 *       that 10-second window.</li>
 * </ul>
 *
 * <p>Arguments are {@code key=value}: bootstrap, application.id, prefix, state.dir,
 * threads, standbys, group.protocol (classic or streams), leave (true: leave the group
 * when stopped), and any further
 * {@code config.<streams setting>=value}. It prints "STATE <state>" on each change of
 * state and runs until it is stopped (SIGTERM closes it cleanly).
 */
public final class OrdersApp {
    private OrdersApp() {}

    static Topology topology(String prefix) {
        StreamsBuilder builder = new StreamsBuilder();
        KTable<String, String> regions =
                builder.table(prefix + "-customers", Consumed.with(Serdes.String(), Serdes.String()),
                        Materialized.as("regions"));
        KStream<String, String> orders =
                builder.stream(prefix + "-orders", Consumed.with(Serdes.String(), Serdes.String()));

        // key: customer, value: "orderId,amount"; one repartition topic serves all three
        KStream<String, String> byCustomer = orders
                .map((orderId, order) -> {
                    String[] fields = order.split(",");
                    return KeyValue.pair(fields[0], orderId + "," + fields[1]);
                })
                .repartition(Repartitioned.with(Serdes.String(), Serdes.String()).withName("by-customer"));
        KGroupedStream<String, String> perCustomer = byCustomer.groupByKey();

        perCustomer
                .aggregate(() -> "0,0", (customer, order, total) -> {
                    long amount = Long.parseLong(order.split(",")[1]);
                    String[] sums = total.split(",");
                    return (Long.parseLong(sums[0]) + 1) + "," + (Long.parseLong(sums[1]) + amount);
                }, Materialized.as("totals"))
                .toStream()
                .to(prefix + "-totals", Produced.with(Serdes.String(), Serdes.String()));

        byCustomer
                .join(regions, (order, region) -> order + "," + region)
                .map((customer, joined) -> {
                    String[] fields = joined.split(",");
                    return KeyValue.pair(fields[0], customer + "," + fields[1] + "," + fields[2]);
                })
                .to(prefix + "-enriched", Produced.with(Serdes.String(), Serdes.String()));

        perCustomer
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofDays(1)))
                .count(Materialized.as("window-counts"))
                .toStream()
                .map((window, count) -> KeyValue.pair(
                        window.key() + "@" + window.window().start(), Long.toString(count)))
                .to(prefix + "-window-counts", Produced.with(Serdes.String(), Serdes.String()));
        return builder.build();
    }

    public static void main(String[] args) throws InterruptedException {
        Map<String, String> options = new HashMap<>();
        for (String arg : args) {
            int equals = arg.indexOf('=');
            if (equals < 0) {
                System.err.println("arguments are key=value, not " + arg);
                System.exit(2);
            }
            options.put(arg.substring(0, equals), arg.substring(equals + 1));
        }
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, options.get("bootstrap"));
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, options.get("application.id"));
        props.put(StreamsConfig.STATE_DIR_CONFIG, options.get("state.dir"));
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, options.getOrDefault("threads", "1"));
        props.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, options.getOrDefault("standbys", "0"));
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, options.getOrDefault("group.protocol", "classic"));
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        for (Map.Entry<String, String> option : options.entrySet()) {
            if (option.getKey().startsWith("config.")) {
                props.put(option.getKey().substring("config.".length()), option.getValue());
            }
        }

        KafkaStreams streams = new KafkaStreams(topology(options.get("prefix")), props);
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + now);
            System.out.flush();
        });
        streams.setUncaughtExceptionHandler(exception -> {
            System.out.println("ERROR " + exception);
            System.out.flush();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
                    .StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        // leave=true: leave the group on close (as the reset tool needs), not only stop
        CloseOptions close = CloseOptions.timeout(Duration.ofSeconds(30));
        if (Boolean.parseBoolean(options.getOrDefault("leave", "false"))) {
            close = close.withGroupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP);
        }
        CloseOptions closing = close;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(closing);
            stopped.countDown();
        }));
        streams.start();
        stopped.await();
    }
}
