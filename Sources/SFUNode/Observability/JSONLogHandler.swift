import Foundation
import Logging

/// One JSON object per line on standard error (`log.format = "json"`): `time` (ISO 8601, UTC, milliseconds),
/// `level`, `label`, `message`, then the metadata as string fields - what log shippers (Vector, Fluent Bit,
/// Loki's promtail) parse without a custom pattern.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let write: @Sendable (String) -> Void

    public init(label: String, write: @escaping @Sendable (String) -> Void = JSONLogHandler.standardError) {
        self.label = label
        self.write = write
    }

    public static let standardError: @Sendable (String) -> Void = { line in
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var object: [String: Any] = [:]
        for (k, v) in metadata { object[k] = "\(v)" }
        for (k, v) in metadataProvider?.get() ?? [:] { object[k] = "\(v)" }
        for (k, v) in event.metadata ?? [:] { object[k] = "\(v)" }
        object["time"] = Self.timestamp()
        object["level"] = event.level.rawValue
        object["label"] = label
        object["message"] = "\(event.message)"
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        write(String(decoding: data, as: UTF8.self))
    }

    static func timestamp() -> String {
        let f = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)
        return Date().formatted(f)
    }
}
