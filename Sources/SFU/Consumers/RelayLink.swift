/// The room's relay to another node (issue 25; docs/cluster.md, Relays): what this node sends there. It is a
/// subscriber that is never ranked, shown or listed, whose slots are bound one to one to participants: one
/// audio slot per relayed participant, one video slot per layer of a relayed camera and of a relayed screen
/// share. Each slot is a `SlotSender` like a browser's, so the relayed stream stays continuous and the peer's
/// NACKs, key frame requests and reports are answered as a browser's are; hard mute and the floor apply before
/// the relay (a slot only shows what `PublishingRules` lets through).
///
/// Which participants it carries is `RelayPlan`'s. A participant that drops out of the plan keeps its slot,
/// empty, so that its stream to the peer continues where it left off when it comes back; past `maxSlots` slots
/// of a kind the one empty longest goes.
final class RelayLink {
    let peer: String
    let connection: Connection
    /// The relay as its subscriber's participant: not in the room's roster.
    let holder: Participant
    let subscriber: Subscriber
    let maxSlots: Int
    /// The participant each slot is bound to, by mid, what of it (audio, or which layer of which video), and
    /// when it was last in the plan.
    private(set) var bound: [String: (participant: Int, kind: RelayedKind, lastWanted: MonoTime)] = [:]
    /// Slots per participant and source at most: a simulcast source's layers each have one.
    static let maxLayers = 4
    private var descriptions: [SlotDescription] = []

    init(peer: String, connection: Connection, holder: Participant, videoCount: VideoCountPolicy, resendPolicy: ResendPolicy,
         maxSlots: Int, effects: RoomEffects) {
        self.peer = peer
        self.connection = connection
        self.holder = holder
        self.maxSlots = maxSlots
        subscriber = Subscriber(participant: holder, connection: connection, videoCount: videoCount, resendPolicy: resendPolicy, effects: effects)
        subscriber.passesEveryLayer = true
        connection.subscriber = subscriber
    }

    /// The relay's SSRCs: drawn from a counter for each slot the link binds (media and RTX apart), so a slot
    /// made again for a participant - its old one was dropped past `maxSlots` - never goes out under an SSRC
    /// that already carried packets under this link's key: its sequence numbers start over, and the same SSRC
    /// would reuse AES-GCM nonces (RFC 7714 section 8.1). The peer binds whatever `carried` names.
    private var lastSSRC: UInt32 = 0

    private func newSSRC() -> UInt32 {
        repeat { lastSSRC &+= 1 } while descriptions.contains { $0.ssrc == ssrcValue(lastSSRC) || $0.rtxSSRC == ssrcValue(lastSSRC) }
        return ssrcValue(lastSSRC)
    }

    private func ssrcValue(_ n: UInt32) -> UInt32 { 0x1000_0000 | (n & 0x0FFF_FFFF) }

    /// The SSRC the participant's slot of a kind goes out under now; nil when the link has none for it.
    func ssrc(participant: Int, kind: RelayedKind) -> UInt32? {
        let mid = Self.mid(participant: participant, kind: kind)
        return descriptions.first { $0.mid == mid }?.ssrc
    }

    static func mid(participant: Int, kind: RelayedKind) -> String { "\(kind.prefix)\(participant)" + (kind.layer > 0 ? ".\(kind.layer)" : "") }

    /// The formats a relay slot takes: Opus, or every video codec the node forwards (the source keeps its
    /// codec; H.264 under a format for the high profiles and one for Baseline).
    func description(participant: Int, kind: RelayedKind) -> SlotDescription {
        let mid = Self.mid(participant: participant, kind: kind), ssrc = newSSRC()
        guard kind.source != .audio else { return SlotDescription(codec: .opus, mid: mid, ssrc: ssrc, payloadType: 111, audioLevelExtensionID: 1) }
        let level = H264ProfileLevelID.Level(levelIDC: 52, constraintSet3: false, profileIDC: 0x64)
        var d = SlotDescription(codec: .vp8, mid: mid, ssrc: ssrc, payloadType: 96, rtxPayloadType: 97,
                               rtxSSRC: newSSRC(), otherFormats: [
                                   PayloadFormat(codec: .vp9, payloadType: 98, rtxPayloadType: 99),
                                   PayloadFormat(codec: .h264, payloadType: 102, rtxPayloadType: 103,
                                                 h264: H264ProfileLevelID(profile: .high444, level: level)),
                                   PayloadFormat(codec: .h264, payloadType: 104, rtxPayloadType: 105,
                                                 h264: H264ProfileLevelID(profile: .baseline, level: level)),
                               ])
        d.source = kind.source == .screen ? .screen : .camera
        return d
    }

    /// A video source's layers, lowest first (one for a source that is not simulcast).
    static func layers(of p: Participant, _ source: VideoSource) -> [PublishedTrack] {
        (p.publisher?.tracks(source) ?? []).sorted { ($0.description.simulcast?.index ?? 0) < ($1.description.simulcast?.index ?? 0) }
    }

    /// Follows the plan: binds a slot to each wanted participant that has none - a video one per layer of a
    /// simulcast source, so the peer's subscribers each take the layer that fits them, as this node's do -
    /// empties the slots of those no longer wanted, and shows each wanted participant's track in its slot.
    func follow(_ wanted: RelayPlan.Wanted, participants: Roster, configuration: RoomConfiguration, now: MonoTime, into out: DatagramBatch) {
        var changed = false
        for (source, who) in [(RelayedKind.Source.audio, wanted.audio), (.camera, wanted.video), (.screen, wanted.screen)] {
            for p in who {
                let layers = source == .audio ? 1 : participants[p].map { min(max(Self.layers(of: $0, source == .screen ? .screen : .camera).count, 1), Self.maxLayers) } ?? 1
                for layer in 0..<layers {
                    let kind = RelayedKind(source: source, layer: layer)
                    let mid = Self.mid(participant: p, kind: kind)
                    if bound[mid] == nil {
                        descriptions.append(description(participant: p, kind: kind))
                        changed = true
                    }
                    bound[mid] = (p, kind, now)
                }
            }
            // Past the cap, the slots empty longest go (never one wanted now: at most K of them).
            let cap = source == .audio ? maxSlots : maxSlots * Self.maxLayers
            let ofKind = bound.filter { $0.value.kind.source == source }
            if ofKind.count > cap {
                for (mid, _) in ofKind.filter({ $0.value.lastWanted < now }).sorted(by: { $0.value.lastWanted < $1.value.lastWanted })
                    .prefix(ofKind.count - cap) {
                    bound[mid] = nil
                    descriptions.removeAll { $0.mid == mid }
                    changed = true
                }
            }
        }
        if changed { _ = subscriber.bind(descriptions, startBitrate: Double(configuration.startBitrateKbps) * 1000) }
        for slot in subscriber.slots {
            guard let b = bound[slot.description.mid] else { continue }
            let isWanted = wanted[b.kind.source].contains(b.participant)
            // Each slot shows its own layer (audio: the audio), and nothing when the source has fewer now.
            let track: PublishedTrack? = participants[b.participant].flatMap { q in
                b.kind.source == .audio ? q.publisher?.audio : Self.layers(of: q, slot.description.source).dropFirst(b.kind.layer).first
            }
            if isWanted, let q = participants[b.participant], let track {
                // Placed anew when it is someone else, or its track changed (re-published, another layer).
                let shown = slot.pending ?? slot.current
                if slot.assignee !== q || (track !== shown && slot.undecodable !== track) {
                    subscriber.place(q, in: slot, layer: track, configuration: configuration, now: now, into: out)
                }
            } else if slot.assigned != nil {
                slot.clear()
            }
        }
    }

    /// What the relay carries now (the participants its non-empty slots show), as its peer binds it: each
    /// stream's SSRC and the format the slot sends its source in.
    var carried: [RelayedStream] {
        subscriber.slots.compactMap { slot in
            guard let who = slot.assignee, let track = slot.pending ?? slot.current,
                  let f = slot.kind == .audio ? slot.description.formats.first : slot.description.format(for: track.description)
            else { return nil }
            // A layer of a simulcast source says which: the peer binds the layers as one simulcast source.
            let bound = self.bound[slot.description.mid]?.kind.layer ?? 0
            let layer = slot.kind == .video && (bound > 0 || Self.layers(of: who, slot.description.source).count > 1) ? bound : nil
            return RelayedStream(participant: who.id, name: who.name, role: who.role, kind: slot.kind, codec: f.codec,
                                 ssrc: slot.description.ssrc, payloadType: f.payloadType, rtxSSRC: slot.description.rtxSSRC,
                                 rtxPayloadType: f.rtxPayloadType, h264: track.description.h264, source: slot.kind == .video ? slot.description.source : .camera,
                                 layer: layer)
        }
    }

    /// What the peer relays here, by remote participant: the tracks last announced for each (a stream the
    /// peer stops carrying keeps its binding, so that it goes on where it left off when it comes back).
    var remoteTracks: [String: [RelayedKind: TrackDescription]] = [:]

    func release() {
        subscriber.unbind()
        connection.release()
    }
}

/// One participant of a room at the node that tells another node of the room who is there (`Room.relays.localMembers`).
public struct RelayedMember: Sendable, Equatable {
    public var participant: String
    public var name: String
    public var role: Role
    public init(participant: String, name: String, role: Role) {
        self.participant = participant
        self.name = name
        self.role = role
    }
}

/// One stream a relay carries, as the sending node describes it to the receiving one (over the control
/// channel): whose it is, and the SSRC, codec and payload types it goes under.
public struct RelayedStream: Sendable, Equatable {
    public var participant: String
    public var name: String
    /// Its role on its own node: a moderator publishes under the floor and a room mute everywhere.
    public var role: Role
    public var kind: MediaKind
    public var codec: Codec
    public var ssrc: UInt32
    public var payloadType: UInt8
    public var rtxSSRC: UInt32?
    public var rtxPayloadType: UInt8?
    public var h264: H264ProfileLevelID?
    /// A video's source at its participant: its camera, or its screen share.
    public var source: VideoSource
    /// Which layer of a simulcast source (0 the lowest); nil for a source that is not simulcast.
    public var layer: Int?

    public init(participant: String, name: String, role: Role = .participant, kind: MediaKind, codec: Codec, ssrc: UInt32,
                payloadType: UInt8, rtxSSRC: UInt32? = nil, rtxPayloadType: UInt8? = nil, h264: H264ProfileLevelID? = nil,
                source: VideoSource = .camera, layer: Int? = nil) {
        self.source = kind == .video ? source : .camera
        self.layer = kind == .video ? layer : nil
        self.participant = participant
        self.name = name
        self.role = role
        self.kind = kind
        self.codec = codec
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.rtxSSRC = rtxSSRC
        self.rtxPayloadType = rtxPayloadType
        self.h264 = h264
    }

    /// The track the receiving node binds it to: Opus with the level extension (id 1, what the relay slot
    /// writes), or the video with its RTX and NACK.
    var track: TrackDescription {
        if kind == .audio { return TrackDescription(codec: .opus, ssrc: ssrc, payloadType: payloadType, audioLevelExtensionID: 1) }
        var t = TrackDescription(codec: codec, ssrc: ssrc, rtxSSRC: rtxPayloadType == nil ? nil : rtxSSRC, payloadType: payloadType,
                                 rtxPayloadType: rtxPayloadType, nack: true)
        t.h264 = h264
        t.source = source
        t.simulcast = layer.map { SimulcastLayer(index: $0) }
        return t
    }

    var relayedKind: RelayedKind {
        RelayedKind(source: kind == .audio ? .audio : source == .screen ? .screen : .camera, layer: layer ?? 0)
    }
}

/// What one relay slot carries of its participant: its audio, or one layer of its camera or screen share.
struct RelayedKind: Hashable, Comparable {
    enum Source: Int, Comparable {
        case audio, camera, screen
        static func < (a: Source, b: Source) -> Bool { a.rawValue < b.rawValue }
    }

    var source: Source
    var layer = 0

    static let audio = RelayedKind(source: .audio)
    static let camera = RelayedKind(source: .camera)
    static let screen = RelayedKind(source: .screen)

    static func < (a: RelayedKind, b: RelayedKind) -> Bool { (a.source, a.layer) < (b.source, b.layer) }

    var prefix: String {
        switch source {
        case .audio: "a"
        case .camera: "v"
        case .screen: "s"
        }
    }
}
