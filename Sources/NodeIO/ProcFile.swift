import Foundation

/// A file of /proc read whole. Its size says 0 and each read(2) returns at most a page; Foundation's
/// `String(contentsOfFile:)` stops after that first page (4 KB: about 27 lines of /proc/net/tcp), so anything
/// listed after it was never seen. Read until read(2) says the end.
public enum ProcFile {
    public static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return n == 0 ? String(decoding: out, as: UTF8.self) : nil }
            out += chunk[..<n]
        }
    }
}
