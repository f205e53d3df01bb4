import CoreMetrics
import Foundation
import NodeIO
import Prometheus
import SFU
import SFURecording
import Synchronization

/// `GET /metrics`: the node's counters in the Prometheus text format, through swift-metrics with the
/// swift-prometheus backend.
///
/// The media path never touches a metric: workers keep plain counters on their own thread (no atomics, no
/// locks per packet), and a scrape asks each worker for a snapshot and moves the differences into the
/// swift-metrics counters. Each node has its own registry (not the process-wide `MetricsSystem`), so tests
/// can run several nodes in one process.
public final class NodeMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    /// The swift-metrics objects by series (name and labels), with the worker total each counter last saw.
    private struct Series {
        var counters: [String: (counter: CoreMetrics.Counter, last: UInt64)] = [:]
        var gauges: [String: CoreMetrics.Gauge] = [:]
        var busy: [String: (counter: CoreMetrics.FloatingPointCounter, last: Double)] = [:]
    }
    private let series = Mutex(Series())

    public init() {
        factory = PrometheusMetricsFactory(registry: registry)
    }

    /// Collects every worker's totals and renders the registry.
    public func render(_ node: Node) async -> String {
        var snapshots: [WorkerMetrics] = []
        for w in node.workers {
            if let m = try? await w.metrics() { snapshots.append(m) }
        }
        update(snapshots, consumers: node.events.consumerCount, configuration: node.configuration, refusals: node.limitRefusals,
               recording: node.recordings.writer.statistics)
        return registry.emitToString()
    }

    func update(_ workers: [WorkerMetrics], consumers: Int, configuration c: NodeConfiguration = .init(),
                refusals: [String: UInt64] = [:], recording: RecordingWriter.Statistics = .init()) {
        series.withLock { s in
            func key(_ name: String, _ labels: [(String, String)]) -> String { name + labels.map { "|\($0.0)=\($0.1)" }.joined() }
            /// Moves a worker total into its counter: the difference since the last scrape.
            func count(_ name: String, _ labels: [(String, String)], _ total: UInt64) {
                let k = key(name, labels)
                let (counter, last) = s.counters[k] ?? (CoreMetrics.Counter(label: name, dimensions: labels, factory: factory), 0)
                if total > last { counter.increment(by: Int64(clamping: total - last)) }
                s.counters[k] = (counter, max(last, total))
            }
            func gauge(_ name: String, _ labels: [(String, String)], _ value: Double) {
                let k = key(name, labels)
                let g = s.gauges[k] ?? CoreMetrics.Gauge(label: name, dimensions: labels, factory: factory)
                s.gauges[k] = g
                g.record(value)
            }
            /// Seconds the worker thread worked (not waiting on its socket): its load is this counter's rate.
            func busy(_ labels: [(String, String)], _ total: Double) {
                let name = "sfu_worker_busy_seconds_total", k = key(name, labels)
                let (counter, last) = s.busy[k] ?? (CoreMetrics.FloatingPointCounter(label: name, dimensions: labels, factory: factory), 0)
                if total > last { counter.increment(by: total - last) }
                s.busy[k] = (counter, max(last, total))
            }
            for m in workers {
                let w = [("worker", String(m.worker))]
                count("sfu_udp_datagrams_received_total", w, m.datagramsIn)
                count("sfu_udp_bytes_received_total", w, m.bytesIn)
                count("sfu_udp_datagrams_sent_total", w, m.datagramsOut)
                count("sfu_udp_bytes_sent_total", w, m.bytesOut)
                count("sfu_udp_gso_sends_total", w, m.gsoSends)
                count("sfu_rtp_packets_received_total", w, m.room.packetsIn)
                count("sfu_rtp_bytes_received_total", w, m.room.bytesIn)
                count("sfu_rtp_packets_forwarded_total", w, m.room.packetsOut)
                count("sfu_rtp_bytes_forwarded_total", w, m.room.bytesOut)
                count("sfu_rtcp_packets_received_total", w, m.room.rtcpIn)
                count("sfu_rtcp_packets_sent_total", w, m.room.rtcpOut)
                count("sfu_retransmissions_total", w, m.room.retransmissions)
                count("sfu_gaps_filled_total", w, m.room.gapsFilled)
                count("sfu_keyframe_requests_total", w, m.room.keyframeRequestsSent)
                count("sfu_talker_switches_total", w, m.room.slotSwitches)
                count("sfu_onset_replays_total", w + [("result", "sent")], m.room.onsetReplays)
                count("sfu_onset_replays_total", w + [("result", "skipped")], m.room.onsetReplaysSkipped)
                count("sfu_onset_replayed_packets_total", w, m.room.onsetReplayedPackets)
                count("sfu_dominant_speaker_changes_total", w, m.room.dominantSpeakerChanges)
                count("sfu_ssrc_rebinds_total", w, m.room.ssrcRebinds)
                count("sfu_dtls_handshakes_total", w + [("result", "ok")], m.dtlsHandshakes)
                count("sfu_dtls_handshakes_total", w + [("result", "failed")], m.dtlsFailures)
                busy(w, m.busySeconds)
                count("sfu_events_lost_total", w, m.eventsLost)
                count("sfu_drops_total", w + [("reason", "no_room")], m.ingressDrops)
                count("sfu_drops_total", w + [("reason", "handoff_full")], m.handoffDrops)
                count("sfu_drops_total", w + [("reason", "hosted_gone")], m.hostedDiscards)
                count("sfu_drops_total", w + [("reason", "oversized_datagram")], m.oversizedDrops)
                count("sfu_drops_total", w + [("reason", "relay_unroutable")], m.relayDrops)
                count("sfu_relay_datagrams_received_total", w, m.relayDatagramsIn)
                for (reason, n) in m.edgeDrops { count("sfu_drops_total", w + [("reason", reason)], n) }
                count("sfu_drops_total", w + [("reason", "send_failed")], m.sendDrops)
                for reason in DropReason.allCases {
                    count("sfu_drops_total", w + [("reason", reason.description)], m.room.drops[reason])
                }
                count("sfu_udp_send_errors_total", w, m.sendErrors)
                count("sfu_udp_gso_fallbacks_total", w, m.gsoFallbacks)
                count("sfu_worker_saturated_passes_total", w, m.saturatedPasses)
                let t = m.transports
                for (event, n) in [("created", t.created), ("renegotiated", t.renegotiated), ("ice_restarted", t.iceRestarts),
                                   ("replaced", t.replaced), ("handshake_timeout", t.handshakeTimeouts),
                                   ("consent_expired", t.consentExpiries), ("closed_by_client", t.closedByClient),
                                   ("srtp_setup_failed", t.srtpSetupFailures)] {
                    count("sfu_transport_events_total", w + [("event", event)], n)
                }
                gauge("sfu_rooms", w, Double(m.rooms))
                gauge("sfu_participants", w, Double(m.participants))
                gauge("sfu_connections", w, Double(m.connections))
                gauge("sfu_pending_handshakes", w, Double(m.pendingHandshakes))
                gauge("sfu_relay_ends", w, Double(m.relayEnds))
                // Client transports by path: UDP or TCP, IPv4 or IPv6, through a TURN relay or not.
                for carrier in TransportPath.Carrier.allCases {
                    for family in TransportPath.Family.allCases {
                        for relayed in [false, true] {
                            let p = TransportPath(carrier: carrier, family: family, relayed: relayed)
                            gauge("sfu_transports", w + [("protocol", carrier.rawValue), ("family", family.rawValue), ("relayed", String(relayed))],
                                  Double(m.paths[p] ?? 0))
                        }
                    }
                }
                if let tcp = m.tcp {
                    // The ICE-TCP port (RFC 6544): connections, what they carried, why the node closed them.
                    gauge("sfu_tcp_connections", w + [("state", "authenticated")], Double(tcp.open - tcp.unauthenticated))
                    gauge("sfu_tcp_connections", w + [("state", "unauthenticated")], Double(tcp.unauthenticated))
                    count("sfu_tcp_accepted_total", w, tcp.accepted)
                    for r in TCPCloseReason.allCases { count("sfu_tcp_closed_total", w + [("reason", r.description)], tcp.closed(r)) }
                    count("sfu_tcp_frames_received_total", w, tcp.framesIn)
                    count("sfu_tcp_bytes_received_total", w, tcp.bytesIn)
                    count("sfu_tcp_frames_sent_total", w, tcp.framesOut)
                    count("sfu_tcp_bytes_sent_total", w, tcp.bytesOut)
                    count("sfu_drops_total", w + [("reason", "tcp_send_buffer_full")], tcp.sendDrops)
                    count("sfu_drops_total", w + [("reason", "tcp_bad_frame")], tcp.badFrames)
                }
            }
            gauge("sfu_event_consumers", [], Double(consumers))
            // The recording writer: what it records now, what it wrote, what the workers' queues refused.
            gauge("sfu_recordings", [], Double(recording.recordings))
            gauge("sfu_recording_streams", [], Double(recording.streams))
            count("sfu_recording_bytes_written_total", [], UInt64(max(0, recording.bytesWritten)))
            count("sfu_recording_packets_refused_total", [], UInt64(max(0, recording.packetsRefused)))
            count("sfu_recording_failures_total", [], UInt64(max(0, recording.failures)))
            // Which crypto libsrtp runs on (1 for the one linked), and what a 1200-byte GCM protect costs.
            let srtp = SRTPBackend.current
            gauge("sfu_srtp_backend", [("backend", srtp.name), ("version", srtp.version)], 1)
            gauge("sfu_srtp_protect_nanoseconds", [], srtp.protectNanoseconds)
            // The caps in force, and how often each refused a request (`limits.*` keys).
            let l = c.workerLimits
            for (name, value) in [("rooms", c.maxRooms), ("participants_per_room", l.room.participants),
                                  ("slots_per_subscription", l.room.slotsPerSubscription), ("tracks_per_publish", l.room.tracksPerPublish),
                                  ("ssrcs_per_connection", l.room.ssrcsPerConnection), ("pending_handshakes", l.pendingHandshakes),
                                  ("rtcp_items_per_packet", l.room.rtcpItemsPerPacket), ("rtcp_per_second", l.room.rtcpPerSecond),
                                  ("resend_kbps", l.room.resendKbps),
                                  ("resends_per_packet", l.room.maxResendsPerPacket)] {
                gauge("sfu_limit", [("limit", name)], Double(value))
                count("sfu_limit_refusals_total", [("limit", name)], refusals[name] ?? 0)
            }
        }
    }
}
