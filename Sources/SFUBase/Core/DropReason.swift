/// Why the engine discarded an input. Every malformed or refused datagram ends as one of these, counted,
/// never as a crash or a thrown error on the hot path.
public enum DropReason: Int, CaseIterable, Sendable, Error, CustomStringConvertible {
    // Wire format
    case truncated
    case badVersion
    case badLength
    case badPadding
    case badHeaderExtension
    case badRTCP
    case badCodecPayload
    // Routing
    case unknownConnection
    case unknownSSRC
    case noSRTPContext
    // SRTP
    case srtpAuthFailed
    case srtpReplay
    case srtpOther
    // Policy
    case hardMuted
    case noFloor
    case rtxUnsupported
    case staleAfterSwitch
    /// A slot's copy of a packet of a temporal or spatial layer above what the slot sends (not an error).
    case layerNotSent
    case egressFull
    case tooLarge
    // Budgets (RoomLimits): what a client may make the node do
    /// A new SSRC past `ssrcsPerConnection`: refused before libsrtp would keep a stream for it.
    case ssrcLimit
    /// An RTCP datagram naming more items (packets, report blocks, NACK pairs, FIR entries, transport-cc
    /// statuses) than `rtcpItemsPerPacket`: the rest of it is not parsed.
    case rtcpBudget
    /// A NACKed packet the subscriber's resend budget (bytes per second) could not pay for.
    case resendBudget
    /// A NACKed packet already resent `maxResendsPerPacket` times.
    case resendLimit
    /// An RTX repair of a packet that was never missing (or already repaired).
    case duplicateRepair
    /// A packet on a new SSRC naming the MID or RID of a track that moved to another SSRC less than
    /// `ssrcRebindInterval` ago.
    case ssrcRebindLimit
    /// A sender report that came sooner than 100 ms after the last one of its SSRC: not forwarded (one
    /// datagram of dozens would otherwise fan out to every slot the track feeds).
    case rtcpThrottled
    /// libsrtp refused to protect a packet the node sends: an index it used long ago (RFC 3711 section 3.3.2),
    /// which only a break in the node's own sequence continuity produces. Never expected; counted to be seen.
    case protectRefused
    /// A participant of a knock-enabled room that a moderator has not let in yet: nothing of it is forwarded.
    case awaited
    /// A NACK on a slot without RTX whose transport is AES-GCM: a resend would reuse the original's nonce with
    /// other header bytes (RFC 7714 section 8.1), so it is not sent.
    case resendNeedsRTX
    /// A packet a recording could not take: the queue to the recording writer was full (a slow or full disk).
    /// Forwarding goes on; the recorded file has a gap there.
    case recordingQueueFull
    /// An SRTCP datagram past its connection's `rtcpPerSecond`: not decrypted or parsed (what one client may
    /// make its worker do, whatever it sends).
    case rtcpRate

    public var description: String {
        switch self {
        case .truncated: "truncated"
        case .badVersion: "bad_version"
        case .badLength: "bad_length"
        case .badPadding: "bad_padding"
        case .badHeaderExtension: "bad_header_extension"
        case .badRTCP: "bad_rtcp"
        case .badCodecPayload: "bad_codec_payload"
        case .unknownConnection: "unknown_connection"
        case .unknownSSRC: "unknown_ssrc"
        case .noSRTPContext: "no_srtp_context"
        case .srtpAuthFailed: "srtp_auth_failed"
        case .srtpReplay: "srtp_replay"
        case .srtpOther: "srtp_error"
        case .hardMuted: "hard_muted"
        case .noFloor: "no_floor"
        case .rtxUnsupported: "rtx_unsupported"
        case .staleAfterSwitch: "stale_after_switch"
        case .layerNotSent: "layer_not_sent"
        case .egressFull: "egress_full"
        case .tooLarge: "too_large"
        case .ssrcLimit: "ssrc_limit"
        case .rtcpBudget: "rtcp_budget"
        case .resendBudget: "resend_budget"
        case .resendLimit: "resend_limit"
        case .duplicateRepair: "duplicate_repair"
        case .ssrcRebindLimit: "ssrc_rebind_limit"
        case .rtcpThrottled: "rtcp_throttled"
        case .protectRefused: "srtp_protect_refused"
        case .awaited: "awaited"
        case .resendNeedsRTX: "resend_needs_rtx"
        case .recordingQueueFull: "recording_queue_full"
        case .rtcpRate: "rtcp_rate"
        }
    }
}

/// Counts of dropped inputs by reason; a fixed array, so counting allocates nothing.
public struct DropCounters: Sendable, Equatable {
    private var counts = [UInt64](repeating: 0, count: DropReason.allCases.count)

    public init() {}

    @inlinable public mutating func count(_ reason: DropReason) { self[reason] &+= 1 }

    public subscript(reason: DropReason) -> UInt64 {
        get { counts[reason.rawValue] }
        set { counts[reason.rawValue] = newValue }
    }

    public var total: UInt64 { counts.reduce(0, &+) }

    public mutating func add(_ other: DropCounters) {
        for i in counts.indices { counts[i] &+= other.counts[i] }
    }

    /// Non-zero counters, for stats and logs.
    public var nonZero: [(DropReason, UInt64)] {
        DropReason.allCases.compactMap { counts[$0.rawValue] > 0 ? ($0, counts[$0.rawValue]) : nil }
    }
}
