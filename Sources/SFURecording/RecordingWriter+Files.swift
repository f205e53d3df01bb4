import Foundation

/// What the writer needs of the file system beside the files themselves: safe names and the bytes under a directory.
extension RecordingWriter {
    /// A name from a client or an API caller made safe as one path component: letters, digits, `-`, `_` and
    /// `.` kept, anything else `_`, at most 64 characters, never `.` or `..` or empty.
    static func safeName(_ s: String) -> String {
        var out = String(s.unicodeScalars.prefix(64).map { c -> Character in
            c.isASCII && (CharacterSet.alphanumerics.contains(c) || c == "-" || c == "_" || c == ".") ? Character(c) : "_"
        })
        if out.isEmpty || out.allSatisfy({ $0 == "." }) { out = "_" + out }
        return out
    }

    static func bytesUnder(_ path: String) -> Int64 {
        guard let e = FileManager.default.enumerator(atPath: path) else { return 0 }
        var total: Int64 = 0
        while let f = e.nextObject() as? String {
            if let size = (try? FileManager.default.attributesOfItem(atPath: path + "/" + f))?[.size] as? NSNumber { total += size.int64Value }
        }
        return total
    }
}
