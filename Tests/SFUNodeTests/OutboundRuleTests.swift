import Foundation
import Testing
import WebRTCEdge

@testable import SFUNode

/// Where a caller-chosen connection may go (`OutboundRule`, `AddressScope`, `CheckedResolver`), how an RTMP URL
/// is read and hidden (`RTMPTarget`, `SecretRedactor`), and how a process's connections are read from /proc
/// (`EncoderConnections`).
@Suite struct OutboundRuleTests {
    static func ip(_ s: String) -> TransportAddress.IP { TransportAddress(s.contains(":") ? "[\(s)]:0" : "\(s):0")!.ip }

    @Test func everyAddressOfThisHostOrItsNetworksIsNotGlobal() {
        let cases: [(String, AddressScope)] = [
            ("8.8.8.8", .global), ("1.1.1.1", .global), ("2606:4700:4700::1111", .global), ("2001:4860:4860::8888", .global),
            ("127.0.0.1", .loopback), ("127.255.0.9", .loopback), ("::1", .loopback), ("::ffff:7f00:1", .loopback),
            ("10.0.0.1", .privateNetwork), ("172.16.0.1", .privateNetwork), ("172.31.255.255", .privateNetwork),
            ("192.168.1.1", .privateNetwork), ("100.64.0.1", .privateNetwork), ("::ffff:a01:203", .privateNetwork),
            ("64:ff9b::a01:203", .privateNetwork), ("2002:a00:1::", .privateNetwork),
            ("169.254.169.254", .linkLocal), ("fe80::1", .linkLocal), ("fd00::1", .uniqueLocal), ("fc00::1", .uniqueLocal),
            ("0.0.0.0", .reserved), ("::", .reserved), ("224.0.0.1", .reserved), ("255.255.255.255", .reserved),
            ("192.0.2.1", .reserved), ("198.18.0.1", .reserved), ("2001:db8::1", .reserved), ("ff02::1", .reserved),
            ("172.32.0.1", .global), ("100.128.0.1", .global), ("192.169.0.1", .global),
        ]
        for (address, scope) in cases { #expect(AddressScope(Self.ip(address)) == scope, "\(address)") }
    }

    @Test func listEntriesAreHostsWithOrWithoutAPort() {
        let parsed = ["ingest.example.com", "Ingest.Example.com:1936", "127.0.0.1:1935", "[::1]:1935", "[0:0::1]", "::1"].map { OutboundRule.Entry($0)?.description }
        #expect(parsed == ["ingest.example.com", "ingest.example.com:1936", "127.0.0.1:1935", "[::1]:1935", "[::1]", "[::1]"])
        for bad in ["", "a/b", "a b", "host:", "host:0", "host:70000", "[::1", "[::1]x", "user@host", ":1935"] {
            #expect(OutboundRule.Entry(bad) == nil, "\(bad)")
        }
    }

    @Test func theDefaultRuleAllowsPublicAddressesOnTheDefaultPortsOnly() throws {
        let rule = NodeConfiguration().streamingRule
        #expect(throws: Never.self) { try rule.check(host: "ingest.example.com", address: TransportAddress("203.0.114.7:1935")!) }
        #expect(throws: Never.self) { try rule.check(host: "ingest.example.com", address: TransportAddress("8.8.8.8:443")!) }
        for (address, why) in [("8.8.8.8:22", "port 22 is not allowed"), ("127.0.0.1:1935", "a loopback address"),
                               ("[fd12::1]:1935", "a unique-local address"), ("169.254.169.254:443", "a link-local address")] {
            #expect(throws: OutboundRule.Refusal.self) { try rule.check(host: "x.example", address: TransportAddress(address)!) }
            do { try rule.check(host: "x.example", address: TransportAddress(address)!) } catch { #expect(error.description.contains(why), "\(error)") }
        }
    }

    @Test func aListedHostMayBeAnywhereButOnlyOnItsPorts() throws {
        var c = NodeConfiguration()
        c.streamingRTMPHosts = ["127.0.0.1:1935", "ingest.internal"]
        let rule = c.streamingRule
        #expect(throws: Never.self) { try rule.check(host: "127.0.0.1", address: TransportAddress("127.0.0.1:1935")!) }
        #expect(throws: Never.self) { try rule.check(host: "INGEST.internal", address: TransportAddress("10.0.0.5:443")!) }
        #expect(throws: OutboundRule.Refusal.self) { try rule.check(host: "127.0.0.1", port: 1936) }
        #expect(throws: OutboundRule.Refusal.self) { try rule.check(host: "ingest.internal", port: 8080) }
        #expect(throws: OutboundRule.Refusal.self) { try rule.check(host: "8.8.8.8", port: 1935) }
        #expect(throws: OutboundRule.Refusal.self) { try rule.check(host: "127.1", port: 1935) }
    }

    @Test func theResolverJudgesEverySpellingByTheAddressItMeans() async throws {
        let rule = NodeConfiguration().streamingRule
        for host in ["127.0.0.1", "127.1", "2130706433", "0x7f.0.0.1", "localhost", "::1", "[::ffff:127.0.0.1]"] {
            await #expect(throws: OutboundRule.Refusal.self, "\(host)") { _ = try await CheckedResolver.resolve(host, port: 1935, rule: rule) }
        }
        let public4 = try await CheckedResolver.resolve("8.8.8.8", port: 1935, rule: rule)
        #expect(public4.map(\.description) == ["8.8.8.8:1935"])
    }

    @Test func anRTMPURLIsReadWithItsSchemeInLowerCaseAndShownWithoutItsSecrets() throws {
        let t = try #require(RTMPTarget("RTMPS://user:pass@Ingest.Example.com/live/KEY-0123456789?token=abcdefghijkl"))
        #expect(t.url == "rtmps://user:pass@Ingest.Example.com/live/KEY-0123456789?token=abcdefghijkl")
        #expect(t.scheme == "rtmps" && t.host == "Ingest.Example.com" && t.port == 443 && t.shown == "rtmps://Ingest.Example.com/...")
        #expect(try #require(RTMPTarget("rtmp://[::1]:1936/x")).port == 1936 && RTMPTarget("rtmp://[::1]:1936/x")?.host == "::1")
        for bad in ["http://h/x", "rtmp:///x", "rtmp:// h/x", "rtmp://h:0/x", "rtmp://h/\u{7F}", "rtmp://h/" + String(repeating: "k", count: 2048)] {
            #expect(RTMPTarget(bad) == nil, "\(bad)")
        }
        let text = "[rtmp @ 0x1] Server error: KEY-0123456789 refused | rtmps://user:pass@Ingest.Example.com/live/KEY-0123456789?token=abcdefghijkl: I/O error"
        #expect(t.redact(text) == "[rtmp @ 0x1] Server error: *** refused | rtmps://Ingest.Example.com/...: I/O error")
        // A URL cut by a program that cut the line: what is left of it goes too.
        #expect(t.redact("Publishing rtmps://user:pass@Ingest.Example.com/live/KEY-01") == "Publishing rtmps://Ingest.Example.com/...")
        #expect(t.redact("…56789?token=abcdefghijkl: Connection refused") == "…***: Connection refused")
    }

    @Test func theRedactorHidesEveryPieceOfASecretAtLeastEightLong() {
        let r = SecretRedactor(secrets: ["s3cr3t-k3y-0123456789"])
        #expect(r.redact("a s3cr3t-k3y-0123456789 b") == "a *** b")
        #expect(r.redact("cut: 3y-0123456789") == "cut: ***")
        #expect(r.redact("short: s3cr3t- stays") == "short: s3cr3t- stays", "seven characters are not the key")
        #expect(r.redact("twice s3cr3t-k3 and -0123456789!") == "twice *** and ***!")
        #expect(SecretRedactor(secrets: ["short"]).redact("short") == "short", "a secret under eight characters cannot be told from text")
    }

    @Test func procNetTCPLinesGiveTheRemoteAddressOfEachSocket() throws {
        let v4 = "   1: 0100007F:A1B2 0100007F:078F 01 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 20 4 30 10 -1"
        let e4 = try #require(EncoderConnections.entry(Substring(v4)))
        #expect(e4.inode == 4242 && e4.remote?.description == "127.0.0.1:1935")
        let v6 = "   0: 00000000000000000000000001000000:C350 0000000000000000FFFF00000100007F:01BB 01 00000000:00000000 00:00000000 00000000 0 0 77 1"
        let e6 = try #require(EncoderConnections.entry(Substring(v6)))
        #expect(e6.inode == 77 && e6.remote?.description == "[::ffff:7f00:1]:443")
        #expect(AddressScope(try #require(e6.remote).ip) == .loopback)
        let listening = "   2: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 99 1"
        #expect(EncoderConnections.entry(Substring(listening))?.remote == nil)
    }
}
