import Foundation
import Logging

/// One line per record on standard error (`log.format = "text"`): `time level label: key=value ... message`.
/// Every control character in the message and the metadata is escaped (`\n`, `\u{1B}`): values come from
/// clients and API callers (room and participant ids, SDP errors), and a newline in one must never start a
/// line of its own in the log - a forged `level=critical` record, say.
public struct TextLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let write: @Sendable (String) -> Void

    public init(label: String, write: @escaping @Sendable (String) -> Void = JSONLogHandler.standardError) {
        self.label = label
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = metadata
        for (k, v) in metadataProvider?.get() ?? [:] { all[k] = v }
        for (k, v) in event.metadata ?? [:] { all[k] = v }
        let fields = all.sorted { $0.key < $1.key }.map { "\(Self.escape($0.key))=\(Self.escape("\($0.value)"))" }
        let head = "\(JSONLogHandler.timestamp()) \(event.level) \(label):"
        write(([head] + fields + [Self.escape("\(event.message)")]).joined(separator: " "))
    }

    /// Control characters as Swift-style escapes; everything else as is.
    static func escape(_ s: String) -> String {
        guard s.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return s }
        var out = ""
        for u in s.unicodeScalars {
            switch u {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default: out += u.properties.generalCategory == .control ? "\\u{\(String(u.value, radix: 16))}" : String(u)
            }
        }
        return out
    }
}
