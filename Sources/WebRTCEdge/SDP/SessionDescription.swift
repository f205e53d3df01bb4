/// An SDP session description (RFC 8866) as JSEP uses it: session-level lines and attributes, then media
/// sections. Parsing keeps every attribute (in order) so nothing is lost; typed accessors read what the
/// node needs. A malformed description is refused with the line number and text.
public struct SessionDescription: Sendable, Equatable {
    public var origin = "- 0 0 IN IP4 127.0.0.1"
    public var sessionName = "-"
    public var timing = "0 0"
    public var attributes: [SDPAttribute] = []
    public var media: [MediaDescription] = []

    public init() {}

    /// The largest description accepted: real offers are a few kB; this bounds work on garbage.
    public static let maxSize = 64 * 1024

    public static func parse(_ text: String) throws(SDPError) -> SessionDescription {
        guard text.utf8.count <= maxSize else { throw SDPError(line: 0, text: "", reason: "larger than \(maxSize) bytes") }
        var d = SessionDescription()
        var current: MediaDescription?
        var sawVersion = false
        var number = 0
        // CRLF is one Character in Swift: split on any newline so CRLF and bare LF both work.
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            number += 1
            let line = String(raw)
            if line.isEmpty { continue }  // tolerate a trailing blank line
            let bytes = Array(line.utf8)
            guard bytes.count >= 2, bytes[1] == UInt8(ascii: "="), let type = line.first else {
                throw SDPError(line: number, text: line, reason: "not a <type>=<value> line")
            }
            let value = String(line.dropFirst(2))
            if !sawVersion {
                guard type == "v", value == "0" else { throw SDPError(line: number, text: line, reason: "must start with v=0") }
                sawVersion = true
                continue
            }
            switch type {
            case "m":
                if let m = current { d.media.append(m) }
                current = try MediaDescription(mLine: value, line: number, text: line)
            case "a":
                let a = SDPAttribute(line: value)
                if current != nil { current!.attributes.append(a) } else { d.attributes.append(a) }
            case "c":
                if current != nil { current!.connection = value }
            case "o" where current == nil: d.origin = value
            case "s" where current == nil: d.sessionName = value
            case "t" where current == nil: d.timing = value
            case "b", "i", "u", "e", "p", "r", "z", "k", "t", "o", "s":
                break  // informational lines the node does not use
            default:
                throw SDPError(line: number, text: line, reason: "unknown line type '\(type)'")
            }
        }
        guard sawVersion else { throw SDPError(line: 1, text: "", reason: "empty description") }
        if let m = current { d.media.append(m) }
        d.applySessionExtmaps()
        return d
    }

    /// RFC 8285 section 5: an `a=extmap` at session level applies to every media section that does not map
    /// the same id itself (some clients write them there; browsers write them per m-line). Each media section
    /// gets a copy, so what reads `MediaDescription.extmaps` sees them.
    mutating func applySessionExtmaps() {
        let shared = attributes.filter { $0.key == "extmap" }
        guard !shared.isEmpty else { return }
        for i in media.indices {
            let own = Set(media[i].extmaps.keys)
            for a in shared {
                guard let idText = (a.value ?? "").split(separator: " ").first?.split(separator: "/").first,
                      let id = UInt8(idText), !own.contains(id) else { continue }
                media[i].attributes.append(a)
            }
        }
    }

    /// The description as text with CRLF line ends (RFC 8866 section 5).
    public var text: String {
        var lines = ["v=0", "o=\(origin)", "s=\(sessionName)", "t=\(timing)"]
        lines += attributes.map { "a=\($0.text)" }
        for m in media { lines += m.lines }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// The first value of a session-level attribute.
    public func attribute(_ key: String) -> String? { attributes.first { $0.key == key }?.value }

    /// Mids of the BUNDLE group (RFC 8843 section 7), if any.
    public var bundleMids: [String]? {
        for a in attributes where a.key == "group" {
            let parts = (a.value ?? "").split(separator: " ").map(String.init)
            if parts.first == "BUNDLE" { return Array(parts.dropFirst()) }
        }
        return nil
    }
}

/// One `a=` line: `key` or `key:value`.
public struct SDPAttribute: Sendable, Equatable {
    public var key: String
    public var value: String?

    public init(_ key: String, _ value: String? = nil) {
        self.key = key
        self.value = value
    }

    init(line: String) {
        if let colon = line.firstIndex(of: ":") {
            key = String(line[..<colon])
            value = String(line[line.index(after: colon)...])
        } else {
            key = line
            value = nil
        }
    }

    public var text: String { value.map { "\(key):\($0)" } ?? key }
}

/// A media section (`m=` and what follows it).
public struct MediaDescription: Sendable, Equatable {
    public var kind: String
    public var port: Int
    public var proto: String
    public var formats: [String]
    public var connection: String?
    public var attributes: [SDPAttribute] = []
    /// Where the m= line stood in the parsed text (0 when built), so errors can name it.
    public var lineNumber = 0

    public init(kind: String, port: Int, proto: String, formats: [String]) {
        self.kind = kind
        self.port = port
        self.proto = proto
        self.formats = formats
    }

    init(mLine value: String, line: Int, text: String) throws(SDPError) {
        let parts = value.split(separator: " ").map(String.init)
        guard parts.count >= 3, let portText = parts[1].split(separator: "/").first, let port = Int(portText), (0...65535).contains(port) else {
            throw SDPError(line: line, text: text, reason: "m= needs <media> <port> <proto> <fmt>...")
        }
        self.init(kind: parts[0], port: port, proto: parts[2], formats: Array(parts.dropFirst(3)))
        lineNumber = line
    }

    var lines: [String] {
        var l = ["m=\(kind) \(port) \(proto) \(formats.joined(separator: " "))"]
        if let connection { l.append("c=\(connection)") }
        return l + attributes.map { "a=\($0.text)" }
    }

    public func attribute(_ key: String) -> String? { attributes.first { $0.key == key }?.value }
    public func values(_ key: String) -> [String] { attributes.filter { $0.key == key }.compactMap(\.value) }
    public func has(_ key: String) -> Bool { attributes.contains { $0.key == key } }

    /// The media's identification tag (RFC 5888 section 4; RFC 8843 section 9.1), when it is an SDP token
    /// (RFC 8866 section 9): a value with other characters (a slash, a space, a control character) is not a mid,
    /// and the node keys its slots' SSRCs by mid (`mid/rtx` for a slot's RTX).
    public var mid: String? {
        guard let v = attribute("mid"), !v.isEmpty, v.utf8.count <= 255, v.utf8.allSatisfy(Self.isTokenChar) else { return nil }
        return v
    }

    /// RFC 8866 section 9: token-char = %x21 / %x23-27 / %x2A-2B / %x2D-2E / %x30-39 / %x41-5A / %x5E-7E.
    static func isTokenChar(_ c: UInt8) -> Bool {
        switch c {
        case 0x21, 0x23...0x27, 0x2A...0x2B, 0x2D...0x2E, 0x30...0x39, 0x41...0x5A, 0x5E...0x7E: return true
        default: return false
        }
    }

    public enum Direction: String, Sendable { case sendrecv, sendonly, recvonly, inactive }

    /// The direction attribute (RFC 8866 section 6.7), sendrecv when absent.
    public var direction: Direction {
        for a in attributes { if let d = Direction(rawValue: a.key) { return d } }
        return .sendrecv
    }

    /// `a=rtpmap` by payload type: encoding name (lowercased), clock rate, channels.
    public var rtpmaps: [UInt8: (name: String, clock: Int, channels: Int)] {
        var r: [UInt8: (String, Int, Int)] = [:]
        for v in values("rtpmap") {
            let parts = v.split(separator: " ", maxSplits: 1)
            // 64-95 cannot be RTP payload types with rtcp-mux (RFC 5761 section 4): with the marker bit set, the
            // second byte reads as an RTCP packet type (192-223) and the packet would be taken for RTCP.
            guard parts.count == 2, let pt = UInt8(parts[0]), pt < 128, !(64...95).contains(pt) else { continue }
            let enc = parts[1].split(separator: "/")
            guard enc.count >= 2, let clock = Int(enc[1]) else { continue }
            r[pt] = (enc[0].lowercased(), clock, enc.count > 2 ? Int(enc[2]) ?? 1 : 1)
        }
        return r
    }

    /// `a=fmtp` parameters by payload type.
    public var fmtps: [UInt8: String] {
        var r: [UInt8: String] = [:]
        for v in values("fmtp") {
            let parts = v.split(separator: " ", maxSplits: 1)
            if parts.count == 2, let pt = UInt8(parts[0]) { r[pt] = String(parts[1]) }
        }
        return r
    }

    /// `a=extmap` URIs by id (RFC 8285 section 5).
    public var extmaps: [UInt8: String] {
        var r: [UInt8: String] = [:]
        for v in values("extmap") {
            let parts = v.split(separator: " ")
            guard parts.count >= 2, let idText = parts[0].split(separator: "/").first, let id = UInt8(idText), (1...255).contains(id) else { continue }
            r[id] = String(parts[1])
        }
        return r
    }

    /// The id of the extension `uri`: the lowest when an offer lists it under several (`extmaps` is a
    /// dictionary, whose order is not the same from one process to the next).
    public func extmapID(_ uri: String) -> UInt8? {
        extmaps.filter { $0.value == uri }.keys.min()
    }

    /// SSRCs from `a=ssrc` lines in first-seen order, and FID groups (media, rtx) (RFC 5576).
    public var ssrcs: [UInt32] {
        var seen: [UInt32] = []
        for v in values("ssrc") {
            if let first = v.split(separator: " ").first, let s = UInt32(first), !seen.contains(s) { seen.append(s) }
        }
        return seen
    }

    public var fidGroups: [(media: UInt32, rtx: UInt32)] {
        values("ssrc-group").compactMap { v in
            let p = v.split(separator: " ")
            guard p.count == 3, p[0] == "FID", let a = UInt32(p[1]), let b = UInt32(p[2]) else { return nil }
            return (a, b)
        }
    }
}

/// A refused description: which line and why.
public struct SDPError: Error, Equatable, Sendable, CustomStringConvertible {
    public var line: Int
    public var text: String
    public var reason: String

    public init(line: Int, text: String, reason: String) {
        self.line = line
        self.text = text
        self.reason = reason
    }

    public var description: String { line > 0 ? "SDP line \(line) (\(text.prefix(80))): \(reason)" : "SDP: \(reason)" }
}
