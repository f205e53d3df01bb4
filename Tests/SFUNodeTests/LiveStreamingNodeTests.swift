import Foundation
import SFU
import Testing
import WebRTCEdge

@testable import SFUNode

/// A node's live streams and recordings end to end (issue 40), with a stand-in for FFmpeg (`streaming.ffmpeg`)
/// that writes down its arguments, reports progress once a gate file appears, and ends on SIGTERM: where a
/// moderator's URL may point, what everyone is told while the encoder starts, and the closing events of a
/// room's end and of the node's stop.
@Suite(.serialized, .timeLimit(.minutes(1))) struct LiveStreamingNodeTests {
    let dir = NSTemporaryDirectory() + "sfu-live-\(UUID().uuidString)"

    /// The stand-in: arguments to `<dir>/args`, then a progress report every 0.1 s once `<dir>/open` exists.
    func standIn() throws -> String {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return try LiveEncoderProcessTests.python("""
            import os, signal, sys, time
            open('\(dir)/args', 'w').write('\\n'.join(sys.argv[1:]))
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
            while True:
                if os.path.exists('\(dir)/open'):
                    print('frame=1\\nprogress=continue', flush=True)
                time.sleep(0.1)
            """)
    }

    func node(hosts: [String] = ["127.0.0.1:1935"]) throws -> Node {
        var c = NodeConfiguration()
        c.workers = 1
        c.mediaListen = TransportAddress("127.0.0.1:0")!
        c.recordingDirectory = dir + "/recordings"
        c.streamingFFmpeg = try standIn()
        c.streamingRTMPHosts = hosts
        let n = try Node(configuration: c)
        n.start()
        return n
    }

    func room(_ node: Node, _ name: String) async throws {
        try await node.createRoom(name, configuration: RoomConfiguration())
        try await node.withRoom(name) { r, _, now in try r.admit("mod", role: .moderator, now: now) }
    }

    /// `type:state:reason` of each event of `room` in `messages`, until the room's end.
    static func states(_ subscription: EventHub.Subscription, room: String, until end: String = "room_destroyed") async -> [String] {
        var out: [String] = []
        for await m in subscription.messages {
            let o = (try? JSONSerialization.jsonObject(with: Data(m.text.utf8))) as? [String: Any] ?? [:]
            guard o["room"] as? String == room, let type = o["type"] as? String else { continue }
            guard ["recording", "streaming", "room_destroyed"].contains(type) else { continue }
            out.append("\(type):\(o["state"] as? String ?? ""):\(o["reason"] as? String ?? "")")
            if type == end { break }
        }
        return out
    }

    @Test func aModeratorsURLCannotPointTheNodeAtItsOwnNetworksOrOtherPorts() async throws {
        let node = try node(hosts: [])
        defer { node.stop(); try? FileManager.default.removeItem(atPath: dir) }
        try await room(node, "r")
        for url in ["rtmp://127.0.0.1/live/key", "rtmp://127.0.0.1:1935/live/key", "rtmp://localhost/live/key", "rtmp://127.1/live/key",
                    "rtmp://2130706433/live/key", "rtmp://[::1]/live/key", "rtmp://[::ffff:127.0.0.1]/live/key", "rtmp://10.1.2.3/live/key",
                    "rtmp://192.168.1.1/live/key", "rtmp://172.16.0.1/live/key", "rtmp://169.254.169.254/latest/meta-data",
                    "rtmp://[fe80::1]/live/key", "rtmp://[fd00::1]/live/key", "rtmp://0.0.0.0/live/key", "rtmps://100.64.0.1/live/key",
                    "rtmp://8.8.8.8:22/live/key", "rtmp://8.8.8.8:6379/live/key"] {
            do {
                _ = try await node.liveStreams.start(room: "r", by: "mod", .init(rtmpURL: url))
                Issue.record("\(url) was accepted")
            } catch let e as APIError {
                #expect(e.status == .badRequest && e.code == 5125, "\(url): \(e)")
            }
            #expect(try await node.withRoom("r") { r, _, _ in r.streaming } == nil, "\(url): nothing left starting")
        }
        #expect(!FileManager.default.fileExists(atPath: dir + "/args"), "no encoder was launched")
    }

    /// Issue 40: `RTMP://` was accepted, given to FFmpeg as written ("Protocol not found") while everyone was
    /// told `on`. FFmpeg gets it in lower case, and the stream is `starting` until the encoder's output opens.
    @Test func anUpperCaseSchemeReachesFFmpegInLowerCaseAndTheStreamIsStartingUntilItsOutputOpens() async throws {
        let node = try node()
        defer { node.stop(); try? FileManager.default.removeItem(atPath: dir) }
        try await room(node, "r")
        let events = node.events.subscribe(room: "r", since: 0)
        let id = try await node.liveStreams.start(room: "r", by: "mod", .init(rtmpURL: "RTMP://127.0.0.1:1935/live/key"))
        while !FileManager.default.fileExists(atPath: dir + "/args") { try await Task.sleep(for: .milliseconds(20)) }
        let args = try String(contentsOfFile: dir + "/args", encoding: .utf8).split(separator: "\n")
        #expect(args.last == "rtmp://127.0.0.1:1935/live/key")
        #expect(try await node.withRoom("r") { r, _, _ in r.streaming?.live } == false)
        #expect(FileManager.default.createFile(atPath: dir + "/open", contents: nil))
        while try await node.withRoom("r", { r, _, _ in r.streaming?.live }) != true { try await Task.sleep(for: .milliseconds(20)) }
        #expect(try await node.liveStreams.stop(room: "r", by: "mod") == id)
        try await node.destroyRoom("r")
        #expect(await Self.states(events, room: "r") == ["streaming:starting:", "streaming:on:", "streaming:off:", "room_destroyed::"])
    }

    /// Issue 40: a room destroyed while recording sent no `recording` off (docs/recording.md promises one, reason
    /// "room destroyed"). Both the recording and the stream are told off, before the room's end.
    @Test func aRoomDestroyedWhileRecordingAndStreamingTellsBothOffBeforeItsEnd() async throws {
        let node = try node()
        defer { node.stop(); try? FileManager.default.removeItem(atPath: dir) }
        try await room(node, "r")
        let events = node.events.subscribe(room: "r", since: 0)
        _ = try await node.recordings.start(room: "r", by: "mod")
        _ = try await node.liveStreams.start(room: "r", by: "mod", .init(rtmpURL: "rtmp://127.0.0.1:1935/live/key"))
        try await node.destroyRoom("r")
        let got = await Self.states(events, room: "r")
        #expect(got.first == "recording:on:" && got.last == "room_destroyed::", "\(got)")
        #expect(got.contains("recording:off:room destroyed") && got.contains("streaming:off:room destroyed"), "\(got)")
    }

    /// Issue 40: at SIGTERM neither `recording` nor `streaming` off was sent (the manifests were right). Both
    /// reach the event stream before it ends, and the encoder was asked to stop (it ended on SIGTERM).
    @Test func stoppingTheNodeTellsEveryRecordingAndStreamOffBeforeTheEventStreamEnds() async throws {
        let node = try node()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try await room(node, "r")
        let events = node.events.subscribe(room: "r", since: 0)
        _ = try await node.recordings.start(room: "r", by: "mod")
        _ = try await node.liveStreams.start(room: "r", by: "mod", .init(rtmpURL: "rtmp://127.0.0.1:1935/live/key"))
        node.stop()
        let got = await Self.states(events, room: "r")
        #expect(got.contains("recording:off:node stopped") && got.contains("streaming:off:node stopped"), "\(got)")
        #expect(got.last == "room_destroyed::", "\(got)")
    }
}
