import NodeIO
import SFU
import SFUMedia
import SFUSimulation
import WebRTCEdge

/// A worker core on virtual time with one room, a publisher (Opus and VP8) and `subscribers` subscribers of
/// one audio and one video slot each, every transport connected for real (ICE checks, DTLS, SRTP): the whole
/// per-datagram path of a worker - the edge's lookup by source address, the room, SRTP both ways - for
/// benchmarks that want it without sockets. The video is flowing (its keyframe switched the slots) when
/// `init` returns.
public final class ConnectedWorker {
    let net = FuzzNetwork(batchCapacity: 4096)
    let publisher: FuzzClient
    var clients: [FuzzClient] = []
    public var now: MonoTime { net.now }
    private var audio = RTPStreamWriter(ssrc: 0x1111_0001, payloadType: 111, audioLevelExtensionID: 1)
    private var video = RTPStreamWriter(ssrc: 0x1111_0002, payloadType: 96)
    private var frames = 0
    /// 20 ms of a -20 dBFS tone, Opus-encoded: loud enough to rank the publisher as a talker.
    private let speech = OpusFrameEncoder().encode(ArraySlice(TestSignal.sine(dbfs: -20, seconds: 0.02)))
    private var buffer = [UInt8](repeating: 0, count: 2048)
    /// 100 packets a second: a 1 Mbit/s video.
    public static let videoInterval = MonoTime.Interval.milliseconds(10)

    public init(subscribers: Int) {
        let room = try! Room(name: "r", now: net.now)
        net.core.addRoom(room)
        func client(_ i: Int) -> FuzzClient {
            FuzzClient(address: TransportAddress(ip: .v4(0x0A01_0001 + UInt32(i) << 8), port: 5000), ice: .random(), identity: i % 4)
        }
        publisher = client(0)
        try! room.admit("pub", now: net.now)
        var offer = FuzzOffer(ice: publisher.ice, fingerprint: publisher.fingerprint)
        var a = FuzzOffer.Media(video: false, mid: "0", direction: "sendonly")
        a.ssrc = 0x1111_0001
        a.levelExtension = 1
        var v = FuzzOffer.Media(video: true, mid: "1", direction: "sendonly")
        v.ssrc = 0x1111_0002
        offer.media = [a, v]
        _ = try! net.offer(publisher, room: "r", participant: "pub", publish: true, text: offer.text)
        net.connect(publisher)
        precondition(publisher.connected, "the publisher did not connect")
        clients = [publisher]
        for i in 1...subscribers {
            let c = client(i)
            try! room.admit("sub\(i)", now: net.now)
            var o = FuzzOffer(ice: c.ice, fingerprint: c.fingerprint)
            var sa = FuzzOffer.Media(video: false, mid: "0", direction: "recvonly")
            sa.levelExtension = 1
            o.media = [sa, FuzzOffer.Media(video: true, mid: "1", direction: "recvonly")]
            _ = try! net.offer(c, room: "r", participant: "sub\(i)", publish: false, text: o.text)
            net.connect(c)
            precondition(c.connected, "subscriber \(i) did not connect")
            clients.append(c)
        }
        // A second of both streams, the keyframe first: the detector ranks the talker and the video slots switch.
        for i in 0..<100 {
            for _ in 0..<2 { _ = receive(audioPacket()) }
            _ = receive(videoPacket(keyframe: i == 0))
            if i % 10 == 9 { runTimers() }
        }
        runTimers()
    }

    /// The publisher's next Opus packet (speech level), protected.
    public func audioPacket() -> [UInt8] {
        let p = audio.packet(speech, level: 20)
        audio.timestamp &+= 960
        return publisher.protect(p)!
    }

    /// The publisher's next VP8 frame as one 1,200-byte packet, protected.
    public func videoPacket(keyframe: Bool = false) -> [UInt8] {
        let i = frames
        frames += 1
        var payload = [UInt8](repeating: UInt8(i & 0xFF), count: 1180)
        payload.replaceSubrange(0..<6, with: [0x90, 0x80, 0x80 | UInt8((i >> 8) & 0x7F), UInt8(i & 0xFF), 0x00, keyframe ? 0x10 : 0x11])
        let p = video.packet(payload, marker: true)
        video.timestamp &+= 3000
        return publisher.protect(p)!
    }

    /// One datagram from the publisher into the core, `interval` after the previous one; returns how many
    /// datagrams the core produced (then sent and dropped, as the shell would after its syscall).
    public func receive(_ datagram: [UInt8], interval: MonoTime.Interval = videoInterval) -> Int {
        net.now = net.now + interval
        buffer.withUnsafeMutableBytes { buf in
            buf.copyMemory(from: datagram.withUnsafeBytes { $0 })
            net.core.receive(buf, length: datagram.count, from: publisher.address, now: now)
        }
        let n = net.core.batch.count
        net.core.batch.sent(at: now)
        net.core.batch.removeAll()
        return n
    }

    /// Runs the core's timers up to `now` (receiver reports, feedback, detector decisions) and renews every
    /// client's ICE consent (RFC 7675: a check within 30 s), unmeasured. Call at least every 10 s of stream.
    public func runTimers() {
        if net.core.nextDeadline <= now { net.core.tick(now: now) }
        net.deliver()
        for c in clients { net.check(c, nominate: false) }
    }
}
