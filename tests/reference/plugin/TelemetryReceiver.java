// A metrics reporter that takes the metrics clients push (KIP-714) and drops them.
// Apache Kafka serves GetTelemetrySubscriptions and PushTelemetry only when a metrics
// reporter like this one is configured (metric.reporters); the test rig gives its
// reference broker this one so that both brokers answer those APIs.

import java.util.List;
import java.util.Map;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporterProvider;

public final class TelemetryReceiver implements MetricsReporter, ClientTelemetryExporterProvider {
    @Override
    public void configure(Map<String, ?> configs) {}

    @Override
    public void init(List<KafkaMetric> metrics) {}

    @Override
    public void metricChange(KafkaMetric metric) {}

    @Override
    public void metricRemoval(KafkaMetric metric) {}

    @Override
    public void close() {}

    @Override
    public ClientTelemetryExporter clientTelemetryExporter() {
        return (context, payload) -> {};
    }
}
