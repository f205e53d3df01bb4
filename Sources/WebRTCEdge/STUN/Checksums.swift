import COpenSSL

/// CRC-32 (ISO 3309 / ITU-T V.42, as zlib computes it) for the STUN FINGERPRINT (RFC 8489 section 14.7).
enum CRC32 {
    static let table: [UInt32] = (0..<256).map { i in
        var c = UInt32(i)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes { c = table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }
}

/// HMAC-SHA1 (RFC 2104) through OpenSSL's libcrypto, for MESSAGE-INTEGRITY (RFC 8489 section 14.5).
enum HMACSHA1 {
    static let length = 20

    static func mac(key: [UInt8], data: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 20)
        var n: UInt32 = 0
        key.withUnsafeBytes { k in
            out.withUnsafeMutableBytes { o in
                _ = HMAC(EVP_sha1(), k.baseAddress, Int32(k.count), data.baseAddress?.assumingMemoryBound(to: UInt8.self),
                         data.count, o.baseAddress?.assumingMemoryBound(to: UInt8.self), &n)
            }
        }
        return out
    }

    /// Constant-time comparison, so a forged integrity value learns nothing from timing.
    static func equal(_ a: [UInt8], _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<a.count { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}
