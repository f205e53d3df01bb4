import Foundation

/// FFmpeg's messages, which it writes to a file beside its SDP (a pipe nobody reads fast enough would stall
/// it): the last lines say why it exited, and go to the node's log and to everyone in a `streaming` event's
/// reason. They may quote the RTMP URL - whole, or cut where FFmpeg or this reader cut the line - so the URL's
/// secrets are hidden first (`RTMPTarget.redact`) and only then is anything cut.
enum EncoderLog {
    /// Bytes read from the end of the file.
    static let tail = 16 << 10
    /// Lines kept, and characters of each once redacted.
    static let lines = 2
    static let lineCharacters = 300

    /// The last lines of `path`, redacted, then each cut to `lineCharacters`, joined with " | ".
    static func lastLines(of path: String, redactedBy target: RTMPTarget) -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else { return "" }
        defer { try? handle.close() }
        let size = (try? handle.seekToEnd()) ?? 0
        let from = size > UInt64(tail) ? size - UInt64(tail) : 0
        guard (try? handle.seek(toOffset: from)) != nil, let data = try? handle.readToEnd() else { return "" }
        var text = String(decoding: data, as: UTF8.self)
        // Read from the middle of the file: its first line is a piece of one; it goes whole.
        if from > 0, let newline = text.firstIndex(of: "\n") { text = String(text[text.index(after: newline)...]) }
        return text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            .suffix(lines).map { line in
                let shown = target.redact(line)
                return shown.count > lineCharacters ? shown.prefix(lineCharacters) + "..." : shown
            }
            .joined(separator: " | ")
    }
}
