/// Hides secrets (a stream key, a token in a URL's query, a password) in text the node passes on: its log,
/// events, error bodies. Hiding a secret by matching it whole fails once the text has been cut - FFmpeg cuts
/// long lines, the node keeps the last lines of a log - and fails for a program that quotes only part of it
/// (a server's error naming the stream key alone). So every run of the text that is a piece of a secret at
/// least `minimumPiece` bytes long is hidden, wherever it is, and this runs before the node cuts anything.
///
/// Cost: proportional to the text's length times the secrets' (a longest-common-substring scan); it is for
/// the rare text that may hold a secret (an encoder's exit), never the hot path.
public struct SecretRedactor: Sendable {
    /// Shorter pieces are left: at that length a piece of a key is no longer the key, and a common word that
    /// happens to be in a URL's path ("live") stays readable.
    public static let minimumPiece = 8
    public let mark: String
    private let secrets: [[UInt8]]

    public init(secrets: [String], mark: String = "***") {
        self.secrets = secrets.map { Array($0.utf8) }.filter { $0.count >= Self.minimumPiece }
        self.mark = mark
    }

    public func redact(_ text: String) -> String {
        let t = Array(text.utf8)
        guard !t.isEmpty, !secrets.isEmpty else { return text }
        // longest[i]: the longest run ending at byte i that is a piece of some secret.
        var longest = [Int](repeating: 0, count: t.count)
        for s in secrets {
            var previous = [Int](repeating: 0, count: s.count + 1), current = previous
            for i in t.indices {
                for j in s.indices {
                    let n = t[i] == s[j] ? previous[j] + 1 : 0
                    current[j + 1] = n
                    if n > longest[i] { longest[i] = n }
                }
                swap(&previous, &current)
            }
        }
        var hidden = [Bool](repeating: false, count: t.count)
        for i in t.indices where longest[i] >= Self.minimumPiece {
            for k in (i - longest[i] + 1)...i { hidden[k] = true }
        }
        guard hidden.contains(true) else { return text }
        var out: [UInt8] = []
        out.reserveCapacity(t.count)
        for i in t.indices {
            if !hidden[i] {
                out.append(t[i])
            } else if i == 0 || !hidden[i - 1] {
                out += Array(mark.utf8)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
