import Foundation

/// What the writer needs of the file system beside the files themselves: safe names and the bytes under a directory.
extension RecordingWriter {
    /// A name from a client or an API caller as one path component, one-to-one: letters, digits, `-`, `_` and
    /// `.` kept, every other byte (and a leading `.`, so never `.`, `..` or a hidden name) percent-encoded as
    /// `%XX` (RFC 3986 section 2.1). Distinct names stay distinct - rooms `r:1` and `r_1` record into `r%3A1`
    /// and `r_1`, not both into `r_1` - so a directory is one room's, as the room's byte cap is. Nil for a name
    /// that would not fit a file name (255 bytes) with room for a suffix; the API's ids (64 characters) always fit.
    static func safeName(_ s: String) -> String? {
        var out = ""
        for (i, b) in s.utf8.enumerated() {
            let plain = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F
                || (b == 0x2E && i > 0)
            out += plain ? String(UnicodeScalar(b)) : String(format: "%%%02X", b)
        }
        return out.isEmpty || out.utf8.count > 200 ? nil : out
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
