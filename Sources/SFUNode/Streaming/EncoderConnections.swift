import Foundation
import NodeIO
import WebRTCEdge

/// The TCP connections a process has made, read from /proc: its descriptors that are sockets
/// (`/proc/<pid>/fd/*` -> `socket:[inode]`) looked up in its network namespace's tables
/// (`/proc/<pid>/net/tcp`, `tcp6`: remote address and port, hexadecimal, per inode). FFmpeg resolves the RTMP
/// URL's host itself, after the node checked it: a name that resolved to a public address for the node and
/// to a private one for FFmpeg (DNS rebinding) is caught here, on the address FFmpeg actually reached.
///
/// Each call reports the connections not reported before; the tables are read (whole: `ProcFile`) only when
/// the process has a socket not seen yet (a node with many ICE-TCP connections has long tables).
struct EncoderConnections {
    let pid: Int32
    private var seen: Set<UInt64> = []

    init(pid: Int32) { self.pid = pid }

    /// The remote ends of connections made since the last call (listening and unconnected sockets left out).
    mutating func new() -> [TransportAddress] {
        let fresh = Set(socketInodes()).subtracting(seen)
        guard !fresh.isEmpty else { return [] }
        var out: [TransportAddress] = []
        for table in ["tcp", "tcp6"] {
            guard let text = ProcFile.read("/proc/\(pid)/net/\(table)") else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                guard let entry = Self.entry(line), fresh.contains(entry.inode), let remote = entry.remote else { continue }
                seen.insert(entry.inode)
                out.append(remote)
            }
        }
        return out
    }

    private func socketInodes() -> [UInt64] {
        let dir = "/proc/\(pid)/fd"
        guard let fds = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return [] }
        return fds.compactMap { fd in
            guard let link = try? FileManager.default.destinationOfSymbolicLink(atPath: dir + "/" + fd),
                  link.hasPrefix("socket:["), link.hasSuffix("]") else { return nil }
            return UInt64(link.dropFirst(8).dropLast())
        }
    }

    /// One line of /proc/net/tcp or tcp6: `sl local rem st ... inode ...`; `remote` is nil for a socket that is
    /// not connected or connecting (a remote of port 0).
    static func entry(_ line: Substring) -> (inode: UInt64, remote: TransportAddress?)? {
        let f = line.split(separator: " ", omittingEmptySubsequences: true)
        guard f.count > 9, let inode = UInt64(f[9]) else { return nil }
        let parts = f[2].split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1], radix: 16) else { return nil }
        guard port != 0, let ip = address(parts[0]) else { return (inode, nil) }
        return (inode, TransportAddress(ip: ip, port: port, tcp: true))
    }

    /// The kernel writes each 32-bit word of the address as the number it holds in host order (`%08X`), so on
    /// a little-endian machine the bytes of each word are reversed.
    static func address(_ hex: Substring) -> TransportAddress.IP? {
        let words = stride(from: 0, to: hex.count, by: 8).compactMap { i -> UInt32? in
            let s = hex.index(hex.startIndex, offsetBy: i)
            guard let e = hex.index(s, offsetBy: 8, limitedBy: hex.endIndex) else { return nil }
            return UInt32(hex[s..<e], radix: 16).map { UInt32(bigEndian: $0) }
        }
        switch words.count {
        case 1 where hex.count == 8: return .v4(words[0])
        case 4 where hex.count == 32:
            return .v6(UInt64(words[0]) << 32 | UInt64(words[1]), UInt64(words[2]) << 32 | UInt64(words[3]))
        default: return nil
        }
    }
}
