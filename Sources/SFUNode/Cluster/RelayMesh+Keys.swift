import SFU

/// The SRTP keys of a relay: each end draws the key it sends with and names it in its `open` message over the
/// channel; an end protects with its own key and unprotects with its peer's, as AEAD_AES_128_GCM material.
extension RelayMesh {
    static func drawKey() -> [UInt8] {
        var g = SystemRandomNumberGenerator()
        return (0..<RelayMessage.keyAndSaltBytes).map { _ in UInt8.random(in: 0...255, using: &g) }
    }

    static func material(_ keyAndSalt: [UInt8]) -> SRTPKeyingMaterial {
        SRTPKeyingMaterial(profile: .aeadAES128GCM, masterKey: Array(keyAndSalt[0..<16]), masterSalt: Array(keyAndSalt[16..<28]))
    }
}
