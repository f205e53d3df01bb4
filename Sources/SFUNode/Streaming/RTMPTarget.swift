import Foundation

/// A live stream's RTMP URL, as the node uses it: what FFmpeg is given, where it connects, what may be shown.
///
/// - The scheme is written in lower case for FFmpeg: URL schemes are case-insensitive (RFC 3986 section 3.1),
///   FFmpeg's protocol names are not (`RTMP://` is "Protocol not found").
/// - Only the scheme and host may be shown (`shown`): the path carries the stream key, the query often a token,
///   the user info a password. `redact` hides them - the whole URL wherever FFmpeg writes it, and any piece of
///   the secret parts (`SecretRedactor`) - before any text that may hold them is cut or passed on.
struct RTMPTarget: Sendable {
    /// The URL FFmpeg pushes to.
    let url: String
    /// "rtmp" or "rtmps".
    let scheme: String
    /// As written in the URL (an IPv6 address without brackets).
    let host: String
    /// The URL's port, or the scheme's (FFmpeg's defaults: 1935 for rtmp, 443 for rtmps).
    let port: UInt16
    /// "rtmp://host/...": all of it that may be shown.
    let shown: String
    private let secrets: SecretRedactor

    /// Nil unless `text` is an rtmp:// or rtmps:// URL (any case) with a host, at most 2048 characters of
    /// printable ASCII without spaces.
    init?(_ text: String) {
        guard text.utf8.count <= 2048, text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }),
              let sep = text.range(of: "://") else { return nil }
        let scheme = text[..<sep.lowerBound].lowercased()
        guard scheme == "rtmp" || scheme == "rtmps", let c = URLComponents(string: text), var host = c.host, !host.isEmpty else { return nil }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard c.port.map({ (1...65535).contains($0) }) ?? true else { return nil }
        let afterScheme = text[sep.upperBound...]
        let authorityEnd = afterScheme.firstIndex { "/?#".contains($0) } ?? afterScheme.endIndex
        let authority = afterScheme[..<authorityEnd], rest = afterScheme[authorityEnd...]
        let userInfo = authority.lastIndex(of: "@").map { authority[..<$0] } ?? ""
        self.scheme = scheme
        self.host = host
        port = c.port.map { UInt16($0) } ?? (scheme == "rtmps" ? 443 : 1935)
        url = scheme + text[sep.lowerBound...]
        let shownHost = host.contains(":") ? "[\(host)]" : host
        shown = "\(scheme)://\(shownHost)/..."
        secrets = SecretRedactor(secrets: [String(rest), String(userInfo)])
    }

    /// `text` without the URL's secret parts: every RTMP URL in it (FFmpeg names only its output's) becomes
    /// `shown`, then every piece of the path, query and user info is hidden.
    func redact(_ text: String) -> String {
        var out = ""
        var rest = Substring(text)
        // Any rtmp URL, whatever its case and variant (rtmp, rtmps, rtmpt, rtmpte, ...), to the next space or quote.
        while let start = rest.range(of: "rtmp", options: .caseInsensitive) {
            let tail = rest[start.upperBound...]
            guard let sep = tail.range(of: "://"), tail[..<sep.lowerBound].allSatisfy({ $0.isLetter }), tail.distance(from: tail.startIndex, to: sep.lowerBound) <= 3 else {
                out += rest[..<start.upperBound]
                rest = tail
                continue
            }
            out += rest[..<start.lowerBound]
            var end = sep.upperBound
            while end < tail.endIndex, !" \t\r\n'\"<>".contains(tail[end]) { end = tail.index(after: end) }
            // FFmpeg writes "<url>: <error>": the colon is its, not the URL's.
            let colon = end > sep.upperBound && tail[tail.index(before: end)] == ":"
            out += shown + (colon ? ":" : "")
            rest = tail[end...]
        }
        out += rest
        return secrets.redact(out)
    }
}
