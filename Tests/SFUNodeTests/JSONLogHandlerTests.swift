import Foundation
import Logging
import SFUNode
import Synchronization
import Testing

@Suite struct JSONLogHandlerTests {
    @Test func eachLogLineIsOneJSONObjectWithLevelMessageTimeAndMetadata() throws {
        let lines = Mutex<[String]>([])
        var logger = Logger(label: "sfu") { label in JSONLogHandler(label: label) { line in lines.withLock { $0.append(line) } } }
        logger.logLevel = .info
        logger[metadataKey: "node"] = "n1"
        logger.debug("not written")
        logger.info("room event", metadata: ["room": "r \"quoted\"", "participant": "a"])
        let written = lines.withLock { $0 }
        #expect(written.count == 1)
        let o = try #require(try JSONSerialization.jsonObject(with: Data(written[0].utf8)) as? [String: Any])
        #expect(o["level"] as? String == "info" && o["message"] as? String == "room event" && o["label"] as? String == "sfu")
        #expect(o["room"] as? String == "r \"quoted\"" && o["participant"] as? String == "a" && o["node"] as? String == "n1")
        let time = try #require(o["time"] as? String)
        #expect(time.hasSuffix("Z") && time.contains("T") && time.contains("."), "ISO 8601 UTC with milliseconds: \(time)")
        #expect(!written[0].contains("\n"))
    }
}
