/// Bytes from hex text, whitespace ignored ("80 c8 00 06" or "80c80006"): for test vectors.
public func hex(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    var chars = s.filter { !$0.isWhitespace }[...]
    while chars.count >= 2 {
        out.append(UInt8(chars.prefix(2), radix: 16)!)
        chars = chars.dropFirst(2)
    }
    return out
}
