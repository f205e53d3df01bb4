/// What a publisher's video m-line says about simulcast: the streams it will send, by rid (RFC 8851
/// section 4, RFC 8853 section 5.1: `a=rid:<id> send` lines named in `a=simulcast:send`), or by SSRC
/// (`a=ssrc-group:SIM`, what older clients and munged offers use). The node takes at most
/// `maxLayers`, in the offer's order; an answer names only those, so the client sends no others.
public struct SimulcastOffer: Sendable, Equatable {
    public static let maxLayers = 3
    public static let ridURI = "urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id"
    public static let repairedRidURI = "urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id"

    /// The send streams' rids, in `a=simulcast` order (empty for SSRC-group simulcast).
    public var rids: [String] = []
    /// The `a=ssrc-group:SIM` SSRCs, in order (empty for rid-based simulcast).
    public var ssrcs: [UInt32] = []

    /// Nil when the m-line offers no simulcast. Throws for one it offers in a way the node cannot follow.
    public static func parse(_ m: MediaDescription) throws(SDPError) -> SimulcastOffer? {
        let kind = "m=\(m.kind)"
        if let value = m.attribute("simulcast") {
            let sendRids = m.values("rid").compactMap { v -> String? in
                let p = v.split(separator: " ")
                return p.count >= 2 && p[1] == "send" ? String(p[0]) : nil
            }
            var rids: [String] = []
            for stream in sendList(value) {
                // "~h" is a stream offered paused (RFC 8853 section 5.1); "h,h2" lists alternatives: the first.
                guard let first = stream.split(separator: ",").first else { continue }
                let rid = first.hasPrefix("~") ? String(first.dropFirst()) : String(first)
                guard isValidRid(rid) else {
                    throw SDPError(line: m.lineNumber, text: kind, reason: "a=simulcast names an invalid rid")
                }
                guard sendRids.contains(rid) else {
                    throw SDPError(line: m.lineNumber, text: kind, reason: "a=simulcast names rid \(rid), which no a=rid:\(rid) send line declares")
                }
                if !rids.contains(rid) { rids.append(rid) }
            }
            guard !rids.isEmpty else { return nil }
            return SimulcastOffer(rids: Array(rids.prefix(maxLayers)))
        }
        if m.has("rid") {
            throw SDPError(line: m.lineNumber, text: kind, reason: "a=rid without a=simulcast (RFC 8853 section 5.1)")
        }
        for v in m.values("ssrc-group") {
            let p = v.split(separator: " ")
            guard p.first == "SIM" else { continue }
            let ssrcs = p.dropFirst().compactMap { UInt32($0) }
            guard ssrcs.count == p.count - 1, Set(ssrcs).count == ssrcs.count, ssrcs.count >= 2 else {
                throw SDPError(line: m.lineNumber, text: kind, reason: "a=ssrc-group:SIM needs two or more distinct SSRCs")
            }
            return SimulcastOffer(ssrcs: Array(ssrcs.prefix(maxLayers)))
        }
        return nil
    }

    /// The `send` list of an `a=simulcast` value ("send h;m;l recv x"): its `;`-separated streams.
    static func sendList(_ value: String) -> [Substring] {
        let words = value.split(separator: " ")
        guard let i = words.firstIndex(of: "send"), i + 1 < words.count else { return [] }
        return words[i + 1].split(separator: ";")
    }

    /// RFC 8851 section 10: rid-id = 1*(alpha-numeric / "-" / "_"); the node also bounds its length (RFC 8852
    /// section 3.1 carries it in at most 16 bytes).
    static func isValidRid(_ rid: String) -> Bool {
        !rid.isEmpty && rid.utf8.count <= 16 && rid.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2D || c == 0x5F
        }
    }
}
