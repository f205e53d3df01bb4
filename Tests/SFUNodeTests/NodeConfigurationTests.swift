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

    /// Issue 23, the class of the events bug: values at and past the ends of the integer types, huge and
    /// non-finite doubles, from a flag, the environment and the file, for number keys (plain, and scaled to
    /// seconds, milliseconds, percent and a UInt8 threshold) and address keys. Each is a configuration error
    /// naming the key; none traps in a conversion.
    @Test func extremeValuesAreConfigurationErrorsNotTraps() {
        let values = ["9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "-1",
                      "18446744073709551615", "1e308", "-1e308", "1e309", "nan", "inf", "-inf", "NaN", "1.5", "1.0",
                      "0x7fffffffffffffff", "0xffffffffffffffff", "1" + String(repeating: "0", count: 400), "\"5\"", "[5]", "true", ""]
        let keys = ["workers", "limits.handshake_seconds", "limits.resend_percent_of_estimate", "talkers.speaking_threshold",
                    "talkers.speaking_interval_ms", "talkers.sustained_speech_ms", "limits.command_timeout_ms", "ice.consent_seconds",
                    "events.queue", "events.history", "events.consumer_buffer", "limits.rtcp_items_per_packet", "api.listen", "media.listen"]
        for key in keys {
            let env = "SFU_" + key.uppercased().replacingOccurrences(of: ".", with: "_")
            let parts = key.split(separator: ".")
            for v in values {
                #expect(throws: ConfigError.self, "--set \(key)=\(v.prefix(24))") { try NodeConfiguration.load(file: nil, environment: [:], flags: ["\(key)=\(v)"]) }
                #expect(throws: ConfigError.self, "\(env)=\(v.prefix(24))") { try NodeConfiguration.load(file: nil, environment: [env: v], flags: []) }
                let text = parts.count == 2 ? "[\(parts[0])]\n\(parts[1]) = \(v)\n" : "\(key) = \(v)\n"
                #expect(throws: ConfigError.self, "file \(key) = \(v.prefix(24))") { try NodeConfiguration.load(file: ("f.toml", text), environment: [:], flags: []) }
            }
        }
        for address in ["127.0.0.1:99999", "127.0.0.1:-1", "127.0.0.1:65536", "[::1]:65536", "[::1]", "[::1]:", "[:::]:1", "[1::2::3]:1",
                        "1.2.3.4:65535:1", "256.0.0.1:1", "[" + String(repeating: "1:", count: 1000) + "1]:1"] {
            #expect(throws: ConfigError.self, "\(address.prefix(24))") { try NodeConfiguration.load(file: nil, environment: [:], flags: ["api.listen=\(address)"]) }
        }
    }

    /// A flag or environment value is one value: a newline cannot smuggle a second key past the parser (it
    /// was read as TOML, kept the first value and dropped the rest without a word).
    @Test func aFlagOrEnvironmentValueCannotCarryASecondKey() throws {
        #expect(throws: ConfigError.self) { try NodeConfiguration.load(file: nil, environment: [:], flags: ["workers=5\nlimits.rooms=1"]) }
        #expect(throws: ConfigError.self) { try NodeConfiguration.load(file: nil, environment: ["SFU_WORKERS": "5\n[limits]\nrooms = 1"], flags: []) }
        let c = try NodeConfiguration.load(file: nil, environment: ["SFU_API_KEY": "\"k\"\nx = 1"], flags: [])
        #expect(c.apiKey == "\"k\"\nx = 1", "a string key takes the text as it is")
        #expect(try NodeConfiguration.load(file: nil, environment: [:], flags: ["workers=5 # five"]).workers == 5, "a comment is not a key")
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

    @Test func theAPIKeyAndTheRegistrysPasswordArePrintedOnlyWhenAskedFor() throws {
        var c = NodeConfiguration()
        c.apiKey = "s3cret-key-0123456789"
        c.clusterRegistry = "postgres://sfu:pa55word@db.internal:5432/sfu"
        let shown = c.fileText(showingSecrets: false)
        #expect(!shown.contains("s3cret") && !shown.contains("pa55word"), "\(shown)")
        #expect(shown.contains("key = \"(set: 21 characters") && shown.contains("postgres://sfu:(hidden)@db.internal:5432/sfu"))
        let all = c.fileText(showingSecrets: true)
        #expect(all.contains("s3cret-key-0123456789") && all.contains("pa55word"))
        #expect(try NodeConfiguration.load(file: ("printed", all), environment: [:], flags: []) == c)
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
