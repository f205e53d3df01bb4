import Foundation
import SFU
import SFUNode
import Testing
import WebRTCEdge

@Suite struct NodeConfigurationTests {
    @Test func defaultsWorkOnOneMachineWithoutAFile() throws {
        let c = try NodeConfiguration.load(file: nil, environment: [:], flags: [])
        #expect(c.apiListen.description == "127.0.0.1:8080")
        #expect(c.mediaListen.description == "127.0.0.1:10000")
        #expect(c.workers == 0 && c.apiKey == nil && c.roomMaxActiveTalkers == 6)
    }

    @Test func fileThenEnvironmentThenFlagsEachOverride() throws {
        let file = """
            # a hand-edited file
            workers = 2
            [media]
            listen = "10.1.2.3:20000"   # comment after a value
            announced = ["203.0.113.7:20000", "[2001:db8::7]:20000"]
            [rooms]
            max_active_talkers = 4
            level_source = "verify"
            """
        let c = try NodeConfiguration.load(file: ("sfu.toml", file),
                                           environment: ["SFU_ROOMS_MAX_ACTIVE_TALKERS": "9", "SFU_WORKERS": "3", "HOME": "/root"],
                                           flags: ["workers=1"])
        #expect(c.mediaListen.description == "10.1.2.3:20000")
        #expect(c.mediaAnnounced == ["203.0.113.7:20000", "[2001:db8::7]:20000"])
        #expect(c.roomLevelSource == .verify)
        #expect(c.roomMaxActiveTalkers == 9, "environment beats the file")
        #expect(c.workers == 1, "flags beat the environment")
    }

    @Test(arguments: [
        ("workers = \"many\"", "sfu.toml line 1, key 'workers': expected a whole number 0-256"),
        ("[rooms]\nmax_active_talkers = 13", "sfu.toml line 2, key 'rooms.max_active_talkers': expected a whole number 1-12"),
        ("[media]\nlisten = \"nowhere\"", "key 'media.listen': expected an address"),
        ("[media]\nlisten = 10000", "key 'media.listen': expected an address"),
        ("[media]\nlisen = \"1.2.3.4:5\"", "key 'media.lisen': unknown key"),
        ("[rooms]\nlevel_source = \"guess\"", "expected extension, decode or verify"),
        ("workers = 2 3", "sfu.toml line 1, key '': not TOML"),
        ("[api", "not TOML"),
        ("just words", "not TOML"),
        ("[log]\nlevel = \"loud\"", "key 'log.level'"),
        ("[rooms]\nstream_bandwidth = 1.5", "sfu.toml line 2, key 'rooms.stream_bandwidth': a floating-point number is not a value any key takes"),
        ("[limits.more]\nrooms = 1", "sections do not nest"),
    ])
    func badValuesNameTheKeyAndLine(_ file: String, _ message: String) {
        do {
            _ = try NodeConfiguration.load(file: ("sfu.toml", file), environment: [:], flags: [])
            Issue.record("accepted \(file)")
        } catch {
            #expect(error.description.contains(message), "\(error)")
        }
    }

    @Test func badEnvironmentAndFlagValuesNameTheirOrigin() {
        #expect(throws: ConfigError(key: "workers", origin: "environment SFU_WORKERS", message: "expected a whole number 0-256, got \"lots\"")) {
            try NodeConfiguration.load(file: nil, environment: ["SFU_WORKERS": "lots"], flags: [])
        }
        #expect(throws: ConfigError.self) { try NodeConfiguration.load(file: nil, environment: [:], flags: ["workers"]) }
    }

    @Test func theAPIRefusesToListenBeyondLoopbackWithoutAKey() throws {
        #expect(throws: ConfigError.self) {
            try NodeConfiguration.load(file: nil, environment: ["SFU_API_LISTEN": "0.0.0.0:8080"], flags: [])
        }
        let c = try NodeConfiguration.load(file: nil, environment: ["SFU_API_LISTEN": "0.0.0.0:8080", "SFU_API_KEY": "s3cret"], flags: [])
        #expect(c.apiKey == "s3cret")
    }

    @Test func certificateAndKeyComeTogether() {
        #expect(throws: ConfigError.self) { try NodeConfiguration.load(file: nil, environment: [:], flags: ["dtls.certificate=/etc/sfu/cert.pem"]) }
    }

    @Test func printedConfigurationReadsBackTheSame() throws {
        var c = NodeConfiguration()
        c.workers = 2
        c.mediaAnnounced = ["203.0.113.7:10000"]
        c.roomLevelSource = .decode
        c.apiKey = "k\"ey"
        let again = try NodeConfiguration.load(file: ("printed", c.fileText), environment: [:], flags: [])
        #expect(again == c)
    }

    @Test func aWorkerPortPast65535IsAConfigurationErrorNotATrap() {
        #expect(throws: ConfigError.self) {
            try NodeConfiguration.load(file: nil, environment: [:], flags: ["media.listen=127.0.0.1:65535", "workers=2"])
        }
        #expect(throws: ConfigError.self) {
            try NodeConfiguration.load(file: nil, environment: [:], flags: ["media.announced=[\"203.0.113.7:65535\"]", "workers=3"])
        }
        var c = NodeConfiguration()
        c.mediaListen = TransportAddress("127.0.0.1:65534")!
        #expect(throws: ConfigError.self) { try c.checkPorts(workers: 4) }
        #expect(throws: Never.self) { try c.checkPorts(workers: 2) }
    }

    @Test func limitsAreConfigurableAndRefuseNonsense() throws {
        let c = try NodeConfiguration.load(file: nil, environment: ["SFU_LIMITS_ROOMS": "7"],
                                           flags: ["limits.participants_per_room=50", "limits.handshake_seconds=5", "ice.consent_seconds=6"])
        #expect(c.maxRooms == 7 && c.workerLimits.room.participants == 50)
        #expect(c.workerLimits.handshakeTimeout == .seconds(5) && c.consentSeconds == 6)
        #expect(throws: ConfigError.self) { try NodeConfiguration.load(file: nil, environment: [:], flags: ["limits.rooms=0"]) }
    }

    @Test func theTalkerDetectorIsConfigurableWithinItsRanges() throws {
        let c = try NodeConfiguration.load(file: ("sfu.toml", "[talkers]\nspeaking_threshold = 40\nhold_min_samples = 0"), environment: [:],
                                           flags: ["talkers.decision_interval_ms=500"])
        #expect(c.roomDetector.speakingThreshold == 40 && c.roomDetector.holdMinSamples == 0)
        #expect(c.roomDetector.decisionInterval == .milliseconds(500))
        #expect(c.roomDetector.speakingMinSamples == 4, "untouched keys keep the chosen defaults")
        for bad in ["talkers.speaking_threshold=128", "talkers.speaking_min_samples=0", "talkers.speaking_interval_ms=5"] {
            #expect(throws: ConfigError.self) { try NodeConfiguration.load(file: nil, environment: [:], flags: [bad]) }
        }
    }
}

/// The one key table drives parsing, the printed file and the docs: none of them can drift from the others.
@Suite struct ConfigurationKeyTableTests {
    @Test func theFileIsRealTOMLLiteralStringsMultiLineListsAndDigitSeparators() throws {
        let file = """
            [media]
            announced = [
              '203.0.113.7:20000',   # literal string
              "[2001:db8::7]:20000",
            ]
            [limits]
            rooms = 1_000
            """
        let c = try NodeConfiguration.load(file: ("sfu.toml", file), environment: [:], flags: ["media.listen=0.0.0.0:10000"])
        #expect(c.mediaAnnounced == ["203.0.113.7:20000", "[2001:db8::7]:20000"])
        #expect(c.maxRooms == 1000)
        #expect(c.mediaListen.description == "0.0.0.0:10000", "a bare flag value needs no quotes")
    }

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func theDocsListEveryKeyWithItsDefaultAsTheTableSays() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        #expect(text == NodeConfiguration.markdownReference, "regenerate with: sfu config --markdown > docs/configuration.md")
    }

    @Test func everyKeyIsInThePrintedFileOnceAndReadsBackAsItsDefault() throws {
        let printed = NodeConfiguration().fileText
        let parsed = try ConfigFile.parse(printed, name: "printed")
        #expect(parsed.map(\.key) == NodeConfiguration.table.map(\.name))
        let defaults = NodeConfiguration()
        for (_, key, value) in parsed {
            let k = try #require(NodeConfiguration.table.first { $0.name == key })
            #expect(value == k.current(defaults), "\(key)")
        }
    }

    @Test func everyKeyRefusesAValueOfTheWrongKindNamingWhatItExpects() {
        for k in NodeConfiguration.table {
            var c = NodeConfiguration()
            let wrong: ConfigValue = if case .int = k.current(c) { .string("x") } else { .int(-1) }
            #expect(throws: ConfigError(key: k.name, origin: "test", message: "expected \(k.expected), got \(wrong)")) {
                try c.set(k.name, wrong, origin: "test")
            }
        }
    }

    @Test func keysAreUniqueAndEachSectionIsContiguous() {
        let names = NodeConfiguration.table.map(\.name)
        #expect(Set(names).count == names.count)
        var seen: [Substring] = []
        for k in NodeConfiguration.table where seen.last != k.section {
            #expect(!seen.contains(k.section), "section \(k.section) is split")
            seen.append(k.section)
        }
    }
}
