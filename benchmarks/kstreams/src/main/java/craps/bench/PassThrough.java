package craps.bench;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Kafka Streams' ceiling for the settling worker's job: every record of the input topic written
 * unchanged (key and value bytes) to the output topic, exactly once (exactly_once_v2: the outputs and
 * the consumed offsets in one transaction).
 *
 * <pre>
 *   java -cp 'target/kstreams-passthrough.jar:target/lib/*' craps.bench.PassThrough \
 *       CLIENT_PROPERTIES BOOTSTRAP APPLICATION_ID INPUT OUTPUT TOTAL COMMIT_INTERVAL_MS
 * </pre>
 *
 * CLIENT_PROPERTIES is a role's client config (security.protocol, SASL, the CA), the file the
 * Python clients log in with. Runs until TOTAL records are committed, then prints one line,
 * {@code events=N seconds=S transactions=T}: S from the first commit that held a record to the
 * commit of the TOTAL-th, the span the benchmark's aiokafka contenders are timed over (first
 * committed batch to last), T the commits that held the records (one transaction each, every
 * task's records in it); exits 2 after ten minutes without getting there.
 *
 * COMMIT_INTERVAL_MS 0 is not "a commit per fetched batch": Streams then commits after every
 * record of each task (its loop processes one record per task between commits while commits are
 * due, and one is always due).
 */
public final class PassThrough {

    public static void main(String[] args) throws Exception {
        if (args.length != 7) {
            System.err.println("usage: PassThrough CLIENT_PROPERTIES BOOTSTRAP APPLICATION_ID INPUT OUTPUT TOTAL COMMIT_INTERVAL_MS");
            System.exit(64);
        }
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            props.load(in);
        }
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[2]);
        String input = args[3];
        String output = args[4];
        long total = Long.parseLong(args[5]);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, args[6]);
        // One stream thread: the settling worker is one asyncio loop over all its partitions.
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        // The settling worker's consumer and producer (craps_streams/kafka/consumers.py, producers.py):
        // batches of up to 2,000 records fetched with a 20 ms wait, sends lingering 2 ms.
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.MAX_POLL_RECORDS_CONFIG), 2000);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG), 20);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        props.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), 2);
        // No state stores: nothing under state.dir is written, but Streams still locks a directory.
        props.put(StreamsConfig.STATE_DIR_CONFIG,
                  System.getProperty("java.io.tmpdir") + "/kstreams-passthrough-" + args[2]);

        AtomicLong processed = new AtomicLong();
        // The thread's commit count when the first and the TOTAL-th record were processed (both on
        // the stream thread, before the commit that holds them): -1 until then.
        AtomicLong commitsAtFirst = new AtomicLong(-1);
        AtomicLong commitsAtLast = new AtomicLong(-1);
        KafkaStreams[] streams = new KafkaStreams[1];

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
               .peek((key, value) -> {
                   long n = processed.incrementAndGet();
                   if (n == 1) {
                       commitsAtFirst.set(commits(streams[0]));
                   }
                   if (n == total) {
                       commitsAtLast.set(commits(streams[0]));
                   }
               })
               .to(output, Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));

        streams[0] = new KafkaStreams(builder.build(), props);
        streams[0].setUncaughtExceptionHandler(e -> {
            e.printStackTrace();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams[0].start();
        long first = 0;
        long last = 0;
        long transactions = 0;
        long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
        // Polled every millisecond: the commit count moves once the commit returned.
        while (last == 0 && System.nanoTime() < deadline
               && streams[0].state() != KafkaStreams.State.ERROR && streams[0].state() != KafkaStreams.State.NOT_RUNNING) {
            long now = System.nanoTime();
            long done = commits(streams[0]);
            if (first == 0 && commitsAtFirst.get() >= 0 && done > commitsAtFirst.get()) {
                first = now;
            }
            if (commitsAtLast.get() >= 0 && done > commitsAtLast.get()) {
                last = now;
                transactions = done - commitsAtFirst.get();
            }
            Thread.sleep(1);
        }
        streams[0].close(Duration.ofSeconds(30));
        if (last == 0) {
            System.err.println("PassThrough: " + processed.get() + " of " + total + " records processed, state "
                               + streams[0].state());
            System.exit(2);
        }
        System.out.println("events=" + total + " seconds=" + ((last - first) / 1e9) + " transactions=" + transactions);
    }

    private static volatile Metric commitTotal;

    /** The stream thread's commits so far (its commit-total metric), 0 before it has one. The
     * metric is looked up once: the registry's map is copied on every call. */
    private static long commits(KafkaStreams streams) {
        Metric metric = commitTotal;
        if (metric == null && streams != null) {
            for (Metric m : streams.metrics().values()) {
                if (m.metricName().name().equals("commit-total") && m.metricName().group().equals("stream-thread-metrics")) {
                    commitTotal = metric = m;
                }
            }
        }
        return metric == null ? 0 : (long) ((Number) metric.metricValue()).doubleValue();
    }

    private PassThrough() {
    }
}
